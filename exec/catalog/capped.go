package catalog

import (
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/store"
)

// Capped are the bounds of a capped collection. Its documents are stored at their record
// id, a number that grows with each insert, in the place of the shard-key hash (the
// collection cannot be sharded: it has one partition, and its hash slot is free): the
// document key 'd' | coll | recordID | _id keeps the insertion order, which a collection
// scan reads forward ({$natural: 1}) or backward ({$natural: -1}). Its _id index has
// entries (IDIndexed), so that a document is found by _id, and _id is unique over the
// whole collection (write.Writer's idKey).
type Capped struct {
	Size int64 // most bytes of documents (the create option size, rounded up to 256)
	Max  int64 // most documents; 0: no bound but Size
}

// CappedOf returns the bounds of a collection's stored options, nil when it is not capped.
func CappedOf(opts bsoncore.Document) *Capped {
	if opts == nil {
		return nil
	}
	if b, ok := opts.Lookup("capped").BooleanOK(); !ok || !b {
		return nil
	}
	c := &Capped{}
	c.Size, _ = bsonx.NumberAsInt64(opts.Lookup("size"))
	c.Max, _ = bsonx.NumberAsInt64(opts.Lookup("max"))
	return c
}

// IsCapped reports whether catalog record c is a capped collection.
func IsCapped(c *store.Collection) bool { return CappedOf(c.Options) != nil }

// Over reports whether a collection of docs documents and bytes bytes passes the bounds.
func (c *Capped) Over(docs, bytes int64) bool {
	return bytes > c.Size || (c.Max > 0 && docs > c.Max)
}

// compileCapped makes ci, a capped collection with bounds c, keep _id index entries.
func (ci *Coll) compileCapped(c *Capped) {
	ci.Capped = c
	ci.IDIndexed = true
}

// CappedState is what the writers and tailable cursors of one capped collection share in
// memory: the last record id given (writers take the next under the collection's write
// lock, write.CappedLockHash, so ids are committed and become visible in increasing
// order), and a channel closed at each insert that tailable awaitData cursors wait on.
type CappedState struct {
	mu     sync.Mutex
	loaded bool
	last   uint64
	wake   chan struct{}
}

// cappedStates maps collections to their CappedState.
type cappedStates struct {
	mu sync.Mutex
	m  map[store.CollID]*CappedState
}

// CappedState returns the shared state of capped collection coll.
func (c *Catalog) CappedState(coll store.CollID) *CappedState {
	c.capped.mu.Lock()
	defer c.capped.mu.Unlock()
	if c.capped.m == nil {
		c.capped.m = map[store.CollID]*CappedState{}
	}
	s := c.capped.m[coll]
	if s == nil {
		s = &CappedState{wake: make(chan struct{})}
		c.capped.m[coll] = s
	}
	return s
}

// forgetCapped drops the state of a dropped collection.
func (c *Catalog) forgetCapped(coll store.CollID) {
	c.capped.mu.Lock()
	delete(c.capped.m, coll)
	c.capped.mu.Unlock()
}

// NextRecordID returns the record id of the next document inserted into ci, whose
// documents live on shard r; the first call reads the last id stored (the largest hash of
// the collection's documents), so that ids keep growing across restarts. The caller holds
// the collection's write lock.
func (s *CappedState) NextRecordID(r Reader, coll store.CollID) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded {
		it, err := r.NewDocIterReverse(coll, 0, 0)
		if err != nil {
			return 0, err
		}
		if it.Next() {
			s.last = it.Hash()
		}
		err = it.Err()
		if cerr := it.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, err
		}
		s.loaded = true
	}
	s.last++
	return s.last, nil
}

// Inserted wakes the cursors waiting for a new document (Wait); writers call it once their
// inserts are visible.
func (s *CappedState) Inserted() {
	s.mu.Lock()
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// Wait returns a channel closed at the next insert. Take it before reading, so that an
// insert between the read and the wait is not missed.
func (s *CappedState) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wake
}
