package integration

import (
	"context"
	"crypto/sha256"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestKillAllSessionsByPattern checks, with access control on, that killAllSessionsByPattern
// kills the sessions its patterns match, as MongoDB's SessionKiller does: a uid pattern a
// user's sessions (their cursors close), an lsid pattern one session; killAllSessions with
// users kills those users' sessions, and killSessions only the caller's. users and roles are impersonation data: only root may
// pass them, and at most one user.
func TestKillAllSessionsByPattern(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t, "root", "rootpw")
	ctx := context.Background()
	root := asUser(t, srv, "root", "rootpw", "", "")
	for _, c := range []struct {
		db   string
		user bson.D
	}{
		{"app", bson.D{{Key: "createUser", Value: "alice"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"readWrite"}}}},
		{"app", bson.D{{Key: "createUser", Value: "bob"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"readWrite"}}}},
		{"admin", bson.D{{Key: "createUser", Value: "ops"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"clusterAdmin"}}}},
	} {
		if err := root.Database(c.db).RunCommand(ctx, c.user).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := root.Database("app").Collection("c").InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	alice := asUser(t, srv, "alice", "pw", "app", "")
	bob := asUser(t, srv, "bob", "pw", "app", "")
	ops := asUser(t, srv, "ops", "pw", "admin", "")
	digest := func(user string) bson.Binary {
		d := sha256.Sum256([]byte(user))
		return bson.Binary{Data: d[:]}
	}
	// open starts a session of cl with a cursor on its first batch.
	open := func(cl *mongo.Client) (*mongo.Session, *mongo.Cursor) {
		sess, err := cl.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sess.EndSession(ctx) })
		cur, err := cl.Database("app").Collection("c").Find(mongo.NewSessionContext(ctx, sess), bson.D{}, options.Find().SetBatchSize(1))
		if err != nil || !cur.Next(ctx) {
			t.Fatalf("find: %v", err)
		}
		return sess, cur
	}
	listed := func(sess *mongo.Session) bson.Raw {
		cur, err := root.Database("admin").Aggregate(ctx, bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{{Key: "allUsers", Value: true}}}}})
		if err != nil {
			t.Fatal(err)
		}
		var all []bson.Raw
		if err := cur.All(ctx, &all); err != nil {
			t.Fatal(err)
		}
		_, want, _ := sess.ID().Lookup("id").BinaryOK()
		for _, s := range all {
			if _, id, _ := s.Lookup("_id", "id").BinaryOK(); string(id) == string(want) {
				return s
			}
		}
		return nil
	}
	aSess, aCur := open(alice)
	bSess, bCur := open(bob)
	if s := listed(aSess); s == nil || !s.Lookup("_id", "uid").Equal(bson.RawValue{Type: bson.TypeBinary, Value: bsonBinary(digest("alice@app"))}) {
		t.Fatalf("alice's session in $listLocalSessions: %s, want uid SHA-256(\"alice@app\")", s)
	}
	kill := func(cl *mongo.Client, cmd string, patterns bson.A) error {
		return cl.Database("admin").RunCommand(ctx, bson.D{{Key: cmd, Value: patterns}}).Err()
	}
	aliceUser := bson.D{{Key: "user", Value: "alice"}, {Key: "db", Value: "app"}}
	bobUser := bson.D{{Key: "user", Value: "bob"}, {Key: "db", Value: "app"}}
	err := kill(ops, "killAllSessionsByPattern", bson.A{bson.D{{Key: "users", Value: bson.A{aliceUser}}}})
	wantServerCode(t, "impersonation by clusterAdmin", err, 13)
	err = kill(ops, "killAllSessionsByPattern", bson.A{bson.D{{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "root"}, {Key: "db", Value: "admin"}}}}}})
	wantServerCode(t, "impersonation of roles by clusterAdmin", err, 13)
	err = kill(root, "killAllSessionsByPattern", bson.A{bson.D{{Key: "uid", Value: digest("alice@app")}, {Key: "users", Value: bson.A{aliceUser, bobUser}}}})
	wantServerCode(t, "two impersonated users", err, 2)
	if err := kill(ops, "killAllSessionsByPattern", bson.A{bson.D{{Key: "uid", Value: digest("alice@app")}}}); err != nil {
		t.Fatal(err)
	}
	if aCur.Next(ctx) || !hasCode(aCur.Err(), 43) {
		t.Fatalf("alice's cursor after her sessions were killed: %v, want 43 CursorNotFound", aCur.Err())
	}
	if !bCur.Next(ctx) {
		t.Fatalf("bob's cursor after alice's sessions were killed: %v", bCur.Err())
	}
	if listed(bSess) == nil {
		t.Fatal("bob's session was killed with alice's")
	}
	// An lsid pattern ({id, uid}) kills that session only.
	cSess, _ := open(alice)
	dSess, _ := open(alice)
	lsid := bson.D{{Key: "id", Value: cSess.ID().Lookup("id")}, {Key: "uid", Value: digest("alice@app")}}
	if err := kill(root, "killAllSessionsByPattern", bson.A{bson.D{{Key: "lsid", Value: lsid}}}); err != nil {
		t.Fatal(err)
	}
	if listed(cSess) != nil || listed(dSess) == nil {
		t.Fatalf("after killing one session by lsid: killed %v, other killed %v", listed(cSess) == nil, listed(dSess) == nil)
	}
	// killSessions names the caller's own sessions: alice's naming bob's by its id kills nothing.
	if err := kill(alice, "killSessions", bson.A{bson.D{{Key: "id", Value: bSess.ID().Lookup("id")}}}); err != nil {
		t.Fatal(err)
	}
	if listed(bSess) == nil {
		t.Fatal("alice killed bob's session by its id")
	}
	if err := kill(ops, "killAllSessions", bson.A{bobUser}); err != nil {
		t.Fatal(err)
	}
	if bCur.Next(ctx) || !hasCode(bCur.Err(), 43) {
		t.Fatalf("bob's cursor after killAllSessions of bob: %v, want 43 CursorNotFound", bCur.Err())
	}
	if listed(dSess) == nil {
		t.Fatal("killAllSessions of bob killed alice's session")
	}
}

// bsonBinary is the raw value of a BinData.
func bsonBinary(b bson.Binary) []byte {
	_, v, err := bson.MarshalValue(b)
	if err != nil {
		panic(err)
	}
	return v
}
