package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestQueryMemoryAccount: with --query-memory 4 MiB, far below the sort's and $group's own
// bounds (100 MiB), a sort and a $group with allowDiskUse over 8 MiB of documents spill
// because the server's account is spent, and answer in full and in order; a find's first
// batch of 8,000 documents ends at the account and the cursor sends the rest by getMore;
// serverStatus.queryMemory and /metrics show the account, and once the clients are gone it
// holds nothing.
func TestQueryMemoryAccount(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--query-memory", strconv.Itoa(4<<20))
	c := srv.client(t)
	ctx := context.Background()
	tmpDir := filepath.Join(srv.dir, "data", "_tmp")
	coll := c.Database(dbName(t)).Collection("c")
	docs := spillDocs(8000) // about 8 MiB
	insertSpillDocs(t, coll, docs)

	sorted := slices.Clone(docs)
	slices.SortFunc(sorted, func(a, b spillDoc) int {
		if a.K != b.K {
			return int(a.K - b.K)
		}
		return int(b.ID - a.ID)
	})
	sortSpec := bson.D{{Key: "k", Value: 1}, {Key: "_id", Value: -1}}
	cur, err := coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$sort", Value: sortSpec}}}, options.Aggregate().SetAllowDiskUse(true))
	if err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(tmpDir); err != nil || len(ents) == 0 {
		t.Errorf("spill directory %s with the sort's cursor open: %d entries, %v", tmpDir, len(ents), err)
	}
	checkSorted(t, cur, sorted)

	// The groups hold every document's padding: 8 MiB, past the account.
	cur, err = coll.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$g"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}},
			{Key: "s", Value: bson.D{{Key: "$sum", Value: "$v"}}}, {Key: "ids", Value: bson.D{{Key: "$push", Value: "$_id"}}},
			{Key: "pads", Value: bson.D{{Key: "$push", Value: "$pad"}}}}}},
		{{Key: "$project", Value: bson.D{{Key: "pads", Value: 0}}}},
	}, options.Aggregate().SetAllowDiskUse(true))
	if err != nil {
		t.Fatal(err)
	}
	checkGroups(t, cur, wantGroups(docs, true))
	refusedBefore := queryMemoryStatus(t, c)["refused"]

	byID := slices.Clone(docs)
	slices.SortFunc(byID, func(a, b spillDoc) int { return int(a.ID - b.ID) })
	cur, err = coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetBatchSize(8000))
	if err != nil {
		t.Fatal(err)
	}
	if n := cur.RemainingBatchLength(); n == 0 || n >= 6000 {
		t.Errorf("first batch of %d documents of 1 KiB under a 4 MiB account, want fewer than 6,000", n)
	}
	checkSorted(t, cur, byID)

	st := queryMemoryStatus(t, c)
	if st["limitBytes"] != 4<<20 || st["peakBytes"] < 3<<20 || st["refused"] <= refusedBefore {
		t.Errorf("serverStatus.queryMemory %v: want the 4 MiB limit, a peak near it and refusals by the batches", st)
	}
	fams := scrape(t, srv)
	if n, series := metricSum(fams, "cleave_query_memory_refused_total", nil); series != 1 || n <= 0 {
		t.Errorf("cleave_query_memory_refused_total %v (%d series), want above 0", n, series)
	}
	if n, _ := metricSum(fams, "cleave_query_memory_limit_bytes", nil); n != 4<<20 {
		t.Errorf("cleave_query_memory_limit_bytes %v, want %d", n, 4<<20)
	}
	checkDirEmpty(t, tmpDir)
	if err := c.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	c2 := srv.client(t)
	waitFor(t, 10*time.Second, "the account to hold nothing", func() bool { return queryMemoryStatus(t, c2)["usedBytes"] == 0 })
}

// queryMemoryStatus returns serverStatus.queryMemory's counters.
func queryMemoryStatus(t *testing.T, c *mongo.Client) map[string]int64 {
	t.Helper()
	var st struct {
		QueryMemory map[string]int64 `bson:"queryMemory"`
	}
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.QueryMemory
}

// TestQueryMemoryFetchBatches: a $group over an index scan fetches its documents in key
// order, a batch of index entries (about 1 MiB) at a time, and the server's memory account
// sees the batch: serverStatus.queryMemory's peak passes 1 MiB while nothing else holds
// that much, and the account holds nothing afterwards. Under an account too small for a
// batch the scan fetches in the index's order instead: the same groups, and a refusal.
func TestQueryMemoryFetchBatches(t *testing.T) {
	t.Parallel()
	pipeline := mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "k", Value: bson.D{{Key: "$gte", Value: 100}}}}}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}},
			{Key: "s", Value: bson.D{{Key: "$sum", Value: "$v"}}}}}},
	}
	docs := spillDocs(3000)
	var wantN, wantS int64
	for _, d := range docs {
		if d.K >= 100 {
			wantN++
			wantS += int64(d.V)
		}
	}
	for _, tc := range []struct {
		name    string
		limit   int
		batched bool
	}{
		{"Room", 64 << 20, true},
		{"Spent", 768 << 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startServer(t, "--query-memory", strconv.Itoa(tc.limit))
			c := srv.client(t)
			ctx := context.Background()
			coll := c.Database(dbName(t)).Collection("c")
			insertSpillDocs(t, coll, docs)
			if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}}); err != nil {
				t.Fatal(err)
			}
			before := queryMemoryStatus(t, c)
			cur, err := coll.Aggregate(ctx, pipeline)
			if err != nil {
				t.Fatal(err)
			}
			var got []struct{ N, S int64 }
			if err := cur.All(ctx, &got); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].N != wantN || got[0].S != wantS {
				t.Fatalf("$group over the index scan: %+v, want n %d, s %d", got, wantN, wantS)
			}
			st := queryMemoryStatus(t, c)
			if tc.batched && (before["peakBytes"] >= 1<<20 || st["peakBytes"] < 1<<20) {
				t.Errorf("queryMemory before %v, after %v: want the fetch batch's 1 MiB in the peak", before, st)
			}
			if !tc.batched && (st["refused"] <= before["refused"] || st["peakBytes"] >= 1<<20) {
				t.Errorf("queryMemory before %v, after %v: want the batch refused", before, st)
			}
			waitFor(t, 10*time.Second, "the account to hold nothing", func() bool { return queryMemoryStatus(t, c)["usedBytes"] == 0 })
		})
	}
}
