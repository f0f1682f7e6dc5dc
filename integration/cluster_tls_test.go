package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cleavedb/cleave/cluster/etcdtest"
)

// TestClusterTLS: two nodes started with --tls-cert, --tls-key and --tls-ca (and --keyFile),
// each with a certificate of its own, reach each other's shards over TLS, since their
// listeners accept nothing else and require a certificate the CA signed: a collection sharded
// over both is written through each node and read back whole through both. A node that does
// not trust the others' CA (no --tls-ca: the system's roots) cannot read their shards.
func TestClusterTLS(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	key := writeKeyFile(t, "dGxzLWNsdXN0ZXIta2V5LWZvci1jbGVhdmU=")
	etcd := etcdtest.Start(t, 3)
	startNode := func(name string, extra ...string) *server {
		cert, certKey := p.nodeCert(t, name)
		return startServer(t, append([]string{"--etcd", strings.Join(etcd.Endpoints(), ","), "--node-name", name,
			"--etcd-lease-ttl", "2s", "--keyFile", key, "--auth-user", "root", "--auth-password", "rootpw",
			"--tls-cert", cert, "--tls-key", certKey, "--replicas", "1"}, extra...)...)
	}
	connect := func(s *server) *mongo.Client {
		tc := &tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{p.client}, MinVersion: tls.VersionTLS12}
		return s.client(t, options.Client().SetTLSConfig(tc).
			SetAuth(options.Credential{Username: "root", Password: "rootpw", AuthSource: "admin"}))
	}
	nodes := []*server{startNode("node-a", "--tls-ca", p.caFile), startNode("node-b", "--tls-ca", p.caFile)}
	clients := []*mongo.Client{connect(nodes[0]), connect(nodes[1])}
	waitClusterShards(t, clients, 2)
	dbn := dbName(t)
	shardColl(t, clients[0], dbn+".docs", "tenant", bson.E{Key: "numInitialChunks", Value: 4})
	waitClusterChunks(t, clients, 4, 2)

	ctx := context.Background()
	const per = 40
	for k, c := range clients {
		docs := make([]any, per)
		for i := range docs {
			id := k*per + i
			docs[i] = bson.D{{Key: "_id", Value: int32(id)}, {Key: "tenant", Value: fmt.Sprintf("t%d", id%13)}}
		}
		if _, err := c.Database(dbn).Collection("docs").InsertMany(ctx, docs); err != nil {
			t.Fatalf("insert through node %d: %v", k, err)
		}
	}
	for k, c := range clients {
		if n, err := c.Database(dbn).Collection("docs").CountDocuments(ctx, bson.D{}); err != nil || n != 2*per {
			t.Fatalf("count through node %d = %d, %v; want %d", k, n, err, 2*per)
		}
		ids := sortedIDs(t, c, dbn, "docs")
		for i, id := range ids {
			if id != int32(i) {
				t.Fatalf("find through node %d: _id %d at %d of %d", k, id, i, len(ids))
			}
		}
		if len(ids) != 2*per {
			t.Fatalf("find through node %d: %d documents, want %d", k, len(ids), 2*per)
		}
	}

	// node-c verifies the others' certificates against the system's roots, which do not hold
	// the test CA: their shards are out of its reach.
	// (runCommand, which the driver does not retry.)
	c := connect(startNode("node-c"))
	_, err := runCmd(t, c.Database(dbn), bson.D{{Key: "count", Value: "docs"}})
	wantCode(t, err, 6, "certificate signed by unknown authority")
}
