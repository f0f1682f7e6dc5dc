package integration

import (
	"testing"

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
	v.runQueries(t, seed, nDocs, n, diffViewStride, " through the views")
}
