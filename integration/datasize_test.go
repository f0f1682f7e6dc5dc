package integration

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// dataSizeReply is dataSize's answer.
type dataSizeReply struct {
	Estimate   *bool `bson:"estimate"`
	Size       int64 `bson:"size"`
	NumObjects int64 `bson:"numObjects"`
	MaxReached bool  `bson:"maxReached"`
}

// runDataSize runs dataSize on ns with the extra fields.
func runDataSize(t *testing.T, cl *mongo.Client, ns string, extra ...bson.E) dataSizeReply {
	t.Helper()
	var out dataSizeReply
	cmd := append(bson.D{{Key: "dataSize", Value: ns}}, extra...)
	if err := cl.Database("admin").RunCommand(context.Background(), cmd).Decode(&out); err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return out
}

// TestDataSizeChunkRanges asks dataSize for each chunk of a collection sharded on a hashed
// key over two shards, with the bounds config.chunks shows, as a chunk splitter does: the
// chunks' documents and bytes add up to the collection's, exactly, and about so with
// estimate; maxObjects stops the count with maxReached. Wrong key patterns and bounds
// answer mongod's errors.
func TestDataSizeChunkRanges(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	ctx := context.Background()
	cl := srv.client(t)
	ns := dbName(t) + ".c"
	shardColl(t, cl, ns, "k", bson.E{Key: "numInitialChunks", Value: 4})
	c := cl.Database(dbName(t)).Collection("c")
	const n = 2000
	docs := make([]any, n)
	var total int64
	for i := range docs {
		d := bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}, {Key: "pad", Value: string(make([]byte, i%300))}}
		raw, _ := bson.Marshal(d)
		total += int64(len(raw))
		docs[i] = d
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if all := runDataSize(t, cl, ns); all.Size != total || all.NumObjects != n {
		t.Fatalf("dataSize of the collection: %+v, want %d bytes, %d documents", all, total, n)
	}
	cur, err := cl.Database("config").Collection("chunks").Find(ctx, bson.D{{Key: "ns", Value: ns}})
	if err != nil {
		t.Fatal(err)
	}
	var chunks []bson.M
	if err := cur.All(ctx, &chunks); err != nil || len(chunks) != 4 {
		t.Fatalf("config.chunks: %d chunks, %v", len(chunks), err)
	}
	kp := bson.E{Key: "keyPattern", Value: bson.D{{Key: "k", Value: "hashed"}}}
	var size, objs, estObjs int64
	for _, ch := range chunks {
		exact := runDataSize(t, cl, ns, kp, bson.E{Key: "min", Value: ch["min"]}, bson.E{Key: "max", Value: ch["max"]})
		if exact.Estimate == nil || *exact.Estimate || exact.NumObjects == 0 || exact.MaxReached {
			t.Fatalf("chunk %v–%v: %+v", ch["min"], ch["max"], exact)
		}
		size, objs = size+exact.Size, objs+exact.NumObjects
		est := runDataSize(t, cl, ns, kp, bson.E{Key: "min", Value: ch["min"]}, bson.E{Key: "max", Value: ch["max"]},
			bson.E{Key: "estimate", Value: true})
		if est.Estimate == nil || !*est.Estimate {
			t.Fatalf("estimate: %+v", est)
		}
		estObjs += est.NumObjects
	}
	if size != total || objs != n {
		t.Fatalf("the chunks add up to %d bytes, %d documents; the collection has %d, %d", size, objs, total, n)
	}
	if estObjs < n*95/100 || estObjs > n*105/100 {
		t.Fatalf("the chunks' estimates add up to %d documents, the collection has %d", estObjs, n)
	}
	lim := runDataSize(t, cl, ns, kp, bson.E{Key: "min", Value: chunks[0]["min"]}, bson.E{Key: "max", Value: chunks[0]["max"]},
		bson.E{Key: "maxObjects", Value: 10})
	if !lim.MaxReached || lim.NumObjects != 11 {
		t.Fatalf("maxObjects 10: %+v", lim)
	}

	for _, tc := range []struct {
		extra []bson.E
		code  int32
		msg   string
	}{
		{[]bson.E{{Key: "keyPattern", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "min", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "max", Value: bson.D{{Key: "x", Value: 2}}}},
			2, "keyPattern must be empty or must be an object that equals the shard key"},
		{[]bson.E{kp, {Key: "min", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "max", Value: bson.D{{Key: "k", Value: int64(2)}}}},
			2, "min value { x: 1 } does not have shard key"},
		{[]bson.E{kp, {Key: "min", Value: bson.D{{Key: "k", Value: int64(1)}}}}, 2, "Only one of min or max specified"},
	} {
		cmd := append(bson.D{{Key: "dataSize", Value: ns}}, tc.extra...)
		err := cl.Database("admin").RunCommand(ctx, cmd).Err()
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code || ce.Message != tc.msg {
			t.Errorf("%v: %v, want %d %q", cmd, err, tc.code, tc.msg)
		}
	}
}

