package metrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// storeMetric is one per-shard gauge or counter of the storage engine.
type storeMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(m *store.Metrics) float64
}

// newStoreMetrics describes the storage engine's metrics of each shard of this node
// (store.Metrics: Pebble's disk use, memtables, block cache, flushes, compactions, read
// amplification, snapshots, write stalls), labelled by shard.
func newStoreMetrics() []storeMetric {
	g := func(name, help string, value func(m *store.Metrics) float64) storeMetric {
		return storeMetric{prometheus.NewDesc(name, help, []string{"shard"}, nil), prometheus.GaugeValue, value}
	}
	c := func(name, help string, value func(m *store.Metrics) float64) storeMetric {
		return storeMetric{prometheus.NewDesc(name, help, []string{"shard"}, nil), prometheus.CounterValue, value}
	}
	return []storeMetric{
		g("cleave_store_disk_bytes", "Bytes of the shard's live files: sstables, WAL and manifest.",
			func(m *store.Metrics) float64 { return float64(m.DiskBytes) }),
		g("cleave_store_sstable_bytes", "Bytes of the shard's live sstables.",
			func(m *store.Metrics) float64 { return float64(m.SSTableBytes) }),
		g("cleave_store_wal_bytes", "Bytes of the shard's live write-ahead log.",
			func(m *store.Metrics) float64 { return float64(m.WALBytes) }),
		g("cleave_store_memtable_bytes", "Bytes allocated to the shard's memtables.",
			func(m *store.Metrics) float64 { return float64(m.MemTableBytes) }),
		g("cleave_store_memtables", "The shard's memtables: the one written and those waiting to be flushed.",
			func(m *store.Metrics) float64 { return float64(m.MemTables) }),
		g("cleave_store_block_cache_bytes", "Bytes in the block cache (shared by the shards of a process).",
			func(m *store.Metrics) float64 { return float64(m.BlockCacheBytes) }),
		c("cleave_store_block_cache_hits_total", "Block cache hits of the shard's reads.",
			func(m *store.Metrics) float64 { return float64(m.BlockCacheHits) }),
		c("cleave_store_block_cache_misses_total", "Block cache misses of the shard's reads.",
			func(m *store.Metrics) float64 { return float64(m.BlockCacheMisses) }),
		c("cleave_store_flushes_total", "Memtable flushes of the shard since it opened.",
			func(m *store.Metrics) float64 { return float64(m.Flushes) }),
		c("cleave_store_compactions_total", "Compactions of the shard since it opened.",
			func(m *store.Metrics) float64 { return float64(m.Compactions) }),
		g("cleave_store_compaction_debt_bytes", "Bytes the shard's compactions are estimated to be behind.",
			func(m *store.Metrics) float64 { return float64(m.CompactionDebt) }),
		g("cleave_store_read_amplification", "Sstables (and sublevels) a point read of the shard may visit.",
			func(m *store.Metrics) float64 { return float64(m.ReadAmp) }),
		g("cleave_store_snapshots", "Open snapshots of the shard (cursors and multi-shard reads hold them).",
			func(m *store.Metrics) float64 { return float64(m.Snapshots) }),
		c("cleave_store_write_stalls_total", "Times the shard stopped writes for flushes or compactions to catch up.",
			func(m *store.Metrics) float64 { return float64(m.WriteStalls) }),
		c("cleave_store_synced_commits_total", "Write batches of the shard committed with a WAL sync (durable before acknowledged).",
			func(m *store.Metrics) float64 { return float64(m.SyncedCommits) }),
		c("cleave_store_wal_syncs_total", "WAL syncs of the shard; synced commits per sync is the size of its group commits.",
			func(m *store.Metrics) float64 { return float64(m.WALSyncs) }),
		c("cleave_store_id_cache_hits_total", "Finds by _id in a collection sharded on another field whose hashes the shard's _id cache knew.",
			func(m *store.Metrics) float64 { return float64(m.IDCacheHits) }),
		c("cleave_store_id_cache_misses_total", "Finds by _id in a collection sharded on another field that read the shard's _id index.",
			func(m *store.Metrics) float64 { return float64(m.IDCacheMisses) }),
		c("cleave_store_doc_cache_hits_total", "Point reads of the shard's latest state (finds by _id, reads before updates and deletes by _id) answered from its document cache.",
			func(m *store.Metrics) float64 { return float64(m.DocCacheHits) }),
		c("cleave_store_doc_cache_misses_total", "Point reads of the shard's latest state that read the storage engine.",
			func(m *store.Metrics) float64 { return float64(m.DocCacheMisses) }),
		g("cleave_store_doc_cache_bytes", "Bytes of documents (and their entries) the shard's document cache holds.",
			func(m *store.Metrics) float64 { return float64(m.DocCacheBytes) }),
		c("cleave_store_doc_cache_writes_total", "Documents the shard's document cache took from the writes that wrote them (an update's new version), which the next point read finds there.",
			func(m *store.Metrics) float64 { return float64(m.DocCacheWrites) }),
		c("cleave_store_doc_cache_marker_reads_skipped_total", "Updates and deletes whose read of the document's change stream reference the shard's document cache proved needless.",
			func(m *store.Metrics) float64 { return float64(m.DocCacheMarkersSkipped) }),
		c("cleave_store_disk_slow_total", "Disk writes of the shard that took abnormally long.",
			func(m *store.Metrics) float64 { return float64(m.DiskSlow) }),
		g("cleave_change_log_oldest_age_seconds", "Age of the oldest event the shard's change log keeps: how far back a change stream can resume (0: empty).",
			func(m *store.Metrics) float64 {
				if m.ChangesOldest == 0 {
					return 0
				}
				return max(0, float64(time.Now().Unix()-int64(m.ChangesOldest>>32)))
			}),
		g("cleave_change_log_bytes", "Estimated bytes on disk of the shard's change log (bounded by --change-retention-bytes).",
			func(m *store.Metrics) float64 { return float64(m.ChangesBytes) }),
	}
}

// walFsyncDesc is the histogram of each shard's WAL fsyncs (store.Metrics.WALFsync): with
// cleave_store_wal_syncs_total it tells whether synced writes wait on the disk or on the
// server.
var walFsyncDesc = prometheus.NewDesc("cleave_store_wal_fsync_seconds",
	"Latency of the shard's WAL fsyncs: a synced write waits for the one under way, then its own.",
	[]string{"shard"}, nil)

// histogram returns l as a Prometheus histogram of seconds of desc, labelled with labels.
func histogram(desc *prometheus.Desc, l store.Latencies, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(l.Buckets))
	for _, b := range l.Buckets {
		buckets[b.Le.Seconds()] = b.Count
	}
	return prometheus.MustNewConstHistogram(desc, l.Count, l.Sum.Seconds(), buckets, labels...)
}

// describeStore sends the storage metrics' descriptions.
func (m *Metrics) describeStore(ch chan<- *prometheus.Desc) {
	for _, s := range m.store {
		ch <- s.desc
	}
	ch <- walFsyncDesc
}

// collectStore sends the storage metrics of each shard of this node.
func (m *Metrics) collectStore(ch chan<- prometheus.Metric) {
	if m.src.Cat == nil {
		return
	}
	for i, sh := range m.src.Cat.Shards() {
		sm, ok := catalog.LocalMetrics(sh)
		if !ok {
			continue
		}
		name := fmt.Sprintf("shard-%d", i)
		for _, s := range m.store {
			ch <- prometheus.MustNewConstMetric(s.desc, s.kind, s.value(&sm), name)
		}
		ch <- histogram(walFsyncDesc, sm.WALFsync, name)
	}
}
