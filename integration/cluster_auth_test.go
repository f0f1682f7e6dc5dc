package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// writeKeyFile writes a key file readable by its owner only and returns its path.
func writeKeyFile(t *testing.T, key string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keyfile")
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// authClient connects to s as user (defined on authSource) with password.
func authClient(t *testing.T, s *server, user, password, authSource string) *mongo.Client {
	t.Helper()
	return s.client(t, options.Client().SetAuth(options.Credential{Username: user, Password: password, AuthSource: authSource}))
}

// TestClusterAuthKeyFile: three nodes with --keyFile (which implies --auth) authenticate to
// each other as __system: a user created on one node reads and writes a collection spanning
// every node through each node, with no account of its own on the others. A root user
// cannot run the internal commands (Unauthorized 13); a client claiming to be __system
// without the key cannot authenticate (18); and a node started with another key joins but
// cannot read the other nodes' shards (AuthenticationFailed 18).
func TestClusterAuthKeyFile(t *testing.T) {
	t.Parallel()
	key := writeKeyFile(t, "c2VjcmV0LWNsdXN0ZXIta2V5LWZvci1jbGVhdmU=")
	etcd, nodes := startClusterNodes(t, 3, "--keyFile", key, "--auth-user", "root", "--auth-password", "rootpw")
	ctx := context.Background()
	roots := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		roots[i] = authClient(t, s, "root", "rootpw", "admin")
	}
	waitClusterShards(t, roots, 3)
	dbn := dbName(t)
	shardColl(t, roots[0], dbn+".users", "tenant", bson.E{Key: "numInitialChunks", Value: 6})
	waitClusterChunks(t, roots, 6, 3)
	if _, err := runCmd(t, roots[1].Database(dbn), bson.D{{Key: "createUser", Value: "app"}, {Key: "pwd", Value: "apppw"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: dbn}}}}}); err != nil {
		t.Fatalf("createUser on node-b: %v", err)
	}

	apps := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		apps[i] = authClient(t, s, "app", "apppw", dbn)
	}
	const per = 30
	for k, c := range apps {
		docs := make([]any, per)
		for i := range docs {
			id := k*per + i
			docs[i] = bson.D{{Key: "_id", Value: int32(id)}, {Key: "tenant", Value: fmt.Sprintf("t%d", id%11)}}
		}
		if _, err := c.Database(dbn).Collection("users").InsertMany(ctx, docs); err != nil {
			t.Fatalf("insert as app through node %d: %v", k, err)
		}
	}
	for i, c := range apps {
		if n, err := c.Database(dbn).Collection("users").CountDocuments(ctx, bson.D{}); err != nil || n != 3*per {
			t.Fatalf("count as app through node %d = %d, %v; want %d", i, n, err, 3*per)
		}
		if ids := sortedIDs(t, c, dbn, "users"); len(ids) != 3*per || ids[0] != 0 || ids[len(ids)-1] != 3*per-1 {
			t.Fatalf("find as app through node %d: %v", i, ids)
		}
		// Point reads by shard key and _id, most of them of other nodes' shards: compact
		// requests (with their filter), authenticated as the cluster's __system like every
		// internal request.
		before := compactPointReads(t, roots[i])
		for id := range int32(3 * per) {
			var got struct{ Tenant string }
			tenant := fmt.Sprintf("t%d", id%11)
			err := c.Database(dbn).Collection("users").FindOne(ctx, bson.D{{Key: "tenant", Value: tenant}, {Key: "_id", Value: id}}).Decode(&got)
			if err != nil || got.Tenant != tenant {
				t.Fatalf("findOne %d as app through node %d: %+v, %v", id, i, got, err)
			}
		}
		if after := compactPointReads(t, roots[i]); after.Sent == before.Sent {
			t.Fatalf("node %d sent no compact point read for %d point reads", i, 3*per)
		}
	}

	// The internal commands are for __system alone: root gets 13.
	_, err := runCmd(t, roots[0].Database(dbn), bson.D{{Key: "_cleaveShardFind", Value: "users"}, {Key: "shard", Value: 0}})
	wantCode(t, err, 13, "not authorized on "+dbn+" to execute command { _cleaveShardFind")
	_, err = runCmd(t, roots[0].Database(dbn), bson.D{{Key: "_cleaveShardGet", Value: "users"}, {Key: "shard", Value: 0}})
	wantCode(t, err, 13, "not authorized on "+dbn+" to execute command { _cleaveShardGet")
	// __system without the key: authentication fails.
	bad := nodes[0].client(t, options.Client().SetAuth(options.Credential{Username: "__system", Password: "not-the-key",
		AuthSource: "local", AuthMechanism: "SCRAM-SHA-256"}))
	err = bad.Ping(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "Authentication failed") {
		t.Fatalf("__system with a wrong key: %v", err)
	}

	// A node with another key: its users are the cluster's, but the other nodes refuse it.
	other := writeKeyFile(t, "YW5vdGhlci1rZXktZW50aXJlbHk=")
	d := startServer(t, "--etcd", strings.Join(etcd.Endpoints(), ","), "--node-name", "node-d", "--etcd-lease-ttl", "2s", "--keyFile", other, "--replicas", "1")
	rootD := authClient(t, d, "root", "rootpw", "admin")
	_, err = rootD.Database(dbn).Collection("users").CountDocuments(ctx, bson.D{})
	wantCode(t, err, 18, "Authentication failed")
}
