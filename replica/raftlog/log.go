package raftlog

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

var _ raft.Storage = (*Log)(nil)

// Log is the raft log of one group: it implements raft.Storage, and Save, SetConfState and
// Compact change it. It is safe for concurrent use: the goroutine driving the group's raft
// node writes, and others may read. A write holds the log's lock until its batch is synced,
// so a reader of the same group waits for that fsync; other groups' logs do not.
type Log struct {
	db *pebble.DB
	id uint64

	mu     sync.RWMutex
	loaded bool  // st holds what Pebble holds
	st     state // under mu; loaded from Pebble on first use
	tail   tail  // under mu: the newest entries (tail.go)
}

// state is what a Log caches of its group. Its messages are never modified once they are
// in a state: a change replaces them, and readers get clones.
type state struct {
	truncIndex, truncTerm uint64 // the truncated state: (0, 0) until a compaction or snapshot
	last, lastTerm        uint64 // the last index and its term: the truncated state if no entry
	hs                    *raftpb.HardState
	cs                    *raftpb.ConfState // the current configuration
	snapCS                *raftpb.ConfState // the configuration at the truncated index
}

// emptyState is the state of a group without persisted state.
func emptyState() state {
	return state{hs: &raftpb.HardState{}, cs: &raftpb.ConfState{}, snapCS: &raftpb.ConfState{}}
}

// first is the first index of the log.
func (st *state) first() uint64 { return st.truncIndex + 1 }

// rlock read-locks l with its state loaded; the caller unlocks l.mu.RUnlock on success.
func (l *Log) rlock() error {
	for {
		l.mu.RLock()
		if l.loaded {
			return nil
		}
		l.mu.RUnlock()
		if err := l.lock(); err != nil {
			return err
		}
		l.mu.Unlock()
	}
}

// lock write-locks l with its state loaded; the caller unlocks l.mu.Unlock on success.
func (l *Log) lock() error {
	l.mu.Lock()
	if !l.loaded {
		if err := l.load(); err != nil {
			l.mu.Unlock()
			return err
		}
	}
	return nil
}

// load reads the group's state from Pebble. l.mu is write-locked.
func (l *Log) load() error {
	st := emptyState()
	v, ok, err := l.get(stateKey(l.id, kindTruncated))
	if err != nil {
		return err
	}
	if ok {
		if st.truncIndex, st.truncTerm, err = decodeTruncated(v); err != nil {
			return fmt.Errorf("raftlog: group %d: %w", l.id, err)
		}
	}
	st.last, st.lastTerm = st.truncIndex, st.truncTerm
	for _, m := range []struct {
		kind byte
		msg  proto.Message
	}{{kindHard, st.hs}, {kindConf, st.cs}, {kindSnapConf, st.snapCS}} {
		if _, err := l.getProto(stateKey(l.id, m.kind), m.msg); err != nil {
			return err
		}
	}
	last, ok, err := l.lastEntry()
	if err != nil {
		return err
	}
	if ok {
		if last.GetIndex() <= st.truncIndex {
			return fmt.Errorf("raftlog: group %d: entry %d at or below the truncated index %d", l.id, last.GetIndex(), st.truncIndex)
		}
		st.last, st.lastTerm = last.GetIndex(), last.GetTerm()
	}
	l.st, l.loaded = st, true
	return nil
}

// lastEntry reads the group's last entry from Pebble.
func (l *Log) lastEntry() (*raftpb.Entry, bool, error) {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: entryKey(l.id, 0), UpperBound: entriesEnd(l.id)})
	if err != nil {
		return nil, false, fmt.Errorf("raftlog: group %d: reading the last entry: %w", l.id, err)
	}
	var e *raftpb.Entry
	if it.Last() {
		e, err = l.decodeEntry(it)
	}
	if err = errors.Join(err, it.Close()); err != nil {
		return nil, false, fmt.Errorf("raftlog: group %d: reading the last entry: %w", l.id, err)
	}
	return e, e != nil, nil
}

// decodeEntry decodes the entry an iterator is at, checking that its key says its index.
func (l *Log) decodeEntry(it *pebble.Iterator) (*raftpb.Entry, error) {
	index, err := parseEntryIndex(it.Key())
	if err != nil {
		return nil, err
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return nil, err
	}
	e := &raftpb.Entry{}
	if err := proto.Unmarshal(v, e); err != nil {
		return nil, fmt.Errorf("entry %d: %w", index, err)
	}
	if e.GetIndex() != index {
		return nil, fmt.Errorf("entry %d holds index %d", index, e.GetIndex())
	}
	return e, nil
}

// get reads one key of the group; ok is false when it is absent.
func (l *Log) get(key []byte) (v []byte, ok bool, err error) {
	v, closer, err := l.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("raftlog: group %d: reading %x: %w", l.id, key, err)
	}
	v = append([]byte(nil), v...)
	return v, true, closer.Close()
}

// getProto reads one key of the group into m; ok is false, and m left as it is, when the
// key is absent.
func (l *Log) getProto(key []byte, m proto.Message) (ok bool, err error) {
	v, closer, err := l.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("raftlog: group %d: reading %x: %w", l.id, key, err)
	}
	err = proto.Unmarshal(v, m) // copies what it keeps of v
	if err = errors.Join(err, closer.Close()); err != nil {
		return false, fmt.Errorf("raftlog: group %d: decoding %x: %w", l.id, key, err)
	}
	return true, nil
}

