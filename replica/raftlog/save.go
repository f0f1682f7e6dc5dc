package raftlog

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Save persists what a raft Ready asks, in one synced batch: first the snapshot's metadata
// when !raft.IsEmptySnap(snap) (the log then starts after the snapshot's index, the truncated
// state is its index and term, the configuration its ConfState, and the hard state's commit
// at least its index), then ents (appended: an entry at an index the log holds replaces it
// and every entry after it, as raft's MemoryStorage.Append; entries at or below the
// truncated index are ignored), then hs when !raft.IsEmptyHardState(hs). Saves of different
// groups may run concurrently, and share their fsyncs.
//
// A snapshot at or below the truncated index fails with raft.ErrSnapOutOfDate, and entries
// that would leave a gap after the last index fail; neither writes anything.
func (l *Log) Save(hs *raftpb.HardState, ents []*raftpb.Entry, snap *raftpb.Snapshot) error {
	if err := l.lock(); err != nil {
		return err
	}
	defer l.mu.Unlock()
	b := l.db.NewBatch()
	defer func() { _ = b.Close() }()
	st := l.st
	hsChanged := false
	if !raft.IsEmptySnap(snap) {
		if err := l.applySnapshot(b, &st, snap.GetMetadata()); err != nil {
			return err
		}
		hsChanged = st.hs != l.st.hs
	}
	if err := l.append(b, &st, ents); err != nil {
		return err
	}
	if !raft.IsEmptyHardState(hs) {
		st.hs = &raftpb.HardState{Term: new(hs.GetTerm()), Vote: new(hs.GetVote()),
			Commit: new(max(hs.GetCommit(), snap.GetMetadata().GetIndex()))} // index 0 without a snapshot
		hsChanged = true
	}
	if hsChanged {
		if err := setProto(b, stateKey(l.id, kindHard), st.hs); err != nil {
			return fmt.Errorf("raftlog: group %d: save: %w", l.id, err)
		}
	}
	// Only entries, a snapshot, a term or a vote must be durable before raft acts on them
	// (raft.MustSync); a commit index alone may be lost in a crash, and is learned again.
	opts := pebble.NoSync
	if len(ents) > 0 || !raft.IsEmptySnap(snap) || st.hs.GetTerm() != l.st.hs.GetTerm() || st.hs.GetVote() != l.st.hs.GetVote() {
		opts = pebble.Sync
	}
	if err := l.commit(b, st, opts, "save"); err != nil {
		l.tail.reset()
		return err
	}
	if !raft.IsEmptySnap(snap) {
		l.tail.reset()
	}
	l.tail.append(ents)
	l.tail.compact(l.st.truncIndex)
	return nil
}

// applySnapshot adds to b the reset of the log to the snapshot meta, and applies it to st.
func (l *Log) applySnapshot(b *pebble.Batch, st *state, meta *raftpb.SnapshotMetadata) error {
	index, term := meta.GetIndex(), meta.GetTerm()
	if st.truncIndex != 0 && st.truncIndex >= index {
		return fmt.Errorf("raftlog: group %d: snapshot at %d, truncated at %d: %w", l.id, index, st.truncIndex, raft.ErrSnapOutOfDate)
	}
	if err := b.DeleteRange(entryKey(l.id, 0), entriesEnd(l.id), nil); err != nil {
		return fmt.Errorf("raftlog: group %d: snapshot: %w", l.id, err)
	}
	cs := cloneConf(meta.GetConfState())
	err := b.Set(stateKey(l.id, kindTruncated), encodeTruncated(index, term), nil)
	if err == nil {
		err = setProto(b, stateKey(l.id, kindConf), cs)
	}
	if err == nil {
		err = setProto(b, stateKey(l.id, kindSnapConf), cs)
	}
	if err != nil {
		return fmt.Errorf("raftlog: group %d: snapshot: %w", l.id, err)
	}
	st.truncIndex, st.truncTerm = index, term
	st.last, st.lastTerm = index, term
	st.cs, st.snapCS = cs, cs
	if st.hs.GetCommit() < index {
		st.hs = &raftpb.HardState{Term: new(st.hs.GetTerm()), Vote: new(st.hs.GetVote()), Commit: new(index)}
	}
	return nil
}

