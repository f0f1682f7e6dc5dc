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

// TestAdminCommands: the administration commands a single node answers as a mongos without
// other nodes: connPoolStats with no host, logRotate (nothing to rotate: the log goes to
// standard error), getClusterParameter and setClusterParameter with changeStreamOptions (the
// one cluster parameter; its images kept as long as the change log, "off"), and MongoDB's
// refusals (an unknown parameter NoSuchKey 4, expireAfterSeconds as a number 238, an unknown
// log type, dropConnections without hostAndPort 40414 or with a bad host 9). mongosh runs
// them too.
func TestAdminCommands(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.client(t)
	admin := c.Database("admin")

	pool := connPoolStats(t, admin)
	if pool["totalCreated"] != int64(0) || pool["totalInUse"] != int64(0) || len(asM(pool["hosts"])) != 0 || len(asM(pool["pools"])) != 0 {
		t.Fatalf("connPoolStats of a single node: %v", pool)
	}
	for _, cmd := range []bson.D{
		{{Key: "logRotate", Value: 1}},
		{{Key: "logRotate", Value: "server"}},
		{{Key: "dropConnections", Value: 1}, {Key: "hostAndPort", Value: bson.A{"127.0.0.1:1"}}},
		{{Key: "setClusterParameter", Value: bson.D{{Key: "changeStreamOptions", Value: bson.D{{Key: "preAndPostImages",
			Value: bson.D{{Key: "expireAfterSeconds", Value: "off"}}}}}}}},
	} {
		if _, err := runCmd(t, admin, cmd); err != nil {
			t.Errorf("%v: %v", cmd, err)
		}
	}
	for _, name := range []any{"changeStreamOptions", "*", bson.A{"changeStreamOptions"}} {
		res, err := runCmd(t, admin, bson.D{{Key: "getClusterParameter", Value: name}})
		if err != nil {
			t.Fatalf("getClusterParameter %v: %v", name, err)
		}
		params := res["clusterParameters"].(bson.A)
		if len(params) != 1 || asM(params[0])["_id"] != "changeStreamOptions" ||
			asM(asM(params[0])["preAndPostImages"])["expireAfterSeconds"] != "off" {
			t.Fatalf("getClusterParameter %v: %v", name, res)
		}
	}
	for _, tc := range []struct {
		cmd  bson.D
		code int32
	}{
		{bson.D{{Key: "getClusterParameter", Value: bson.A{"changeStreamOptions", "fooParameter"}}}, 4},
		{bson.D{{Key: "setClusterParameter", Value: bson.D{{Key: "fooParameter", Value: bson.D{}}}}}, 4},
		{bson.D{{Key: "setClusterParameter", Value: bson.D{{Key: "changeStreamOptions", Value: bson.D{{Key: "preAndPostImages",
			Value: bson.D{{Key: "expireAfterSeconds", Value: 3600}}}}}}}}, 238},
		{bson.D{{Key: "logRotate", Value: "audit"}}, 4},
		{bson.D{{Key: "dropConnections", Value: 1}}, 40414},
		{bson.D{{Key: "dropConnections", Value: 1}, {Key: "hostAndPort", Value: bson.A{"nohost"}}}, 9},
	} {
		var ce mongo.CommandError
		if err := admin.RunCommand(context.Background(), tc.cmd).Err(); !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("%v: %v, want code %d", tc.cmd, err, tc.code)
		}
	}
	out := srv.mongosh(t, "admin", "--eval", `const p = db.adminCommand({connPoolStats: 1}); const r = db.adminCommand({logRotate: 1});
		const g = db.adminCommand({getClusterParameter: "changeStreamOptions"});
		print(p.ok, r.ok, g.clusterParameters[0].preAndPostImages.expireAfterSeconds)`)
	if strings.TrimSpace(out) != "1 1 off" {
		t.Fatalf("mongosh: %q", out)
	}
}

