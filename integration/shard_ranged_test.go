package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// rangedChunk is one config.chunks document of a ranged collection.
type rangedChunk struct {
	Min   bson.D `bson:"min"`
	Max   bson.D `bson:"max"`
	Shard string `bson:"shard"`
}

// rangedChunks returns the config.chunks documents of ns, in key order.
func rangedChunks(t *testing.T, c *mongo.Client, uuid bson.Binary) []rangedChunk {
	t.Helper()
	cur, err := c.Database("config").Collection("chunks").Find(context.Background(), bson.D{{Key: "uuid", Value: uuid}},
		options.Find().SetSort(bson.D{{Key: "lastmod", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var out []rangedChunk
	if err := cur.All(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// insertIncreasing inserts documents with x = from..to-1 (and _id = x) into each of colls,
// in batches, as an application with an increasing key does.
func insertIncreasing(t *testing.T, from, to int, colls ...*mongo.Collection) {
	t.Helper()
	for lo := from; lo < to; lo += 100 {
		docs := make([]any, 0, 100)
		for x := lo; x < min(lo+100, to); x++ {
			docs = append(docs, bson.D{{Key: "_id", Value: x}, {Key: "x", Value: x}, {Key: "g", Value: x % 7}, {Key: "pad", Value: strings.Repeat("r", 100)}})
		}
		for _, cl := range colls {
			if _, err := cl.InsertMany(context.Background(), docs); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestShardRangedIncreasingKey shards a collection on {x: 1}, MongoDB's default ranged key,
// and inserts an increasing x: the one partition it starts with splits by size, partitions
// spread over both shards, config.chunks shows value bounds whose ranges hold exactly each
// partition's documents, an equality reads one partition and a range query only the
// partitions of its range, and every answer equals an unsharded copy's.
func TestShardRangedIncreasingKey(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2", "--partition-max-bytes", "40000", "--partition-check-interval", "100ms",
		"--balance-min-bytes", "0")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	ns := db.Name() + ".r"
	var res bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: ns},
		{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}}).Decode(&res); err != nil {
		t.Fatalf("shardCollection {x: 1}: %v", err)
	}
	if res["collectionsharded"] != ns {
		t.Fatalf("shardCollection answered %v", res)
	}
	uuid := collUUID(t, c, ns)
	if ch := rangedChunks(t, c, uuid); len(ch) != 1 || ch[0].Min[0].Value != (bson.MinKey{}) || ch[0].Max[0].Value != (bson.MaxKey{}) {
		t.Fatalf("a new ranged collection's chunks: %v", ch)
	}
	coll, plain := db.Collection("r"), db.Collection("plain")
	const n = 3000
	insertIncreasing(t, 0, n, coll, plain)
	waitFor(t, 30*time.Second, "the increasing key's partitions to split and spread", func() bool {
		ch := rangedChunks(t, c, uuid)
		shards := map[string]bool{}
		for _, k := range ch {
			shards[k.Shard] = true
		}
		return len(ch) >= 4 && len(shards) == 2 && allUnder(t, db, "r", 40000)
	})
	chunks := rangedChunks(t, c, uuid)
	checkRangedChunks(t, coll, chunks, n)
	checkRangedDataSize(t, coll, chunks[1])

	one := explainHier(t, coll, bson.D{{Key: "x", Value: 1234}})
	if len(one.partitions) != 1 || one.stage != "SINGLE_SHARD" {
		t.Fatalf("find({x: 1234}) read %v (stage %s)", one.partitions, one.stage)
	}
	total := numPartitions(t, db, "r")
	narrow := bson.D{{Key: "x", Value: bson.D{{Key: "$gte", Value: 100}, {Key: "$lt", Value: 160}}}}
	r := explainHier(t, coll, narrow)
	if len(r.partitions) > 2 || len(r.partitions) >= total || r.ranged != len(r.partitions) {
		t.Fatalf("find(%v) read %v (%d within ranges) of %d partitions", narrow, r.partitions, r.ranged, total)
	}
	ex := explainStats(t, coll, narrow)
	if ex > 60 {
		t.Fatalf("find(%v) examined %d documents for 60 matches", narrow, ex)
	}
	t.Logf("%d partitions; find(%v) read %d of them and examined %d documents", total, narrow, len(r.partitions), ex)
	for _, f := range []bson.D{narrow, {{Key: "x", Value: 1234}},
		{{Key: "x", Value: bson.D{{Key: "$in", Value: bson.A{5, 2999, 1500, 40000}}}}},
		{{Key: "x", Value: bson.D{{Key: "$gt", Value: 2500}}}}, {{Key: "x", Value: bson.D{{Key: "$lte", Value: 17}}}},
		{{Key: "g", Value: 3}}, {{Key: "x", Value: bson.D{{Key: "$gte", Value: 700}, {Key: "$lt", Value: 2100}}}, {Key: "g", Value: 1}}} {
		if got, want := hierIDs(t, coll, f), hierIDs(t, plain, f); !slices.Equal(got, want) {
			t.Fatalf("find(%v): %d documents, unsharded %d", f, len(got), len(want))
		}
	}
	checkRangedSort(t, coll, plain)
}

// allUnder reports whether every partition of coll holds at most limit bytes: no size split
// is due.
func allUnder(t *testing.T, db *mongo.Database, coll string, limit int64) bool {
	t.Helper()
	for _, p := range partitionStats(t, db, coll)["partitions"].(bson.A) {
		if shardM(p)["bytes"].(int64) > limit {
			return false
		}
	}
	return true
}

// checkRangedChunks checks that chunks tile the key space in increasing value bounds and that
// each chunk's range holds the documents its partition holds, n in all.
func checkRangedChunks(t *testing.T, coll *mongo.Collection, chunks []rangedChunk, n int) {
	t.Helper()
	if chunks[0].Min[0].Value != (bson.MinKey{}) || chunks[len(chunks)-1].Max[0].Value != (bson.MaxKey{}) {
		t.Fatalf("chunks do not start at MinKey and end at MaxKey: %v", chunks)
	}
	sum := int64(0)
	for i, ch := range chunks {
		if i > 0 && fmt.Sprint(ch.Min) != fmt.Sprint(chunks[i-1].Max) {
			t.Fatalf("chunk %d starts at %v, the one before ends at %v", i, ch.Min, chunks[i-1].Max)
		}
		f := bson.D{}
		if i > 0 {
			f = append(f, bson.E{Key: "$gte", Value: ch.Min[0].Value})
		}
		if i < len(chunks)-1 {
			f = append(f, bson.E{Key: "$lt", Value: ch.Max[0].Value})
		}
		filter := bson.D{}
		if len(f) > 0 {
			filter = bson.D{{Key: "x", Value: f}}
		}
		got, err := coll.CountDocuments(context.Background(), filter)
		if err != nil {
			t.Fatal(err)
		}
		r := explainHier(t, coll, filter)
		if got == 0 || (len(f) > 0 && len(r.partitions) != 1) {
			var ex bson.M
			_ = coll.Database().RunCommand(context.Background(), bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: coll.Name()}, {Key: "filter", Value: filter}}}}).Decode(&ex)
			t.Fatalf("chunk %d [%v, %v) on %s: %d documents, its range read %v\n%v", i, ch.Min, ch.Max, ch.Shard, got, r.partitions, ex)
		}
		sum += got
	}
	if sum != int64(n) {
		t.Fatalf("the chunks' ranges hold %d documents, want %d", sum, n)
	}
}

// explainStats returns the documents find(filter) examined, from explain's executionStats.
func explainStats(t *testing.T, coll *mongo.Collection, filter bson.D) int64 {
	t.Helper()
	var ex bson.M
	cmd := bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: coll.Name()}, {Key: "filter", Value: filter}}},
		{Key: "verbosity", Value: "executionStats"}}
	if err := coll.Database().RunCommand(context.Background(), cmd).Decode(&ex); err != nil {
		t.Fatalf("explain %v: %v", filter, err)
	}
	v := shardM(ex["executionStats"])["totalDocsExamined"]
	switch x := v.(type) {
	case int32:
		return int64(x)
	case int64:
		return x
	}
	t.Fatalf("explain's executionStats: %v", ex["executionStats"])
	return 0
}

