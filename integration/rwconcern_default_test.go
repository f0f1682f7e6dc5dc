package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// rwDefaults is getDefaultRWConcern's reply.
type rwDefaults struct {
	ReadConcern  bson.M         `bson:"defaultReadConcern"`
	WriteConcern bson.M         `bson:"defaultWriteConcern"`
	OpTime       bson.Timestamp `bson:"updateOpTime"`
	WallClock    time.Time      `bson:"updateWallClockTime"`
	RCSource     string         `bson:"defaultReadConcernSource"`
	WCSource     string         `bson:"defaultWriteConcernSource"`
	Local        time.Time      `bson:"localUpdateWallClockTime"`
	InMemory     bool           `bson:"inMemory"`
}

// getRWDefaults runs getDefaultRWConcern through c (inMemory: this node's copy).
func getRWDefaults(t *testing.T, c *mongo.Client, inMemory bool) rwDefaults {
	t.Helper()
	cmd := bson.D{{Key: "getDefaultRWConcern", Value: 1}}
	if inMemory {
		cmd = append(cmd, bson.E{Key: "inMemory", Value: true})
	}
	var d rwDefaults
	if err := c.Database("admin").RunCommand(context.Background(), cmd).Decode(&d); err != nil {
		t.Fatalf("getDefaultRWConcern: %v", err)
	}
	return d
}

// isMajorityDefaults reports whether d are the defaults TestDefaultRWConcern sets.
func isMajorityDefaults(d rwDefaults) bool {
	return d.RCSource == "global" && d.WCSource == "global" && d.ReadConcern["level"] == "majority" &&
		d.WriteConcern["w"] == "majority" && d.WriteConcern["wtimeout"] == int32(5000) && d.OpTime.T != 0
}

// defaultedLog returns the lines of the server's global log for command cmd in database db
// that ran under the default concern key (readConcern or writeConcern).
func defaultedLog(t *testing.T, c *mongo.Client, db, cmd, key string) []string {
	t.Helper()
	var logs struct {
		Log []string `bson:"log"`
	}
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "getLog", Value: "global"}}).Decode(&logs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range logs.Log {
		if strings.Contains(l, `"cmd":"`+cmd+`"`) && strings.Contains(l, `"db":"`+db+`"`) && strings.Contains(l, `"`+key+`":{`) &&
			strings.Contains(l, `"provenance":"customDefault"`) {
			out = append(out, l)
		}
	}
	return out
}

