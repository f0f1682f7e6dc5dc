package catalog

import (
	"sync"
	"time"

	"github.com/cleavedb/cleave/store"
)

// Readers records the reads that give up their snapshot between batches (a cursor reading
// the present, exec/query's scan_yield.go) by the collection and shard they read, with when
// each opened. A partition moved to another shard leaves its documents on the source until
// its grace period ends; while a read that opened before the move may resume on the source
// range, exec/sharding keeps it (deleteRetired), as MongoDB's range deleter waits for the
// queries that may still use a migrated range. Cursors time out after 10 idle minutes, which
// bounds the wait.
type Readers struct {
	mu sync.Mutex
	m  map[readerKey]map[*ReadPin]struct{}
}

// readerKey is a collection on a shard.
type readerKey struct {
	coll  store.CollID
	shard int
}

// ReadPin is one read's entry in Readers.
type ReadPin struct {
	key    readerKey
	opened time.Time
}

// Readers returns the catalog's record of yielding reads.
func (c *Catalog) Readers() *Readers { return &c.readers }

// Pin records a read of coll on shard that opened at opened; Unpin removes it.
func (r *Readers) Pin(coll store.CollID, shard int, opened time.Time) *ReadPin {
	p := &ReadPin{key: readerKey{coll, shard}, opened: opened}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[readerKey]map[*ReadPin]struct{}{}
	}
	if r.m[p.key] == nil {
		r.m[p.key] = map[*ReadPin]struct{}{}
	}
	r.m[p.key][p] = struct{}{}
	return p
}

// Unpin removes p (nil: nothing).
func (r *Readers) Unpin(p *ReadPin) {
	if p == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m[p.key], p)
	if len(r.m[p.key]) == 0 {
		delete(r.m, p.key)
	}
}

// OpenedBefore reports whether a recorded read of coll on shard opened before t.
func (r *Readers) OpenedBefore(coll store.CollID, shard int, t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := range r.m[readerKey{coll, shard}] {
		if p.opened.Before(t) {
			return true
		}
	}
	return false
}
