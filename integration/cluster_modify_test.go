package integration

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// startModifyCluster starts three nodes with a collection users sharded on tenant over
// their three shards, holding 90 documents {_id: i, tenant: "t<i%7>", n: i}.
func startModifyCluster(t *testing.T) ([]*server, []*mongo.Client, string) {
	t.Helper()
	nodes, clients, dbn := shardedOverThree(t, "users", "tenant", 6)
	docs := make([]any, 90)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "tenant", Value: fmt.Sprintf("t%d", i%7)}, {Key: "n", Value: int32(i)}}
	}
	if _, err := clients[0].Database(dbn).Collection("users").InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	return nodes, clients, dbn
}

// allDocs reads every document of coll through c, sorted by _id.
func allDocs(t *testing.T, c *mongo.Client, db, coll string) []bson.M {
	t.Helper()
	ctx := context.Background()
	cur, err := c.Database(db).Collection(coll).Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	var out []bson.M
	if err := cur.All(ctx, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameEverywhere checks that every node reads the same documents, n of them, and returns them.
func sameEverywhere(t *testing.T, clients []*mongo.Client, db, coll string, n int) []bson.M {
	t.Helper()
	want := allDocs(t, clients[0], db, coll)
	if len(want) != n {
		t.Fatalf("node 0 reads %d documents, want %d", len(want), n)
	}
	for i := 1; i < len(clients); i++ {
		if got := allDocs(t, clients[i], db, coll); !reflect.DeepEqual(got, want) {
			t.Fatalf("node %d reads\n%v\nnode 0 reads\n%v", i, got, want)
		}
	}
	return want
}

// docByID returns the document of docs with _id id, nil when none.
func docByID(docs []bson.M, id int32) bson.M {
	for _, d := range docs {
		if d["_id"] == id {
			return d
		}
	}
	return nil
}

// TestClusterRemoteUpdatesDeletes: updates, deletes and findAndModify through each of three
// nodes on a collection sharded over all three: targeted by shard key, across nodes (multi),
// an upsert landing on another node, a replacement, deleteOne by _id alone, findAndModify
// with a sort and with an upsert, a mixed bulk write; then every node reads the same.
func TestClusterRemoteUpdatesDeletes(t *testing.T) {
	t.Parallel()
	_, clients, dbn := startModifyCluster(t)
	ctx := context.Background()
	coll := func(k int) *mongo.Collection { return clients[k%3].Database(dbn).Collection("users") }
	key := func(id int) bson.D {
		return bson.D{{Key: "tenant", Value: fmt.Sprintf("t%d", id%7)}, {Key: "_id", Value: int32(id)}}
	}

	for k := range 3 { // by shard key
		res, err := coll(k).UpdateOne(ctx, key(k), bson.D{{Key: "$set", Value: bson.D{{Key: "by", Value: int32(k)}}}})
		if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
			t.Fatalf("updateOne through node %d: %+v, %v", k, res, err)
		}
	}
	res, err := coll(1).UpdateMany(ctx, bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 60}}}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1000}}}})
	if err != nil || res.MatchedCount != 30 || res.ModifiedCount != 30 {
		t.Fatalf("updateMany: %+v, %v", res, err)
	}
	for k := range 3 { // upserts: six through each node, landing on every node
		for j := range 6 {
			id := int32(1000 + k*10 + j)
			res, err := coll(k).UpdateOne(ctx, bson.D{{Key: "tenant", Value: fmt.Sprintf("u%d%d", k, j)}, {Key: "_id", Value: id}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: int32(-1)}}}}, options.UpdateOne().SetUpsert(true))
			if err != nil || res.MatchedCount != 0 || res.UpsertedID != id {
				t.Fatalf("upsert %d through node %d: %+v, %v", id, k, res, err)
			}
		}
	}
	res, err = coll(2).ReplaceOne(ctx, key(3), bson.D{{Key: "tenant", Value: "t3"}, {Key: "n", Value: int32(3)}, {Key: "replaced", Value: true}})
	if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
		t.Fatalf("replaceOne: %+v, %v", res, err)
	}
	for k := range 3 { // deleteOne by _id alone: every node is asked
		dr, err := coll(k).DeleteOne(ctx, bson.D{{Key: "_id", Value: int32(10 + k)}})
		if err != nil || dr.DeletedCount != 1 {
			t.Fatalf("deleteOne _id %d through node %d: %+v, %v", 10+k, k, dr, err)
		}
	}
	if dr, err := coll(0).DeleteOne(ctx, bson.D{{Key: "_id", Value: int32(11)}}); err != nil || dr.DeletedCount != 0 {
		t.Fatalf("deleteOne of a deleted _id: %+v, %v", dr, err)
	}
	dr, err := coll(0).DeleteMany(ctx, bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 0}, {Key: "$lt", Value: 10}}},
		{Key: "by", Value: bson.D{{Key: "$exists", Value: false}}}, {Key: "replaced", Value: bson.D{{Key: "$exists", Value: false}}}})
	if err != nil || dr.DeletedCount != 6 {
		t.Fatalf("deleteMany: %+v, %v", dr, err)
	}

	// findAndModify with a sort (t6's largest n is _id 83's 1083), with an upsert, and a remove.
	var got bson.M
	err = coll(2).FindOneAndUpdate(ctx, bson.D{{Key: "tenant", Value: "t6"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "top", Value: true}}}},
		options.FindOneAndUpdate().SetSort(bson.D{{Key: "n", Value: -1}}).SetReturnDocument(options.After)).Decode(&got)
	if err != nil || got["_id"] != int32(83) || got["top"] != true {
		t.Fatalf("findOneAndUpdate with sort: %v, %v", got, err)
	}
	for k := range 3 {
		id := int32(2000 + k)
		err = coll(k).FindOneAndUpdate(ctx, bson.D{{Key: "tenant", Value: fmt.Sprintf("fam%d", k)}, {Key: "_id", Value: id}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: int32(5)}}}},
			options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&got)
		if err != nil || got["_id"] != id || got["n"] != int32(5) {
			t.Fatalf("findOneAndUpdate upsert through node %d: %v, %v", k, got, err)
		}
	}
	err = coll(1).FindOneAndDelete(ctx, key(14)).Decode(&got)
	if err != nil || got["_id"] != int32(14) {
		t.Fatalf("findOneAndDelete: %v, %v", got, err)
	}

	// A bulk write mixing updates, deletes and an insert, through node 1.
	br, err := coll(1).BulkWrite(ctx, []mongo.WriteModel{
		mongo.NewUpdateOneModel().SetFilter(key(15)).SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "bulk", Value: true}}}}),
		mongo.NewDeleteOneModel().SetFilter(bson.D{{Key: "_id", Value: int32(20)}}),
		mongo.NewUpdateManyModel().SetFilter(bson.D{{Key: "tenant", Value: bson.D{{Key: "$in", Value: bson.A{"t1", "t2"}}}}}).
			SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "t12", Value: true}}}}),
		mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: int32(3000)}, {Key: "tenant", Value: "t0"}}),
	})
	if err != nil || br.MatchedCount != 1+24 || br.DeletedCount != 1 || br.InsertedCount != 1 {
		t.Fatalf("bulkWrite: %+v, %v", br, err)
	}

	// 90 + 18 upserts - 3 deleteOne - 6 deleteMany + 3 upserts - 1 removed - 1 deleted + 1 inserted
	docs := sameEverywhere(t, clients, dbn, "users", 101)
	checks := []struct {
		id    int32
		field string
		want  any
	}{
		{0, "by", int32(0)}, {2, "by", int32(2)}, {3, "replaced", true}, {61, "n", int32(1061)},
		{83, "top", true}, {1025, "n", int32(-1)}, {2001, "n", int32(5)}, {15, "bulk", true}, {22, "t12", true},
	}
	for _, c := range checks {
		if d := docByID(docs, c.id); d == nil || d[c.field] != c.want {
			t.Errorf("_id %d: %v, want %s: %v", c.id, d, c.field, c.want)
		}
	}
	for _, id := range []int32{10, 11, 12, 14, 20, 4, 9} {
		if d := docByID(docs, id); d != nil {
			t.Errorf("_id %d was deleted, yet reads %v", id, d)
		}
	}
}

