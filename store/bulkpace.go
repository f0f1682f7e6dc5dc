package store

import (
	"context"
	"time"
)

// Bulk writes and write stalls. Pebble stops every write of a DB while L0 holds
// l0StopWritesThreshold sublevels (until compactions bring it down), or while all its
// memtables are full. A partition move writes its copy into the destination shard as fast as
// it reads the source, on top of the clients' writes: during a moveChunk of 700,000–870,000
// documents under a two-shard insert (issue 13), the destination stopped writes 8 to 14
// times, for up to 0.85 s, and the clients' slowest insertMany took as long. PaceBulkWrite
// lets a bulk writer leave that room to the clients: it waits while the DB is close to a
// stall.

const (
	// l0StopWritesThreshold is Pebble's L0StopWritesThreshold. Pebble's default, 12, leaves
	// little room for a burst: mbench insert on two shards (32 threads, 120 s) with a
	// moveChunk 15 s in, the copy paced and its catch-ups not, stopped writes 23 times in
	// both runs, for 11.5 and 13.0 s in all, the longest 3.4 and 1.6 s (the slowest
	// insertMany 3.7 and 2.5 s); with 20, 5 and 4 times, 6.1 and 3.3 s, the longest 2.4 and
	// 1.5 s (insertMany 2.9 and 1.9 s). A deeper L0 costs reads more sublevels to merge
	// while it lasts; point reads skip most through the bloom filters.
	l0StopWritesThreshold = 20
	// bulkPaceMargin: a bulk batch waits while L0 is within this many sublevels of
	// l0StopWritesThreshold.
	bulkPaceMargin = 4
	// bulkPaceStep is how often a waiting bulk writer looks again.
	bulkPaceStep = 10 * time.Millisecond
)

// PaceBulkWrite waits, at most limit (or until ctx ends), while the DB is close to stopping
// writes: L0 within bulkPaceMargin sublevels of the stop, or every memtable but the one
// being written full. Bulk writers (a partition move's copy) call it before each batch. It
// returns how long it waited.
func (db *DB) PaceBulkWrite(ctx context.Context, limit time.Duration) time.Duration {
	if !db.nearStall() {
		return 0
	}
	start := time.Now()
	t := time.NewTimer(bulkPaceStep)
	defer t.Stop()
	for time.Since(start) < limit {
		select {
		case <-ctx.Done():
			return time.Since(start)
		case <-t.C:
		}
		if !db.nearStall() {
			break
		}
		t.Reset(bulkPaceStep)
	}
	return time.Since(start)
}

// nearStall reports whether the DB is close to a write stall (PaceBulkWrite).
func (db *DB) nearStall() bool {
	if db.closed.Load() {
		return false
	}
	m := db.pdb.Metrics()
	return int(m.Levels[0].Sublevels) >= l0StopWritesThreshold-bulkPaceMargin ||
		int(m.MemTable.Count) >= max(db.memTables-1, 2)
}
