package ddl_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/exec/validate"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestBuildFillsIndex checks a build over existing documents, more than one batch of them:
// the index is in the catalog but not ready (nor planned with) while it fills, then ready
// with an entry per key, multikey where a document holds an array, and consistent.
func TestBuildFillsIndex(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		doc        func(i int) string
		entries    int
		multikey   bool
	}{
		{"Scalars", `{"key": {"a": 1}, "name": "a_1"}`, func(i int) string { return fmt.Sprintf(`"a": %d`, i%10) }, 300, false},
		{"Arrays", `{"key": {"a": 1}, "name": "a_1"}`, func(i int) string { return fmt.Sprintf(`"a": [%d, -1]`, i) }, 600, true},
		{"Sparse", `{"key": {"a": 1}, "name": "a_1", "sparse": true}`, func(i int) string {
			if i%3 == 0 {
				return `"b": 1`
			}
			return fmt.Sprintf(`"a": %d`, i)
		}, 200, false},
		{"UniqueDistinct", `{"key": {"a": 1}, "name": "a_1", "unique": true}`, func(i int) string { return fmt.Sprintf(`"a": %d`, i) }, 300, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hooked := 0
			var e *env
			e = newEnvWith(t, ddl.Options{Knobs: ddl.Knobs{AfterBuildStart: func() {
				hooked++
				x := e.coll(t).Index("a_1")
				ci, _ := e.cat.Lookup("db", "c")
				if x == nil || x.Ready || len(ci.Indexes) != 1 || len(ci.WriteIndexes) != 2 {
					t.Errorf("during the build: index %+v, %d planned, %d maintained", x, len(ci.Indexes), len(ci.WriteIndexes))
				}
			}}})
			c := e.create(t, "")
			e.insert(t, docs(300, tc.doc)...)
			if err := e.x.Build(context.Background(), c, []store.Index{spec(t, tc.spec)}); err != nil {
				t.Fatal(err)
			}
			x := e.coll(t).Index("a_1")
			if hooked != 1 || x == nil || !x.Ready || x.Builder != "" {
				t.Fatalf("after the build: hook ran %d times, index %+v", hooked, x)
			}
			if n := e.entries(t, c.ID, x.ID); n != tc.entries {
				t.Errorf("%d entries, want %d", n, tc.entries)
			}
			if got := slices.Contains(x.MultikeyPaths, "a"); got != tc.multikey {
				t.Errorf("multikey paths %v, want multikey %v", x.MultikeyPaths, tc.multikey)
			}
			ci, _ := e.cat.Lookup("db", "c")
			res, err := validate.Run(context.Background(), e.cat, ci, validate.Options{})
			if err != nil || !res.Valid() || len(res.Indexes) != 2 || res.Indexes[1].Keys != int64(tc.entries) {
				t.Errorf("validate after the build: %v, %+v", err, res)
			}
		})
	}
}

// TestBuildUniqueDuplicates checks a unique build over duplicate values, in one batch and
// across batches: E11000 with MongoDB's build-failure context and its keyPattern and
// keyValue, and no index nor entry left behind.
func TestBuildUniqueDuplicates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dupOf func(i int) int // the u of document i
	}{
		{"SameBatch", func(i int) int {
			if i == 5 {
				return 3
			}
			return i
		}},
		{"AcrossBatches", func(i int) int {
			if i == 299 {
				return 0
			}
			return i
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.create(t, "", spec(t, `{"key": {"a": 1}, "name": "a_1"}`))
			e.insert(t, docs(300, func(i int) string { return fmt.Sprintf(`"u": %d, "a": %d`, tc.dupOf(i), i) })...)
			next := e.coll(t).NextIndexID
			err := e.x.Build(context.Background(), c, []store.Index{spec(t, `{"key": {"u": 1}, "name": "u_1", "unique": true}`)})
			wantCode(t, err, mongoerr.DuplicateKey, "DuplicateKey", " ) :: caused by :: E11000 duplicate key error collection: db.c index: u_1 dup key: { u: ")
			me := mongoerr.As(err)
			if !strings.HasPrefix(me.Message, "Index build failed: ") || !strings.Contains(me.Message, "Collection db.c ( ") {
				t.Errorf("message %q", me.Message)
			}
			if kp, ok := me.Info.Lookup("keyPattern").DocumentOK(); !ok || kp.Lookup("u").Type == 0 || me.Info.Lookup("keyValue", "u").Type == 0 {
				t.Errorf("info %v, want keyPattern and keyValue", me.Info)
			}
			after := e.coll(t)
			if after.Index("u_1") != nil || len(after.Indexes) != 2 {
				t.Errorf("indexes after the failure: %+v", after.Indexes)
			}
			if n := e.entries(t, c.ID, next); n != 0 {
				t.Errorf("%d entries of the failed index are left", n)
			}
			if n := e.entries(t, c.ID, after.Index("a_1").ID); n != 300 {
				t.Errorf("the other index has %d entries, want 300", n)
			}
		})
	}
}

