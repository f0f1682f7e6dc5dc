package sharding

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/shard"
)

// Retryable writes' history across a move to another node. A retryable write records what
// each statement did in its session's transaction record, on the shards it wrote (exec/write's
// retry.go), and the node that runs a statement reads the records of its own shards only.
// When a range moves to another node's shard, a retry of a statement executed on it before
// the move reaches the new owner, which must know that the statement ran: without the
// record it would apply it again (an $inc counted twice). So the move's commit, while every
// write of the source node is held (the key locks of commitMove), sends the source shard's
// transaction records to the destination, which merges each into its own
// (write.MergeTxnRecord), as MongoDB's migrations carry config.transactions' entries with
// the chunk. All of the shard's records go, not only those of the range: a record does not
// say which documents its statements wrote, and there is one per session, of bounded size.
// Moves between two shards of one node need none of this: a node reads the records of all
// its shards.

// RecordsOp is the _cleaveMoveApply step that merges a batch of the source shard's
// transaction records into the destination shard.
const RecordsOp = "records"

// sendRecords sends the transaction records of shard from (this node's) to shard to of
// another node, for the move of ci's [lo, hi), in batches merged there.
func (m *Manager) sendRecords(ci *catalog.Coll, from, to int, lo, hi uint64) error {
	var ab *bsoncore.ArrayBuilder
	n, size := 0, 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		cmd := m.moveStep(ci, to, lo, hi, RecordsOp).AppendArray("entries", ab.Build()).
			AppendString("$db", ci.Meta.DB).Build()
		ab, n, size = nil, 0, 0
		_, err := m.peerCommandWithin(to, cmd, lockedPeerTimeout)
		return err
	}
	err := m.cat.Shards()[from].TxnRecords(func(lsid, rec []byte) error {
		if ab == nil {
			ab = bsoncore.NewArrayBuilder()
		}
		ab.AppendDocument(bsoncore.NewDocumentBuilder().AppendBinary("l", 0, lsid).AppendDocument("r", rec).Build())
		n++
		if size += len(lsid) + len(rec) + 16; size >= moveBatchBytes || n >= moveBatchDocs {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("sending the retryable writes' records of %s to %s: %w", catalog.ShardName(from), catalog.ShardName(to), err)
	}
	return nil
}

// mergeRecords merges a batch of another shard's transaction records (entries {l, r}) into
// shard s of this node, in one synced batch (write.Path.MergeRecords, under the node's record
// gate): the destination's side of RecordsOp.
func (m *Manager) mergeRecords(s int, entries bsoncore.Array) (int, error) {
	vals, err := entries.Values()
	if err != nil {
		return 0, fmt.Errorf("malformed transaction records: %w", err)
	}
	recs := make([]write.TxnRecord, 0, len(vals))
	for _, v := range vals {
		e, ok := v.DocumentOK()
		_, lsid, ok1 := e.Lookup("l").BinaryOK()
		rec, ok2 := e.Lookup("r").DocumentOK()
		if !ok || !ok1 || !ok2 {
			return 0, errors.New("malformed transaction record entry")
		}
		recs = append(recs, write.TxnRecord{LSID: lsid, Rec: rec})
	}
	n, err := m.write.MergeRecords(s, recs)
	if errors.Is(err, write.ErrBadRecord) {
		return 0, fmt.Errorf("%w: %w", shard.ErrStaleAction, err)
	}
	return n, err
}
