package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestClusterCatalogCatchUpWithoutEtcd: with etcd stopped, commands through node-a naming
// collections it does not hold (each would first catch node-a's catalog up with the
// cluster's) answer from node-a's catalog without each waiting for etcd: the first finds etcd
// unreachable and node-a logs it once; the next ones skip the catch-up (before, each waited up
// to the etcd request timeout, 10 s, and logged its failure). A collection node-a holds is
// read as before. Once etcd is back a catch-up succeeds again (logged), and a collection
// created through node-b is found through node-a.
func TestClusterCatalogCatchUpWithoutEtcd(t *testing.T) {
	t.Parallel()
	etcd, nodes := startClusterNodes(t, 2)
	ctx := context.Background()
	clients := []*mongo.Client{nodes[0].client(t), nodes[1].client(t)}
	waitClusterShards(t, clients, 2)
	dbn := dbName(t)
	here := clients[0].Database(dbn).Collection("here")
	if _, err := here.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	const down = "cannot catch up with the cluster's catalog"
	before := strings.Count(nodes[0].log.String(), down)

	etcd.StopAll()
	for i := range 5 {
		n, err := clients[0].Database(dbn).Collection(fmt.Sprintf("missing%d", i)).CountDocuments(ctx, bson.D{})
		if err != nil || n != 0 {
			t.Fatalf("count of a collection no node has, etcd down: %d, %v", n, err)
		}
	}
	if n, err := here.CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
		t.Fatalf("count of node-a's collection, etcd down: %d, %v", n, err)
	}
	if got := strings.Count(nodes[0].log.String(), down) - before; got != 1 {
		t.Fatalf("node-a logged %d failed catch-ups for 5 commands with etcd down, want 1 (the first)", got)
	}

	var wg sync.WaitGroup // every member at once: one alone has no quorum to become ready
	for i := range etcd.Endpoints() {
		wg.Add(1)
		go func() { defer wg.Done(); etcd.Restart(i) }()
	}
	wg.Wait()
	upsert := options.UpdateOne().SetUpsert(true)
	waitFor(t, time.Minute, "node-a to find the collection node-b creates once etcd is back", func() bool {
		_, err := clients[1].Database(dbn).Collection("after").UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}, upsert)
		if err != nil {
			return false
		}
		n, err := clients[0].Database(dbn).Collection("after").CountDocuments(ctx, bson.D{})
		return err == nil && n == 1
	})
	waitFor(t, time.Minute, "node-a to log that etcd answers again (a command missing a collection tries again)", func() bool {
		if _, err := clients[0].Database(dbn).Collection("missing").CountDocuments(ctx, bson.D{}); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(nodes[0].log.String(), "caught up with the cluster's catalog again")
	})
}