// TestClusterRemoteShardKeyChange: an update that changes a document's shard key moves it
// within a node, and fails with WouldChangeOwningShard (283) when its new shard is another
// node's, changing nothing: the document is never lost nor duplicated.
func TestClusterRemoteShardKeyChange(t *testing.T) {
	t.Parallel()
	_, clients, dbn := startModifyCluster(t)
	ctx := context.Background()
	cur, refused, moved := "t1", 0, 0
	for j := range 12 {
		next := fmt.Sprintf("m%d", j)
		res, err := clients[j%3].Database(dbn).Collection("users").UpdateOne(ctx,
			bson.D{{Key: "_id", Value: int32(1)}, {Key: "tenant", Value: cur}}, bson.D{{Key: "$set", Value: bson.D{{Key: "tenant", Value: next}}}})
		if err != nil {
			wantCode(t, err, 283, "change owning shard")
			refused++
			continue
		}
		if res.MatchedCount != 1 || res.ModifiedCount != 1 {
			t.Fatalf("shard key change to %s: %+v", next, res)
		}
		cur = next
		moved++
	}
	if refused == 0 {
		t.Fatal("no shard key change landed on another node's shard")
	}
	docs := sameEverywhere(t, clients, dbn, "users", 90)
	if d := docByID(docs, 1); d == nil || d["tenant"] != cur {
		t.Fatalf("_id 1 reads %v, want tenant %s (%d moves, %d refused)", d, cur, moved, refused)
	}
}