// TestDefaultRWConcern: getDefaultRWConcern answers the implicit defaults until
// setDefaultRWConcern sets them, with MongoDB 7.0's reply fields; MongoDB's refusals (no
// field, snapshot and linearizable levels, afterClusterTime, w: 0, unsetting the write
// concern once set) and those of a replica set of the copies cleave keeps (w: 2, a tag).
// Set to readConcern majority and w: "majority" with wtimeout, they apply to a find, an
// insert and an update that carry no concern (their log lines say so, with provenance
// "customDefault"), and not to an insert that has its own; mongosh reads them; a kill -9 and
// a restart keep them.
func TestDefaultRWConcern(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	admin := c.Database("admin")

	if d := getRWDefaults(t, c, false); d.RCSource != "implicit" || d.WCSource != "implicit" || d.ReadConcern["level"] != "local" ||
		d.WriteConcern["w"] != "majority" || !d.OpTime.IsZero() || d.Local.IsZero() {
		t.Fatalf("implicit defaults: %+v", d)
	}
	for _, tc := range []struct {
		cmd  bson.D
		code int32
		msg  string
	}{
		{bson.D{}, 2, `At least one of the "defaultReadConcern" or "defaultWriteConcern" fields must be present`},
		{bson.D{{Key: "defaultWriteConcern", Value: bson.D{{Key: "w", Value: 0}}}}, 2, "Unacknowledged write concern is not suitable for the default write concern"},
		{bson.D{{Key: "defaultReadConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}}, 2, "level: 'snapshot' is not suitable for the default read concern"},
		{bson.D{{Key: "defaultReadConcern", Value: bson.D{{Key: "level", Value: "linearizable"}}}}, 2, "level: 'linearizable' is not suitable for the default read concern"},
		{bson.D{{Key: "defaultReadConcern", Value: bson.D{{Key: "afterClusterTime", Value: bson.Timestamp{T: 1}}}}}, 2, "'afterClusterTime' is not suitable for the default read concern"},
		{bson.D{{Key: "defaultWriteConcern", Value: bson.D{{Key: "w", Value: 2}}}}, 100, "Not enough data-bearing nodes"},
		{bson.D{{Key: "defaultWriteConcern", Value: bson.D{{Key: "w", Value: "dc1"}}}}, 79, "No write concern mode named 'dc1' found in replica set configuration"},
		{bson.D{{Key: "defaultReadConcern", Value: bson.D{}}, {Key: "bogus", Value: 1}}, 40415, "BSON field 'setDefaultRWConcern.bogus' is an unknown field."},
	} {
		var ce mongo.CommandError
		err := admin.RunCommand(ctx, append(bson.D{{Key: "setDefaultRWConcern", Value: 1}}, tc.cmd...)).Err()
		if !errors.As(err, &ce) || ce.Code != tc.code || ce.Message != tc.msg {
			t.Errorf("setDefaultRWConcern %v: %v, want %d %q", tc.cmd, err, tc.code, tc.msg)
		}
	}
	if d := getRWDefaults(t, c, false); d.WCSource != "implicit" {
		t.Fatalf("a refused setDefaultRWConcern changed the defaults: %+v", d)
	}

	var set rwDefaults
	if err := admin.RunCommand(ctx, bson.D{{Key: "setDefaultRWConcern", Value: 1},
		{Key: "defaultReadConcern", Value: bson.D{{Key: "level", Value: "majority"}}},
		{Key: "defaultWriteConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: 5000}}}}).Decode(&set); err != nil {
		t.Fatalf("setDefaultRWConcern: %v", err)
	}
	if !isMajorityDefaults(set) || set.WallClock.IsZero() {
		t.Fatalf("setDefaultRWConcern's reply: %+v", set)
	}
	if d := getRWDefaults(t, c, true); !isMajorityDefaults(d) || !d.InMemory {
		t.Fatalf("getDefaultRWConcern inMemory: %+v", d)
	}
	var ce mongo.CommandError
	if err := admin.RunCommand(ctx, bson.D{{Key: "setDefaultRWConcern", Value: 1}, {Key: "defaultWriteConcern", Value: bson.D{}}}).Err(); !errors.As(err, &ce) || ce.Code != 20 {
		t.Fatalf("unsetting the default write concern: %v, want 20 IllegalOperation", err)
	}

	// Operations without a concern of their own run under the defaults: their log lines
	// (every command is slow at slowms 0) show them.
	if err := c.Database("rwd").RunCommand(ctx, bson.D{{Key: "profile", Value: 0}, {Key: "slowms", Value: 0}}).Err(); err != nil {
		t.Fatal(err)
	}
	coll := c.Database("rwd").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("count: %d, %v", n, err)
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cmd, key, want string }{
		{"insert", "writeConcern", `"writeConcern":{"w":"majority","wtimeout":5000,"provenance":"customDefault"}`},
		{"update", "writeConcern", `"writeConcern":{"w":"majority","wtimeout":5000,"provenance":"customDefault"}`},
		{"find", "readConcern", `"readConcern":{"level":"majority","provenance":"customDefault"}`},
		{"aggregate", "readConcern", `"readConcern":{"level":"majority","provenance":"customDefault"}`},
	} {
		lines := defaultedLog(t, c, "rwd", tc.cmd, tc.key)
		if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
			t.Errorf("%s's log lines with the default %s: %q, want one with %s", tc.cmd, tc.key, lines, tc.want)
		}
	}
	// A causally consistent session's find carries readConcern {afterClusterTime} without a
	// level: the default's level is added to it.
	sess, err := c.StartSession(options.Session().SetCausalConsistency(true))
	if err != nil {
		t.Fatal(err)
	}
	err = mongo.WithSession(ctx, sess, func(sctx context.Context) error {
		if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
			return err
		}
		return coll.FindOne(sctx, bson.D{{Key: "_id", Value: 2}}).Err()
	})
	sess.EndSession(ctx)
	if err != nil {
		t.Fatalf("a causally consistent session: %v", err)
	}
	found := false
	for _, l := range defaultedLog(t, c, "rwd", "find", "readConcern") {
		found = found || strings.Contains(l, `"readConcern":{"level":"majority","afterClusterTime":`)
	}
	if !found {
		t.Errorf("no find with afterClusterTime under the default level: %q", defaultedLog(t, c, "rwd", "find", "readConcern"))
	}
	// An insert with its own write concern keeps it.
	w1 := c.Database("rwd").Collection("own", options.Collection().SetWriteConcern(writeconcern.W1()))
	if _, err := w1.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if lines := defaultedLog(t, c, "rwd", "insert", "writeConcern"); len(lines) != 2 {
		t.Errorf("an insert with w: 1 ran under the default write concern: %q", lines)
	}

	out := srv.mongosh(t, "admin", "--eval", `const d = db.adminCommand({getDefaultRWConcern: 1}); print(d.defaultReadConcern.level, d.defaultWriteConcern.w, d.defaultWriteConcernSource)`)
	if !strings.Contains(out, "majority majority global") {
		t.Fatalf("mongosh getDefaultRWConcern: %s", out)
	}

	srv.kill()
	srv.restart()
	c = srv.client(t)
	if d := getRWDefaults(t, c, true); !isMajorityDefaults(d) || d.OpTime != set.OpTime {
		t.Fatalf("after kill -9 and restart: %+v, want %+v", d, set)
	}
}

// TestClusterDefaultRWConcern: defaults set through one node of three are the cluster's:
// another node's getDefaultRWConcern answers them at once, and a third node, which was not
// asked, applies them to its very next insert (its log line shows the default): the node
// that set them gave them to the others before it answered. A restarted node has them.
func TestClusterDefaultRWConcern(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 3)
	clients := make([]*mongo.Client, len(nodes))
	for i, s := range nodes {
		clients[i] = s.client(t)
	}
	ctx := context.Background()
	if err := clients[2].Database("rwd").RunCommand(ctx, bson.D{{Key: "profile", Value: 0}, {Key: "slowms", Value: 0}}).Err(); err != nil {
		t.Fatal(err)
	}
	// Node 2's copy of the defaults is fresh: it would not read it again for a second.
	if _, err := clients[2].Database("rwd").Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	var set rwDefaults
	if err := clients[0].Database("admin").RunCommand(ctx, bson.D{{Key: "setDefaultRWConcern", Value: 1},
		{Key: "defaultReadConcern", Value: bson.D{{Key: "level", Value: "majority"}}},
		{Key: "defaultWriteConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: 5000}}}}).Decode(&set); err != nil {
		t.Fatalf("setDefaultRWConcern on node 0: %v", err)
	}
	if d := getRWDefaults(t, clients[1], false); !isMajorityDefaults(d) || d.OpTime != set.OpTime {
		t.Fatalf("node 1's getDefaultRWConcern: %+v, want %+v", d, set)
	}
	if d := getRWDefaults(t, clients[2], true); !isMajorityDefaults(d) || d.OpTime != set.OpTime {
		t.Fatalf("node 2's defaults in memory right after the set through node 0: %+v", d)
	}
	if _, err := clients[2].Database("rwd").Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if lines := defaultedLog(t, clients[2], "rwd", "insert", "writeConcern"); len(lines) != 1 {
		t.Fatalf("node 2's inserts under the default write concern: %q, want the one after the set", lines)
	}
	if d := getRWDefaults(t, clients[2], true); !isMajorityDefaults(d) {
		t.Fatalf("node 2's defaults in memory: %+v", d)
	}
	nodes[1].stop()
	nodes[1].restart()
	if d := getRWDefaults(t, nodes[1].client(t), true); !isMajorityDefaults(d) {
		t.Fatalf("node 1 after a restart: %+v", d)
	}
}
