package sharding

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ReshardOps returns a $currentOp document for each layout change in flight, in the shape
// of MongoDB's resharding coordinator entry (one entry; cleave has no separate donors and
// recipients): type "op", desc "ReshardingCoordinator <uuid>", ns, originatingCommand,
// provenance (the command), the recipient's state (initializing, cloning, applying,
// blocking-writes, committing) and the copy's progress.
func (m *Manager) ReshardOps() []bsoncore.Document {
	var out []bsoncore.Document
	now := time.Now()
	m.reshards.Range(func(_, v any) bool {
		out = append(out, v.(*reshardOp).currentOp(now))
		return true
	})
	return out
}

// currentOp is op's $currentOp document at now.
func (op *reshardOp) currentOp(now time.Time) bsoncore.Document {
	phase, _ := op.phase.Load().(string)
	b := bsoncore.NewDocumentBuilder().
		AppendString("type", "op").
		AppendString("desc", "ReshardingCoordinator "+uuidString(op.uuid)).
		AppendString("op", "command").
		AppendString("ns", op.spec.DB+"."+op.spec.Coll).
		AppendString("provenance", op.spec.Command).
		AppendBinary("reshardingUUID", 4, op.uuid[:]).
		AppendString("tempNs", op.spec.DB+"."+op.tmp)
	if op.spec.Original != nil {
		b.AppendDocument("originatingCommand", op.spec.Original)
	}
	copied, total := op.copied.Load(), op.totalDocs.Load()
	elapsed := now.Sub(op.started)
	b.AppendInt64("totalOperationTimeElapsedSecs", int64(elapsed.Seconds())).
		AppendInt64("approxDocumentsToCopy", total).
		AppendInt64("documentsCopied", copied).
		AppendInt64("approxBytesToCopy", op.totalBytes.Load()).
		AppendInt64("bytesCopied", op.bytesCopied.Load()).
		AppendInt64("oplogEntriesFetched", op.applied.Load()).
		AppendInt64("oplogEntriesApplied", op.applied.Load()).
		AppendString("recipientState", phase).
		AppendString("coordinatorState", phase)
	copyTime := elapsed
	if done := op.cloneDone.Load(); done != 0 {
		copyTime = time.Unix(0, done).Sub(op.started)
		b.AppendInt64("totalApplyTimeElapsedSecs", int64(now.Sub(time.Unix(0, done)).Seconds()))
	}
	b.AppendInt64("totalCopyTimeElapsedSecs", int64(copyTime.Seconds()))
	if copied > 0 && total > copied && op.cloneDone.Load() == 0 {
		left := time.Duration(float64(copyTime) * float64(total-copied) / float64(copied))
		b.AppendInt64("remainingOperationTimeEstimatedSecs", int64(left.Seconds()))
	}
	return b.Build()
}

// uuidString formats u as MongoDB prints a UUID.
func uuidString(u [16]byte) string {
	const hexd = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hexd[c>>4], hexd[c&15])
	}
	return string(out)
}
