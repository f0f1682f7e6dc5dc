package sharding

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
)

// nodeView is a Cluster in which this node owns shard local and another node the rest.
type nodeView struct{ local int }

func (v nodeView) LocalShards() []int { return []int{v.local} }
func (v nodeView) ShardHost(int) (node, host string) {
	return "other", "127.0.0.1:1"
}
func (v nodeView) Leader() bool                         { return v.local == 0 }
func (v nodeView) Draining(int) bool                    { return false }
func (v nodeView) SetDraining(int) error                { return nil }
func (v nodeView) ShardZones() map[int][]string         { return nil }
func (v nodeView) SetShardZone(int, string, bool) error { return nil }
func (v nodeView) Incarnation() int64                   { return 0 }

func (v nodeView) Setting(context.Context, string) ([]byte, error)  { return nil, nil }
func (v nodeView) PutSetting(context.Context, string, []byte) error { return nil }
func (v nodeView) ManagerNode(context.Context) (string, error)      { return "", nil }
func (v nodeView) NodeName() string                                 { return "self" }
func (v nodeView) NodeUp(string) bool                               { return true }

// directPeers delivers a move's steps to the destination's manager as the internal command
// would (exec's moveApply), in process: both managers share the stores and the catalog.
type directPeers struct {
	cat *catalog.Catalog
	to  *Manager
	// steps, when not nil, records each step's op ("apply paced 100ms" for a paced apply).
	steps *[]string
}

// Command implements catalog.Peers for _cleaveMoveApply.
func (p directPeers) Command(_ context.Context, s int, cmd bsoncore.Document) (bsoncore.Document, error) {
	first, _ := bsonx.FirstElement(cmd)
	name, _ := first.Value().StringValueOK()
	db, _ := cmd.Lookup("$db").StringValueOK()
	ci, err := p.cat.Lookup(db, name)
	if err != nil || ci == nil {
		return nil, errors.New("no collection")
	}
	lo, _ := cmd.Lookup("lo").Int64OK()
	hi, _ := cmd.Lookup("hi").Int64OK()
	op, _ := cmd.Lookup("op").StringValueOK()
	entries, _ := cmd.Lookup("entries").ArrayOK()
	pace, _ := cmd.Lookup("paceMillis").Int64OK()
	if p.steps != nil {
		step := op
		if pace > 0 {
			step += fmt.Sprintf(" paced %dms", pace)
		}
		*p.steps = append(*p.steps, step)
	}
	if _, err := p.to.ReceiveMove(ci, s, uint64(lo), uint64(hi), op, entries, time.Duration(pace)*time.Millisecond); err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendDouble("ok", 1).AppendInt64("incarnation", p.to.Incarnation()).Build(), nil
}

// TestManagerMovePartitionToNode moves a partition from shard 0 to shard 1 as if they were
// on two nodes (two managers, each owning one shard, the steps delivered in process): the
// destination refuses batches of a move that has not begun, deletes what it held in the
// range at the start (a crashed attempt's copy), rebuilds the index entries of what it
// receives, and forgets the incoming range at the commit; the source's range goes after the
// grace period.
// newNodePair returns the managers of two nodes over f's stores, src running shard 0 and dst
// shard 1, not started (no rounds, no repair); src reaches dst directly. dst's node has its
// own catalog, dstCat: its own DDL lock (which a move's begin takes) and key locks.
func newNodePair(t *testing.T, f *managerFixture) (src, dst *Manager, dstCat *catalog.Catalog) {
	t.Helper()
	src = New(f.cat, zap.NewNop(), Options{Cluster: nodeView{local: 0}, CheckInterval: time.Hour})
	dstCat = catalog.New(f.cat.Shards(), f.cat.Store(), zap.NewNop())
	dst = New(dstCat, zap.NewNop(), Options{Cluster: nodeView{local: 1}, CheckInterval: time.Hour})
	src.write, dst.write = f.m.write, f.m.write
	t.Cleanup(src.Close)
	t.Cleanup(dst.Close)
	src.peers = directPeers{cat: f.cat, to: dst}
	return src, dst, dstCat
}

