package command

import (
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
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

// snapshotHistory keeps the snapshots of snapshot reads, by cluster time.
type snapshotHistory struct {
	mu      sync.Mutex
	entries map[uint64]*snapEntry
	oldest  []*snapEntry // in the order they were taken
}

// snapEntry is the state of every shard at one cluster time.
type snapEntry struct {
	at      uint64 // cluster time
	created time.Time
	moves   int64 // partition moves done when it was taken
	snaps   []catalog.Snapshot
	// refs counts the history's own reference and the readers'; the snapshots close at 0.
	refs   atomic.Int32
	engine *query.Engine // reads over the snapshots
}

// pin takes a reference unless the entry is closed.
func (s *snapEntry) pin() bool {
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

// unref drops a reference, closing the snapshots with the last.
func (s *snapEntry) unref() {
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

// readConcernSnapshot parses the readConcern of body as far as snapshot reads go: whether
// its level is snapshot, and its atClusterTime.
func readConcernSnapshot(readConcern bsoncore.Value) (snapshot bool, at uint64, hasAt bool, err error) {
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

// enterSnapshotRead sets r.snap for a snapshot read outside a transaction; release drops
// the command's reference (its cursor keeps its own).
func (e *Server) enterSnapshotRead(r *Request) (release func(), err error) {
	snapshot, at, hasAt, err := readConcernSnapshot(r.Generic(GenReadConcern))
	// A cursor reads the snapshot it was opened on: the driver sends the session's
	// readConcern with getMore and killCursors too.
	if err != nil || !snapshot || r.Txn != nil || e.Cat == nil || r.Name == "getMore" || r.Name == "killCursors" {
		return func() {}, err
	}
	if !r.Cmd.Has(SnapshotRead) {
		return nil, mongoerr.New(mongoerr.InvalidOptions,
			"Command %s does not support { readConcern: { level: \"snapshot\", provenance: \"clientSupplied\" } } :: caused by :: read concern not supported", r.Name)
	}
	ent, err := e.Snapshots.acquire(e, at, hasAt, time.Now())
	if err != nil {
		return nil, err
	}
	r.Snap = ent
	return ent.unref, nil
}

// acquire returns the entry for a read at cluster time at (hasAt), or at the present, with
// a reference the caller drops.
func (h *snapshotHistory) acquire(e *Server, at uint64, hasAt bool, now time.Time) (*snapEntry, error) {
	window := time.Duration(e.Knobs.SnapshotWindow.Load()) * time.Second
	cur := e.Clock.Now()
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
		if len(ent.snaps) > 1 && e.Shards.Moves() != ent.moves {
			ent.unref()
			return nil, mongoerr.New(mongoerr.SnapshotUnavailable,
				"Unable to read from a snapshot due to pending collection catalog changes; please retry the operation. "+
					"A partition moved to another shard after the snapshot at %s was taken.", tsString(at))
		}
		return ent, nil
	}
	if hasAt && e.Clock.LastWrite() > at {
		return nil, errSnapshotTooOld(at)
	}
	return h.takeLocked(e, at, now)
}

// takeLocked takes a snapshot of every shard and keeps it under cluster time at.
func (h *snapshotHistory) takeLocked(e *Server, at uint64, now time.Time) (*snapEntry, error) {
	shards := e.Cat.Shards()
	ent := &snapEntry{at: at, created: now, moves: e.Shards.Moves(), snaps: make([]catalog.Snapshot, 0, len(shards))}
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
			return sn, ent.unref, nil
		}}
	}
	ent.engine = e.Query.WithShards(views)
	ent.refs.Store(2) // the history's and the caller's
	if h.entries == nil {
		h.entries = map[uint64]*snapEntry{}
	}
	h.entries[at] = ent
	h.oldest = append(h.oldest, ent)
	if len(h.oldest) > maxSnapshotHistory {
		h.dropLocked(1)
	}
	return ent, nil
}

// pruneLocked drops the entries taken more than window before now.
func (h *snapshotHistory) pruneLocked(now time.Time, window time.Duration) {
	n := 0
	for n < len(h.oldest) && now.Sub(h.oldest[n].created) > window {
		n++
	}
	h.dropLocked(n)
}

// dropLocked drops the n oldest entries.
func (h *snapshotHistory) dropLocked(n int) {
	for _, ent := range h.oldest[:n] {
		if h.entries[ent.at] == ent {
			delete(h.entries, ent.at)
		}
		ent.unref()
	}
	h.oldest = append(h.oldest[:0], h.oldest[n:]...)
}

// closeAll drops every entry (the executor closes).
func (h *snapshotHistory) closeAll() {
	h.mu.Lock()
	h.dropLocked(len(h.oldest))
	h.mu.Unlock()
}

// appendAtClusterTime adds the time of r's snapshot read to its reply (the open document
// out, started at idx): in the cursor document of find and aggregate, at the top level of
// distinct's, where drivers look for it.
func (r *Request) appendAtClusterTime(out []byte, idx int) []byte {
	if r.Snap == nil {
		return out
	}
	t := r.Snap.at
	if r.Name == "distinct" {
		return bsoncore.AppendTimestampElement(out, "atClusterTime", uint32(t>>32), uint32(t))
	}
	doc := make(bsoncore.Document, len(out)-idx+1)
	copy(doc, out[idx:])
	bsoncore.UpdateLength(doc, 0, int32(len(doc)))
	elems, err := doc.Elements()
	if err != nil {
		return out
	}
	out = out[:idx+4]
	for _, el := range elems {
		cur, ok := el.Value().DocumentOK()
		if el.Key() != "cursor" || !ok {
			out = append(out, el...)
			continue
		}
		cidx, o := bsoncore.AppendDocumentElementStart(out, "cursor")
		celems, _ := cur.Elements()
		for _, ce := range celems {
			o = append(o, ce...)
			if k := ce.Key(); k == "firstBatch" || k == "nextBatch" {
				o = bsoncore.AppendTimestampElement(o, "atClusterTime", uint32(t>>32), uint32(t))
			}
		}
		out, _ = bsoncore.AppendDocumentEnd(o, cidx)
	}
	return out
}
