package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// useTempStore installs a temporary store in a test directory for the test and returns its
// directory, which must be empty whenever no spill is open.
func useTempStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir() + "/_tmp"
	tmp, err := store.NewTempStore(store.TempOptions{Dir: dir, MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	SetTempStore(tmp)
	t.Cleanup(func() {
		SetTempStore(nil)
		if err := tmp.Close(); err != nil {
			t.Errorf("temp store Close: %v", err)
		}
	})
	return dir
}

// checkTempEmpty fails the test if dir holds anything.
func checkTempEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		t.Errorf("spill directory %s holds %d files after the query", dir, len(ents))
	}
}

// spillDocs returns n documents with few distinct sort values of mixed types (many ties, so
// that stability shows) and padding.
func spillDocs(n int) []bsoncore.Document {
	rng := rand.New(rand.NewPCG(1, 2))
	docs := make([]bsoncore.Document, n)
	for i := range docs {
		b := bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i))
		switch k := rng.IntN(40); {
		case k < 15:
			b.AppendInt32("a", int32(k))
		case k < 25:
			b.AppendDouble("a", float64(k)/2)
		case k < 35:
			b.AppendString("a", fmt.Sprintf("s%02d", k))
		case k < 37:
			b.AppendArray("a", bsoncore.NewArrayBuilder().AppendInt32(int32(k)).AppendInt32(3).Build())
		default: // a missing: sorts as null
		}
		b.AppendInt64("b", int64(rng.IntN(5)))
		b.AppendString("pad", strings.Repeat("x", rng.IntN(200)))
		docs[i] = b.Build()
	}
	return docs
}

// drain reads s to its end, copying the documents, and closes it.
func drain(t *testing.T, s docStream) ([]bsoncore.Document, error) {
	t.Helper()
	defer s.close()
	var out []bsoncore.Document
	for {
		d, err := s.next(context.Background())
		if err != nil || d == nil {
			return out, err
		}
		out = append(out, append(bsoncore.Document(nil), d...))
	}
}

