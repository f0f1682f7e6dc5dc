package query_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// ownerNode is another node as a read reaches it through catalog.Peers: it records the
// commands it is sent and answers a find with one document and a cursor, the getMore on
// that cursor with the last document, as exec/command/node does.
type ownerNode struct {
	t      *testing.T
	mu     sync.Mutex
	cmds   []bsoncore.Document
	shards []int
	killed chan int64
	// endless: the getMore answers keep the cursor open.
	endless bool
}

// Command implements catalog.Peers.
func (o *ownerNode) Command(_ context.Context, shard int, cmd bsoncore.Document) (bsoncore.Document, error) {
	o.mu.Lock()
	o.cmds, o.shards = append(o.cmds, cmd), append(o.shards, shard)
	o.mu.Unlock()
	reply := func(cursor int64, doc string, examined int64) bsoncore.Document {
		stats := bsoncore.NewDocumentBuilder().AppendInt64("docsExamined", examined).AppendInt64("returned", examined).Build()
		return bsoncore.NewDocumentBuilder().AppendInt64("cursor", cursor).
			AppendBinary("docs", 0, streamtest.ExtDoc(o.t, doc)).AppendDocument("stats", stats).AppendDouble("ok", 1).Build()
	}
	switch cmd.Index(0).Key() {
	case "_cleaveShardFind":
		return reply(7, `{"_id": "first", "k": 1}`, 1), nil
	case "_cleaveShardGetMore":
		if o.endless {
			return reply(7, `{"_id": "more", "k": 2}`, 2), nil
		}
		return reply(0, `{"_id": "last", "k": 2}`, 2), nil
	case "_cleaveShardKill":
		o.killed <- cmd.Index(0).Value().Int64()
		return bsoncore.NewDocumentBuilder().AppendDouble("ok", 1).Build(), nil
	}
	return nil, mongoerr.New(mongoerr.CommandNotFound, "no such command %q", cmd.Index(0).Key())
}

// sent returns the names of the commands sent so far.
func (o *ownerNode) sent() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, c := range o.cmds {
		out = append(out, c.Index(0).Key())
	}
	return out
}

// halfOnNodeB returns a catalog of two shards, the second on node-b, and a collection hashed
// on k whose second partition is there.
func halfOnNodeB(t *testing.T) (*catalog.Catalog, *catalog.Coll) {
	t.Helper()
	cat := fixture.Stores(t, 2)
	spec := store.Collection{DB: "db", Name: "c", ShardKey: streamtest.ExtDoc(t, `{"k": "hashed"}`),
		Partitions: []store.Partition{{ID: 1, Lo: 0, Shard: 0}, {ID: 2, Lo: 1 << 63, Shard: 1}}}
	ci := fixture.Create(t, cat, spec)
	cat.SetShards([]catalog.Shard{cat.Shards()[0], catalog.Remote(1, "node-b")})
	return cat, cat.Refresh(ci)
}

