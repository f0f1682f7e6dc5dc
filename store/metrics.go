package store

import (
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics is a summary of one DB's Pebble metrics for serverStatus and the metrics endpoint.
type Metrics struct {
	DiskBytes        uint64 // all live files: sstables, WAL, manifest
	SSTableBytes     uint64 // live sstables
	WALBytes         uint64 // live WAL data
	MemTableBytes    uint64 // allocated memtable bytes
	MemTables        int64  // number of memtables (active and queued for flush)
	BlockCacheBytes  int64
	BlockCacheHits   int64
	BlockCacheMisses int64
	Flushes          int64 // completed flushes since Open
	Compactions      int64 // completed compactions since Open
	CompactionDebt   uint64
	ReadAmp          int   // sstables a point read may visit
	Snapshots        int   // open snapshots
	WriteStalls      int64 // write stalls since Open
	DiskSlow         int64 // slow disk writes since Open (OS file system only)
	// ChangesOldest is the time (cluster time, seconds in the high 32 bits) of the oldest
	// record of the change log, 0 when it is empty; ChangesBytes estimates its bytes on disk.
	ChangesOldest  uint64
	ChangesBytes   uint64
	SyncedCommits  int64 // batches committed with a WAL sync since Open
	WALSyncs       int64 // WAL syncs since Open: SyncedCommits / WALSyncs is the group-commit size
	IDCacheHits    int64 // _id lookups without the hash answered from the cache (idcache.go)
	IDCacheMisses  int64 // _id lookups without the hash that read the _id index
	DocCacheHits   int64 // point reads of the latest state answered from the cache (doccache.go)
	DocCacheMisses int64 // point reads of the latest state that read Pebble
	DocCacheBytes  int64 // bytes the document cache holds
	// DocCacheWrites counts the documents the batches that wrote them stored in the cache, and
	// DocCacheMarkersSkipped the change reference marker reads the cache proved needless.
	DocCacheWrites, DocCacheMarkersSkipped int64
	// WALFsync is the latency of the WAL's fsyncs since Open: a synced commit waits for the
	// sync under way, if any, and then for its own.
	WALFsync Latencies
}

// Latencies is a latency histogram: Count observations adding up to Sum, and for each bound
// Le of Buckets (ascending) the observations at most Le (cumulative, as Prometheus').
type Latencies struct {
	Count   uint64
	Sum     time.Duration
	Buckets []LatencyBucket
}

// LatencyBucket is one bound of a Latencies histogram.
type LatencyBucket struct {
	Le    time.Duration
	Count uint64 // observations ≤ Le
}

// fsyncFineBelow and fsyncCoarse choose the buckets of Metrics.WALFsync among Pebble's
// (pebble.FsyncLatencyBuckets: every 100 µs up to 5 ms, then 50 exponential ones up to 10 s,
// too many to export per shard): every one up to fsyncFineBelow, where a healthy disk's
// syncs fall, then the first at or above each of fsyncCoarse.
var (
	fsyncFineBelow = time.Millisecond
	fsyncCoarse    = []time.Duration{2500 * time.Microsecond, 5 * time.Millisecond,
		10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
		250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2500 * time.Millisecond,
		5 * time.Second, 10 * time.Second}
)

// latencies reads h, a histogram of Pebble's whose observations are nanoseconds, into
// Latencies with the buckets fsyncFineBelow and fsyncCoarse choose (zero when h is nil).
func latencies(h prometheus.Histogram) Latencies {
	if h == nil {
		return Latencies{}
	}
	var m dto.Metric
	if err := h.Write(&m); err != nil || m.GetHistogram() == nil {
		return Latencies{}
	}
	ph := m.GetHistogram()
	l := Latencies{Count: ph.GetSampleCount(), Sum: time.Duration(ph.GetSampleSum())}
	next := 0 // the first of fsyncCoarse not yet covered
	for _, b := range ph.GetBucket() {
		le := time.Duration(b.GetUpperBound())
		keep := le > 0 && le <= fsyncFineBelow
		for next < len(fsyncCoarse) && le >= fsyncCoarse[next] {
			keep, next = true, next+1
		}
		if keep {
			l.Buckets = append(l.Buckets, LatencyBucket{Le: le, Count: b.GetCumulativeCount()})
		}
	}
	return l
}

// Metrics returns a summary of the DB's current Pebble metrics (ErrClosed after Close).
func (db *DB) Metrics() (Metrics, error) {
	if db.closed.Load() {
		return Metrics{}, ErrClosed
	}
	s := summarize(db.pdb.Metrics())
	s.WriteStalls = db.events.writeStalls.Load()
	s.DiskSlow = db.events.diskSlow.Load()
	s.SyncedCommits = db.pacer.applied.Load()
	s.WALSyncs = db.pacer.syncs.Load()
	s.IDCacheHits, s.IDCacheMisses = db.ids.hits.Load(), db.ids.misses.Load()
	if db.docs != nil {
		s.DocCacheHits, s.DocCacheMisses, s.DocCacheBytes = db.docs.hits.Load(), db.docs.misses.Load(), db.docs.size()
		s.DocCacheWrites, s.DocCacheMarkersSkipped = db.docs.writes.Load(), db.docs.markersSkipped.Load()
	}
	if p, ok, err := db.OldestChange(); err == nil && ok {
		s.ChangesOldest = p.TS
	}
	s.ChangesBytes, _ = db.ChangesDiskUsage(0)
	return s, nil
}

// PebbleMetrics returns Pebble's full metrics, for diagnostics that need more than Metrics.
func (db *DB) PebbleMetrics() (*pebble.Metrics, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	return db.pdb.Metrics(), nil
}

// summarize picks the fields of Metrics out of Pebble's.
func summarize(m *pebble.Metrics) Metrics {
	total := m.Total()
	return Metrics{
		DiskBytes:        m.DiskSpaceUsage(),
		SSTableBytes:     uint64(total.TablesSize),
		WALBytes:         m.WAL.Size,
		MemTableBytes:    m.MemTable.Size,
		MemTables:        m.MemTable.Count,
		BlockCacheBytes:  m.BlockCache.Size,
		BlockCacheHits:   m.BlockCache.Hits,
		BlockCacheMisses: m.BlockCache.Misses,
		Flushes:          m.Flush.Count,
		Compactions:      m.Compact.Count,
		CompactionDebt:   m.Compact.EstimatedDebt,
		ReadAmp:          m.ReadAmp(),
		Snapshots:        m.Snapshots.Count,
		WALFsync:         latencies(m.LogWriter.FsyncLatency),
	}
}