// checkRangedSort checks a range query sorted on the key, with a limit, against the copy.
func checkRangedSort(t *testing.T, coll, plain *mongo.Collection) {
	t.Helper()
	for _, dir := range []int{1, -1} {
		opts := options.Find().SetSort(bson.D{{Key: "x", Value: dir}}).SetLimit(25)
		f := bson.D{{Key: "x", Value: bson.D{{Key: "$gte", Value: 450}, {Key: "$lt", Value: 2600}}}}
		var got, want []bson.M
		for _, p := range []struct {
			cl  *mongo.Collection
			out *[]bson.M
		}{{coll, &got}, {plain, &want}} {
			cur, err := p.cl.Find(context.Background(), f, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := cur.All(context.Background(), p.out); err != nil {
				t.Fatal(err)
			}
		}
		ids := func(docs []bson.M) []any {
			out := make([]any, len(docs))
			for i, d := range docs {
				out[i] = d["_id"]
			}
			return out
		}
		if g, w := ids(got), ids(want); fmt.Sprint(g) != fmt.Sprint(w) || len(got) != 25 {
			t.Fatalf("sort {x: %d}: %v, unsharded %v", dir, g, w)
		}
	}
}

// TestShardRangedMongosh drives ranged keys through mongosh's helpers: sh.shardCollection
// with {ts: 1} answers as mongos does, inserts split it, and sh.status() lists its chunks
// with value bounds from MinKey to MaxKey; createCollection with shardKey {k: 1} and a
// compound key {a: 1, b: 1} shard ranged too.
func TestShardRangedMongosh(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2", "--partition-max-bytes", "20000", "--partition-check-interval", "100ms")
	out := srv.mongosh(t, "rsh", "--eval", `
		sh.enableSharding("rsh");
		const r = sh.shardCollection("rsh.events", {ts: 1});
		if (r.collectionsharded !== "rsh.events" || r.ok !== 1) throw new Error(JSON.stringify(r));
		const docs = [];
		for (let i = 0; i < 600; i++) docs.push({_id: i, ts: i, pad: "p".repeat(100)});
		db.events.insertMany(docs);
		const uuid = db.getSiblingDB("config").collections.findOne({_id: "rsh.events"}).uuid;
		while (db.getSiblingDB("config").chunks.countDocuments({uuid}) < 3) sleep(100);
		const st = sh.status().value.databases.find(d => d.database._id === "rsh").collections["rsh.events"];
		const ch = st.chunks;
		if (JSON.stringify(st.shardKey) !== '{"ts":1}') throw new Error("shardKey " + JSON.stringify(st.shardKey));
		if (!(ch[0].min.ts instanceof MinKey) || !(ch[ch.length-1].max.ts instanceof MaxKey)) throw new Error("ends " + tojson(ch));
		for (let i = 1; i < ch.length; i++) {
			if (typeof ch[i].min.ts !== "number" || ch[i].min.ts !== ch[i-1].max.ts) throw new Error("bounds " + tojson(ch));
			if (i > 1 && !(ch[i].min.ts > ch[i-1].min.ts)) throw new Error("order " + tojson(ch));
		}
		print("ranged chunks " + ch.length);
		db.createCollection("byk", {shardKey: {k: 1}});
		const kc = db.getSiblingDB("config").collections.findOne({_id: "rsh.byk"});
		if (JSON.stringify(kc.key) !== '{"k":1}') throw new Error("byk " + tojson(kc));
		sh.shardCollection("rsh.comp", {a: 1, b: 1});
		const cu = db.getSiblingDB("config").collections.findOne({_id: "rsh.comp"}).uuid;
		const cc = db.getSiblingDB("config").chunks.findOne({uuid: cu});
		if (!(cc.min.a instanceof MinKey) || !(cc.min.b instanceof MinKey) || !(cc.max.b instanceof MaxKey)) throw new Error("comp " + tojson(cc));
		db.comp.insertMany([{a: "eu", b: 2}, {a: "us", b: 1}, {a: "eu", b: 1}]);
		const got = db.comp.find({a: "eu"}, {_id: 0}).sort({b: 1}).toArray();
		if (got.length !== 2 || got[0].b !== 1) throw new Error("comp find " + tojson(got));
		print("ranged ok");
	`)
	if !strings.Contains(out, "ranged ok") {
		t.Fatalf("script did not finish:\n%s", out)
	}
}

// TestShardRangedKeyRules checks what a ranged key refuses, with MongoDB's errors (arrays
// in the key, numInitialChunks, a descending field, a fourth field), that a missing key is
// placed as null, that an update of the key moves its document, and that a filled
// collection is sharded on a ranged key in place.
func TestShardRangedKeyRules(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	admin := c.Database("admin")
	shard := func(coll string, key bson.D, extra ...bson.E) error {
		cmd := append(bson.D{{Key: "shardCollection", Value: db.Name() + "." + coll}, {Key: "key", Value: key}}, extra...)
		return admin.RunCommand(ctx, cmd).Err()
	}
	wantCode := func(err error, code int32, what string) {
		t.Helper()
		var ce mongo.CommandError
		var we mongo.WriteException
		switch {
		case errors.As(err, &ce) && ce.Code == code:
		case errors.As(err, &we) && len(we.WriteErrors) == 1 && we.WriteErrors[0].Code == int(code):
		default:
			t.Fatalf("%s: %v, want code %d", what, err, code)
		}
	}
	wantCode(shard("n", bson.D{{Key: "x", Value: 1}}, bson.E{Key: "numInitialChunks", Value: 4}), 72, "numInitialChunks on a ranged key")
	wantCode(shard("d", bson.D{{Key: "x", Value: -1}}), 2, "a descending shard key")
	wantCode(shard("f", bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}, {Key: "c", Value: 1}, {Key: "d", Value: 1}}), 2, "four fields")
	if err := shard("r", bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	_, err := db.Collection("r").InsertOne(ctx, bson.D{{Key: "x", Value: bson.A{1, 2}}})
	wantCode(err, 61, "an array shard-key value")
	coll := db.Collection("r")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: nil}}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "x", Value: nil}}); n != 2 {
		t.Fatalf("find({x: null}) counted %d documents: a missing key is placed as null", n)
	}
	res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: nil}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 77}}}})
	if err != nil || res.ModifiedCount != 1 {
		t.Fatalf("shard-key update: %+v %v", res, err)
	}
	if got := hierIDs(t, coll, bson.D{{Key: "x", Value: bson.D{{Key: "$gt", Value: 70}}}}); !slices.Equal(got, []int32{2}) {
		t.Fatalf("the updated document under its new key: %v", got)
	}
	filled := db.Collection("filled")
	insertIncreasing(t, 0, 300, filled)
	if err := shard("filled", bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatalf("sharding a filled collection on {x: 1}: %v", err)
	}
	if got := hierIDs(t, filled, bson.D{{Key: "x", Value: bson.D{{Key: "$gte", Value: 10}, {Key: "$lt", Value: 20}}}}); len(got) != 10 || got[0] != 10 {
		t.Fatalf("a range of the converted collection: %v", got)
	}
	if n, _ := filled.CountDocuments(ctx, bson.D{}); n != 300 {
		t.Fatalf("%d documents after the conversion, want 300", n)
	}
}