// InitialState returns the saved HardState (empty if none was) and the current ConfState
// (empty if none was saved).
func (l *Log) InitialState() (*raftpb.HardState, *raftpb.ConfState, error) {
	if err := l.rlock(); err != nil {
		return nil, nil, err
	}
	defer l.mu.RUnlock()
	return proto.CloneOf(l.st.hs), proto.CloneOf(l.st.cs), nil
}

// FirstIndex returns the index of the first entry the log may hold: the truncated index + 1.
func (l *Log) FirstIndex() (uint64, error) {
	if err := l.rlock(); err != nil {
		return 0, err
	}
	defer l.mu.RUnlock()
	return l.st.first(), nil
}

// LastIndex returns the index of the last entry, or the truncated index if there is none.
func (l *Log) LastIndex() (uint64, error) {
	if err := l.rlock(); err != nil {
		return 0, err
	}
	defer l.mu.RUnlock()
	return l.st.last, nil
}

// Term returns the term of entry i, which must be in [FirstIndex()-1, LastIndex()]: below,
// raft.ErrCompacted; above, raft.ErrUnavailable.
func (l *Log) Term(i uint64) (uint64, error) {
	if err := l.rlock(); err != nil {
		return 0, err
	}
	defer l.mu.RUnlock()
	return l.term(i)
}

// term is Term with l.mu held.
func (l *Log) term(i uint64) (uint64, error) {
	switch {
	case i < l.st.truncIndex:
		return 0, raft.ErrCompacted
	case i > l.st.last:
		return 0, raft.ErrUnavailable
	case i == l.st.truncIndex:
		return l.st.truncTerm, nil
	case i == l.st.last:
		return l.st.lastTerm, nil
	case l.tail.has(i, i+1):
		return l.tail.term(i), nil
	}
	var e raftpb.Entry
	ok, err := l.getProto(entryKey(l.id, i), &e)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("raftlog: group %d: entry %d of (%d, %d] is missing", l.id, i, l.st.truncIndex, l.st.last)
	}
	return e.GetTerm(), nil
}

// Entries returns the entries [lo, hi), as many of them as fit in maxSize (the sum of their
// encoded sizes) but at least one. It returns raft.ErrCompacted if lo is at or below the
// truncated index, raft.ErrUnavailable if hi is past LastIndex()+1 or the log is empty.
func (l *Log) Entries(lo, hi, maxSize uint64) ([]*raftpb.Entry, error) {
	if err := l.rlock(); err != nil {
		return nil, err
	}
	defer l.mu.RUnlock()
	switch {
	case lo <= l.st.truncIndex:
		return nil, raft.ErrCompacted
	case hi > l.st.last+1, l.st.last == l.st.truncIndex:
		return nil, raft.ErrUnavailable
	case lo > hi:
		return nil, fmt.Errorf("raftlog: group %d: entries [%d, %d): invalid range", l.id, lo, hi)
	case lo == hi:
		return []*raftpb.Entry{}, nil
	case l.tail.has(lo, hi):
		return l.tail.entries(lo, hi, maxSize), nil
	}
	ents, err := l.readEntries(lo, hi, maxSize)
	if err != nil {
		return nil, fmt.Errorf("raftlog: group %d: entries [%d, %d): %w", l.id, lo, hi, err)
	}
	return ents, nil
}

// readEntries reads the entries [lo, hi) that fit in maxSize, at least one, checking they
// are all there. lo < hi.
func (l *Log) readEntries(lo, hi, maxSize uint64) ([]*raftpb.Entry, error) {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: entryKey(l.id, lo), UpperBound: entryKey(l.id, hi)})
	if err != nil {
		return nil, err
	}
	ents := make([]*raftpb.Entry, 0, min(hi-lo, 64))
	var size uint64
	limited := false
	for valid := it.First(); valid; valid = it.Next() {
		// raft's limitSize: the sum of proto.Size, which is the length of the encoding.
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, errors.Join(err, it.Close())
		}
		if size += uint64(len(v)); len(ents) > 0 && size > maxSize {
			limited = true
			break
		}
		e, err := l.decodeEntry(it)
		if err != nil {
			return nil, errors.Join(err, it.Close())
		}
		if want := lo + uint64(len(ents)); e.GetIndex() != want {
			return nil, errors.Join(fmt.Errorf("entry %d is missing", want), it.Close())
		}
		ents = append(ents, e)
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	if !limited && uint64(len(ents)) != hi-lo {
		return nil, fmt.Errorf("entry %d is missing", lo+uint64(len(ents)))
	}
	return ents, nil
}

// Snapshot returns the metadata of the log's truncation (its index, term and the
// configuration at that index), without Data: the state machine ships its data out of band.
// Before any truncation it returns raft.ErrSnapshotTemporarilyUnavailable.
func (l *Log) Snapshot() (*raftpb.Snapshot, error) {
	if err := l.rlock(); err != nil {
		return nil, err
	}
	defer l.mu.RUnlock()
	if l.st.truncIndex == 0 {
		return nil, raft.ErrSnapshotTemporarilyUnavailable
	}
	return &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{
		Index:     new(l.st.truncIndex),
		Term:      new(l.st.truncTerm),
		ConfState: proto.CloneOf(l.st.snapCS),
	}}, nil
}
