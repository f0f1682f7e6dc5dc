package replica

import (
	"errors"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// The log is truncated in the background every CompactEvery applied entries, up to
// CompactKeep entries below what the state machine holds durably: its applied state is
// synced first (store.DB.SyncApplied), so that a crash never needs an entry that is gone. A
// follower that falls behind the truncation receives a snapshot of the state machine instead
// (the host's transport ships it).
//
// A snapshot is not the truncation point: groupStorage offers raft one at the index applied
// now, with the configuration as of that index, since its data is read from the state
// machine when it is sent (its applied index is then that one or more). A replica added after
// the last truncation is in that configuration, which raft requires of a snapshot it installs.

// maybeCompact starts a truncation when enough entries were applied since the last one.
func (g *Group) maybeCompact() {
	applied := g.applied.Load()
	if applied < g.compacted+g.cfg.CompactEvery || !g.compacting.CompareAndSwap(false, true) {
		return
	}
	g.compacted = applied
	go func() {
		defer g.compacting.Store(false)
		if err := g.compact(); err != nil && !g.stopped.Load() {
			g.log.Warn("cannot truncate the raft log", zap.Error(err))
		}
	}()
}

// compact truncates the log below the durable applied index, CompactKeep entries kept.
func (g *Group) compact() error {
	durable, err := g.cfg.SM.SyncApplied()
	if err != nil {
		return err
	}
	g.conf.Lock()
	cs := g.conf.cs
	g.conf.Unlock()
	index := durable - min(durable, g.cfg.CompactKeep)
	first, err := g.cfg.Log.FirstIndex()
	if err != nil || index < first || index > durable {
		return err
	}
	if err := g.cfg.Log.Compact(index, cs); err != nil && !errors.Is(err, raft.ErrCompacted) {
		return err
	}
	g.log.Debug("raft log truncated", zap.Uint64("index", index), zap.Uint64("durable", durable))
	return nil
}

// groupStorage is the log as raft reads it, with snapshots at the applied index.
type groupStorage struct {
	LogStore
	g *Group
}

// Snapshot implements raft.Storage: the metadata of a snapshot at the index applied now and
// the configuration as of it (its data is the state machine's when the transport sends it).
// While a configuration change is being applied, raft is asked to try again.
func (s groupStorage) Snapshot() (*raftpb.Snapshot, error) {
	g := s.g
	g.conf.Lock()
	defer g.conf.Unlock()
	index := g.applied.Load()
	if index < g.conf.index {
		return nil, raft.ErrSnapshotTemporarilyUnavailable
	}
	term, err := s.Term(index)
	if err != nil {
		return nil, raft.ErrSnapshotTemporarilyUnavailable
	}
	cs := proto.Clone(g.conf.cs).(*raftpb.ConfState)
	return &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{Index: &index, Term: &term, ConfState: cs}}, nil
}

// ErrTruncateBusy is TruncateApplied's answer while a background truncation runs.
var ErrTruncateBusy = errors.New("a truncation of the raft log is under way")

// TruncateApplied truncates the log up to the durable applied index, keeping no entry below
// it, and returns the log's first index after it. A replica added next then receives a
// snapshot of the state machine rather than entries: what a group must do before it adds its
// first replica, since its store may hold data no entry carries (a copy restored from a
// backup bootstraps a group of one over its documents).
func (g *Group) TruncateApplied() (uint64, error) {
	if !g.compacting.CompareAndSwap(false, true) {
		return 0, ErrTruncateBusy
	}
	defer g.compacting.Store(false)
	durable, err := g.cfg.SM.SyncApplied()
	if err != nil {
		return 0, err
	}
	g.conf.Lock()
	cs := g.conf.cs
	g.conf.Unlock()
	first, err := g.cfg.Log.FirstIndex()
	if err != nil || durable < first {
		return first, err
	}
	if err := g.cfg.Log.Compact(durable, cs); err != nil && !errors.Is(err, raft.ErrCompacted) {
		return first, err
	}
	g.log.Info("raft log truncated before a replica is added", zap.Uint64("index", durable))
	return g.cfg.Log.FirstIndex()
}

// FirstIndex returns the index of the first entry the log holds (1 when nothing was
// truncated).
func (g *Group) FirstIndex() (uint64, error) { return g.cfg.Log.FirstIndex() }
