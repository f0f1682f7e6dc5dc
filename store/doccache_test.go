package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// docVersion returns a document holding version v (8 bytes), padded to size bytes.
func docVersion(v uint64, size int) []byte {
	d := binary.BigEndian.AppendUint64(nil, v)
	return append(d, bytes.Repeat([]byte{'p'}, max(size-8, 0))...)
}

// getVersion reads the version of document (coll, hash, id) through GetDoc: 0 when absent.
func getVersion(t testing.TB, db *DB, coll CollID, hash uint64, id []byte) uint64 {
	t.Helper()
	d, err := db.GetDoc(coll, hash, id, nil)
	if errors.Is(err, ErrNotFound) {
		return 0
	}
	if err != nil || len(d) < 8 {
		t.Errorf("GetDoc: %q, %v", d, err)
		return 0
	}
	return binary.BigEndian.Uint64(d)
}

// TestDocCacheFollowsWrites checks that every kind of write of a document is seen by the next
// read, although the reads before it were answered from the cache.
func TestDocCacheFollowsWrites(t *testing.T) {
	db := openMem(t)
	const coll, hash = CollID(7), uint64(42)
	id := idN(1)
	want := func(step string, v uint64) {
		t.Helper()
		for range 3 { // two misses (admission on the second), then the cache
			if got := getVersion(t, db, coll, hash, id); got != v {
				t.Fatalf("%s: version %d, want %d", step, got, v)
			}
		}
	}
	set := func(v uint64) {
		b := db.NewBatch()
		b.SetDoc(coll, hash, id, docVersion(v, 100))
		mustCommit(t, b)
	}
	set(1)
	want("inserted", 1)
	if db.docs.hits.Load() == 0 {
		t.Fatal("the third read of a document missed the cache")
	}
	set(2)
	want("updated", 2)
	b := db.NewBatch()
	b.DeleteDoc(coll, hash, id)
	mustCommit(t, b)
	want("deleted", 0)
	set(3)
	want("inserted again", 3)
	b = db.NewBatch()
	if err := b.DeleteDocRange(coll, 0, 0); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, b)
	want("range deleted", 0)
	set(4)
	want("inserted after the range deletion", 4)
	b = db.NewBatch()
	if err := b.DeleteCollectionData(coll); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, b)
	want("collection dropped", 0)
}

// TestDocCacheConcurrentWriters: writers update their own documents and read each one back
// at once (a write is acknowledged after Apply returns: the next read must see it), while
// readers keep reading the same documents into the cache.
func TestDocCacheConcurrentWriters(t *testing.T) {
	db := openMem(t)
	const (
		coll    = CollID(3)
		writers = 4
		docs    = 8 // per writer: few, so that readers keep caching the ones being written
		rounds  = 300
	)
	stopReaders := readUntilStopped(4, func(r int) func() bool {
		rng := rand.New(rand.NewPCG(uint64(r), 1))
		return func() bool {
			n := rng.IntN(writers * docs)
			_ = getVersion(t, db, coll, uint64(n), idN(n))
			return !t.Failed()
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			at := make([]uint64, docs) // each document's version; 0: absent
			for i := range rounds {
				n := rng.IntN(docs)
				k := w*docs + n
				b := db.NewBatch()
				if at[n] != 0 && i%5 == 0 {
					b.DeleteDoc(coll, uint64(k), idN(k))
					at[n] = 0
				} else {
					at[n] = uint64(i + 1)
					b.SetDoc(coll, uint64(k), idN(k), docVersion(at[n], 64))
				}
				if err := b.Commit(false); err != nil {
					errs <- err
					return
				}
				b.Close()
				if got := getVersion(t, db, coll, uint64(k), idN(k)); got != at[n] {
					errs <- fmt.Errorf("writer %d, round %d: version %d after its commit, want %d", w, i, got, at[n])
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
	if db.docs.hits.Load() == 0 {
		t.Error("no read was answered from the cache: the test tested Pebble alone")
	}
}

// TestDocCacheBatchVisibleAtOnce: a batch's documents become visible together, through the
// cache as through Pebble. A writer commits batches that set documents x and y to the same
// version; readers read x, then y: y may be newer than x, never older.
func TestDocCacheBatchVisibleAtOnce(t *testing.T) {
	db := openMem(t)
	db.afterApply = func() { time.Sleep(20 * time.Microsecond) }
	const coll = CollID(5)
	x, y := idN(1), idN(2)
	stopReaders := readUntilStopped(2, func(int) func() bool {
		return func() bool {
			vx := getVersion(t, db, coll, 1, x)
			if vy := getVersion(t, db, coll, 2, y); vy < vx {
				t.Errorf("x at version %d, then y at version %d: the batch was seen half", vx, vy)
				return false
			}
			return true
		}
	})
	for i := uint64(1); i <= 400; i++ {
		b := db.NewBatch()
		b.SetDoc(coll, 1, x, docVersion(i, 32))
		b.SetDoc(coll, 2, y, docVersion(i, 32))
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if i%10 == 0 {
			time.Sleep(50 * time.Microsecond) // a pause, in which readers fill the cache
		}
	}
	stopReaders()
	if db.docs.hits.Load() == 0 {
		t.Error("no read was answered from the cache: the test tested Pebble alone")
	}
}

// TestDocCacheBounded checks that the cache holds no more than its bytes, and that a
// document forgotten is read again.
func TestDocCacheBounded(t *testing.T) {
	db := openMem(t)
	const coll = CollID(9)
	b := db.NewBatch()
	for i := range 3000 {
		b.SetDoc(coll, uint64(i), idN(i), docVersion(uint64(i+1), 1000))
	}
	mustCommit(t, b)
	for range 2 {
		for i := range 3000 {
			if got := getVersion(t, db, coll, uint64(i), idN(i)); got != uint64(i+1) {
				t.Fatalf("document %d: version %d", i, got)
			}
		}
	}
	// 3,000 documents of about 1 KB do not fit in 1 MiB: the cache holds its bound at most.
	small := newDocCache(db.ids, 1<<20)
	db.docs = small
	for range 2 {
		for i := range 3000 {
			if got := getVersion(t, db, coll, uint64(i), idN(i)); got != uint64(i+1) {
				t.Fatalf("document %d through a small cache: version %d", i, got)
			}
		}
	}
	if got := small.size(); got > 1<<20 || got == 0 {
		t.Fatalf("a cache of 1 MiB holds %d bytes", got)
	}
}
