package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sameStripeIDs returns n ids whose documents (coll, hash) share one idCache stripe.
func sameStripeIDs(coll CollID, hash uint64, n int) [][]byte {
	want := idKeyOf(AppendDocKey(nil, coll, hash, idN(0))).stripe()
	ids := [][]byte{idN(0)}
	for i := 1; len(ids) < n; i++ {
		if idKeyOf(AppendDocKey(nil, coll, hash, idN(i))).stripe() == want {
			ids = append(ids, idN(i))
		}
	}
	return ids
}

// TestDocCacheWriteThroughConcurrent: writers that do not take turns set, delete and
// range-delete a few documents of one stripe (the same documents, and others the same words
// cover), while readers keep them in the cache. Whenever the writers stop, every document reads
// through the cache as Pebble holds it: a batch that stored its version after another batch's
// later write of the same document would be caught here.
func TestDocCacheWriteThroughConcurrent(t *testing.T) {
	db := openMem(t)
	var pause atomic.Uint64
	db.afterApply = func() { // between Pebble's apply and end: where batches overtake each other
		switch pause.Add(1) % 4 {
		case 0:
			runtime.Gosched()
		case 1:
			time.Sleep(time.Duration(pause.Load()%7) * time.Microsecond)
		}
	}
	const (
		coll    = CollID(4)
		hash    = uint64(9)
		writers = 4
		rounds  = 60
		perRd   = 25
	)
	ids := sameStripeIDs(coll, hash, 4)
	stopReaders := readUntilStopped(3, func(r int) func() bool {
		rng := rand.New(rand.NewPCG(uint64(r), 3))
		return func() bool {
			_ = getVersion(t, db, coll, hash, ids[rng.IntN(len(ids))])
			return !t.Failed()
		}
	})
	defer stopReaders()
	var version atomic.Uint64
	for round := range rounds {
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for range perRd {
					writeSameStripe(t, db, rng, coll, hash, ids, &version)
				}
			}()
		}
		wg.Wait()
		for _, id := range ids { // quiet: the cache must agree with Pebble
			want, err := db.readOps.getDocKey(AppendDocKey(nil, coll, hash, id), nil)
			if errors.Is(err, ErrNotFound) {
				want = nil
			} else if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				got, err := db.GetDoc(coll, hash, id, nil)
				if errors.Is(err, ErrNotFound) {
					got = nil
				} else if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("round %d: document %x reads version %x, Pebble holds %x", round, id, got, want)
				}
			}
		}
	}
	if db.docs.writes.Load() == 0 || db.docs.hits.Load() == 0 {
		t.Fatalf("%d documents written through, %d hits: the test did not test the write-through",
			db.docs.writes.Load(), db.docs.hits.Load())
	}
}

// writeSameStripe commits one batch of TestDocCacheWriteThroughConcurrent: mostly a set of one
// document to a new version, sometimes two documents, a set then a delete of one, or a range
// deletion of them all.
func writeSameStripe(t *testing.T, db *DB, rng *rand.Rand, coll CollID, hash uint64, ids [][]byte, version *atomic.Uint64) {
	b := db.NewBatch()
	defer b.Close()
	id := ids[rng.IntN(len(ids))]
	switch n := rng.IntN(20); {
	case n == 0:
		if err := b.DeleteDocRange(coll, hash, hash); err != nil {
			t.Error(err)
			return
		}
	case n == 1:
		b.SetDoc(coll, hash, id, docVersion(version.Add(1), 40))
		b.DeleteDoc(coll, hash, id)
	case n < 5:
		b.SetDoc(coll, hash, id, docVersion(version.Add(1), 40))
		b.SetDoc(coll, hash, ids[rng.IntN(len(ids))], docVersion(version.Add(1), 40))
	default:
		b.SetDoc(coll, hash, id, docVersion(version.Add(1), 40))
	}
	if err := b.Commit(false); err != nil {
		t.Error(err)
	}
}

// TestDocCacheWriteThroughAfterFlush: a retryable update's batch sets its document, then its
// transaction record, whose write flushes the buffered ones into the Pebble batch (direct),
// then may set more documents. The batch stores its documents from its sortBuf, where SetDoc
// put them, so a flush must leave them there: each document then reads from the cache as the
// batch wrote it, not as bytes a later write put in the same place.
func TestDocCacheWriteThroughAfterFlush(t *testing.T) {
	db := openMem(t)
	const coll, hash = CollID(3), uint64(5)
	ids := [][]byte{idN(1), idN(2), idN(3)}
	b := db.NewBatch()
	for i, id := range ids {
		b.SetDoc(coll, hash, id, docVersion(uint64(i+1), 64))
	}
	mustCommit(t, b)
	for _, id := range ids { // the cache holds every document
		for range 2 {
			_ = getVersion(t, db, coll, hash, id)
		}
	}
	written := db.docs.writes.Load()
	b = db.NewBatch()
	b.SetDoc(coll, hash, ids[0], docVersion(10, 64))
	b.SetTxnRecord(bytes.Repeat([]byte{7}, 16), []byte("record"))
	if b.Len() != b.pb.Len() { // what the flush kept is not pending
		t.Fatalf("after the flush: Len %d, the Pebble batch's %d", b.Len(), b.pb.Len())
	}
	b.SetDoc(coll, hash, ids[1], docVersion(20, 200)) // larger: would overwrite ids[0]'s bytes
	b.SetDoc(coll, hash, ids[2], docVersion(30, 64))
	mustCommit(t, b)
	if got := db.docs.writes.Load() - written; got != 3 {
		t.Fatalf("%d documents written through, want 3", got)
	}
	hits := db.docs.hits.Load()
	for i, v := range []uint64{10, 20, 30} {
		want, err := db.readOps.getDocKey(AppendDocKey(nil, coll, hash, ids[i]), nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.GetDoc(coll, hash, ids[i], nil)
		if err != nil || !bytes.Equal(got, want) || binary.BigEndian.Uint64(got) != v {
			t.Fatalf("document %d reads %x (%v) from the cache, Pebble holds %x", i, got, err, want)
		}
	}
	if got := db.docs.hits.Load() - hits; got != 3 {
		t.Fatalf("%d of 3 reads hit the cache", got)
	}
}
