package txn

import (
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/clock"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Snapshot reads: find, aggregate and distinct with readConcern {level: "snapshot"} outside
// a transaction read one state of every shard, named by a cluster time (atClusterTime):
// without atClusterTime the present one, whose time the reply returns (in the cursor
// document, or at the top level of distinct's reply); with it, the state at that time. A
// cursor's getMores continue on its snapshot. Snapshot sessions rely on this: the driver
// sends the atClusterTime of the session's first read with every later one.
//
// Pebble keeps no history of its own, so cleave keeps the snapshots its snapshot reads took
// (snapshotHistory), each under its cluster time, for minSnapshotHistoryWindowInSeconds
// (300 s, as MongoDB's window). A snapshot taken at time T holds every write acknowledged
// with an operationTime up to T (the clock is read before the snapshot is taken, and a
// write ticks the clock after it committed), and no write that started after it. A read at
// a time T: a snapshot kept for T answers it; if no write was acknowledged after T, the
// present state is the state at T and a new snapshot answers it (kept under T); otherwise
// cleave holds no state for T and answers SnapshotTooOld 239, as MongoDB does for a time
// before its window. A time ahead of the cluster time answers InvalidOptions 72, as MongoDB
// does.

// maxSnapshotHistory bounds the snapshots kept at once: each pins a Pebble snapshot per
// shard, whose overwritten versions compactions then keep. Beyond it the oldest goes.
const maxSnapshotHistory = 1024

// Snapshots keeps the snapshots of snapshot reads, by cluster time.
type Snapshots struct {
	// cat and query are the shards and the read engine snapshots are taken of and read with.
	cat   *catalog.Catalog
	query *query.Engine
	// clock is the cluster clock reads are timed by; window is the history kept
	// (minSnapshotHistoryWindowInSeconds); moves counts the partition moves done, which a
	// multi-shard snapshot must not span.
	clock   *clock.Clock
	window  func() time.Duration
	moves   func() int64
	mu      sync.Mutex
	entries map[uint64]*SnapRead
	oldest  []*SnapRead // in the order they were taken
}

// SnapRead is the state of every shard at one cluster time.
type SnapRead struct {
	At      uint64 // cluster time
	created time.Time
	moves   int64 // partition moves done when it was taken
	snaps   []catalog.Snapshot
	// refs counts the history's own reference and the readers'; the snapshots close at 0.
	refs   atomic.Int32
	Engine *query.Engine // reads over the snapshots
}

// pin takes a reference unless the entry is closed.
func (s *SnapRead) pin() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release drops a reference, closing the snapshots with the last.
func (s *SnapRead) Release() {
	if s.refs.Add(-1) == 0 {
		for _, sn := range s.snaps {
			_ = sn.Close()
		}
	}
}

// tsString prints a cluster time as MongoDB's Timestamp::toString does.
func tsString(t uint64) string {
	return bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, uint32(t>>32), uint32(t))})
}

// errSnapshotTooOld is MongoDB's answer to a read at a time it keeps no history for.
func errSnapshotTooOld(t uint64) error {
	return mongoerr.New(mongoerr.SnapshotTooOld, "Read timestamp %s is older than the oldest available timestamp.", tsString(t))
}

// ReadConcernSnapshot parses the readConcern of body as far as snapshot reads go: whether
// its level is snapshot, and its atClusterTime.
func ReadConcernSnapshot(readConcern bsoncore.Value) (snapshot bool, at uint64, hasAt bool, err error) {
	rc, ok := readConcern.DocumentOK()
	if !ok {
		return false, 0, false, nil
	}
	level, _ := rc.Lookup("level").StringValueOK()
	v, lerr := rc.LookupErr("atClusterTime")
	if lerr == nil {
		t, i, ok := v.TimestampOK()
		if !ok {
			return false, 0, false, mongoerr.New(mongoerr.TypeMismatch,
				"BSON field 'readConcern.atClusterTime' is the wrong type '%s', expected type 'timestamp'", bsonx.TypeName(v.Type))
		}
		if level != "snapshot" {
			return false, 0, false, mongoerr.New(mongoerr.InvalidOptions, "atClusterTime field can be set only if level is equal to snapshot")
		}
		if _, err := rc.LookupErr("afterClusterTime"); err == nil {
			return false, 0, false, mongoerr.New(mongoerr.InvalidOptions, "Can not specify both afterClusterTime and atClusterTime")
		}
		at, hasAt = uint64(t)<<32|uint64(i), true
	}
	return level == "snapshot", at, hasAt, nil
}

