// Package raftlog keeps the raft logs of every replica group on a node in one Pebble database
// of their own (not a shard's), so that the groups' synced writes share the WAL's fsyncs:
// Pebble commits concurrent synced batches together. A *Log is one group's log and
// implements go.etcd.io/raft/v3's Storage with the semantics of raft's MemoryStorage; Save
// persists what a raft Ready asks to persist, in one synced batch.
//
// The package knows no shards, documents or commands: a group is a uint64, an entry's data
// is opaque bytes, and a snapshot is metadata only (the state machine ships its data out of
// band, so Snapshot never carries Data).
//
// # Key layout
//
// Every key of a group starts with the group's prefix, 'g' | group u64 BE, then a kind byte:
//
//	'g' | group u64 BE | 'c'                     → the ConfState (marshalled raftpb.ConfState)
//	'g' | group u64 BE | 'e' | index u64 BE      → the entry at index (marshalled raftpb.Entry)
//	'g' | group u64 BE | 'h'                     → the HardState (marshalled raftpb.HardState)
//	'g' | group u64 BE | 's'                     → the ConfState of the snapshot (the last
//	                                               truncation's; marshalled raftpb.ConfState)
//	'g' | group u64 BE | 't'                     → the truncated state: index u64 BE | term u64 BE
//
// The ConfState ('c') is the group's current configuration, which InitialState returns; the
// snapshot's ('s') is the configuration at the truncated index, which Snapshot returns with
// the truncated index and term. A group's keys lie in ['g' | group, 'g' | group | 0xff), so
// deleting a group is one range deletion, and the groups with state are found by seeking
// from one prefix to the next.
//
// # Invariants
//
//   - The entries of a group are exactly the indexes (truncated index, last index]; a group
//     without a truncated state has truncated state (0, 0), so its first index is 1.
//   - Save, SetConfState and DeleteGroup return after their batch is synced; Compact's batch
//     is not synced (a crash that loses it only brings back entries the state machine no
//     longer needs; the next synced write makes it durable).
//   - A *Log caches its first and last index, the term of its last entry, its hard state and
//     its configurations, loaded on first use, so FirstIndex, LastIndex, InitialState and
//     Term of the truncated or last index never read Pebble. Entries and other Terms do.
//   - The raft.Storage methods return raft's sentinels (raft.ErrCompacted, raft.ErrUnavailable,
//     raft.ErrSnapshotTemporarilyUnavailable) unwrapped, because raft compares them with ==;
//     every other error is wrapped with the group and the operation.
//
// # Usage
//
//	s, err := raftlog.Open(filepath.Join(dataDir, "raft"), logger)
//	rlog := s.Group(7)
//	rn, err := raft.NewRawNode(&raft.Config{ID: nodeID, Storage: rlog, ...})
//	for rn.HasReady() {
//		rd := rn.Ready()
//		err = rlog.Save(rd.HardState, rd.Entries, rd.Snapshot) // synced: now send rd.Messages
//		// apply rd.CommittedEntries; after a conf change, rlog.SetConfState(rn.ApplyConfChange(cc))
//		rn.Advance(rd)
//	}
//	err = rlog.Compact(durableIndex, confStateAtIt) // once the state machine is durable there
package raftlog
