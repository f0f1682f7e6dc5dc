package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestConfigFileStartsServer: the real binary started with a mongod-shaped configuration file
// (-f, as mongod) takes its settings from it: three shards from its cleave: section, server-
// side JavaScript off from security.javascriptEnabled, and getCmdLineOpts names the file.
func TestConfigFileStartsServer(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "cleave.yaml")
	text := "security:\n  javascriptEnabled: false\ncleave:\n  shards: 3\n"
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, "-f", p).client(t)
	ctx := context.Background()
	var shards struct {
		Shards []bson.M `bson:"shards"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "listShards", Value: 1}}).Decode(&shards); err != nil || len(shards.Shards) != 3 {
		t.Fatalf("listShards: %v %v, want 3 shards", shards.Shards, err)
	}
	coll := c.Database(dbName(t)).Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "$where", Value: "this.x == 1"}}).Err(); err == nil {
		t.Fatal("$where ran with security.javascriptEnabled: false")
	}
	var opts struct {
		Parsed struct {
			Config string `bson:"config"`
		} `bson:"parsed"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getCmdLineOpts", Value: 1}}).Decode(&opts); err != nil || opts.Parsed.Config != p {
		t.Fatalf("getCmdLineOpts parsed.config %q (%v), want %q", opts.Parsed.Config, err, p)
	}
}
