package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// spillDoc is one document of the spill tests (about 1 KiB).
type spillDoc struct {
	ID  int32  `bson:"_id"`
	K   int32  `bson:"k"` // sort key, with many ties
	G   string `bson:"g"` // group key, two documents per group
	V   int32  `bson:"v"`
	Pad string `bson:"pad"`
}

// spillGroup is one result of the spill tests' $group.
type spillGroup struct {
	ID  string  `bson:"_id"`
	N   int64   `bson:"n"`
	S   int64   `bson:"s"`
	IDs []int64 `bson:"ids"`
}

// spillDocs returns n documents, about n KiB.
func spillDocs(n int) []spillDoc {
	rng := rand.New(rand.NewPCG(7, 11))
	docs := make([]spillDoc, n)
	for i := range docs {
		docs[i] = spillDoc{ID: int32(i), K: int32(rng.IntN(1000)), G: fmt.Sprintf("g%05d", i%(n/2)),
			V: int32(rng.IntN(100)), Pad: strings.Repeat(strconv.Itoa(i%10), 950)}
	}
	return docs
}

// insertSpillDocs inserts docs into coll in batches.
func insertSpillDocs(t *testing.T, coll *mongo.Collection, docs []spillDoc) {
	t.Helper()
	for start := 0; start < len(docs); start += 1000 {
		batch := make([]any, 0, 1000)
		for _, d := range docs[start:min(start+1000, len(docs))] {
			batch = append(batch, d)
		}
		if _, err := coll.InsertMany(context.Background(), batch); err != nil {
			t.Fatalf("insert: %v", err)
		}
	}
}

// setMemoryKnobs sets the sort and $group memory bounds.
func setMemoryKnobs(t *testing.T, c *mongo.Client, sortBytes int32, groupBytes int64) {
	t.Helper()
	cmd := bson.D{{Key: "setParameter", Value: 1},
		{Key: "internalQueryMaxBlockingSortMemoryUsageBytes", Value: sortBytes},
		{Key: "internalDocumentSourceGroupMaxMemoryBytes", Value: groupBytes}}
	if err := c.Database("admin").RunCommand(context.Background(), cmd).Err(); err != nil {
		t.Fatalf("setParameter: %v", err)
	}
}

// wantMemoryError checks that err is MongoDB's 292 with message msg (or, when msg ends with
// "...", a message containing msg without the dots).
func wantMemoryError(t *testing.T, err error, msg string) {
	t.Helper()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 292 || ce.Name != "QueryExceededMemoryLimitNoDiskUseAllowed" {
		t.Fatalf("got %v, want QueryExceededMemoryLimitNoDiskUseAllowed (292)", err)
	}
	if part, ok := strings.CutSuffix(msg, "..."); ok && !strings.Contains(ce.Message, part) || !ok && ce.Message != msg {
		t.Errorf("message %q, want %q", ce.Message, msg)
	}
}

// checkSorted reads cur and compares it, byte for byte, with want.
func checkSorted(t *testing.T, cur *mongo.Cursor, want []spillDoc) {
	t.Helper()
	ctx := context.Background()
	defer func() { _ = cur.Close(ctx) }()
	i := 0
	for ; cur.Next(ctx); i++ {
		if i >= len(want) {
			t.Fatalf("more than %d documents", len(want))
		}
		w, err := bson.Marshal(want[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(cur.Current, w) {
			t.Fatalf("document %d has _id %v, want %d", i, cur.Current.Lookup("_id"), want[i].ID)
		}
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(want) {
		t.Fatalf("got %d documents, want %d", i, len(want))
	}
}

// checkGroups reads cur, $group results in any order, and compares them with want.
func checkGroups(t *testing.T, cur *mongo.Cursor, want map[string]spillGroup) {
	t.Helper()
	ctx := context.Background()
	var got []spillGroup
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d groups, want %d", len(got), len(want))
	}
	for _, g := range got {
		slices.Sort(g.IDs) // $push follows the scan order, which the client does not know
		w, ok := want[g.ID]
		if !ok || g.N != w.N || g.S != w.S || !slices.Equal(g.IDs, w.IDs) {
			t.Fatalf("group %s is %+v, want %+v", g.ID, g, w)
		}
	}
}

// wantGroups computes the spill tests' $group in memory (IDs nil when withIDs is false).
func wantGroups(docs []spillDoc, withIDs bool) map[string]spillGroup {
	out := map[string]spillGroup{}
	for _, d := range docs {
		g := out[d.G]
		g.ID, g.N, g.S = d.G, g.N+1, g.S+int64(d.V)
		if withIDs {
			g.IDs = append(g.IDs, int64(d.ID))
		}
		out[d.G] = g
	}
	return out
}

// checkDirEmpty fails if dir holds files.
func checkDirEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		t.Errorf("spill directory %s holds %d entries", dir, len(ents))
	}
}

