package integration

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// setMaxTimeAlwaysTimeOut turns MongoDB's maxTimeAlwaysTimeOut failpoint on or off.
func setMaxTimeAlwaysTimeOut(t *testing.T, cl *mongo.Client, on bool) {
	t.Helper()
	mode := "off"
	if on {
		mode = "alwaysOn"
	}
	cmd := bson.D{{Key: "configureFailPoint", Value: "maxTimeAlwaysTimeOut"}, {Key: "mode", Value: mode}}
	if _, err := runCmd(t, cl.Database("admin"), cmd); err != nil {
		t.Fatalf("configureFailPoint: %v", err)
	}
}

// TestAggregateMaxTimeBlockingStages checks that the blocking stages check their context
// while they read their input, not only between batches: with maxTimeAlwaysTimeOut on, a
// pipeline given maxTimeMS fails with MaxTimeMSExpired 50 at its first check. The 5,000
// documents come from $unwind over one document, so the scan, which checks every few
// hundred documents, examines one: only the blocking stage's own check can fail the command.
// With the failpoint off, the same commands succeed.
func TestAggregateMaxTimeBlockingStages(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--test-commands")
	cl := srv.client(t)
	ctx := context.Background()
	db := cl.Database("maxtime")
	a := make(bson.A, 5000)
	for i := range a {
		a[i] = int32(i)
	}
	if _, err := db.Collection("one").InsertOne(ctx, bson.D{{Key: "_id", Value: 0}, {Key: "a", Value: a}}); err != nil {
		t.Fatal(err)
	}
	d := func(k string, v any) bson.D { return bson.D{{Key: k, Value: v}} }
	unwind := d("$unwind", "$a")
	stages := []struct {
		name  string
		stage bson.D
	}{
		{"Sort", d("$sort", d("a", -1))},
		{"Group", d("$group", d("_id", d("$mod", bson.A{"$a", 7})))},
		{"BucketAuto", d("$bucketAuto", bson.D{{Key: "groupBy", Value: "$a"}, {Key: "buckets", Value: 5}})},
		{"SetWindowFieldsSorted", d("$setWindowFields", bson.D{{Key: "sortBy", Value: d("a", 1)}, {Key: "output", Value: d("r", d("$rank", bson.D{}))}})},
		{"SetWindowFieldsPartition", d("$setWindowFields", d("output", d("s", d("$sum", "$a"))))},
		{"Facet", d("$facet", d("none", bson.A{d("$match", d("a", -1))}))},
		{"Count", d("$count", "n")},
		{"Sample", d("$sample", d("size", 3))},
	}
	for _, tc := range stages {
		cmd := bson.D{{Key: "aggregate", Value: "one"}, {Key: "pipeline", Value: bson.A{unwind, tc.stage}},
			{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 1}}}, {Key: "maxTimeMS", Value: 600_000}}
		setMaxTimeAlwaysTimeOut(t, cl, true)
		_, err := runCmd(t, db, cmd)
		setMaxTimeAlwaysTimeOut(t, cl, false)
		if !hasCode(err, 50) {
			t.Errorf("%s with maxTimeAlwaysTimeOut: %v, want MaxTimeMSExpired 50", tc.name, err)
		}
		if _, err := runCmd(t, db, cmd); err != nil {
			t.Errorf("%s without the failpoint: %v", tc.name, err)
		}
	}
}

// TestFindMaxTimeAlwaysTimeOut checks maxTimeAlwaysTimeOut on a find with a blocking sort
// on an unindexed field: with it on, the find given maxTimeMS fails with MaxTimeMSExpired
// 50, one without maxTimeMS succeeds, and with it off both do.
func TestFindMaxTimeAlwaysTimeOut(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--test-commands")
	cl := srv.client(t)
	ctx := context.Background()
	db := cl.Database("maxtime")
	docs := make([]any, 5000)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "v", Value: len(docs) - i}}
	}
	if _, err := db.Collection("c").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	find := bson.D{{Key: "find", Value: "c"}, {Key: "sort", Value: bson.D{{Key: "v", Value: 1}}}, {Key: "batchSize", Value: 1}}
	timed := append(bson.D{}, find...)
	timed = append(timed, bson.E{Key: "maxTimeMS", Value: 600_000})
	setMaxTimeAlwaysTimeOut(t, cl, true)
	_, err := runCmd(t, db, timed)
	if !hasCode(err, 50) {
		t.Errorf("find with maxTimeMS and the failpoint: %v, want MaxTimeMSExpired 50", err)
	}
	if _, err := runCmd(t, db, find); err != nil {
		t.Errorf("find without maxTimeMS, with the failpoint: %v", err)
	}
	setMaxTimeAlwaysTimeOut(t, cl, false)
	res, err := runCmd(t, db, timed)
	if err != nil {
		t.Fatalf("find with maxTimeMS, without the failpoint: %v", err)
	}
	if first := asM(asM(res["cursor"])["firstBatch"].(bson.A)[0]); first["v"] != int32(1) {
		t.Errorf("first document %v, want v: 1", first)
	}
}
