package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// shardReplicas is what listShards shows of a replicated shard.
type shardReplicas struct {
	ID       string `bson:"_id"`
	Host     string `bson:"host"`
	Replicas []struct {
		ID    int64  `bson:"_id"`
		Node  string `bson:"node"`
		Host  string `bson:"host"`
		State string `bson:"stateStr"`
	} `bson:"replicas"`
}

// listReplicas returns listShards' shards as c's node sees them.
func listReplicas(t *testing.T, c *mongo.Client) []shardReplicas {
	t.Helper()
	var res struct {
		Shards []shardReplicas `bson:"shards"`
	}
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "listShards", Value: 1}}).Decode(&res); err != nil {
		t.Fatalf("listShards: %v", err)
	}
	return res.Shards
}

// leaderOf returns the node serving shard s, "" when none does.
func (s shardReplicas) leaderOf() string {
	for _, r := range s.Replicas {
		if r.State == "PRIMARY" {
			return r.Node
		}
	}
	return ""
}

// waitReplicated waits until c's node lists shards shards, each with replicas copies: one
// leader and the others voters.
func waitReplicated(t *testing.T, c *mongo.Client, shards, replicas int, timeout time.Duration) []shardReplicas {
	t.Helper()
	var got []shardReplicas
	waitFor(t, timeout, fmt.Sprintf("%d shards of %d healthy replicas", shards, replicas), func() bool {
		got = listReplicas(t, c)
		if len(got) != shards {
			return false
		}
		for _, s := range got {
			primaries, secondaries := 0, 0
			for _, r := range s.Replicas {
				switch r.State {
				case "PRIMARY":
					primaries++
				case "SECONDARY":
					secondaries++
				}
			}
			if primaries != 1 || secondaries != replicas-1 {
				return false
			}
		}
		return true
	})
	return got
}

// majorityClient returns a client of s whose writes are retryable with w: "majority".
func majorityClient(t *testing.T, s *server) *mongo.Client {
	t.Helper()
	return s.client(t, options.Client().SetRetryWrites(true).SetWriteConcern(writeconcern.Majority()))
}

// TestReplicationFailover: three nodes with --replicas 3 make every shard a group of three
// copies, one per node, growing from the one its node created. A node leading a shard is
// SIGKILLed: the others elect a new leader and every write and read through them goes on
// (the client sees no error: routers wait for the new leader, the driver retries), with
// every acknowledged document present exactly once; the node restarts as a follower that
// catches up, and reads through it see everything.
func TestReplicationFailover(t *testing.T) {
	_, nodes := startClusterNodes(t, 3, "--replicas", "3")
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = majorityClient(t, s)
	}
	shards := waitReplicated(t, clients[0], 3, 3, 30*time.Second)
	for _, s := range shards {
		t.Logf("%s: %s (leader %s)", s.ID, s.Host, s.leaderOf())
	}
	ns := dbName(t) + ".docs"
	shardColl(t, clients[0], ns, "tenant", bson.E{Key: "numInitialChunks", Value: 6})
	waitClusterChunks(t, clients, 6, 3)
	coll := func(i int) *mongo.Collection { return clients[i].Database(dbName(t)).Collection("docs") }
	ctx := context.Background()
	insert := func(i, from, to int) time.Duration {
		t.Helper()
		start := time.Now()
		for k := from; k < to; k++ {
			if _, err := coll(i).InsertOne(ctx, bson.D{{Key: "_id", Value: k}, {Key: "tenant", Value: fmt.Sprintf("t%d", k)}}); err != nil {
				t.Fatalf("insert %d through node %d: %v", k, i, err)
			}
		}
		return time.Since(start)
	}
	insert(0, 0, 300)

	victim := -1
	for i := range nodes {
		if shards[0].leaderOf() == fmt.Sprintf("node-%c", 'a'+i) {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("no leader for %s", shards[0].ID)
	}
	survivor := (victim + 1) % 3
	nodes[victim].kill()
	t.Logf("killed node %d, the leader of %s", victim, shards[0].ID)
	took := insert(survivor, 300, 400)
	t.Logf("100 inserts through node %d right after the kill took %v", survivor, took)
	n, err := coll(survivor).CountDocuments(ctx, bson.D{})
	if err != nil || n != 400 {
		t.Fatalf("count after failover = %d, %v; want 400", n, err)
	}
	after := listReplicas(t, clients[survivor])
	if l := after[0].leaderOf(); l == "" || l == fmt.Sprintf("node-%c", 'a'+victim) {
		t.Fatalf("%s's leader after the kill = %q", after[0].ID, l)
	}

	nodes[victim].restart()
	clients[victim] = majorityClient(t, nodes[victim])
	waitReplicated(t, clients[survivor], 3, 3, 30*time.Second)
	insert(victim, 400, 450)
	for i := range nodes {
		n, err := coll(i).CountDocuments(ctx, bson.D{})
		if err != nil || n != 450 {
			t.Fatalf("count through node %d = %d, %v; want 450", i, n, err)
		}
	}
}
