package agg

import (
	"bytes"
	"sort"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
)

// runGroup runs pipeline, one $group or $bucket, over docs with the given memory limit and
// checks that it spilled if and only if it is over the limit with allowDiskUse.
func runGroup(t *testing.T, temp *stream.Temp, pipeline string, docs []bsoncore.Document, memLimit int64, diskUse bool) ([]bsoncore.Document, error) {
	t.Helper()
	env := &Env{DB: "test", Opts: &expr.Options{Now: time.Now()}, MemLimit: memLimit, AllowDiskUse: diskUse, Temp: temp}
	p, err := Parse(env, streamtest.ExtArray(t, pipeline), false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.OpenOver(&stream.Slice{Docs: docs}, 0)
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
			err.Error() != MemoryError("$group").Error() {
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

// groupSpillPipelines are $group stages whose result must not depend on spilling.
var groupSpillPipelines = []string{
	`[{"$group": {"_id": "$a", "n": {"$sum": 1}, "sb": {"$sum": "$b"}, "avg": {"$avg": "$b"},
		"ids": {"$push": "$_id"}, "first": {"$first": "$_id"}, "last": {"$last": "$_id"},
		"set": {"$addToSet": "$b"}, "max": {"$max": "$pad"}}}]`,
	`[{"$group": {"_id": {"a": "$a", "b": "$b"}, "ids": {"$push": "$_id"}}}]`,
	`[{"$bucket": {"groupBy": "$b", "boundaries": [0, 2, 4], "default": "other", "output": {"ids": {"$push": "$_id"}}}}]`,
}
