package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestAPIStrictSubPipelines: under apiStrict, a stage outside Stable API version 1 is
// refused with APIStrictError (323) inside $lookup's, $unionWith's and $facet's pipelines
// too, at any depth (MongoDB's LiteParsedPipeline::validate walks the sub-pipelines), while
// sub-pipelines of version 1 stages run.
func TestAPIStrictSubPipelines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	api := options.ServerAPI(options.ServerAPIVersion1).SetStrict(true)
	db := sharedServer(t).client(t, options.Client().SetServerAPIOptions(api)).Database(dbName(t))
	c := db.Collection("c")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	lookup := func(pipeline bson.A) bson.D {
		return bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "c"}, {Key: "pipeline", Value: pipeline}, {Key: "as", Value: "j"}}}}
	}
	unionWith := func(pipeline bson.A) bson.D {
		return bson.D{{Key: "$unionWith", Value: bson.D{{Key: "coll", Value: "c"}, {Key: "pipeline", Value: pipeline}}}}
	}
	facet := func(pipeline bson.A) bson.D {
		return bson.D{{Key: "$facet", Value: bson.D{{Key: "ok", Value: bson.A{bson.D{{Key: "$count", Value: "n"}}}}, {Key: "sub", Value: pipeline}}}}
	}
	match := bson.A{bson.D{{Key: "$match", Value: bson.D{}}}}
	cur, err := c.Aggregate(ctx, bson.A{lookup(match), unionWith(match), facet(match)})
	if err != nil {
		t.Fatalf("version 1 sub-pipelines: %v", err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil || len(docs) != 1 {
		t.Fatalf("version 1 sub-pipelines: %v %v", docs, err)
	}
	for _, tc := range []struct {
		name     string
		pipeline bson.A
		stage    string
	}{
		{"Lookup", bson.A{lookup(bson.A{bson.D{{Key: "$planCacheStats", Value: bson.D{}}}})}, "$planCacheStats"},
		{"UnionWith", bson.A{unionWith(bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}}})}, "$currentOp"},
		{"Facet", bson.A{facet(bson.A{bson.D{{Key: "$listSessions", Value: bson.D{}}}})}, "$listSessions"},
		{"Nested", bson.A{facet(bson.A{lookup(bson.A{unionWith(bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{}}}})})})}, "$listLocalSessions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Aggregate(ctx, tc.pipeline)
			ce := wantCodeName(t, err, 323, "APIStrictError")
			if want := tc.stage + " is not allowed with 'apiStrict: true' in API Version 1"; ce.Message != want {
				t.Errorf("message %q, want %q", ce.Message, want)
			}
		})
	}
}