// NewSnapshots returns the snapshot history of cat's shards, read with q, timed by c; window
// is the history kept, moves the count of partition moves done.
func NewSnapshots(cat *catalog.Catalog, q *query.Engine, c *clock.Clock, window func() time.Duration, moves func() int64) *Snapshots {
	return &Snapshots{cat: cat, query: q, clock: c, window: window, moves: moves}
}

// Acquire returns the entry for a read at cluster time at (hasAt), or at the present, with
// a reference the caller drops.
func (h *Snapshots) Acquire(at uint64, hasAt bool, now time.Time) (*SnapRead, error) {
	window := h.window()
	cur := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pruneLocked(now, window)
	if !hasAt {
		at = cur
	} else {
		if at > cur {
			return nil, mongoerr.New(mongoerr.InvalidOptions,
				"readConcern atClusterTime value must not be greater than the current clusterTime. Requested clusterTime: %s; current clusterTime: %s",
				tsString(at), tsString(cur))
		}
		if int64(at>>32) < now.Add(-window).Unix() {
			return nil, errSnapshotTooOld(at)
		}
	}
	if ent := h.entries[at]; ent != nil && ent.pin() {
		if len(ent.snaps) > 1 && h.moves() != ent.moves {
			ent.Release()
			return nil, mongoerr.New(mongoerr.SnapshotUnavailable,
				"Unable to read from a snapshot due to pending collection catalog changes; please retry the operation. "+
					"A partition moved to another shard after the snapshot at %s was taken.", tsString(at))
		}
		return ent, nil
	}
	if hasAt && h.clock.LastWrite() > at {
		return nil, errSnapshotTooOld(at)
	}
	return h.takeLocked(at, now)
}

// takeLocked takes a snapshot of every shard and keeps it under cluster time at.
func (h *Snapshots) takeLocked(at uint64, now time.Time) (*SnapRead, error) {
	shards := h.cat.Shards()
	ent := &SnapRead{At: at, created: now, moves: h.moves(), snaps: make([]catalog.Snapshot, 0, len(shards))}
	for _, sh := range shards {
		sn, err := sh.NewSnapshot()
		if err != nil {
			for _, s := range ent.snaps {
				_ = s.Close()
			}
			return nil, catalog.StoreError(err)
		}
		ent.snaps = append(ent.snaps, sn)
	}
	views := make([]catalog.Shard, len(shards))
	for i, sh := range shards {
		sn := ent.snaps[i]
		views[i] = pinnedView{live: sh, pin: func() (catalog.Reader, func(), error) {
			if !ent.pin() {
				return nil, nil, errSnapshotTooOld(at)
			}
			return sn, ent.Release, nil
		}}
	}
	ent.Engine = h.query.WithShards(views)
	ent.refs.Store(2) // the history's and the caller's
	if h.entries == nil {
		h.entries = map[uint64]*SnapRead{}
	}
	h.entries[at] = ent
	h.oldest = append(h.oldest, ent)
	if len(h.oldest) > maxSnapshotHistory {
		h.dropLocked(1)
	}
	return ent, nil
}

// pruneLocked drops the entries taken more than window before now.
func (h *Snapshots) pruneLocked(now time.Time, window time.Duration) {
	n := 0
	for n < len(h.oldest) && now.Sub(h.oldest[n].created) > window {
		n++
	}
	h.dropLocked(n)
}

// dropLocked drops the n oldest entries.
func (h *Snapshots) dropLocked(n int) {
	for _, ent := range h.oldest[:n] {
		if h.entries[ent.At] == ent {
			delete(h.entries, ent.At)
		}
		ent.Release()
	}
	h.oldest = append(h.oldest[:0], h.oldest[n:]...)
}

// CloseAll drops every entry (the executor closes).
func (h *Snapshots) CloseAll() {
	h.mu.Lock()
	h.dropLocked(len(h.oldest))
	h.mu.Unlock()
}
