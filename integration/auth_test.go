package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// asUser connects to s as user (authSource admin unless source is set) with mechanism ("" for
// the driver's default: speculative SCRAM-SHA-256 in the handshake).
func asUser(t *testing.T, s *server, user, password, source, mechanism string) *mongo.Client {
	t.Helper()
	if source == "" {
		source = "admin"
	}
	return s.client(t, options.Client().SetAuth(options.Credential{
		Username: user, Password: password, AuthSource: source, AuthMechanism: mechanism,
	}))
}

// wantServerCode checks that err is a server error with code.
func wantServerCode(t *testing.T, what string, err error, code int32) {
	t.Helper()
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(int(code)) {
		t.Fatalf("%s: want code %d, got %v", what, code, err)
	}
}

func TestAuthDriverSCRAM(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t, "root", "rootpw")
	ctx := context.Background()
	for _, mech := range []string{"", "SCRAM-SHA-256", "SCRAM-SHA-1"} {
		c := asUser(t, srv, "root", "rootpw", "", mech)
		if _, err := c.Database("app").Collection("c").InsertOne(ctx, bson.D{{Key: "mech", Value: mech}}); err != nil {
			t.Fatalf("insert as root with %q: %v", mech, err)
		}
	}
	for _, mech := range []string{"", "SCRAM-SHA-256", "SCRAM-SHA-1"} {
		bad := asUser(t, srv, "root", "wrong", "", mech)
		wantServerCode(t, "wrong password with "+mech, bad.Ping(ctx, nil), 18)
	}
	anon := srv.client(t)
	err := anon.Database("app").Collection("c").FindOne(ctx, bson.D{}).Err()
	wantServerCode(t, "unauthenticated find", err, 13)
	if !strings.Contains(err.Error(), "requires authentication") {
		t.Fatalf("unauthenticated find: %v", err)
	}
	if err := anon.Ping(ctx, nil); err != nil {
		t.Fatalf("ping needs no authentication: %v", err)
	}
}

func TestAuthDriverRoles(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t, "root", "rootpw")
	ctx := context.Background()
	root := asUser(t, srv, "root", "rootpw", "", "")
	for _, cmd := range []bson.D{
		{{Key: "createUser", Value: "reader"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"read"}}},
		{{Key: "createUser", Value: "writer"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"readWrite"}}},
	} {
		if err := root.Database("app").RunCommand(ctx, cmd).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	if _, err := root.Database("app").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}

	reader := asUser(t, srv, "reader", "pw", "app", "SCRAM-SHA-256")
	if n, err := reader.Database("app").Collection("c").CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("reader count: %d, %v", n, err)
	}
	_, err := reader.Database("app").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 2}})
	wantServerCode(t, "reader insert", err, 13)
	if !strings.Contains(err.Error(), "not authorized on app to execute command { insert: \"c\"") {
		t.Fatalf("reader insert: %v", err)
	}

	writer := asUser(t, srv, "writer", "pw", "app", "SCRAM-SHA-1")
	if _, err := writer.Database("app").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 3}}); err != nil {
		t.Fatalf("writer insert: %v", err)
	}
	_, err = writer.Database("other").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	wantServerCode(t, "writer insert on another database", err, 13)

	var status struct {
		AuthInfo struct {
			AuthenticatedUsers     []bson.M `bson:"authenticatedUsers"`
			AuthenticatedUserRoles []bson.M `bson:"authenticatedUserRoles"`
		} `bson:"authInfo"`
	}
	if err := writer.Database("admin").RunCommand(ctx, bson.D{{Key: "connectionStatus", Value: 1}}).Decode(&status); err != nil {
		t.Fatal(err)
	}
	if u := status.AuthInfo.AuthenticatedUsers; len(u) != 1 || u[0]["user"] != "writer" || u[0]["db"] != "app" {
		t.Fatalf("authenticatedUsers %v", u)
	}

	// Users survive a restart; the localhost exception does not come back.
	srv.stop()
	srv.restart()
	reader = asUser(t, srv, "reader", "pw", "app", "")
	if err := reader.Database("app").Collection("c").FindOne(ctx, bson.D{}).Err(); err != nil {
		t.Fatalf("reader after restart: %v", err)
	}
	err = srv.client(t).Database("admin").RunCommand(ctx, bson.D{
		{Key: "createUser", Value: "intruder"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}},
	}).Err()
	wantServerCode(t, "createUser without authentication after restart", err, 13)
}

func TestAuthLocalhostExceptionDriver(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--auth")
	ctx := context.Background()
	anon := srv.client(t)
	if err := anon.Database("admin").RunCommand(ctx, bson.D{
		{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}},
	}).Err(); err != nil {
		t.Fatalf("first user through the localhost exception: %v", err)
	}
	if err := asUser(t, srv, "admin", "pw", "", "").Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	err := anon.Database("admin").RunCommand(ctx, bson.D{
		{Key: "createUser", Value: "second"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}},
	}).Err()
	wantServerCode(t, "second user without authentication", err, 13)
}

func TestAuthMongosh(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t, "root", "rootpw")
	script := `
const assert = require("assert");
const app = db.getSiblingDB("app");
app.createUser({user: "reader", pwd: "pw", roles: ["read"]});
app.c.insertOne({_id: 1});
const st = db.runCommand({connectionStatus: 1});
assert.strictEqual(st.authInfo.authenticatedUsers[0].user, "root");
const info = app.getUser("reader");
assert.strictEqual(info.user, "reader");
assert.strictEqual(info.roles.length, 1);
assert.strictEqual(info.roles[0].role, "read");
assert.strictEqual(info.roles[0].db, "app");
print("auth admin ok");
`
	out := srv.mongoshRaw(t, "--quiet", srv.userURI("root", "rootpw", "admin", "admin"), "--eval", script)
	if !strings.Contains(out, "auth admin ok") {
		t.Fatalf("mongosh as root:\n%s", out)
	}
	script = `
const assert = require("assert");
assert.strictEqual(db.c.countDocuments({}), 1);
let code = 0;
try { db.c.insertOne({_id: 2}); } catch (e) { code = e.code; }
assert.strictEqual(code, 13);
print("auth reader ok");
`
	out = srv.mongoshRaw(t, "--quiet", srv.userURI("reader", "pw", "app", "app"), "--eval", script)
	if !strings.Contains(out, "auth reader ok") {
		t.Fatalf("mongosh as reader:\n%s", out)
	}
}
