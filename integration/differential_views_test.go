package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// diffViewStride runs one generated query in so many through the views.
const diffViewStride = 5

// diffViewChain creates over coll a view with a $match and an $addFields, and over that one
// a view with a $project, and returns the outer view.
func diffViewChain(t *testing.T, coll *mongo.Collection) *mongo.Collection {
	t.Helper()
	db, inner, outer := coll.Database(), coll.Name()+"_v1", coll.Name()+"_v2"
	match := diffStage("$match", bson.D{{Key: "status", Value: bson.D{{Key: "$ne", Value: "fail"}}}})
	add := diffStage("$addFields", bson.D{
		{Key: "seqMod", Value: bson.D{{Key: "$mod", Value: bson.A{"$seq", int32(10)}}}},
		{Key: "counter", Value: bson.D{{Key: "$add", Value: bson.A{"$counter", int32(1)}}}},
	})
	if err := db.CreateView(t.Context(), inner, coll.Name(), mongo.Pipeline{match, add}); err != nil {
		t.Fatalf("create view %s: %v", inner, err)
	}
	project := diffStage("$project", bson.D{{Key: "bytes", Value: int32(0)}, {Key: "location.coords", Value: int32(0)}})
	if err := db.CreateView(t.Context(), outer, inner, mongo.Pipeline{project}); err != nil {
		t.Fatalf("create view %s: %v", outer, err)
	}
	return db.Collection(outer)
}

// checkViews runs every diffViewStride-th of the first n generated queries of seed through
// a view over a view of each collection, and requires the same results or error codes.
func (r *diffRunner) checkViews(t *testing.T, seed uint64, nDocs, n int) {
	t.Helper()
	v := &diffRunner{ctx: r.ctx, plain: diffViewChain(t, r.plain), sharded: diffViewChain(t, r.sharded)}
	start := time.Now()
	failures := 0
	for i := 0; i < n; i += diffViewStride {
		if *diffQueryFlag >= 0 && i != *diffQueryFlag {
			continue
		}
		q := newDiffGen(seed, i).query()
		if diffKnownBug(q) {
			v.known++
			continue
		}
		began := time.Now()
		msg := v.check(q)
		v.timed(i, q.kind, time.Since(began))
		if msg == "" {
			continue
		}
		failures++
		t.Errorf("query %d of seed %d differs through the views: %s\n  query: %s\n  replay: go test ./integration -run TestDifferentialShardedVsUnsharded -count=1 -v -diff.seed=%d -diff.docs=%d -diff.query=%d",
			i, seed, msg, v.command(q), seed, nDocs, i)
		if failures == 10 {
			t.Fatal("stopping after 10 differences through the views")
		}
	}
	t.Logf("views: %d queries in %v: %s", (n+diffViewStride-1)/diffViewStride, time.Since(start).Round(time.Millisecond), v.stats())
}