func TestManagerMovePartitionToNode(t *testing.T) {
	f := newManagerFixture(t, 1000, 1<<30)
	moved := f.splitInHalves(t)
	ci := f.coll(t)
	lo, hi := ci.Map.Range(1)
	src, dst, dstCat := newNodePair(t, f)

	if _, err := dst.ReceiveMove(ci, 1, lo, hi, "apply", nil, 0); !errors.Is(err, shard.ErrStaleAction) {
		t.Fatalf("a batch before begin: %v, want a stale action", err)
	}
	// A stray copy on the destination: a document that is not on the source.
	b := f.cat.Shards()[1].NewBatch()
	b.SetDoc(ci.Meta.ID, lo+1, []byte("\x10stray"), bsoncore.NewDocumentBuilder().AppendInt32("_id", 99999).Build())
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	b.Close()

	if err := src.MovePartition("db", "c", moved.ID, 1, "test"); err != nil {
		t.Fatal(err)
	}
	if len(dst.foreignHints(ci.Meta.ID, nil)) != 0 {
		t.Errorf("the destination still marks the range incoming after the commit")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	unlock, err := dstCat.LockDDLCtx(ctx)
	if err != nil {
		t.Fatalf("the destination's DDL lock is still held after the commit: %v", err)
	}
	unlock()
	f.checkMoved(t, src, moved.ID, 1, 1000)
}

// leavingView is nodeView whose node stops serving its shard once gone is set: a replicated
// shard whose leadership moved to another node.
type leavingView struct {
	nodeView
	gone atomic.Bool
}

func (v *leavingView) LocalShards() []int {
	if v.gone.Load() {
		return nil
	}
	return v.nodeView.LocalShards()
}

// ddlFree reports whether cat's DDL lock can be taken at once.
func ddlFree(cat *catalog.Catalog) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	unlock, err := cat.LockDDLCtx(ctx)
	if err != nil {
		return false
	}
	unlock()
	return true
}

// TestManagerIncomingRangeOfLostShard: a node that began receiving a move into its shard 1
// holds its DDL lock (holdDDL); once it no longer serves shard 1 (the leadership of the
// replicated shard moved, and the move's next steps go to the new leader), its next round
// forgets the incoming range and releases the lock. It used to keep it until the range's
// incomingTimeout, then for ever: its sweep could not delete the copy through the stand-in
// of a shard it does not serve, and validate, index builds and moves waited on the lock.
func TestManagerIncomingRangeOfLostShard(t *testing.T) {
	f := newManagerFixture(t, 100, 1<<30)
	f.splitInHalves(t)
	ci := f.coll(t)
	lo, hi := ci.Map.Range(1) // shard 0's
	view := &leavingView{nodeView: nodeView{local: 1}}
	dstCat := catalog.New(f.cat.Shards(), f.cat.Store(), zap.NewNop())
	dst := New(dstCat, zap.NewNop(), Options{Cluster: view, CheckInterval: time.Hour})
	dst.write = f.m.write
	t.Cleanup(dst.Close)

	if _, err := dst.ReceiveMove(ci, 1, lo, hi, "begin", nil, 0); err != nil {
		t.Fatal(err)
	}
	dst.sweepIncoming()
	if ddlFree(dstCat) {
		t.Fatal("the DDL lock is free while a move into the node is under way")
	}
	view.gone.Store(true)
	dst.sweepIncoming()
	if !ddlFree(dstCat) {
		t.Fatal("the DDL lock is still held for a move into a shard the node no longer serves")
	}
	if len(dst.foreignHints(ci.Meta.ID, nil)) != 0 {
		t.Error("the node still marks the range incoming")
	}
}