// TestClusterConnPoolStats: connPoolStats on a node of three lists the internal connections
// it opened to the other two, by host, in its pool and its hosts; dropConnections to one of
// them closes them (the host has no open connection then), and the next read through the
// node dials it again (its created count grows) and returns every document.
func TestClusterConnPoolStats(t *testing.T) {
	t.Parallel()
	_, clients, dbn := shardedOverThree(t, "c", "k", 3)
	ctx := context.Background()
	docs := make([]any, 300)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}}
	}
	if _, err := clients[0].Database(dbn).Collection("c").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	count := func() {
		t.Helper()
		if n, err := clients[0].Database(dbn).Collection("c").CountDocuments(ctx, bson.D{}); err != nil || n != 300 {
			t.Fatalf("count through node 0: %d, %v", n, err)
		}
	}
	count()
	admin := clients[0].Database("admin")
	stats := func() bson.M { return connPoolStats(t, admin) }
	res := stats()
	hosts := asM(res["hosts"])
	if len(hosts) != 2 || res["totalCreated"].(int64) < 2 {
		t.Fatalf("connPoolStats of node 0 after a read over three nodes: %v", res)
	}
	pool := asM(asM(res["pools"])["NetworkInterfaceTL-ClusterNodes"])
	var host string
	for h, v := range hosts {
		host = h
		if asM(v)["created"].(int64) < 1 || pool[h] == nil {
			t.Fatalf("host %s in connPoolStats: %v", h, res)
		}
	}
	created := asM(hosts[host])["created"].(int64)
	if _, err := runCmd(t, admin, bson.D{{Key: "dropConnections", Value: 1}, {Key: "hostAndPort", Value: bson.A{host}}}); err != nil {
		t.Fatalf("dropConnections %s: %v", host, err)
	}
	h := asM(asM(stats()["hosts"])[host])
	if open := h["inUse"].(int64) + h["available"].(int64); open != 0 {
		t.Fatalf("%s after dropConnections: %v", host, h)
	}
	count()
	waitFor(t, 10*time.Second, "node 0 dials "+host+" again", func() bool {
		return asM(asM(stats()["hosts"])[host])["created"].(int64) > created
	})
}

// TestReplicationConnPoolStats: with replicated shards, connPoolStats on a node of three
// lists the raft transport's connections to the other two in their own pool
// (NetworkInterfaceTL-ReplNetwork, as a mongod's replication network), counted in the hosts
// and the totals; dropConnections to one of them closes them, and raft dials it again (its
// created count grows).
func TestReplicationConnPoolStats(t *testing.T) {
	t.Parallel()
	_, nodes, _ := replicatedNodes(t, 3)
	admin := nodes[0].client(t).Database("admin")
	stats := func() bson.M { return connPoolStats(t, admin) }
	var res, raft bson.M
	waitFor(t, 30*time.Second, "the raft pool to reach both other nodes", func() bool {
		res = stats()
		raft = asM(asM(res["pools"])["NetworkInterfaceTL-ReplNetwork"])
		return len(raft) > 0 && len(raft)-6 == 2 // six pool* counters, then the hosts
	})
	var created int64
	for _, n := range nodes[1:] {
		h := asM(raft[n.addr])
		if h == nil || h["created"].(int64) < 1 || asM(asM(res["hosts"])[n.addr]) == nil {
			t.Fatalf("host %s in connPoolStats: %v", n.addr, res)
		}
		created += h["created"].(int64)
	}
	if raft["poolCreated"].(int64) != created || res["totalCreated"].(int64) < created {
		t.Fatalf("raft pool's poolCreated %v, hosts' %d, totalCreated %v", raft["poolCreated"], created, res["totalCreated"])
	}
	host := nodes[1].addr
	before := asM(raft[host])["created"].(int64)
	if _, err := runCmd(t, admin, bson.D{{Key: "dropConnections", Value: 1}, {Key: "hostAndPort", Value: bson.A{host}}}); err != nil {
		t.Fatalf("dropConnections %s: %v", host, err)
	}
	waitFor(t, 30*time.Second, "raft to dial "+host+" again", func() bool {
		h := asM(asM(asM(stats()["pools"])["NetworkInterfaceTL-ReplNetwork"])[host])
		return h != nil && h["created"].(int64) > before
	})
}

// connPoolStats runs connPoolStats on admin.
func connPoolStats(t *testing.T, admin *mongo.Database) bson.M {
	t.Helper()
	res, err := runCmd(t, admin, bson.D{{Key: "connPoolStats", Value: 1}})
	if err != nil {
		t.Fatalf("connPoolStats: %v", err)
	}
	return res
}
