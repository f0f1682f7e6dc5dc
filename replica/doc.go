// Package replica runs the raft groups that replicate shards (go.etcd.io/raft/v3): one group
// per shard, one replica of it per node that holds a copy.
//
// A Group drives one replica's raft.RawNode: it persists what raft asks in the node's raft log
// (LogStore, package replica/raftlog), sends messages through a Transport, and applies
// committed entries to the replica's StateMachine (a shard's store.DB) in log order. An entry
// is a finished write batch: the leader evaluates a write as a single copy would, under its key
// locks, and Propose hands the batch's bytes to the group, returning once a quorum holds them
// and this replica has applied them. Followers apply the same bytes.
//
// Only the leader serves, and only once it has applied an entry of its own term (every entry
// committed by earlier leaders is then applied here too): Serving reports it. ReadBarrier
// makes a read of the leader's state machine linearizable: it confirms with a quorum that the
// replica still leads (raft's ReadIndex) and waits until it applied what was committed when
// the barrier began (read.go). A replica that
// loses leadership fails the proposals it was waiting for with an ambiguous error: their
// entries may still commit under the new leader (a retryable write's record, written in the
// same batch, answers a retry). CheckQuorum makes a leader cut off from a quorum step down
// within an election timeout, and PreVote keeps a replica that was cut off from disrupting
// the group when it comes back.
package replica
