package txn_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// env is a transaction registry wired as the server wires it: real stores, the catalog,
// the query engine, and the write path that waits on the registry's transactions.
type env struct {
	cat     *catalog.Catalog
	q       *query.Engine
	wp      *write.Path
	reg     *txn.Registry
	dropped [][]txn.Created // what the registry asked to drop, in order
}

// newEnv opens n shard stores and creates db.c over them: sharded on hashed k across
// every shard when n > 1.
func newEnv(t *testing.T, n int) *env {
	t.Helper()
	e := &env{cat: fixture.Stores(t, n)}
	e.q = query.New(e.cat, query.Options{})
	e.reg = txn.NewRegistry(e.cat, func(c []txn.Created) { e.dropped = append(e.dropped, c) })
	e.wp = write.NewPath(e.cat, e.q, nil).WithGate(e.reg)
	e.reg.Use(e.wp)
	spec := store.Collection{DB: "db", Name: "c"}
	if n > 1 {
		spec.ShardKey = ext(t, `{"k": "hashed"}`)
		for i := range 4 {
			spec.Partitions = append(spec.Partitions, store.Partition{ID: uint64(i + 1), Lo: uint64(i) << 62, Shard: i % n})
		}
	}
	fixture.Create(t, e.cat, spec)
	return e
}

// ext parses a document in Extended JSON.
func ext(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	return streamtest.ExtDoc(t, s)
}

// coll returns db.c as the catalog compiles it now.
func (e *env) coll(t testing.TB) *catalog.Coll {
	t.Helper()
	ci, err := e.cat.Lookup("db", "c")
	if err != nil || ci == nil {
		t.Fatalf("db.c: %v", err)
	}
	return ci
}

// insert inserts docs (Extended JSON) into db.c through wp (a transaction's, or the
// server's) and returns the error of the first that failed.
func (e *env) insert(t testing.TB, wp *write.Path, docs ...string) error {
	t.Helper()
	vals := make([]bsoncore.Value, len(docs))
	for i, d := range docs {
		vals[i] = bsonx.DocValue(ext(t, d))
	}
	var res write.Results
	_, err := wp.Insert(context.Background(), e.coll(t), vals, 0, true, false, write.Concern{}, &res, nil)
	if err == nil && len(res.Errs) > 0 {
		err = res.Errs[0].Err
	}
	return err
}

// ids returns the _ids of the documents of db.c that g reads, in _id order, as a string.
func (e *env) ids(t *testing.T, g *query.Engine) (string, error) {
	t.Helper()
	f, err := query.CompileFilter(ext(t, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	s, _, _, err := g.Open(&query.Query{CI: e.coll(t), Filter: f, Sort: []bsonx.SortField{{Path: "_id"}}})
	if err != nil {
		return "", err
	}
	docs, err := streamtest.Drain(t, s)
	var out []string
	for _, d := range docs {
		n, _ := d.Lookup("_id").AsInt64OK()
		out = append(out, strconv.FormatInt(n, 10))
	}
	return strings.Join(out, ","), err
}

// shardOf returns the shard db.c keeps doc (Extended JSON) on.
func (e *env) shardOf(t *testing.T, doc string) int {
	t.Helper()
	ci := e.coll(t)
	h, err := ci.ShardHash(ext(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	return ci.Map.Partition(ci.Map.Locate(h)).Shard
}

// docOn returns a document {_id: i, k: "..."} that db.c keeps on shard s.
func (e *env) docOn(t *testing.T, s, i int) string {
	t.Helper()
	for j := range 1000 {
		d := fmt.Sprintf(`{"_id": %d, "k": "k%d"}`, i, j)
		if e.shardOf(t, d) == s {
			return d
		}
	}
	t.Fatalf("no key of db.c on shard %d", s)
	return ""
}

// wantCode fails unless err is MongoDB's error code whose message starts with msg and
// carries label (when not "").
func wantCode(t testing.TB, err error, code mongoerr.Code, msg, label string) {
	t.Helper()
	me := mongoerr.As(err)
	if me == nil || me.Code != code || !strings.HasPrefix(me.Message, msg) {
		t.Fatalf("error %v, want %s (%d) %q", err, code, int32(code), msg)
	}
	if label != "" && !slices.Contains(me.Labels, label) {
		t.Fatalf("error %v has labels %v, want %s", err, me.Labels, label)
	}
}