// TestDataSizeIndexRange asks dataSize for a range of a compound index's prefix on an
// unsharded collection: the documents with a key in [min, max) (the index's other fields
// extended with MinKey), their exact bytes, the key pattern inferred from min when absent,
// and mongod's error when no index fits.
func TestDataSizeIndexRange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := sharedServer(t).client(t)
	db := cl.Database(dbName(t))
	ns := dbName(t) + ".c"
	c := db.Collection("c")
	if got := runDataSize(t, cl, ns, bson.E{Key: "keyPattern", Value: bson.D{{Key: "a", Value: 1}}},
		bson.E{Key: "min", Value: bson.D{{Key: "a", Value: 0}}}, bson.E{Key: "max", Value: bson.D{{Key: "a", Value: 9}}}); got.Estimate != nil || got.NumObjects != 0 {
		t.Fatalf("dataSize of a missing collection: %+v", got)
	}
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	var docs []any
	var want, wantN int64
	for a := range 100 {
		for b := range 2 {
			d := bson.D{{Key: "a", Value: a}, {Key: "b", Value: b}, {Key: "pad", Value: string(make([]byte, a))}}
			if a >= 10 && a < 20 {
				raw, _ := bson.Marshal(append(bson.D{{Key: "_id", Value: a*2 + b}}, d...))
				want, wantN = want+int64(len(raw)), wantN+1
			}
			docs = append(docs, append(bson.D{{Key: "_id", Value: a*2 + b}}, d...))
		}
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	rng := []bson.E{{Key: "min", Value: bson.D{{Key: "a", Value: 10}}}, {Key: "max", Value: bson.D{{Key: "a", Value: 20}}}}
	for _, extra := range [][]bson.E{append([]bson.E{{Key: "keyPattern", Value: bson.D{{Key: "a", Value: 1}}}}, rng...), rng} {
		got := runDataSize(t, cl, ns, extra...)
		if got.Size != want || got.NumObjects != wantN {
			t.Fatalf("%v: %+v, want %d bytes, %d documents", extra, got, want, wantN)
		}
	}
	if got := runDataSize(t, cl, ns, append(rng, bson.E{Key: "maxSize", Value: 100})...); !got.MaxReached || got.Size <= 100 || got.Size > 200 || got.NumObjects >= wantN {
		t.Fatalf("maxSize 100: %+v", got)
	}
	err := db.RunCommand(ctx, bson.D{{Key: "dataSize", Value: ns}, {Key: "keyPattern", Value: bson.D{{Key: "b", Value: 1}}},
		{Key: "min", Value: bson.D{{Key: "b", Value: 0}}}, {Key: "max", Value: bson.D{{Key: "b", Value: 1}}}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 96 || ce.Message != "Couldn't find valid index containing key pattern" {
		t.Fatalf("dataSize without a fitting index: %v", err)
	}
}
