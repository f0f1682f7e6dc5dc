package ddl_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// env is what a Runner runs on, wired as exec.New wires it: real stores, the catalog
// over them, the query engine and write path, and the runner itself.
type env struct {
	cat     *catalog.Catalog
	path    *write.Path
	x       *ddl.Runner
	deleted *atomic.Int64
}

// newEnv opens one store and a runner over it, closed when the test ends.
func newEnv(t *testing.T) *env { t.Helper(); return newEnvWith(t, ddl.Options{}) }

// newEnvWith is newEnv with the runner's options (its Deleted counter is the env's).
func newEnvWith(t *testing.T, opts ddl.Options) *env {
	t.Helper()
	cat := fixture.Stores(t, 1)
	e := &env{cat: cat, path: write.NewPath(cat, query.New(cat, query.Options{}), nil), deleted: new(atomic.Int64)}
	opts.Deleted = e.deleted
	e.x = ddl.New(cat, e.path, zap.NewNop(), opts)
	t.Cleanup(e.x.Close)
	return e
}

// ext parses a document in Extended JSON.
func ext(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	return streamtest.ExtDoc(t, s)
}

// create creates db.c with options opts ("" for none) and indexes, made ready, and returns
// its record.
func (e *env) create(t *testing.T, opts string, indexes ...store.Index) *store.Collection {
	t.Helper()
	for i := range indexes {
		indexes[i].Ready = true
	}
	c := store.Collection{DB: "db", Name: "c", Indexes: indexes}
	if opts != "" {
		c.Options = ext(t, opts)
	}
	return fixture.Create(t, e.cat, c).Meta
}

// coll returns the current record of db.c.
func (e *env) coll(t *testing.T) *store.Collection {
	t.Helper()
	c := e.cat.Store().State().Collection("db", "c")
	if c == nil {
		t.Fatal("db.c does not exist")
	}
	return c
}

// insert inserts docs (Extended JSON) into db.c through the write path.
func (e *env) insert(t *testing.T, docs ...string) {
	t.Helper()
	ci, err := e.cat.Lookup("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]bsoncore.Value, len(docs))
	for i, d := range docs {
		vals[i] = bsonx.DocValue(ext(t, d))
	}
	var res write.Results
	if _, err := e.path.Insert(context.Background(), ci, vals, 0, true, false, write.Concern{}, &res, nil); err != nil || res.N != int64(len(docs)) {
		t.Fatalf("insert: %v, %d inserted, errors %v", err, res.N, res.Errs)
	}
}

// spec parses an index specification (Extended JSON) as createIndexes does.
func spec(t *testing.T, s string) store.Index {
	t.Helper()
	x, err := ddl.ParseIndexSpec(bsonx.DocValue(ext(t, s)), false)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// entries counts the entries of index idx of collection coll on every shard.
func (e *env) entries(t *testing.T, coll store.CollID, idx store.IndexID) int {
	t.Helper()
	n := 0
	for _, sh := range e.cat.Shards() {
		if _, remote := sh.Node(); remote {
			continue // another node's: its entries are that node's to count
		}
		it, err := sh.NewIndexIter(coll, idx, nil, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// ids returns the _ids (int32) of the documents of collection coll, in storage order.
func (e *env) ids(t *testing.T, coll store.CollID) []int32 {
	t.Helper()
	var out []int32
	it, err := e.cat.Shards()[0].NewDocIter(coll, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = it.Close() }()
	for it.Next() {
		id, _ := catalog.FirstValue(it.Doc(), "_id")
		n, ok := id.Int32OK()
		if !ok {
			t.Fatalf("_id %v is not an int", id)
		}
		out = append(out, n)
	}
	return out
}

// docs returns n documents {_id: i, ...} made by f(i), an Extended JSON fragment of the
// other fields.
func docs(n int, f func(i int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"_id": %d, %s}`, i, f(i))
	}
	return out
}

// wantCode fails unless err is MongoDB's error code (codeName name) whose message contains
// msg; code 0 wants no error.
func wantCode(t testing.TB, err error, code mongoerr.Code, name, msg string) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	me := mongoerr.As(err)
	if me == nil {
		t.Fatalf("error %v, want %s (%d)", err, name, code)
		return
	}
	if me.Code != code || me.Code.String() != name || !strings.Contains(me.Message, msg) {
		t.Fatalf("error %s (%d) %q, want %s (%d) with %q", me.Code, int32(me.Code), me.Message, name, int32(code), msg)
	}
}

// addOtherNode puts a shard 1 on another node (its stand-in) and gives it a sliver at the
// top of c's hash range, which no document of the tests falls in: the runner then has
// another node holding partitions of c to reach.
func (e *env) addOtherNode(t *testing.T, c *store.Collection) {
	t.Helper()
	e.cat.SetShards(append(slices.Clone(e.cat.Shards()), catalog.Remote(1, "node-b")))
	_, err := e.cat.Store().UpdateCollection(c.DB, c.Name, func(m *store.Collection) error {
		m.Partitions = append(m.Partitions, store.Partition{ID: m.NextPartitionID, Lo: math.MaxUint64 - 1<<20, Shard: 1})
		m.NextPartitionID++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
