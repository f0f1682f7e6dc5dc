package integration

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestShardSplitManual drives the split command (sh.splitAt, sh.splitFind) on a ranged key:
// middle splits the partition holding the key there, find splits the partition holding the
// document at its median, bounds names a partition exactly; config.chunks shows the new
// bounds, a find of one key still reads one partition, answers equal an unsharded copy's,
// and mergeChunks joins the pieces again. MongoDB's refusals: no find/bounds/middle, find
// with middle, a middle that is not a whole shard key or is a chunk's bound, bounds that are
// no chunk's, a partition of one key that cannot split (CannotSplit).
func TestShardSplitManual(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	ns := db.Name() + ".s"
	admin := func(cmd bson.D) error { return zoneAdmin(t, c, cmd) }
	if err := admin(bson.D{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	coll, plain := db.Collection("s"), db.Collection("plain")
	insertIncreasing(t, 0, 1000, coll, plain)
	uuid := collUUID(t, c, ns)
	bounds := func() []int64 {
		var out []int64
		for _, ch := range rangedChunks(t, c, uuid) {
			out = append(out, chunkKey(t, ch.Min))
		}
		slices.Sort(out)
		return out
	}
	split := func(kv ...bson.E) error { return admin(append(bson.D{{Key: "split", Value: ns}}, kv...)) }

	if err := split(bson.E{Key: "middle", Value: bson.D{{Key: "x", Value: 400}}}); err != nil {
		t.Fatalf("split at {x: 400}: %v", err)
	}
	if got := bounds(); !slices.Equal(got, []int64{-1 << 62, 400}) {
		t.Fatalf("chunk mins after splitAt 400: %v", got)
	}
	// find: the chunk holding x: 700, [400, MaxKey), splits at its median document, 700.
	if err := split(bson.E{Key: "find", Value: bson.D{{Key: "x", Value: 700}}}); err != nil {
		t.Fatalf("split find {x: 700}: %v", err)
	}
	if got := bounds(); len(got) != 3 || got[2] < 650 || got[2] > 750 {
		t.Fatalf("chunk mins after splitFind: %v, want a median near 700", got)
	}
	// bounds: exactly the first chunk, [MinKey, 400): its median is near 200.
	if err := split(bson.E{Key: "bounds", Value: bson.A{bson.D{{Key: "x", Value: bson.MinKey{}}}, bson.D{{Key: "x", Value: 400}}}}); err != nil {
		t.Fatalf("split bounds: %v", err)
	}
	if got := bounds(); len(got) != 4 || got[1] < 150 || got[1] > 250 {
		t.Fatalf("chunk mins after split by bounds: %v", got)
	}
	wantCode(t, split(), 2, "need to specify find/bounds or middle")
	wantCode(t, split(bson.E{Key: "find", Value: bson.D{{Key: "x", Value: 1}}}, bson.E{Key: "middle", Value: bson.D{{Key: "x", Value: 2}}}), 2,
		"cannot specify find and middle together")
	wantCode(t, split(bson.E{Key: "middle", Value: bson.D{{Key: "y", Value: 2}}}), 2, "new split key { y: 2 } is not valid for shard key pattern { x: 1 }")
	wantCode(t, split(bson.E{Key: "middle", Value: bson.D{{Key: "x", Value: 400}}}), 2, "new split key { x: 400 } is a boundary key of existing chunk")
	wantCode(t, split(bson.E{Key: "bounds", Value: bson.A{bson.D{{Key: "x", Value: 1}}, bson.D{{Key: "x", Value: 2}}}}), 2, "no chunk found with the shard key bounds")
	wantCode(t, admin(bson.D{{Key: "split", Value: db.Name() + ".plain"}, {Key: "middle", Value: bson.D{{Key: "x", Value: 1}}}}), 118, "is not sharded")

	if r := explainHier(t, coll, bson.D{{Key: "x", Value: 555}}); len(r.partitions) != 1 {
		t.Fatalf("find({x: 555}) read %v", r.partitions)
	}
	for _, f := range []bson.D{{}, {{Key: "x", Value: bson.D{{Key: "$gte", Value: 150}, {Key: "$lt", Value: 720}}}}} {
		if got, want := hierIDs(t, coll, f), hierIDs(t, plain, f); !slices.Equal(got, want) {
			t.Fatalf("find(%v): %d documents, unsharded %d", f, len(got), len(want))
		}
	}
	if err := admin(bson.D{{Key: "mergeChunks", Value: ns}, {Key: "bounds", Value: bson.A{bson.D{{Key: "x", Value: bson.MinKey{}}}, bson.D{{Key: "x", Value: bson.MaxKey{}}}}}}); err != nil {
		t.Fatalf("mergeChunks over the whole key: %v", err)
	}
	if got := bounds(); len(got) != 1 {
		t.Fatalf("chunk mins after mergeChunks: %v", got)
	}

	// A partition of one key value cannot split.
	one := db.Collection("one")
	if err := admin(bson.D{{Key: "shardCollection", Value: db.Name() + ".one"}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := one.InsertMany(ctx, []any{bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, admin(bson.D{{Key: "split", Value: db.Name() + ".one"}, {Key: "find", Value: bson.D{{Key: "k", Value: 1}}}}), 87,
		"Unable to find median in chunk because chunk is indivisible.")
}
