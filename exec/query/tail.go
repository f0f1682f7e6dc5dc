package query

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Tail is the stream of a tailable cursor on a capped collection (catalog.Capped): a scan in
// record-id order that remembers the last document it examined. At the end of what is
// committed Next returns nil, and the cursor stays open: the next call reads from a fresh
// snapshot, after that position, what was inserted meanwhile. When the document at the
// position is gone (the cap evicted it, or a delete), the cursor cannot know where to go on
// and fails with CappedPositionLost, as MongoDB's collection scan does.
//
//	t := g.OpenTail(ci, filter)
//	for doc, err := t.Next(ctx); doc != nil; doc, err = t.Next(ctx) { ... } // what is there
//	doc, err := t.Next(ctx) // later: what came since, or nil
type Tail struct {
	g  *Engine
	ci *catalog.Coll
	f  *match.Filter
	// lastHash and lastID are the position: the last document examined (has is false
	// before the first).
	lastHash uint64
	lastID   []byte
	has      bool
	snap     catalog.Snapshot
	it       catalog.DocIter
	closed   bool
	Stats    ScanStats
}

// OpenTail returns the tailable stream of capped collection ci, at its start.
func (g *Engine) OpenTail(ci *catalog.Coll, f *match.Filter) *Tail {
	return &Tail{g: g, ci: ci, f: f}
}

// Next implements stream.Stream. It returns nil at the end of the data committed when the
// current pass started; the call after that starts a new pass.
func (t *Tail) Next(ctx context.Context) (bsoncore.Document, error) {
	if t.closed {
		return nil, nil
	}
	if t.it == nil {
		if err := t.reopen(); err != nil {
			return nil, err
		}
	}
	for t.it.Next() {
		t.lastHash, t.lastID, t.has = t.it.Hash(), append(t.lastID[:0], t.it.ID()...), true
		doc := bsoncore.Document(t.it.Doc())
		t.Stats.DocsExamined++
		if t.Stats.DocsExamined%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ok, err := t.f.MatchErr(doc)
		if err != nil {
			return nil, err
		}
		if ok {
			t.Stats.Returned++
			t.Stats.BytesReturned += int64(len(doc))
			return doc, nil
		}
	}
	err := t.it.Err()
	t.release()
	return nil, catalog.StoreError(err)
}

// reopen starts a pass: a snapshot of the collection's shard, positioned after the last
// document examined, which must still be there.
func (t *Tail) reopen() error {
	ci := t.g.cat.Refresh(t.ci)
	t.ci = ci
	snap, err := t.g.shardList()[ci.Map.Partition(0).Shard].NewSnapshot()
	if err != nil {
		return catalog.StoreError(err)
	}
	if t.has {
		ok, err := snap.HasDoc(ci.Meta.ID, t.lastHash, t.lastID)
		if err != nil || !ok {
			_ = snap.Close()
			if err != nil {
				return catalog.StoreError(err)
			}
			return mongoerr.New(mongoerr.CappedPositionLost,
				"Executor error during getMore :: caused by :: CollectionScan died due to position in capped collection being deleted. Last seen record id: RecordId(%d)", t.lastHash)
		}
	}
	it, err := snap.NewDocIter(ci.Meta.ID, t.lastHash, 0)
	if err != nil {
		_ = snap.Close()
		return catalog.StoreError(err)
	}
	if t.has {
		it.SeekGE(t.lastHash, t.lastID) // on the last document (it is there): Next moves past it
	}
	t.snap, t.it = snap, it
	return nil
}

// Yield ends the current pass: the next Next reads a fresh snapshot from the position, after
// checking that the document there is still there. A cursor yields after each batch, as
// MongoDB's saves and restores its position between getMores.
func (t *Tail) Yield() { t.release() }

// release closes the current pass.
func (t *Tail) release() {
	if t.it != nil {
		_ = t.it.Close()
		t.it = nil
	}
	if t.snap != nil {
		_ = t.snap.Close()
		t.snap = nil
	}
}

// Close implements stream.Stream.
func (t *Tail) Close() {
	t.closed = true
	t.release()
}