// TestBuildDroppedCollection checks a build of a collection that no longer exists.
func TestBuildDroppedCollection(t *testing.T) {
	e := newEnv(t)
	c := e.create(t, "")
	if _, err := e.cat.Store().DropCollection("db", "c"); err != nil {
		t.Fatal(err)
	}
	err := e.x.Build(context.Background(), c, []store.Index{spec(t, `{"key": {"a": 1}, "name": "a_1"}`)})
	wantCode(t, err, mongoerr.NamespaceNotFound, "NamespaceNotFound", "ns not found db.c")
}

// TestDeleteIndexData checks that a dropped index's entries are deleted, and only its.
func TestDeleteIndexData(t *testing.T) {
	e := newEnv(t)
	c := e.create(t, "", spec(t, `{"key": {"a": 1}, "name": "a_1"}`), spec(t, `{"key": {"b": 1}, "name": "b_1"}`))
	e.insert(t, docs(50, func(i int) string { return fmt.Sprintf(`"a": %d, "b": %d`, i, i) })...)
	a, b := e.coll(t).Index("a_1").ID, e.coll(t).Index("b_1").ID
	if e.entries(t, c.ID, a) != 50 || e.entries(t, c.ID, b) != 50 {
		t.Fatal("the indexes are not filled")
	}
	c, err := e.cat.Store().UpdateCollection("db", "c", func(c *store.Collection) error {
		c.Indexes = slices.DeleteFunc(c.Indexes, func(x store.Index) bool { return x.ID == a })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.x.DeleteIndexData(c, []store.IndexID{a})
	if n := e.entries(t, c.ID, a); n != 0 {
		t.Errorf("%d entries of the dropped index are left", n)
	}
	if n := e.entries(t, c.ID, b); n != 50 {
		t.Errorf("the other index has %d entries, want 50", n)
	}
}

// nodes is a cluster as the runner sees it: this node's name, the nodes up, the leader.
type nodes struct {
	self   string
	up     map[string]bool
	leader bool
}

// NodeName implements ddl.Nodes.
func (n *nodes) NodeName() string { return n.self }

// NodeUp implements ddl.Nodes.
func (n *nodes) NodeUp(name string) bool { return n.up[name] }

// Leader implements ddl.Nodes.
func (n *nodes) Leader() bool { return n.leader }

// TestAbortUnfinished checks which unfinished builds a start and the partition manager
// remove: a start its own node's (and those recorded without a node), the manager those of
// nodes that are gone, never another live node's, never a ready index.
func TestAbortUnfinished(t *testing.T) {
	cl := &nodes{self: "me", up: map[string]bool{"me": true, "alive": true}}
	e := newEnvWith(t, ddl.Options{Nodes: cl})
	var indexes []store.Index
	for i, builder := range []string{"", "me", "alive", "gone"} {
		x := spec(t, fmt.Sprintf(`{"key": {"f%d": 1}, "name": "i%d"}`, i, i))
		x.ID, x.Builder = store.IndexID(10+i), builder
		indexes = append(indexes, x)
	}
	e.create(t, "", indexes...) // created ready: mark them unfinished
	c, err := e.cat.Store().UpdateCollection("db", "c", func(c *store.Collection) error {
		for i := range c.Indexes {
			c.Indexes[i].Ready = c.Indexes[i].Name == "_id_"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.insert(t, `{"_id": 1, "f0": 1, "f1": 1, "f2": 1, "f3": 1}`) // writers maintain unfinished indexes
	names := func() []string {
		var out []string
		for _, x := range e.coll(t).Indexes {
			out = append(out, x.Name)
		}
		return out
	}
	e.x.AbortUnfinished()
	if got := names(); !slices.Equal(got, []string{"_id_", "i2", "i3"}) {
		t.Fatalf("after a start: %v, want _id_ i2 i3", got)
	}
	if e.entries(t, c.ID, 10) != 0 || e.entries(t, c.ID, 11) != 0 || e.entries(t, c.ID, 12) != 1 {
		t.Error("the entries of the aborted builds are left, or another node's are gone")
	}
	if e.x.AbortOrphaned() {
		t.Fatal("AbortOrphaned ran on a node that is not the manager")
	}
	cl.leader = true
	if !e.x.AbortOrphaned() {
		t.Fatal("AbortOrphaned did not run on the manager")
	}
	// A builder gone at one sweep only may be a live node whose lease expired: it stays.
	if got := names(); !slices.Equal(got, []string{"_id_", "i2", "i3"}) {
		t.Fatalf("after the manager's first sweep: %v, want _id_ i2 i3", got)
	}
	e.x.AbortOrphaned()
	if got := names(); !slices.Equal(got, []string{"_id_", "i2"}) {
		t.Errorf("after the manager's sweep: %v, want _id_ i2", got)
	}
}

// otherNodes is the other nodes' side of builds and drops (cluster mode) as the runner
// reaches it, through catalog.Peers: it records the _cleaveShardIndexes commands it is sent
// (their shard, op and index ids) and answers fillErr to a build.
type otherNodes struct {
	fillErr        error
	shards         []int
	filled, purged [][]store.IndexID
}

// Command implements catalog.Peers.
func (r *otherNodes) Command(_ context.Context, shard int, cmd bsoncore.Document) (bsoncore.Document, error) {
	r.shards = append(r.shards, shard)
	var ids []store.IndexID
	vals, _ := cmd.Lookup("ids").Array().Values()
	for _, v := range vals {
		ids = append(ids, store.IndexID(v.Int64()))
	}
	if cmd.Lookup("_cleaveShardIndexes").StringValue() != "c" || cmd.Lookup("$db").StringValue() != "db" {
		return nil, mongoerr.New(mongoerr.InternalError, "unexpected command %v", cmd)
	}
	switch op := cmd.Lookup("op").StringValue(); op {
	case "build":
		r.filled = append(r.filled, ids)
		if r.fillErr != nil {
			return nil, r.fillErr
		}
		return bsoncore.NewDocumentBuilder().AppendDouble("ok", 1).Build(), nil
	case "delete":
		r.purged = append(r.purged, ids)
		return nil, mongoerr.New(mongoerr.HostUnreachable, "node gone") // only logged
	default:
		return nil, mongoerr.New(mongoerr.BadValue, "op %q", op)
	}
}

// TestBuildOnOtherNodes checks that a build fills the other nodes' shards after this
// node's, and that their failure (a duplicate key there) fails the build everywhere: the
// index leaves the catalog and every node deletes its entries.
func TestBuildOnOtherNodes(t *testing.T) {
	r := &otherNodes{}
	e := newEnvWith(t, ddl.Options{Peers: r})
	c := e.create(t, "")
	e.insert(t, `{"_id": 1, "a": 1}`, `{"_id": 2, "a": 2}`)
	e.addOtherNode(t, c)
	first := e.coll(t).NextIndexID
	if err := e.x.Build(context.Background(), c, []store.Index{spec(t, `{"key": {"a": 1}, "name": "a_1", "unique": true}`)}); err != nil {
		t.Fatal(err)
	}
	if len(r.filled) != 1 || !slices.Equal(r.filled[0], []store.IndexID{first}) || len(r.purged) != 0 ||
		!slices.Equal(r.shards, []int{1}) {
		t.Fatalf("remote calls: filled %v, purged %v, to shards %v", r.filled, r.purged, r.shards)
	}

	r.fillErr = mongoerr.New(mongoerr.DuplicateKey, "E11000 duplicate key error collection: db.c index: b_1 dup key: { b: 1 }")
	second := e.coll(t).NextIndexID
	err := e.x.Build(context.Background(), e.coll(t), []store.Index{spec(t, `{"key": {"b": 1}, "name": "b_1", "unique": true}`)})
	wantCode(t, err, mongoerr.DuplicateKey, "DuplicateKey", ":: caused by :: E11000 duplicate key error collection: db.c index: b_1")
	if e.coll(t).Index("b_1") != nil || e.entries(t, c.ID, second) != 0 {
		t.Error("the failed build left its index or entries")
	}
	if len(r.purged) != 1 || !slices.Equal(r.purged[0], []store.IndexID{second}) {
		t.Errorf("the other nodes were told to delete %v", r.purged)
	}
	if e.coll(t).Index("a_1") == nil || e.entries(t, c.ID, first) != 2 {
		t.Error("the first index was touched")
	}
}
