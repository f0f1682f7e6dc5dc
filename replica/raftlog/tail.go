package raftlog

import (
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// The tail of each log is kept in memory as well: raft reads the entries it has just saved
// twice more, to send them to followers and to apply them once committed, and read back from
// Pebble each costs a seek through every sstable holding the group's keys and a decoding.
// Measured on the replicated insert and update workloads (scripts/bench-replicas.sh, before
// the tail): reading entries back took a fifth to a third of the leader's CPU and almost half
// of the followers', and sat between commit and apply on every write's path. Pebble is read
// only for entries older than the tail (a follower far behind).

// Tail bounds: a group's tail drops its oldest entries past these.
const (
	tailMaxEntries = 4096
	tailMaxBytes   = 8 << 20
)

// tail is the newest entries of a log, contiguous: ents[i] has index first+i. Entries are
// raft's, never modified.
type tail struct {
	first uint64
	ents  []*raftpb.Entry
	sizes []uint64 // proto.Size of each entry
	bytes uint64
}

// last is the index of the tail's last entry (first-1 when empty).
func (t *tail) last() uint64 { return t.first + uint64(len(t.ents)) - 1 }

// has reports whether the tail holds every entry of [lo, hi).
func (t *tail) has(lo, hi uint64) bool {
	return len(t.ents) > 0 && lo >= t.first && hi <= t.last()+1
}

// append records ents, saved after the entries before them: an entry at an index the tail
// holds replaces it and what follows, as in the log.
func (t *tail) append(ents []*raftpb.Entry) {
	if len(ents) == 0 {
		return
	}
	lo := ents[0].GetIndex()
	if len(t.ents) == 0 || lo < t.first || lo > t.last()+1 {
		t.reset()
		t.first = lo
	} else {
		keep := int(lo - t.first)
		for _, s := range t.sizes[keep:] {
			t.bytes -= s
		}
		t.ents, t.sizes = t.ents[:keep], t.sizes[:keep]
	}
	for _, e := range ents {
		s := uint64(proto.Size(e))
		t.ents, t.sizes = append(t.ents, e), append(t.sizes, s)
		t.bytes += s
	}
	n := 0
	for len(t.ents)-n > tailMaxEntries || (t.bytes > tailMaxBytes && len(t.ents)-n > 1) {
		t.bytes -= t.sizes[n]
		n++
	}
	t.dropFront(n)
}

// compact drops the entries up to index.
func (t *tail) compact(index uint64) {
	if len(t.ents) == 0 || index < t.first {
		return
	}
	if index >= t.last() {
		t.reset()
		return
	}
	n := int(index - t.first + 1)
	for _, s := range t.sizes[:n] {
		t.bytes -= s
	}
	t.dropFront(n)
}

// dropFront drops the n oldest entries (their bytes already counted off).
func (t *tail) dropFront(n int) {
	if n == 0 {
		return
	}
	t.ents = append(t.ents[:0:0], t.ents[n:]...)
	t.sizes = append(t.sizes[:0:0], t.sizes[n:]...)
	t.first += uint64(n)
}

// reset empties the tail.
func (t *tail) reset() { *t = tail{} }

// entries returns [lo, hi) as raft's limitSize would, at least one; the tail has them.
func (t *tail) entries(lo, hi, maxSize uint64) []*raftpb.Entry {
	from := int(lo - t.first)
	n, size := 0, uint64(0)
	for i := from; i < int(hi-t.first); i++ {
		size += t.sizes[i]
		if n > 0 && size > maxSize {
			break
		}
		n++
	}
	return append([]*raftpb.Entry(nil), t.ents[from:from+n]...)
}

// term returns the term of entry i, which the tail holds.
func (t *tail) term(i uint64) uint64 { return t.ents[i-t.first].GetTerm() }