func TestSpillSortAndGroup(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	shardColl(t, c, "spill.sharded", "_id")
	tmpDir := filepath.Join(srv.dir, "data", "_tmp")
	docs := spillDocs(20_000) // about 20 MiB
	db := c.Database("spill")
	for _, name := range []string{"plain", "sharded"} {
		insertSpillDocs(t, db.Collection(name), docs)
	}
	setMemoryKnobs(t, c, 1<<20, 1<<20)

	sorted := slices.Clone(docs)
	slices.SortFunc(sorted, func(a, b spillDoc) int {
		if a.K != b.K {
			return int(a.K - b.K)
		}
		return int(b.ID - a.ID)
	})
	sortSpec := bson.D{{Key: "k", Value: 1}, {Key: "_id", Value: -1}}
	sortMsg := "Sort exceeded memory limit of 1048576 bytes, but did not opt in to external sorting."
	groupMsg := "PlanExecutor error during aggregation :: caused by :: Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in."
	withIDs := wantGroups(docs, true)
	withoutIDs := wantGroups(docs, false)

	for _, name := range []string{"plain", "sharded"} {
		coll := db.Collection(name)
		t.Run(name+"/FindSort", func(t *testing.T) {
			_, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(sortSpec).SetAllowDiskUse(false))
			wantMemoryError(t, err, "Executor error during find command :: caused by :: "+sortMsg)
			cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(sortSpec).SetAllowDiskUse(true))
			if err != nil {
				t.Fatal(err)
			}
			// The cursor is open and its sort spilled: the temporary store is in use.
			if ents, err := os.ReadDir(tmpDir); err != nil || len(ents) == 0 {
				t.Errorf("spill directory %s during the sort: %d entries, %v", tmpDir, len(ents), err)
			}
			checkSorted(t, cur, sorted)
		})
		for stage, pipeline := range map[string]mongo.Pipeline{
			"AggregateSort":      {{{Key: "$sort", Value: sortSpec}}},
			"AggregateLateSort":  {{{Key: "$unset", Value: "nothing"}}, {{Key: "$sort", Value: sortSpec}}},
			"AggregateSortLimit": {{{Key: "$sort", Value: sortSpec}}, {{Key: "$limit", Value: 5}}},
		} {
			t.Run(name+"/"+stage, func(t *testing.T) {
				want := sorted
				if stage == "AggregateSortLimit" {
					want = sorted[:5] // a top-k sort fits in memory without allowDiskUse
				} else {
					_, err := coll.Aggregate(ctx, pipeline, options.Aggregate().SetAllowDiskUse(false))
					wantMemoryError(t, err, sortMsg+"...")
				}
				cur, err := coll.Aggregate(ctx, pipeline, options.Aggregate().SetAllowDiskUse(true))
				if err != nil {
					t.Fatal(err)
				}
				checkSorted(t, cur, want)
			})
		}
		group := bson.D{{Key: "_id", Value: "$g"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}},
			{Key: "s", Value: bson.D{{Key: "$sum", Value: "$v"}}}}
		for stage, spec := range map[string]bson.D{
			"AggregateGroup": append(slices.Clone(group), bson.E{Key: "ids", Value: bson.D{{Key: "$push", Value: "$_id"}}}),
			// Mergeable accumulators only: on the sharded collection it runs per shard.
			"AggregateGroupPartial": group,
		} {
			t.Run(name+"/"+stage, func(t *testing.T) {
				pipeline := mongo.Pipeline{{{Key: "$group", Value: spec}}}
				want := withIDs
				if stage == "AggregateGroupPartial" {
					want = withoutIDs
				}
				_, err := coll.Aggregate(ctx, pipeline, options.Aggregate().SetAllowDiskUse(false))
				wantMemoryError(t, err, groupMsg)
				cur, err := coll.Aggregate(ctx, pipeline, options.Aggregate().SetAllowDiskUse(true))
				if err != nil {
					t.Fatal(err)
				}
				checkGroups(t, cur, want)
			})
		}
	}
	// Without allowDiskUse, allowDiskUseByDefault decides: true (MongoDB 6.0+'s default)
	// spills, false refuses.
	coll := db.Collection("sharded")
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(sortSpec))
	if err != nil {
		t.Fatalf("a sort past its memory without allowDiskUse, allowDiskUseByDefault true: %v", err)
	}
	checkSorted(t, cur, sorted)
	if _, err := runCmd(t, c.Database("admin"), bson.D{{Key: "setParameter", Value: 1}, {Key: "allowDiskUseByDefault", Value: false}}); err != nil {
		t.Fatal(err)
	}
	_, err = coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$sort", Value: sortSpec}}})
	wantMemoryError(t, err, sortMsg+"...")
	if res, err := runCmd(t, c.Database("admin"), bson.D{{Key: "getParameter", Value: 1}, {Key: "allowDiskUseByDefault", Value: 1}}); err != nil || res["allowDiskUseByDefault"] != false {
		t.Errorf("getParameter allowDiskUseByDefault: %v %v", res, err)
	}
	checkDirEmpty(t, tmpDir)
	size := 0
	for _, d := range docs {
		b, _ := bson.Marshal(d)
		size += len(b)
	}
	reportSortRSS(t, srv, "plain", sortSpec, len(docs), size)
}

