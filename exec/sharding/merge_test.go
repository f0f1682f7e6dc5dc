package sharding

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/cleavedb/cleave/shard"
)

// TestMergeRangeWaitsForMove: a merge by hand (MergeRange, mergeChunks) of partitions of a
// collection this node is moving waits for the move to end, as MongoDB's shard waits for a
// migration of the collection before it merges, and then merges with the layout the move
// left: the range whose right partition moved away is no longer one shard's sequence
// (ErrNoChunkSequence, mongos' 20 IllegalOperation), the halves of the partition that stayed
// merge. A merge whose context ends first fails with its context's error (maxTimeMS: 50) and
// changes nothing.
func TestMergeRangeWaitsForMove(t *testing.T) {
	f := newManagerFixture(t, 2000, 64<<10)
	ci := f.coll(t)
	halves, err := f.m.ApplySplit("db", "c", &shard.SplitAction{ID: ci.Map.Partition(0).ID, At: 1 << 63, Reason: shard.ReasonManual})
	if err != nil {
		t.Fatal(err)
	}
	quarters, err := f.m.ApplySplit("db", "c", &shard.SplitAction{ID: halves[0], At: 1 << 62, Reason: shard.ReasonManual})
	if err != nil {
		t.Fatal(err)
	}
	ci = f.coll(t)
	from := ci.Map.Partition(0).Shard
	leftLo, _ := ci.Map.Range(ci.Map.Index(quarters[0]))
	_, leftHi := ci.Map.Range(ci.Map.Index(quarters[1]))
	_, rightHi := ci.Map.Range(ci.Map.Index(halves[1]))

	core, logs := observer.New(zap.InfoLevel)
	f.m.log = zap.New(core)
	waiting := func() int { return logs.FilterMessage("waiting for a move of the collection to end").Len() }
	across, left := make(chan error, 1), make(chan error, 1)
	var expired error
	f.m.beforeFlip = func() {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now()) // a maxTimeMS past
		expired = f.m.MergeRange(ctx, ci, leftLo, rightHi)
		cancel()
		go func() { across <- f.m.MergeRange(context.Background(), ci, leftLo, rightHi) }()
		go func() { left <- f.m.MergeRange(context.Background(), ci, leftLo, leftHi) }()
		// The expired merge's wait, then both of these, before the flip; a merge blocked
		// elsewhere would hang the move.
		giveUp := time.Now().Add(30 * time.Second)
		for waiting() < 3 {
			if time.Now().After(giveUp) {
				t.Errorf("the merges did not wait for the move: %d waits logged", waiting())
				return
			}
			select {
			case err := <-across:
				t.Errorf("mergeChunks across the moving partition ended during the move: %v", err)
				across <- err
				return
			case err := <-left:
				t.Errorf("mergeChunks of the collection being moved ended during the move: %v", err)
				left <- err
				return
			default:
			}
			time.Sleep(time.Millisecond)
		}
	}
	if err := f.m.MovePartition("db", "c", halves[1], 1-from, "test"); err != nil {
		t.Fatalf("move during which merges waited: %v", err)
	}
	f.m.beforeFlip = nil
	if !errors.Is(expired, context.DeadlineExceeded) {
		t.Errorf("merge whose time ran out during the move: %v, want its context's error", expired)
	}
	if err := <-across; !errors.Is(err, ErrNoChunkSequence) {
		t.Errorf("merge across the moved partition: %v, want ErrNoChunkSequence", err)
	}
	if err := <-left; err != nil {
		t.Errorf("merge of the partitions that stayed: %v", err)
	}
	ci = f.coll(t)
	i := ci.Map.Locate(leftLo)
	if lo, hi := ci.Map.Range(i); lo != leftLo || hi != leftHi || ci.Map.Partition(i).Shard != from {
		t.Errorf("after the merge: [%x, %x) on shard %d, want [%x, %x) on shard %d", lo, hi, ci.Map.Partition(i).Shard, leftLo, leftHi, from)
	}
	if i := ci.Map.Index(halves[1]); i < 0 || ci.Map.Partition(i).Shard != 1-from {
		t.Errorf("the moved partition: %v", ci.Map)
	}
	if n := f.count(t, `{}`); n != 2000 {
		t.Errorf("scan after the move and the merges: %d documents, want 2000", n)
	}
}