// TestShardRangedIncreasingLoadSplit inserts an increasing key with a tiny load threshold:
// the load lands on the last partition, which splits by load at a value inside the keys
// it served, so the newest keys (and their load) go to its right child; nothing is lost.
func TestShardRangedIncreasingLoadSplit(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2", "--split-load-ru", "50", "--split-load-window", "1s",
		"--partition-check-interval", "200ms")
	c := srv.client(t)
	db := c.Database(dbName(t))
	ns := db.Name() + ".inc"
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "shardCollection", Value: ns},
		{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("inc")
	next := 0
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(srv.log.String(), `"reason": "load"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no load split within 60s:\n%v", partitionStats(t, db, "inc"))
		}
		insertIncreasing(t, next, next+500, coll)
		next += 500
	}
	chunks := rangedChunks(t, c, collUUID(t, c, ns))
	if len(chunks) < 2 {
		t.Fatalf("%d chunks after a load split", len(chunks))
	}
	last := chunks[len(chunks)-1].Min[0].Value
	lx, ok := last.(int32)
	if !ok || lx <= 0 || int(lx) >= next {
		t.Fatalf("the last chunk starts at %v, want a key inside the %d inserted: %v", last, next, chunks)
	}
	checkRangedChunks(t, coll, chunks, next)
}

// checkRangedDataSize runs dataSize over a chunk's value bounds, as config.chunks shows them:
// it counts the documents of that range.
func checkRangedDataSize(t *testing.T, coll *mongo.Collection, ch rangedChunk) {
	t.Helper()
	var res bson.M
	cmd := bson.D{{Key: "dataSize", Value: coll.Database().Name() + "." + coll.Name()}, {Key: "keyPattern", Value: bson.D{{Key: "x", Value: 1}}},
		{Key: "min", Value: ch.Min}, {Key: "max", Value: ch.Max}}
	if err := coll.Database().RunCommand(context.Background(), cmd).Decode(&res); err != nil {
		t.Fatalf("dataSize over %v: %v", ch, err)
	}
	want, err := coll.CountDocuments(context.Background(), bson.D{{Key: "x", Value: bson.D{{Key: "$gte", Value: ch.Min[0].Value}, {Key: "$lt", Value: ch.Max[0].Value}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res["numObjects"]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("dataSize over [%v, %v): %v objects, want %d (%v)", ch.Min, ch.Max, got, want, res)
	}
}
