package exec

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

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
func runGroup(t *testing.T, temp *stream.Temp, pipeline string, docs []bsoncore.Document, memLimit int64, diskUse bool) ([]bsoncore.Document, error) {
	t.Helper()
	env := &aggEnv{db: "test", opts: &expr.Options{Now: time.Now()}, memLimit: memLimit, allowDiskUse: diskUse, temp: temp}
	p, err := parsePipeline(env, extArray(t, pipeline), false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.openOver(&stream.Slice{Docs: docs}, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := streamtest.Drain(t, out)
	if spilled := out.(*groupStream).spilled; spilled != (diskUse && memLimit < 1<<20) {
		t.Errorf("%s: spilled %v with limit %d and allowDiskUse %v", pipeline, spilled, memLimit, diskUse)
	}
	return res, err
}

func TestAggregateGroupSpillMatchesInMemory(t *testing.T) {
	temp, dir := streamtest.Temp(t)
	docs := streamtest.Docs(3000)
	for _, pipeline := range groupSpillPipelines {
		want, err := runGroup(t, temp, pipeline, docs, 1<<30, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := runGroup(t, temp, pipeline, docs, 4096, false); err == nil ||
			err.Error() != memoryError("$group").Error() {
			t.Fatalf("without allowDiskUse: %v", err)
		}
		got, err := runGroup(t, temp, pipeline, docs, 4096, true)
		if err != nil {
			t.Fatal(err)
		}
		streamtest.CheckEmpty(t, dir)
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
		sortMemoryKnob.v.Store(stream.MaxBlockingSortBytes)
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
