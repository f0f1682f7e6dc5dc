package sharding

import (
	"bytes"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// A move's copy (step 1 in move.go): the destination's range is made equal to the source's
// by a merge of the two read from snapshots, so a pass copies what differs and deletes what
// the destination holds in excess. The first pass copies everything; catch-up passes
// (catchup.go) diff only the documents the source's write log names.

// syncRange makes the documents and index entries of ci on shard to in [lo, hi) equal to
// those on shard from, by a merge of the two ranges read from snapshots. pace, when not
// nil, runs before each batch written to shard to.
func (m *Manager) syncRange(ci *catalog.Coll, from, to int, lo, hi uint64, pace func()) (copyCount, error) {
	return m.syncPass(ci, from, to, pace, func(src, dst catalog.Reader, rs *rangeSyncer) (copyCount, error) {
		return m.diffRange(ci.Meta.ID, src, dst, lo, hi, rs)
	})
}

// syncPass runs one pass of a local move: diff with snapshots of shards from and to, taken
// now, and a rangeSyncer writing to shard to (pace runs before each of its batches).
func (m *Manager) syncPass(ci *catalog.Coll, from, to int, pace func(), diff func(src, dst catalog.Reader, rs *rangeSyncer) (copyCount, error)) (copyCount, error) {
	src, err := m.cat.Shards()[from].NewSnapshot()
	if err != nil {
		return copyCount{}, catalog.StoreError(err)
	}
	defer func() { _ = src.Close() }()
	dst, err := m.cat.Shards()[to].NewSnapshot()
	if err != nil {
		return copyCount{}, catalog.StoreError(err)
	}
	defer func() { _ = dst.Close() }()
	rs := &rangeSyncer{ci: ci, db: m.cat.Shards()[to], pace: pace}
	defer rs.Close()
	return diff(src, dst, rs)
}

// rangeSink receives the differences diffRange finds: put replaces document (hash, id),
// old being what the destination holds (nil: nothing) and doc what it must hold (nil:
// nothing); maybeFlush and flush pass what was put on.
type rangeSink interface {
	put(hash uint64, id []byte, old, doc []byte) error
	maybeFlush() error
	flush() error
}

// diffRange calls sink.put for every document of coll in [lo, hi) that differs between src
// and base (what the destination holds; nil: nothing), in key order, and flushes the sink.
// It counts the documents (_ids) it compared and those it put.
func (m *Manager) diffRange(coll store.CollID, src, base catalog.Reader, lo, hi uint64, sink rangeSink) (n copyCount, err error) {
	si, err := src.NewDocIter(coll, lo, hi)
	if err != nil {
		return n, catalog.StoreError(err)
	}
	defer func() { _ = si.Close() }()
	var di catalog.DocIter
	if base != nil {
		if di, err = base.NewDocIter(coll, lo, hi); err != nil {
			return n, catalog.StoreError(err)
		}
		defer func() { _ = di.Close() }()
	}
	sOK, dOK := si.Next(), di != nil && di.Next()
	for ; sOK || dOK; n.examined++ {
		cmp := 0
		switch {
		case !sOK:
			cmp = 1
		case !dOK:
			cmp = -1
		default:
			cmp = compareDocKeys(si.Hash(), si.ID(), di.Hash(), di.ID())
		}
		var err error
		switch {
		case cmp < 0: // only on the source: copy
			err = sink.put(si.Hash(), si.ID(), nil, si.Doc())
			sOK = si.Next()
			n.put++
		case cmp > 0: // only on the destination: delete
			err = sink.put(di.Hash(), di.ID(), di.Doc(), nil)
			dOK = di.Next()
			n.put++
		default:
			if !bytes.Equal(si.Doc(), di.Doc()) {
				err = sink.put(si.Hash(), si.ID(), di.Doc(), si.Doc())
				n.put++
			}
			sOK, dOK = si.Next(), di.Next()
		}
		if err == nil {
			err = sink.maybeFlush()
		}
		if err == nil {
			err = m.interrupted(n.examined)
		}
		if err != nil {
			return n, err
		}
	}
	if err := si.Err(); err != nil {
		return n, catalog.StoreError(err)
	}
	if di != nil {
		if err := di.Err(); err != nil {
			return n, catalog.StoreError(err)
		}
	}
	return n, sink.flush()
}

// compareDocKeys orders documents as the store does: by hash, then encoded _id.
func compareDocKeys(h1 uint64, id1 []byte, h2 uint64, id2 []byte) int {
	switch {
	case h1 < h2:
		return -1
	case h1 > h2:
		return 1
	}
	return bytes.Compare(id1, id2)
}

// rangeSyncer writes one shard's side of a syncRange in batches.
type rangeSyncer struct {
	ci *catalog.Coll
	db catalog.Shard
	b  catalog.Batch
	// pace, when not nil, runs before each batch commits (Manager.pacer).
	pace func()
}

// put replaces the document (hash, id) on the destination: old is what it holds (nil:
// nothing), doc what it must hold (nil: nothing). Index entries and stats follow.
func (rs *rangeSyncer) put(hash uint64, id []byte, old, doc []byte) error {
	if rs.b == nil {
		rs.b = rs.db.NewBatch()
	}
	coll := rs.ci.Meta.ID
	for _, xi := range rs.ci.WriteIndexes {
		if xi.IsID && !rs.ci.IDIndexed {
			continue
		}
		if old != nil {
			if err := xi.Keys(old, func(k []byte) error {
				rs.b.DeleteIndex(coll, xi.Meta.ID, k, hash, id)
				return nil
			}); err != nil {
				return err
			}
		}
		if doc != nil {
			if err := xi.Keys(doc, func(k []byte) error {
				rs.b.SetIndex(coll, xi.Meta.ID, k, hash, id)
				return nil
			}); err != nil {
				return err
			}
		}
	}
	if old != nil {
		rs.b.AddStats(coll, hash, -1, -int64(len(old)))
		if doc == nil {
			rs.b.DeleteDoc(coll, hash, id)
		}
	}
	if doc != nil {
		rs.b.SetDoc(coll, hash, id, doc)
		rs.b.AddStats(coll, hash, 1, int64(len(doc)))
	}
	return nil
}

// maybeFlush commits the batch when it has grown large.
func (rs *rangeSyncer) maybeFlush() error {
	if rs.b != nil && (rs.b.Len() > 4<<20 || rs.b.Count() > 4096) {
		return rs.flush()
	}
	return nil
}

// flush commits the batch, synced: after the last flush the copy is durable.
func (rs *rangeSyncer) flush() error {
	if rs.b == nil {
		return nil
	}
	b := rs.b
	rs.b = nil
	defer b.Close()
	if b.Empty() {
		return nil
	}
	if rs.pace != nil {
		rs.pace()
	}
	return catalog.StoreError(b.Commit(true))
}

// Close drops an uncommitted batch.
func (rs *rangeSyncer) Close() {
	if rs.b != nil {
		rs.b.Close()
		rs.b = nil
	}
}