// append adds ents to b with MemoryStorage.Append's semantics, and applies them to st.
func (l *Log) append(b *pebble.Batch, st *state, ents []*raftpb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	lo := ents[0].GetIndex()
	hi := lo + uint64(len(ents)) - 1
	if hi < st.first() {
		return nil // all compacted
	}
	if lo < st.first() {
		ents = ents[st.first()-lo:]
		lo = st.first()
	}
	if lo > st.last+1 {
		return fmt.Errorf("raftlog: group %d: appending at %d after last index %d leaves a gap", l.id, lo, st.last)
	}
	var buf []byte
	for i, e := range ents {
		if e.GetIndex() != lo+uint64(i) {
			return fmt.Errorf("raftlog: group %d: appending entry %d at position %d of entries from %d", l.id, e.GetIndex(), i, lo)
		}
		var err error
		if buf, err = (proto.MarshalOptions{}).MarshalAppend(buf[:0], e); err != nil {
			return fmt.Errorf("raftlog: group %d: entry %d: %w", l.id, e.GetIndex(), err)
		}
		if err := b.Set(entryKey(l.id, e.GetIndex()), buf, nil); err != nil {
			return fmt.Errorf("raftlog: group %d: entry %d: %w", l.id, e.GetIndex(), err)
		}
	}
	if st.last > hi {
		if err := b.DeleteRange(entryKey(l.id, hi+1), entryKey(l.id, st.last+1), nil); err != nil {
			return fmt.Errorf("raftlog: group %d: truncating after %d: %w", l.id, hi, err)
		}
	}
	st.last, st.lastTerm = hi, ents[len(ents)-1].GetTerm()
	return nil
}

// SetConfState records the configuration after a conf change was applied, synced;
// InitialState returns it.
func (l *Log) SetConfState(cs *raftpb.ConfState) error {
	if err := l.lock(); err != nil {
		return err
	}
	defer l.mu.Unlock()
	b := l.db.NewBatch()
	defer func() { _ = b.Close() }()
	st := l.st
	st.cs = cloneConf(cs)
	if err := setProto(b, stateKey(l.id, kindConf), st.cs); err != nil {
		return fmt.Errorf("raftlog: group %d: set conf state: %w", l.id, err)
	}
	return l.commit(b, st, pebble.Sync, "set conf state")
}

// Compact discards the entries up to and including index, which must be above the truncated
// index (else raft.ErrCompacted) and at most the last index (else raft.ErrUnavailable). The
// truncated state becomes (index, its term), and Snapshot then returns it with cs, the
// configuration at index. The caller guarantees that the state machine's state at index is
// durable. The batch is not synced: losing it in a crash loses nothing.
func (l *Log) Compact(index uint64, cs *raftpb.ConfState) error {
	if err := l.lock(); err != nil {
		return err
	}
	defer l.mu.Unlock()
	if index <= l.st.truncIndex {
		return fmt.Errorf("raftlog: group %d: compact to %d, truncated at %d: %w", l.id, index, l.st.truncIndex, raft.ErrCompacted)
	}
	if index > l.st.last {
		return fmt.Errorf("raftlog: group %d: compact to %d, last index %d: %w", l.id, index, l.st.last, raft.ErrUnavailable)
	}
	term, err := l.term(index)
	if err != nil {
		return err
	}
	b := l.db.NewBatch()
	defer func() { _ = b.Close() }()
	st := l.st
	st.truncIndex, st.truncTerm = index, term
	st.snapCS = cloneConf(cs)
	err = b.DeleteRange(entryKey(l.id, 0), entryKey(l.id, index+1), nil)
	if err == nil {
		err = b.Set(stateKey(l.id, kindTruncated), encodeTruncated(index, term), nil)
	}
	if err == nil {
		err = setProto(b, stateKey(l.id, kindSnapConf), st.snapCS)
	}
	if err != nil {
		return fmt.Errorf("raftlog: group %d: compact to %d: %w", l.id, index, err)
	}
	if err := l.commit(b, st, pebble.NoSync, "compact"); err != nil {
		return err
	}
	l.tail.compact(index)
	return nil
}

// commit commits b and, once it is committed, makes st the log's state; an empty b (a Ready
// with nothing to persist) costs no fsync. l.mu is write-locked. After a failed commit the
// state is loaded again from Pebble at the next use.
func (l *Log) commit(b *pebble.Batch, st state, opts *pebble.WriteOptions, op string) error {
	if b.Empty() {
		l.st = st
		return nil
	}
	if err := b.Commit(opts); err != nil {
		l.loaded = false
		l.tail.reset()
		return fmt.Errorf("raftlog: group %d: %s: %w", l.id, op, err)
	}
	l.st = st
	return nil
}

// setProto adds to b the key set to m's encoding.
func setProto(b *pebble.Batch, key []byte, m proto.Message) error {
	v, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	return b.Set(key, v, nil)
}

// cloneConf returns a copy of cs (an empty configuration for nil) with every field set, as
// raft's MemoryStorage returns configurations; cs itself is left as it is.
func cloneConf(cs *raftpb.ConfState) *raftpb.ConfState {
	if cs == nil {
		return raftpb.EnsureConfState(nil)
	}
	return raftpb.EnsureConfState(proto.CloneOf(cs))
}