// TestReadOfAnotherNodesShard checks the router's side of a read whose partition is on
// another node's shard: the shard's part goes through catalog.Peers as _cleaveShardFind to
// that shard, carrying the planned ranges, access path and the router's catalog revision,
// continues with _cleaveShardGetMore on the owner's cursor, and the documents and totals come
// back into the merge; a read that stops early kills the owner's cursor.
func TestReadOfAnotherNodesShard(t *testing.T) {
	cat, ci := halfOnNodeB(t)
	owner := &ownerNode{t: t, killed: make(chan int64, 1)}
	g := query.New(cat, query.Options{Peers: owner})

	flt, err := query.CompileFilter(streamtest.ExtDoc(t, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	s, _, shards, err := g.Open(&query.Query{CI: ci, Filter: flt})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := streamtest.Drain(t, s)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range docs {
		ids = append(ids, d.Lookup("_id").StringValue())
	}
	if !slices.Equal(ids, []string{"first", "last"}) {
		t.Fatalf("documents %v, want the owner's first and last", ids)
	}
	if got := owner.sent(); !slices.Equal(got, []string{"_cleaveShardFind", "_cleaveShardGetMore"}) || !slices.Equal(owner.shards, []int{1, 1}) {
		t.Fatalf("sent %v to shards %v", got, owner.shards)
	}
	find := owner.cmds[0]
	ranges, ok := query.DecodeRanges(find.Lookup("ranges").Array())
	if !ok || !slices.Equal(ranges, [][2]uint64{{1 << 63, 0}}) {
		t.Errorf("ranges sent %v, want the partition on shard 1 (0: to the end)", ranges)
	}
	if rev, _ := find.Lookup("rev").Int64OK(); rev != cat.Store().Revision() || find.Lookup("shard").Int32() != 1 ||
		find.Lookup("collId").Int64() != int64(ci.Meta.ID) || find.Lookup("$db").StringValue() != "db" {
		t.Errorf("find sent %v (revision %d)", find, cat.Store().Revision())
	}
	if got := owner.cmds[1].Lookup("_cleaveShardGetMore").Int64(); got != 7 {
		t.Errorf("getMore on cursor %d, want the owner's 7", got)
	}
	var remote *query.ShardStream
	for _, ss := range shards {
		if ss.IsRemote() {
			remote = ss
		}
	}
	if remote == nil || remote.Stats.DocsExamined != 2 || remote.Stats.Returned != 2 {
		t.Fatalf("the remote shard's totals: %+v", remote)
	}

	// A read closed before the owner's cursor is exhausted kills it there.
	owner.endless = true
	s, _, _, err = g.Open(&query.Query{CI: ci, Filter: flt})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := s.Next(context.Background()); err != nil || d.Lookup("_id").StringValue() != "first" {
		t.Fatalf("first document %v, %v", d, err)
	}
	s.Close()
	if id := <-owner.killed; id != 7 {
		t.Errorf("killed cursor %d, want 7", id)
	}
}

// movedLeader is a replicated shard's two nodes as a read reaches them through
// catalog.PinnedPeers: "old" answers the find and stops leading right after, so that what is
// sent to the shard's owner from then on reaches "new", which has no cursor of the read.
type movedLeader struct {
	old    *ownerNode
	mu     sync.Mutex
	leader string
	hosts  []string // where each command went
}

// Command implements catalog.Peers.
func (m *movedLeader) Command(ctx context.Context, shard int, cmd bsoncore.Document) (bsoncore.Document, error) {
	reply, _, err := m.CommandPinned(ctx, shard, "", cmd)
	return reply, err
}

// CommandPinned implements catalog.PinnedPeers.
func (m *movedLeader) CommandPinned(ctx context.Context, shard int, host string, cmd bsoncore.Document) (bsoncore.Document, string, error) {
	m.mu.Lock()
	if host == "" {
		host = m.leader
	}
	m.hosts = append(m.hosts, host)
	m.leader = "new"
	m.mu.Unlock()
	if host == "new" {
		return nil, host, mongoerr.New(mongoerr.CursorNotFound, "cursor id %d not found", cmd.Index(0).Value().AsInt64())
	}
	reply, err := m.old.Command(ctx, shard, cmd)
	return reply, host, err
}

// TestReadOfAnotherNodesShardLeaderMoved: the shard's leadership moves to another node
// between the first batch of a remote read and its next: the getMore goes to the node that
// opened the read, which keeps its cursor, not to the shard's new leader, which has none (a
// find's later batches failed with CursorNotFound after a leader transfer).
func TestReadOfAnotherNodesShardLeaderMoved(t *testing.T) {
	cat, ci := halfOnNodeB(t)
	peers := &movedLeader{old: &ownerNode{t: t, killed: make(chan int64, 1)}, leader: "old"}
	g := query.New(cat, query.Options{Peers: peers})
	flt, err := query.CompileFilter(streamtest.ExtDoc(t, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	s, _, _, err := g.Open(&query.Query{CI: ci, Filter: flt})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := streamtest.Drain(t, s)
	if err != nil {
		t.Fatalf("after the leadership moved: %v (sent to %v)", err, peers.hosts)
	}
	if len(docs) != 2 || !slices.Equal(peers.old.sent(), []string{"_cleaveShardFind", "_cleaveShardGetMore"}) {
		t.Fatalf("%d documents; the opening node got %v", len(docs), peers.old.sent())
	}
	if !slices.Equal(peers.hosts, []string{"old", "old"}) {
		t.Fatalf("commands went to %v, want both to the node that opened the read", peers.hosts)
	}
}
