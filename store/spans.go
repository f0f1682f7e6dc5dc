package store

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Tables of their own for large collections (issue 13). A flush writes the whole memtable into
// L0 tables that each span a wide key range: the new documents of a collection ('d' | coll ...),
// then, further on, the new entries of each of its indexes ('i' | coll | idx ...). Documents
// inserted with increasing _ids (ObjectIds, counters) land after every document written before,
// but such a table overlaps every index below it, so each L0 → Lbase compaction read and
// rewrote the documents below it too: under mbench's insert (1 KiB documents, three indexes,
// one shard) compactions read 1.4 GB and wrote 3.4 GB for 1.1 GB inserted.
//
// tableSpans ends a flush's or a compaction's output table (Pebble's SpanPolicyFunc) at the
// edges of every large collection's documents and of each of its indexes. A large collection's
// new documents then go into tables of their own that overlap no other table when their _ids
// grow, which compactions move down a level instead of rewriting, and its indexes compact each
// on its own: the same insert read 0.3–0.5 GB and wrote 2.4–2.6 GB, for 18% less CPU in process.
// Collections under TableSplitBytes share tables as before: a flush writes one table per span it
// holds, and thousands of small collections (a test suite's) must not make thousands of tables.
type tableSpans struct {
	split int64 // Options.TableSplitBytes: the bytes from which a collection is large; ≤ 0 never
	mu    sync.Mutex
	set   atomic.Pointer[spanSet] // never nil after newTableSpans
}

// spanSet is the large collections, sorted, and the edges of their spans, sorted.
type spanSet struct {
	colls []CollID
	edges [][]byte // the first key of each large collection's documents and indexes, and the first after them
}

// newTableSpans returns a tableSpans whose collections are large from split bytes.
func newTableSpans(split int64) *tableSpans {
	s := &tableSpans{split: split}
	s.set.Store(newSpanSet(nil))
	return s
}

// note records that coll's documents in this DB take bytes.
func (s *tableSpans) note(coll CollID, bytes int64) {
	if s.split <= 0 || bytes < s.split {
		return
	}
	if _, ok := slices.BinarySearch(s.set.Load().colls, coll); ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.set.Load()
	i, ok := slices.BinarySearch(cur.colls, coll)
	if ok {
		return
	}
	s.set.Store(newSpanSet(slices.Insert(slices.Clone(cur.colls), i, coll)))
}

// drop forgets coll (its data was deleted).
func (s *tableSpans) drop(coll CollID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.set.Load()
	if i, ok := slices.BinarySearch(cur.colls, coll); ok {
		s.set.Store(newSpanSet(slices.Delete(slices.Clone(cur.colls), i, i+1)))
	}
}

// newSpanSet builds the spanSet of the sorted collections colls.
func newSpanSet(colls []CollID) *spanSet {
	// The change log is always a span of its own: its keys grow with time, so its tables
	// overlap no other and compactions move them down instead of rewriting the documents and
	// indexes next to them (the insert workload's CPU with the log on: see changes.go).
	set := &spanSet{colls: colls, edges: [][]byte{{prefixChange}, {prefixChange + 1}}}
	for _, c := range colls {
		for _, first := range [][]byte{appendDocPrefix(nil, c), appendIndexCollPrefix(nil, c)} {
			set.edges = append(set.edges, first, KeyPrefixEnd(first))
		}
	}
	slices.SortFunc(set.edges, bytes.Compare)
	set.edges = slices.CompactFunc(set.edges, bytes.Equal)
	return set
}

// policy implements pebble.SpanPolicyFunc: the span of start ends at the end of its large
// collection's documents or index, or else at the next large collection's first key.
func (s *tableSpans) policy(start []byte) (pebble.SpanPolicy, []byte, error) {
	set := s.set.Load()
	if end := set.ownEnd(start); end != nil {
		return pebble.SpanPolicy{}, end, nil
	}
	i, found := slices.BinarySearchFunc(set.edges, start, bytes.Compare)
	if found {
		i++
	}
	if i == len(set.edges) {
		return pebble.SpanPolicy{}, nil, nil
	}
	return pebble.SpanPolicy{}, set.edges[i], nil
}

// ownEnd is the end of start's span when start is a key of a large collection: the first key
// after its documents, or after its index; nil otherwise.
func (set *spanSet) ownEnd(start []byte) []byte {
	if len(start) > 0 && start[0] == prefixChange {
		return []byte{prefixChange + 1}
	}
	if len(start) < docPrefixLen || (start[0] != prefixDoc && start[0] != prefixIndex) {
		return nil
	}
	if _, large := slices.BinarySearch(set.colls, CollID(binary.BigEndian.Uint32(start[1:]))); !large {
		return nil
	}
	n := docPrefixLen // 'd' | coll
	if start[0] == prefixIndex && len(start) >= indexPrefixLen {
		n = indexPrefixLen // 'i' | coll | idx
	}
	return KeyPrefixEnd(start[:n])
}