// reportSortRSS logs the server's peak RSS, above its RSS at the start, during a plain scan of
// coll, the spilled sort and the same sort in memory (the bound raised to 100 MiB), each on a
// freshly restarted server (Go keeps freed memory, so a previous query would blur the
// numbers), next to the data size. Batches of 100 documents keep reply buffers out of it.
func reportSortRSS(t *testing.T, srv *server, coll string, sortSpec bson.D, n, size int) {
	t.Helper()
	var report []string
	for _, mode := range []string{"scan", "spilled sort", "in-memory sort"} {
		srv.stop()
		srv.restart()
		c := srv.client(t)
		sortBytes := int32(1 << 20)
		if mode == "in-memory sort" {
			sortBytes = 100 << 20
		}
		setMemoryKnobs(t, c, sortBytes, 1<<20)
		o := options.Find().SetBatchSize(100)
		if mode != "scan" {
			o.SetSort(sortSpec).SetAllowDiskUse(true)
		}
		pid := srv.cmd.Process.Pid
		// Writing 5 to clear_refs resets the peak (VmHWM) to the current RSS.
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			t.Skipf("cannot reset the peak RSS: %v", err)
		}
		before := procStatusKB(t, pid, "VmRSS")
		cur, err := c.Database("spill").Collection(coll).Find(context.Background(), bson.D{}, o)
		if err != nil {
			t.Fatal(err)
		}
		for cur.Next(context.Background()) {
		}
		if err := cur.Err(); err != nil {
			t.Fatal(err)
		}
		_ = cur.Close(context.Background())
		peak := procStatusKB(t, pid, "VmHWM")
		report = append(report, fmt.Sprintf("%s %d MiB -> peak %d MiB (+%d)", mode, before>>10, peak>>10, (peak-before)>>10))
	}
	t.Logf("RSS while reading %d documents (%.1f MiB of BSON), sort bound 1 MiB: %s",
		n, float64(size)/(1<<20), strings.Join(report, "; "))
}

// procStatusKB reads a kB field of /proc/<pid>/status.
func procStatusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("cannot read the server's status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