func TestSortSpillMatchesInMemory(t *testing.T) {
	dir := useTempStore(t)
	docs := spillDocs(3000)
	for _, spec := range [][]bsonx.SortField{
		{{Path: "a"}},
		{{Path: "a", Desc: true}, {Path: "b"}},
		{{Path: "b", Desc: true}},
	} {
		want, err := drain(t, &sortStream{in: &sliceStream{docs: docs}, spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		s := &sortStream{in: &sliceStream{docs: docs}, spec: spec, allowDiskUse: true, memLimit: 8 << 10}
		got, err := drain(t, s)
		if err != nil {
			t.Fatal(err)
		}
		if s.spills < 10 {
			t.Errorf("%v: %d spills, want many", spec, s.spills)
		}
		if len(got) != len(want) {
			t.Fatalf("%v: %d documents, want %d", spec, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%v: document %d is %v, want %v", spec, i, got[i], want[i])
			}
		}
		checkTempEmpty(t, dir)
	}
}

func TestSortSpillLimits(t *testing.T) {
	dir := useTempStore(t)
	docs := spillDocs(500)
	spec := []bsonx.SortField{{Path: "a"}}

	// Without allowDiskUse: MongoDB's 292, naming the bound.
	_, err := drain(t, &sortStream{in: &sliceStream{docs: docs}, spec: spec, memLimit: 4096})
	var me *mongoerr.Error
	if !errors.As(err, &me) || me.Code != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed ||
		me.Message != "Executor error during find command :: caused by :: Sort exceeded memory limit of 4096 bytes, but did not opt in to external sorting." {
		t.Fatalf("without allowDiskUse: %v", err)
	}

	// A top-k sort holds only its k best documents: no spill.
	want, _ := drain(t, &sortStream{in: &sliceStream{docs: docs}, spec: spec, limit: 5})
	s := &sortStream{in: &sliceStream{docs: docs}, spec: spec, limit: 5, memLimit: 4096}
	got, err := drain(t, s)
	if err != nil || s.spills != 0 || len(got) != 5 {
		t.Fatalf("top-k: %d documents, %d spills, %v", len(got), s.spills, err)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("top-k document %d is %v, want %v", i, got[i], want[i])
		}
	}

	// Closed halfway (a cursor killed early): the spill is dropped.
	s = &sortStream{in: &sliceStream{docs: docs}, spec: spec, allowDiskUse: true, memLimit: 4096}
	for range 10 {
		if _, err := s.next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if s.spill == nil {
		t.Fatal("no spill")
	}
	s.close()
	checkTempEmpty(t, dir)
}

// groupSpillPipelines are $group stages whose result must not depend on spilling.
var groupSpillPipelines = []string{
	`[{"$group": {"_id": "$a", "n": {"$sum": 1}, "sb": {"$sum": "$b"}, "avg": {"$avg": "$b"},
		"ids": {"$push": "$_id"}, "first": {"$first": "$_id"}, "last": {"$last": "$_id"},
		"set": {"$addToSet": "$b"}, "max": {"$max": "$pad"}}}]`,
	`[{"$group": {"_id": {"a": "$a", "b": "$b"}, "ids": {"$push": "$_id"}}}]`,
	`[{"$bucket": {"groupBy": "$b", "boundaries": [0, 2, 4], "default": "other", "output": {"ids": {"$push": "$_id"}}}}]`,
}

// runGroup runs pipeline, one $group or $bucket, over docs with the given memory limit and
// checks that it spilled if and only if it is over the limit with allowDiskUse.
func runGroup(t *testing.T, pipeline string, docs []bsoncore.Document, memLimit int64, diskUse bool) ([]bsoncore.Document, error) {
	t.Helper()
	env := &aggEnv{db: "test", opts: &expr.Options{Now: time.Now()}, memLimit: memLimit, allowDiskUse: diskUse}
	p, err := parsePipeline(env, extArray(t, pipeline), false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.openOver(&sliceStream{docs: docs}, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := drain(t, out)
	if spilled := out.(*groupStream).spilled; spilled != (diskUse && memLimit < 1<<20) {
		t.Errorf("%s: spilled %v with limit %d and allowDiskUse %v", pipeline, spilled, memLimit, diskUse)
	}
	return res, err
}

func TestAggregateGroupSpillMatchesInMemory(t *testing.T) {
	dir := useTempStore(t)
	docs := spillDocs(3000)
	for _, pipeline := range groupSpillPipelines {
		want, err := runGroup(t, pipeline, docs, 1<<30, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := runGroup(t, pipeline, docs, 4096, false); err == nil ||
			err.Error() != memoryError("$group").Error() {
			t.Fatalf("without allowDiskUse: %v", err)
		}
		got, err := runGroup(t, pipeline, docs, 4096, true)
		if err != nil {
			t.Fatal(err)
		}
		checkTempEmpty(t, dir)
		if strings.Contains(pipeline, "$bucket") {
			checkSortedByID(t, got)
		}
		// The output order of $group is unspecified: compare as sets, by _id.
		byID := func(ds []bsoncore.Document) {
			sort.Slice(ds, func(i, j int) bool { return bsonx.Compare(ds[i].Lookup("_id"), ds[j].Lookup("_id")) < 0 })
		}
		byID(want)
		byID(got)
		if len(got) != len(want) {
			t.Fatalf("%s: %d groups, want %d", pipeline, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s: group %d is\n%v, want\n%v", pipeline, i, got[i], want[i])
			}
		}
	}
}

// checkSortedByID fails unless ds is sorted by _id.
func checkSortedByID(t *testing.T, ds []bsoncore.Document) {
	t.Helper()
	for i := 1; i < len(ds); i++ {
		if bsonx.Compare(ds[i-1].Lookup("_id"), ds[i].Lookup("_id")) > 0 {
			t.Fatalf("groups %d and %d out of _id order", i-1, i)
		}
	}
}

func TestSetParameterMemoryKnobs(t *testing.T) {
	t.Cleanup(func() {
		sortMemoryKnob.v.Store(maxBlockingSortBytes)
		groupMemoryKnob.v.Store(maxAggStageBytes)
	})
	e := New(Options{}, zap.NewNop())
	c := e.Connect(wire.ConnInfo{ID: 1})
	cmd := func(json string) bsoncore.Document {
		d := extDoc(t, json)
		reply, err := c.Handle(context.Background(), &wire.Request{Body: d})
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
	get := cmd(`{"getParameter": 1, "internalQueryMaxBlockingSortMemoryUsageBytes": 1, "internalDocumentSourceGroupMaxMemoryBytes": 1, "$db": "admin"}`)
	if v := get.Lookup("internalQueryMaxBlockingSortMemoryUsageBytes"); v.Type != bsoncore.TypeInt32 || v.Int32() != 100<<20 {
		t.Errorf("sort knob: %v", v)
	}
	if v := get.Lookup("internalDocumentSourceGroupMaxMemoryBytes"); v.Type != bsoncore.TypeInt64 || v.Int64() != 100<<20 {
		t.Errorf("group knob: %v", v)
	}
	set := cmd(`{"setParameter": 1, "internalQueryMaxBlockingSortMemoryUsageBytes": 1048576, "internalDocumentSourceGroupMaxMemoryBytes": {"$numberLong": "2097152"}, "$db": "admin"}`)
	if v := set.Lookup("was"); v.Type != bsoncore.TypeInt64 || v.Int64() != 100<<20 {
		t.Errorf("was: %v (want the group knob's, first in name order)", set)
	}
	if sortMemoryKnob.load() != 1<<20 || groupMemoryKnob.load() != 2<<20 {
		t.Errorf("knobs are %d, %d", sortMemoryKnob.load(), groupMemoryKnob.load())
	}
	for _, tc := range []struct {
		json string
		code mongoerr.Code
		msg  string
	}{
		{`{"setParameter": 1, "internalDocumentSourceGroupMaxMemoryBytes": 0}`, mongoerr.BadValue,
			"Invalid value for parameter internalDocumentSourceGroupMaxMemoryBytes: 0 is not greater than 0"},
		{`{"setParameter": 1, "internalQueryMaxBlockingSortMemoryUsageBytes": -1}`, mongoerr.BadValue,
			"Invalid value for parameter internalQueryMaxBlockingSortMemoryUsageBytes: -1 is not greater than or equal to 0"},
		{`{"setParameter": 1, "internalQueryMaxBlockingSortMemoryUsageBytes": "big"}`, mongoerr.BadValue, "Can't coerce value"},
		{`{"setParameter": 1, "internalQueryMaxBlockingSortMemoryUsageBytes": {"$numberLong": "4294967296"}}`, mongoerr.BadValue, "Can't coerce value"},
		{`{"setParameter": 1, "noSuchKnob": 1}`, mongoerr.InvalidOptions,
			"attempted to set unrecognized parameter [noSuchKnob], use help:true to see options "},
		{`{"setParameter": 1, "maxBSONDepth": 10}`, mongoerr.IllegalOperation, "not allowed to change [maxBSONDepth] at runtime"},
		{`{"setParameter": 1}`, mongoerr.InvalidOptions, "no option found to set, use help:true to see options "},
	} {
		reply := cmd(strings.TrimSuffix(tc.json, "}") + `, "$db": "admin"}`)
		code, _ := reply.Lookup("code").Int32OK()
		msg, _ := reply.Lookup("errmsg").StringValueOK()
		if mongoerr.Code(code) != tc.code || msg != tc.msg {
			t.Errorf("%s: got %d %q, want %d %q", tc.json, code, msg, tc.code, tc.msg)
		}
	}
	if sortMemoryKnob.load() != 1<<20 || groupMemoryKnob.load() != 2<<20 {
		t.Errorf("a failed setParameter changed the knobs: %d, %d", sortMemoryKnob.load(), groupMemoryKnob.load())
	}
}
