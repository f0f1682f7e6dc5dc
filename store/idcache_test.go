package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// idHashes returns IDIndexHashes(coll, id) and fails the test on an error.
func idHashes(t testing.TB, db *DB, coll CollID, id []byte) []uint64 {
	t.Helper()
	hs, err := db.IDIndexHashes(coll, id, nil)
	if err != nil {
		t.Fatalf("IDIndexHashes: %v", err)
	}
	return hs
}

// cachedAnswers counts the answers the DB's _id cache holds.
func cachedAnswers(db *DB) int {
	n := 0
	for i := range db.ids.shards {
		s := &db.ids.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// TestIDIndexHashesFollowsWrites checks that every kind of write of _id index entries is seen
// by the next lookup, although the lookups before it were answered from the cache.
func TestIDIndexHashesFollowsWrites(t *testing.T) {
	db := openMem(t)
	const coll = CollID(7)
	id, other := idN(1), idN(2)
	set := func(hash uint64, id []byte) {
		b := db.NewBatch()
		b.SetIndex(coll, IDIndexID, id, hash, id)
		mustCommit(t, b)
	}
	want := func(step string, id []byte, hs ...uint64) {
		t.Helper()
		for range 2 { // the read, then the cache
			if got := idHashes(t, db, coll, id); !slices.Equal(got, hs) {
				t.Fatalf("%s: IDIndexHashes = %v, want %v", step, got, hs)
			}
		}
	}

	want("empty", id)
	if n := cachedAnswers(db); n != 1 {
		t.Fatalf("the cache holds %d answers after one lookup, want 1 (an _id held nowhere is an answer)", n)
	}
	set(10, id)
	hits := db.ids.hits.Load()
	want("inserted at 10", id, 10)
	if got := db.ids.hits.Load() - hits; got != 1 {
		t.Fatalf("two lookups after the insert: %d answered from the cache, want 1 (the second)", got)
	}
	set(20, id) // the same _id in another partition (sharded on another field)
	set(5, other)
	want("inserted at 20", id, 10, 20)
	want("another _id", other, 5)

	b := db.NewBatch()
	b.DeleteIndex(coll, IDIndexID, id, 10, id)
	mustCommit(t, b)
	want("deleted at 10", id, 20)
	want("another _id after the delete", other, 5)

	b = db.NewBatch()
	b.SetIndex(coll, 3, id, 30, id) // a secondary index's entry: not an _id's
	mustCommit(t, b)
	want("secondary entry", id, 20)

	b = db.NewBatch()
	if _, err := b.DeleteIndexEntriesInRange(coll, IDIndexID, 15, 25); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, b)
	want("range-deleted", id)
	want("outside the deleted range", other, 5)

	set(40, id)
	want("inserted at 40", id, 40)
	b = db.NewBatch()
	b.DeleteIndexData(coll, IDIndexID)
	mustCommit(t, b)
	want("index dropped", id)
	want("index dropped, another _id", other)

	set(50, id)
	want("inserted at 50", id, 50)
	if err := db.DeleteCollectionData(coll); err != nil {
		t.Fatal(err)
	}
	want("collection deleted", id)

	b = db.NewBatch()
	b.SetIndex(coll, IDIndexID, id, 60, id)
	b.Close() // never committed
	want("uncommitted", id)
}

// TestIDIndexHashesConcurrentWriters races lookups that fill the cache against commits of
// the entries they look up: each writer owns its _ids and, after each commit, must read what
// it wrote, however the readers' answers interleaved with its commit. Run it under -race.
func TestIDIndexHashesConcurrentWriters(t *testing.T) {
	db := openMem(t)
	const (
		coll    = CollID(3)
		writers = 4
		ids     = 8 // per writer: few, so that readers keep caching the ones being written
		rounds  = 300
	)
	stopReaders := readUntilStopped(4, func(r int) func() bool {
		rng := rand.New(rand.NewPCG(uint64(r), 1))
		var dst []uint64
		return func() bool {
			var err error
			if dst, err = db.IDIndexHashes(coll, idN(rng.IntN(writers*ids)), dst[:0]); err != nil {
				t.Error(err)
				return false
			}
			return true
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			at := make([]uint64, ids) // each _id's hash; 0: absent
			for i := range rounds {
				n := rng.IntN(ids)
				id := idN(w*ids + n)
				b := db.NewBatch()
				if at[n] != 0 {
					b.DeleteIndex(coll, IDIndexID, id, at[n], id)
					at[n] = 0
				} else {
					at[n] = uint64(i + 1)
					b.SetIndex(coll, IDIndexID, id, at[n], id)
				}
				if err := b.Commit(false); err != nil {
					errs <- err
					return
				}
				b.Close()
				hs, err := db.IDIndexHashes(coll, id, nil)
				var want []uint64
				if at[n] != 0 {
					want = []uint64{at[n]}
				}
				if err == nil && !slices.Equal(hs, want) {
					err = fmt.Errorf("writer %d, round %d: IDIndexHashes after its commit = %v, want %v", w, i, hs, want)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	stopReaders()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestIDCacheBounded checks that the cache forgets answers beyond its bound, and that an
// answer forgotten is read again.
func TestIDCacheBounded(t *testing.T) {
	db := openMem(t)
	const coll = CollID(9)
	b := db.NewBatch()
	b.SetIndex(coll, IDIndexID, idN(0), 77, idN(0))
	mustCommit(t, b)
	n := idCacheAnswers + 1000
	for i := range n {
		idHashes(t, db, coll, idN(i))
	}
	if got, most := cachedAnswers(db), idCacheAnswers; got > most {
		t.Fatalf("the cache holds %d answers, more than its bound %d", got, most)
	}
	if got := idHashes(t, db, coll, idN(0)); !slices.Equal(got, []uint64{77}) {
		t.Fatalf("IDIndexHashes(0) = %v after the cache filled, want [77]", got)
	}
}

// TestIDIndexHashesBatchVisibleAtOnce: a batch's _id entries become visible together, through
// the cache as through the index. A writer commits batches that move _ids x and y to the same
// new hash (the round); readers look up x, then y: y may be newer than x (a later batch
// committed between the lookups), never older. A cache that invalidated y's answer only after
// Pebble made the batch visible would serve an old y after a new x.
func TestIDIndexHashesBatchVisibleAtOnce(t *testing.T) {
	db := openMem(t)
	db.afterApply = func() { time.Sleep(20 * time.Microsecond) }
	const coll = CollID(5)
	x, y := idN(1), idN(2)
	round := func(id []byte) uint64 {
		hs, err := db.IDIndexHashes(coll, id, nil)
		if err != nil || len(hs) > 1 {
			t.Errorf("IDIndexHashes: %v, %v; want one hash at most", hs, err)
			return 0
		}
		if len(hs) == 0 {
			return 0
		}
		return hs[0]
	}
	stopReaders := readUntilStopped(2, func(int) func() bool {
		return func() bool {
			rx := round(x)
			if ry := round(y); ry < rx {
				t.Errorf("x at round %d, then y at round %d: the batch was seen half", rx, ry)
				return false
			}
			return true
		}
	})
	for i := uint64(1); i <= 400; i++ {
		b := db.NewBatch()
		for _, id := range [][]byte{x, y} {
			if i > 1 {
				b.DeleteIndex(coll, IDIndexID, id, i-1, id)
			}
			b.SetIndex(coll, IDIndexID, id, i, id)
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if i%10 == 0 {
			time.Sleep(50 * time.Microsecond) // a pause, in which readers fill the cache
		}
	}
	stopReaders()
	if db.ids.hits.Load() == 0 {
		t.Error("no lookup was answered from the cache: the test tested the index alone")
	}
}

// readUntilStopped starts n readers, reader r calling the function newReader(r) returns until
// it returns false or the returned stop is called; stop waits for them.
func readUntilStopped(n int, newReader func(r int) func() bool) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r := range n {
		read := newReader(r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if !read() {
					return
				}
			}
		}()
	}
	return func() { close(done); wg.Wait() }
}
