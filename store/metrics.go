package store

import "github.com/cockroachdb/pebble/v2"

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
	SyncedCommits    int64 // batches committed with a WAL sync since Open
	WALSyncs         int64 // WAL syncs since Open: SyncedCommits / WALSyncs is the group-commit size
	IDCacheHits      int64 // _id lookups without the hash answered from the cache (idcache.go)
	IDCacheMisses    int64 // _id lookups without the hash that read the _id index
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
	}
}
