package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// wantCmdError runs cmd on admin and checks that it fails with code and codeName.
func wantCmdError(t *testing.T, c *mongo.Client, cmd bson.D, code int32, name string) {
	t.Helper()
	_, err := runCmd(t, c.Database("admin"), cmd)
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != code || ce.Name != name {
		t.Fatalf("%v: %v, want %s (%d)", cmd[0], err, name, code)
	}
}

// collUUID returns the collection UUID config.collections shows for ns.
func collUUID(t *testing.T, c *mongo.Client, ns string) bson.Binary {
	t.Helper()
	var d struct {
		UUID bson.Binary `bson:"uuid"`
	}
	if err := c.Database("config").Collection("collections").FindOne(context.Background(), bson.D{{Key: "_id", Value: ns}}).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d.UUID
}

// TestReshardCollectionErrors: MongoDB's answers to a reshardCollection that cannot run or
// has nothing to do, and to abort and commit without one running.
func TestReshardCollectionErrors(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	dbn := dbName(t)
	ns := dbn + ".events"
	key := func(f string) bson.E { return bson.E{Key: "key", Value: bson.D{{Key: f, Value: "hashed"}}} }
	wantCmdError(t, c, bson.D{{Key: "reshardCollection", Value: ns}, key("deviceId")}, 26, "NamespaceNotFound")
	if _, err := c.Database(dbn).Collection("plain").InsertOne(context.Background(), bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	wantCmdError(t, c, bson.D{{Key: "reshardCollection", Value: dbn + ".plain"}, key("a")}, 118, "NamespaceNotSharded")
	shardColl(t, c, ns, "tenant")
	loadEvents(t, c.Database(dbn).Collection("events"), 3000)
	wantCmdError(t, c, bson.D{{Key: "reshardCollection", Value: ns}}, 40414, "Location40414")
	wantCmdError(t, c, bson.D{{Key: "reshardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "a", Value: "text"}}}}, 2, "BadValue")
	wantCmdError(t, c, bson.D{{Key: "reshardCollection", Value: ns}, key("deviceId"), {Key: "unique", Value: true}}, 72, "InvalidOptions")
	wantCmdError(t, c, bson.D{{Key: "abortReshardCollection", Value: ns}}, 339, "NoSuchReshardCollection")
	wantCmdError(t, c, bson.D{{Key: "commitReshardCollection", Value: ns}}, 339, "NoSuchReshardCollection")

	// The same key: nothing is copied (the UUID stays) unless forceRedistribution.
	before := collUUID(t, c, ns)
	if _, err := runCmd(t, c.Database("admin"), bson.D{{Key: "reshardCollection", Value: ns}, key("tenant")}); err != nil {
		t.Fatal(err)
	}
	if got := collUUID(t, c, ns); !bytesEqual(got.Data, before.Data) {
		t.Fatal("reshardCollection with the same key copied the collection")
	}
	stream, err := c.Database(dbn).Collection("events").Watch(context.Background(), mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Close(context.Background()) }()
	if _, err := runCmd(t, c.Database("admin"), bson.D{{Key: "reshardCollection", Value: ns}, key("tenant"),
		{Key: "forceRedistribution", Value: true}, {Key: "numInitialChunks", Value: 5}}); err != nil {
		t.Fatal(err)
	}
	// A stream opened before goes on after: the copy and the swap are no events of it.
	if _, err := c.Database(dbn).Collection("events").InsertOne(context.Background(), eventDoc(3000)); err != nil {
		t.Fatal(err)
	}
	if !stream.Next(context.Background()) || stream.Current.Lookup("operationType").StringValue() != "insert" ||
		stream.Current.Lookup("documentKey", "_id").AsInt64() != 3000 {
		t.Fatalf("the change stream after resharding: %v %v", stream.Current, stream.Err())
	}
	if _, err := c.Database(dbn).Collection("events").DeleteOne(context.Background(), bson.D{{Key: "_id", Value: 3000}}); err != nil {
		t.Fatal(err)
	}
	if got := collUUID(t, c, ns); bytesEqual(got.Data, before.Data) {
		t.Fatal("forceRedistribution did not copy the collection")
	}
	if got := numPartitions(t, c.Database(dbn), "events"); got != 5 {
		t.Fatalf("%d partitions after forceRedistribution with numInitialChunks 5", got)
	}
	checkAcked(t, c.Database(dbn).Collection("events"), 3000, nil)
}

// TestReshardCollectionAbortAndCommit: a reshardCollection paused in its copy shows in
// currentOp; abortReshardCollection makes it fail with ReshardCollectionAborted and leaves
// the collection as it was; commitReshardCollection lets another finish.
func TestReshardCollectionAbortAndCommit(t *testing.T) {
	t.Parallel()
	const n = 5000
	srv := startServer(t, "--test-commands", "--shards", "2")
	c := srv.client(t)
	dbn := dbName(t)
	ns := dbn + ".events"
	shardColl(t, c, ns, "tenant")
	loadEvents(t, c.Database(dbn).Collection("events"), n)
	pause := func(mode string) {
		if _, err := runCmd(t, c.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "reshardingPauseRecipientDuringCloning"}, {Key: "mode", Value: mode}}); err != nil {
			t.Fatal(err)
		}
	}
	reshard := func() chan error {
		done := make(chan error, 1)
		go func() {
			_, err := runCmd(t, c.Database("admin"), bson.D{{Key: "reshardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "deviceId", Value: "hashed"}}}})
			done <- err
		}()
		return done
	}
	pause("alwaysOn")
	done := reshard()
	var op bson.M
	paused := func() bool { op = reshardOp(t, c, ns); return op != nil && asInt64(op["documentsCopied"]) >= 1000 }
	waitFor(t, time.Minute, "the copy to pause", paused)
	if op["provenance"] != "reshardCollection" || op["recipientState"] != "cloning" || asInt64(op["documentsCopied"]) != 1000 ||
		asInt64(op["approxDocumentsToCopy"]) != n || asM(op["originatingCommand"])["reshardCollection"] != ns {
		t.Fatalf("currentOp of a paused copy: %v", op)
	}
	wantCmdError(t, c, bson.D{{Key: "reshardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "n", Value: "hashed"}}}}, 338, "ReshardCollectionInProgress")
	if _, err := runCmd(t, c.Database("admin"), bson.D{{Key: "abortReshardCollection", Value: ns}}); err != nil {
		t.Fatal(err)
	}
	pause("off")
	var ce mongo.CommandError
	if err := <-done; !errors.As(err, &ce) || ce.Code != 341 || ce.Name != "ReshardCollectionAborted" {
		t.Fatalf("aborted reshardCollection: %v", err)
	}
	if k := collKey(t, c, ns); k["tenant"] != "hashed" {
		t.Fatalf("shard key after the abort: %v", k)
	}
	if names, _ := c.Database(dbn).ListCollectionNames(context.Background(), bson.D{}); len(names) != 1 {
		t.Fatalf("collections after the abort: %v", names)
	}
	checkAcked(t, c.Database(dbn).Collection("events"), n, nil)

	pause("alwaysOn")
	done = reshard()
	waitFor(t, time.Minute, "the copy to pause", paused)
	if _, err := runCmd(t, c.Database("admin"), bson.D{{Key: "commitReshardCollection", Value: ns}}); err != nil {
		t.Fatal(err)
	}
	pause("off")
	if err := <-done; err != nil {
		t.Fatalf("committed reshardCollection: %v", err)
	}
	if k := collKey(t, c, ns); k["deviceId"] != "hashed" {
		t.Fatalf("shard key after the commit: %v", k)
	}
	if op := reshardOp(t, c, ns); op != nil {
		t.Fatalf("currentOp after the end: %v", op)
	}
	checkAcked(t, c.Database(dbn).Collection("events"), n, nil)
}

// shardsRead returns the shards a find of filter on coll reads (explain).
func shardsRead(t *testing.T, c *mongo.Client, db, coll string, filter bson.D) []string {
	t.Helper()
	_, shards := explainShards(t, c, db, bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: filter}})
	var out []string
	for _, s := range shards {
		out = append(out, s.Shard)
	}
	return out
}

// TestMoveCollectionUnderWrites moves an unsharded collection to the other shard while 8
// clients write, then unshards a sharded one onto a shard the same way: nothing acknowledged
// is lost, and each ends up read on its one shard. Then MongoDB's errors.
func TestMoveCollectionUnderWrites(t *testing.T) {
	t.Parallel()
	const n = 10_000 // enough under -race for every writer to write during each copy, which is checked
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	dbn := dbName(t)
	coll := c.Database(dbn).Collection("events")
	loadEvents(t, coll, n)
	from := shardsRead(t, c, dbn, "events", bson.D{})
	if len(from) != 1 {
		t.Fatalf("an unsharded collection read on %v", from)
	}
	to := "shard-1"
	if from[0] == to {
		to = "shard-0"
	}
	logs, stop := writersRunning(t, coll, n)
	before := opsNow(logs)
	if _, err := runCmd(t, c.Database("admin"), bson.D{{Key: "moveCollection", Value: dbn + ".events"}, {Key: "toShard", Value: to}}); err != nil {
		t.Fatalf("moveCollection: %v", err)
	}
	writtenDuring(t, logs, before, "the moveCollection")
	stop()
	checkAcked(t, coll, n, logs)
	if got := shardsRead(t, c, dbn, "events", bson.D{}); len(got) != 1 || got[0] != to {
		t.Fatalf("after moveCollection to %s, a find reads %v", to, got)
	}

	sharded := c.Database(dbn).Collection("sharded")
	shardColl(t, c, dbn+".sharded", "tenant")
	loadEvents(t, sharded, n)
	logs, stop = writersRunning(t, sharded, n)
	before = opsNow(logs)
	if _, err := runCmd(t, c.Database("admin"), bson.D{{Key: "unshardCollection", Value: dbn + ".sharded"}, {Key: "toShard", Value: "shard-1"}}); err != nil {
		t.Fatalf("unshardCollection: %v", err)
	}
	writtenDuring(t, logs, before, "the unshardCollection")
	stop()
	checkAcked(t, sharded, n, logs)
	if got := shardsRead(t, c, dbn, "sharded", bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 0}}}}); len(got) != 1 || got[0] != "shard-1" {
		t.Fatalf("after unshardCollection to shard-1, a find reads %v", got)
	}
	if k := collKey(t, c, dbn+".sharded"); k != nil {
		t.Fatalf("config.collections after unshardCollection: %v", k)
	}

	wantCmdError(t, c, bson.D{{Key: "moveCollection", Value: dbn + ".none"}, {Key: "toShard", Value: "shard-0"}}, 26, "NamespaceNotFound")
	wantCmdError(t, c, bson.D{{Key: "unshardCollection", Value: dbn + ".none"}}, 26, "NamespaceNotFound")
	shardColl(t, c, dbn+".other", "tenant")
	wantCmdError(t, c, bson.D{{Key: "moveCollection", Value: dbn + ".other"}, {Key: "toShard", Value: "shard-0"}}, 26, "NamespaceNotFound")
	wantCmdError(t, c, bson.D{{Key: "moveCollection", Value: dbn + ".events"}}, 40414, "Location40414")
	wantCmdError(t, c, bson.D{{Key: "moveCollection", Value: dbn + ".events"}, {Key: "toShard", Value: "shard-9"}}, 70, "ShardNotFound")
}

// TestReshardShellHelpers drives the layout changes through mongosh's helpers.
func TestReshardShellHelpers(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	dbn := dbName(t)
	out := srv.mongosh(t, dbn, "--eval", `
		for (let i = 0; i < 500; i++) db.events.insertOne({_id: i, tenant: "t" + (i % 3), deviceId: "d" + i});
		sh.shardCollection("`+dbn+`.events", {tenant: "hashed"});
		print("reshard", sh.reshardCollection("`+dbn+`.events", {deviceId: "hashed"}).ok);
		print("key", JSON.stringify(db.getSiblingDB("config").collections.findOne({_id: "`+dbn+`.events"}).key));
		try { sh.abortReshardCollection("`+dbn+`.events") } catch (e) { print("abort", e.codeName) }
		try { sh.commitReshardCollection("`+dbn+`.events") } catch (e) { print("commit", e.codeName) }
		print("unshard", sh.unshardCollection("`+dbn+`.events", "shard-0").ok);
		print("move", sh.moveCollection("`+dbn+`.events", "shard-1").ok);
		print("count", db.events.countDocuments({}));
	`)
	for _, want := range []string{"reshard 1", `key {"deviceId":"hashed"}`, "abort NoSuchReshardCollection",
		"commit NoSuchReshardCollection", "unshard 1", "move 1", "count 500"} {
		if !strings.Contains(out, want) {
			t.Fatalf("mongosh output lacks %q:\n%s", want, out)
		}
	}
}

// TestAnalyzeShardKey: a bad key (4 tenants) and a good one (a device per document) told
// apart by cardinality and frequency; an increasing field under ObjectId _ids is monotonic, a
// shuffled one is not; mongosh's helper; MongoDB's errors.
func TestAnalyzeShardKey(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	dbn := dbName(t)
	loadEvents(t, c.Database(dbn).Collection("events"), 2000)
	analyze := func(coll string, key bson.D, extra ...bson.E) bson.M {
		t.Helper()
		res, err := runCmd(t, c.Database("admin"), append(bson.D{{Key: "analyzeShardKey", Value: dbn + "." + coll}, {Key: "key", Value: key}}, extra...))
		if err != nil {
			t.Fatalf("analyzeShardKey %v: %v", key, err)
		}
		return asM(res["keyCharacteristics"])
	}
	bad := analyze("events", bson.D{{Key: "tenant", Value: 1}})
	if asInt64(bad["numDistinctValues"]) != 4 || asInt64(bad["numDocsTotal"]) != 2000 || asInt64(bad["numDocsSampled"]) != 2000 {
		t.Fatalf("the tenant key: %v", bad)
	}
	top := asM(bad["mostCommonValues"].(bson.A)[0])
	if asInt64(top["frequency"]) != 500 || asM(top["value"])["tenant"] == nil {
		t.Fatalf("the tenant key's most common value: %v", top)
	}
	good := analyze("events", bson.D{{Key: "deviceId", Value: "hashed"}}, bson.E{Key: "sampleSize", Value: 500})
	if asInt64(good["numDistinctValues"]) != 500 || asM(good["monotonicity"])["type"] != "not monotonic" {
		t.Fatalf("the deviceId key on 500 documents: %v", good)
	}
	seq := c.Database(dbn).Collection("seq")
	for i := range 300 {
		if _, err := seq.InsertOne(context.Background(), bson.D{{Key: "at", Value: i}, {Key: "r", Value: (i * 7919) % 300}}); err != nil {
			t.Fatal(err)
		}
	}
	if m := asM(analyze("seq", bson.D{{Key: "at", Value: 1}})["monotonicity"]); m["type"] != "monotonic" || m["recordIdCorrelationCoefficient"].(float64) < 0.99 {
		t.Fatalf("an increasing key: %v", m)
	}
	if m := asM(analyze("seq", bson.D{{Key: "r", Value: 1}})["monotonicity"]); m["type"] != "not monotonic" {
		t.Fatalf("a shuffled key: %v", m)
	}
	wantCmdError(t, c, bson.D{{Key: "analyzeShardKey", Value: dbn + ".none"}, {Key: "key", Value: bson.D{{Key: "a", Value: 1}}}}, 26, "NamespaceNotFound")
	wantCmdError(t, c, bson.D{{Key: "analyzeShardKey", Value: dbn + ".events"}}, 40414, "Location40414")
	wantCmdError(t, c, bson.D{{Key: "analyzeShardKey", Value: dbn + ".events"}, {Key: "key", Value: bson.D{{Key: "a", Value: 1}}},
		{Key: "sampleRate", Value: 0.5}, {Key: "sampleSize", Value: 10}}, 72, "InvalidOptions")
	out := srv.mongosh(t, dbn, "--eval", `print("distinct", Number(db.events.analyzeShardKey({tenant: 1}).keyCharacteristics.numDistinctValues))`)
	if !strings.Contains(out, "distinct 4") {
		t.Fatalf("mongosh's analyzeShardKey: %s", out)
	}
}
