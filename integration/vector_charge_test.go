package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestVectorSearchCharge checks that $vectorSearch is charged as a scan of the vectors it
// compared plus a point read of each document returned (getLastRequestStatistics): exact: true
// compares all 5,000, the graph far fewer.
func TestVectorSearchCharge(t *testing.T) {
	t.Parallel()
	const n, dims = 5000, 16
	db := startServer(t).client(t, options.Client().SetMaxPoolSize(1)).Database("vecru")
	coll := db.Collection("items")
	seedRandomVectors(t, coll, n, dims, 3)
	createVectorIndex(t, coll, "vec", vectorDef("v", dims, "euclidean"))
	q := make([]float64, dims)
	charge := func(stage any) float64 {
		t.Helper()
		mustVectorSearch(t, coll, stage.(bson.D))
		var stats struct{ RequestCharge float64 }
		if err := db.RunCommand(context.Background(), bson.D{{Key: "getLastRequestStatistics", Value: 1}}).Decode(&stats); err != nil {
			t.Fatal(err)
		}
		return stats.RequestCharge
	}
	// 5,000 vectors compared × 0.05 RU + 10 documents of about 200 bytes read × 1 RU.
	exact := charge(vectorStage("vec", "v", q, 0, 10, bson.E{Key: "exact", Value: true}))
	if exact < 259 || exact > 261 {
		t.Fatalf("exact search charged %v RU, want 260", exact)
	}
	// At least the 20 candidates compared and the 10 documents read; far fewer comparisons.
	approx := charge(vectorStage("vec", "v", q, 20, 10))
	if approx < 11 || approx > exact/2 {
		t.Fatalf("approximate search charged %v RU, want between 11 and %v", approx, exact/2)
	}
	t.Logf("charged %v RU exact, %v RU approximate", exact, approx)
}
