package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestConfigureCollectionBalancing: configureCollectionBalancing's chunkSize governs the
// size at which one collection's partitions split. With the server's partition size (50 GiB)
// 4 MB of documents stay in their two partitions; chunkSize: 1 splits them (the manager's
// next rounds) while another collection of the same size does not split; config.collections
// shows maxChunkSizeBytes and enableAutoMerge: false, balancerCollectionStatus the chunk
// size, and both survive a restart; chunkSize: 0 gives the server's size back. MongoDB's
// refusals: a chunk size out of [0, 1024] (72 InvalidOptions), an unsharded collection (118 NamespaceNotSharded).
// defragmentCollection: true is refused with 238.
func TestConfigureCollectionBalancing(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2", "--partition-check-interval", "100ms")
	c := srv.client(t)
	ctx := context.Background()
	dbn := dbName(t)
	db := c.Database(dbn)
	admin := c.Database("admin")
	pad := strings.Repeat("x", 1000)
	for _, name := range []string{"small", "other"} {
		shardColl(t, c, dbn+"."+name, "k")
		docs := make([]any, 0, 4000)
		for i := range 4000 {
			docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}, {Key: "pad", Value: pad}})
		}
		if _, err := db.Collection(name).InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	before := numPartitions(t, db, "small")
	ns := dbn + ".small"
	status := func() bson.M {
		res, err := runCmd(t, admin, bson.D{{Key: "balancerCollectionStatus", Value: ns}})
		if err != nil {
			t.Fatalf("balancerCollectionStatus: %v", err)
		}
		return res
	}
	if got := status()["chunkSize"]; got != int64(50*1024) {
		t.Fatalf("balancerCollectionStatus chunkSize before: %v, want the server's 51200", got)
	}

	if err := admin.RunCommand(ctx, bson.D{{Key: "configureCollectionBalancing", Value: ns}, {Key: "chunkSize", Value: 1},
		{Key: "enableAutoMerger", Value: false}, {Key: "defragmentCollection", Value: false}}).Err(); err != nil {
		t.Fatalf("configureCollectionBalancing: %v", err)
	}
	waitFor(t, 30*time.Second, "the partitions of 4 MB split at a 1 MB chunk size", func() bool {
		return numPartitions(t, db, "small") >= 2*before
	})
	if n := numPartitions(t, db, "other"); n != before {
		t.Fatalf("the other collection split too: %d partitions, had %d", n, before)
	}
	checkConfig := func(wantBytes any, wantMerge any) {
		t.Helper()
		var doc bson.M
		if err := c.Database("config").Collection("collections").FindOne(ctx, bson.D{{Key: "_id", Value: ns}}).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if doc["maxChunkSizeBytes"] != wantBytes || doc["enableAutoMerge"] != wantMerge {
			t.Fatalf("config.collections: maxChunkSizeBytes %v enableAutoMerge %v, want %v %v", doc["maxChunkSizeBytes"], doc["enableAutoMerge"], wantBytes, wantMerge)
		}
	}
	checkConfig(int64(1<<20), false)
	if got := status()["chunkSize"]; got != int64(1) {
		t.Fatalf("balancerCollectionStatus chunkSize: %v, want 1", got)
	}
	out := srv.mongosh(t, "admin", "--eval", fmt.Sprintf(`print(Number(sh.balancerCollectionStatus(%q).chunkSize))`, ns))
	if strings.TrimSpace(out) != "1" {
		t.Fatalf("mongosh sh.balancerCollectionStatus: %q", out)
	}

	srv.stop()
	srv.restart()
	c = srv.client(t)
	admin = c.Database("admin")
	checkConfig(int64(1<<20), false)

	for _, tc := range []struct {
		cmd  bson.D
		code int32
	}{
		{bson.D{{Key: "configureCollectionBalancing", Value: ns}, {Key: "chunkSize", Value: -1}}, 72},
		{bson.D{{Key: "configureCollectionBalancing", Value: ns}, {Key: "chunkSize", Value: 1025}}, 72},
		{bson.D{{Key: "configureCollectionBalancing", Value: ns}, {Key: "chunkSize", Value: int64(8796093022209)}}, 72},
		{bson.D{{Key: "configureCollectionBalancing", Value: ns}, {Key: "defragmentCollection", Value: true}}, 238},
		{bson.D{{Key: "configureCollectionBalancing", Value: dbn + ".nope"}, {Key: "chunkSize", Value: 1}}, 118},
	} {
		var ce mongo.CommandError
		if err := admin.RunCommand(ctx, tc.cmd).Err(); !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("%v: %v, want code %d", tc.cmd, err, tc.code)
		}
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "configureCollectionBalancing", Value: ns}, {Key: "chunkSize", Value: 0},
		{Key: "enableAutoMerger", Value: true}}).Err(); err != nil {
		t.Fatalf("configureCollectionBalancing chunkSize 0: %v", err)
	}
	checkConfig(nil, nil)
	if got := status()["chunkSize"]; got != int64(50*1024) {
		t.Fatalf("balancerCollectionStatus chunkSize after chunkSize 0: %v", got)
	}
}