// TestClusterRemoteRetryableWrites: a retryable update and a retryable delete by _id alone,
// sent again with the same lsid and txnNumber through the other nodes, are answered from
// their record and not applied twice; with a node down, a retryable write needing it fails
// with HostUnreachable and the RetryableWriteError label, changing nothing, and succeeds once
// the node is back.
func TestClusterRemoteRetryableWrites(t *testing.T) {
	t.Parallel()
	nodes, clients, dbn := startModifyCluster(t)
	ctx := context.Background()
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}}
	upd := bson.D{{Key: "update", Value: "users"}, {Key: "updates", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "tenant", Value: "t4"}, {Key: "_id", Value: int32(25)}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1)}}}}}},
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: int32(26)}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1)}}}}}},
	}}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: dbn}}
	del := bson.D{{Key: "delete", Value: "users"}, {Key: "deletes", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: int32(30)}}}, {Key: "limit", Value: int32(1)}},
	}}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(2)}, {Key: "$db", Value: dbn}}
	for _, cmd := range []bson.D{upd, del} {
		for k, s := range nodes {
			reply := opMsg(t, s, cmd)
			want := int32(len(cmd[1].Value.(bson.A)))
			if n, ok := reply.Lookup("n").Int32OK(); !ok || n != want || reply.Lookup("ok").Double() != 1 {
				t.Fatalf("%s through node %d (attempt %d): %v", cmd[0].Key, k, k+1, reply)
			}
		}
	}
	docs := sameEverywhere(t, clients, dbn, "users", 89)
	if docByID(docs, 25)["n"] != int32(26) || docByID(docs, 26)["n"] != int32(27) {
		t.Fatalf("retried updates applied again: %v, %v", docByID(docs, 25), docByID(docs, 26))
	}

	nodes[2].kill()
	_, err := clients[0].Database(dbn).Collection("users").UpdateOne(ctx, bson.D{{Key: "_id", Value: int32(40)}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1)}}}})
	wantCode(t, err, 6, "node-c")
	var le interface{ HasErrorLabel(string) bool }
	if !errors.As(err, &le) || !le.HasErrorLabel("RetryableWriteError") {
		t.Fatalf("no RetryableWriteError label on %v", err)
	}
	nodes[2].restart()
	clients[2] = nodes[2].client(t)
	waitFor(t, 30*time.Second, "node-a reaches node-c again", func() bool {
		res, err := clients[0].Database(dbn).Collection("users").UpdateOne(ctx, bson.D{{Key: "_id", Value: int32(40)}},
			bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1)}}}})
		return err == nil && res.MatchedCount == 1
	})
	docs = sameEverywhere(t, clients, dbn, "users", 89)
	if d := docByID(docs, 40); d["n"] != int32(41) {
		t.Fatalf("_id 40 reads %v, want n 41", d)
	}
}

// TestClusterRemoteWriteStaleRouter: node-a's catalog watch is held while node-b moves one
// of its partitions to its other shard; node-a's single-document updates and deletes
// planned on its old map reach node-b with the old ranges, node-b answers StaleConfig, and
// node-a catches up, plans again and writes: every statement matches its document once.
func TestClusterRemoteWriteStaleRouter(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 2, "--shards", "2", "--test-commands")
	ctx := context.Background()
	clients := []*mongo.Client{nodes[0].client(t), nodes[1].client(t)}
	waitClusterShards(t, clients, 4)
	dbn := dbName(t)
	ns := dbn + ".users"
	shardColl(t, clients[0], ns, "tenant", bson.E{Key: "numInitialChunks", Value: 8})
	waitClusterChunks(t, clients, 8, 4)
	const total = 120 // one tenant each: the moved chunk holds some of them
	docs := make([]any, total)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "tenant", Value: fmt.Sprintf("s%d", i)}}
	}
	if _, err := clients[0].Database(dbn).Collection("users").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	from, chunks := moveBehindPausedWatch(t, clients, nodes, ns)
	coll := clients[0].Database(dbn).Collection("users")
	for i := range total {
		key := bson.D{{Key: "tenant", Value: fmt.Sprintf("s%d", i)}, {Key: "_id", Value: int32(i)}}
		if i%2 == 0 {
			res, err := coll.UpdateOne(ctx, key, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1)}}}})
			if err != nil || res.MatchedCount != 1 {
				t.Fatalf("updateOne %d through the stale node-a: %+v, %v", i, res, err)
			}
			continue
		}
		if res, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: int32(i)}}); err != nil || res.DeletedCount != 1 {
			t.Fatalf("deleteOne %d through the stale node-a: %+v, %v", i, res, err)
		}
	}
	if got := len(chunkDocsOn(t, clients[0], ns, from)); got != len(chunks)-1 {
		t.Fatalf("node-a lists %d chunks on %s after the writes, want %d: no write met the stale map", got, from, len(chunks)-1)
	}
	for k, c := range clients {
		n, err := c.Database(dbn).Collection("users").CountDocuments(ctx, bson.D{{Key: "n", Value: int32(1)}})
		if err != nil || n != total/2 {
			t.Fatalf("node %d counts %d updated documents, %v; want %d", k, n, err, total/2)
		}
		if n, err := c.Database(dbn).Collection("users").CountDocuments(ctx, bson.D{}); err != nil || n != total/2 {
			t.Fatalf("node %d counts %d documents, %v; want %d", k, n, err, total/2)
		}
	}
}
