package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestGetMoreAuthOtherUser checks that with access control on, a cursor is continued only
// by the user who opened it: another user's getMore answers Unauthorized 13 with mongos's
// message (its cursor manager refuses the checkout, before the session check, so the other
// session does not show), and the cursor lives on for its owner.
func TestGetMoreAuthOtherUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, alice, bob := cursorUsers(t)
	cur, err := alice.Database("app").Collection("c").Find(ctx, bson.D{}, options.Find().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cur.Close(ctx) }()
	if cur.ID() == 0 {
		t.Fatal("the find returned no open cursor")
	}
	getMore := bson.D{{Key: "getMore", Value: cur.ID()}, {Key: "collection", Value: "c"}}
	err = bob.Database("app").RunCommand(ctx, getMore).Err()
	want := fmt.Sprintf("cursor id %d was not created by the authenticated user :: caused by :: User not authorized to access cursor", cur.ID())
	if ce := wantCodeName(t, err, 13, "Unauthorized"); ce.Message != want {
		t.Fatalf("bob's getMore: %q, want %q", ce.Message, want)
	}

	// Root too is another user: being allowed everything does not make a cursor one's own.
	err = root.Database("app").RunCommand(ctx, getMore).Err()
	_ = wantCodeName(t, err, 13, "Unauthorized")

	var got []bson.M
	if err := cur.All(ctx, &got); err != nil || len(got) != 3 {
		t.Fatalf("alice's cursor after the refused getMores: %v, %v", got, err)
	}
}

// TestKillCursorsAuthOtherUser checks that with access control on, killCursors kills only
// the caller's own cursors: another user's answers Unauthorized 13 with mongos's message
// and the cursor lives on; a user who may kill any cursor (root: MongoDB's killAnyCursor)
// kills it; a cursor id nobody holds is reported not found.
func TestKillCursorsAuthOtherUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root, alice, bob := cursorUsers(t)
	open := func() int64 {
		t.Helper()
		var res struct {
			Cursor struct {
				ID int64 `bson:"id"`
			} `bson:"cursor"`
		}
		cmd := bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}}
		if err := alice.Database("app").RunCommand(ctx, cmd).Decode(&res); err != nil || res.Cursor.ID == 0 {
			t.Fatalf("alice's find: cursor %d, %v", res.Cursor.ID, err)
		}
		return res.Cursor.ID
	}
	kill := func(who *mongo.Client, id int64) (bson.M, error) {
		var res bson.M
		err := who.Database("app").RunCommand(ctx, bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{id}}}).Decode(&res)
		return res, err
	}

	id := open()
	_, err := kill(bob, id)
	if ce := wantCodeName(t, err, 13, "Unauthorized"); ce.Message != "not authorized to kill cursor on app.c" {
		t.Fatalf("bob's killCursors: %q", ce.Message)
	}
	getMore := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 1}}
	if err := alice.Database("app").RunCommand(ctx, getMore).Err(); err != nil {
		t.Fatalf("alice's cursor after bob's refused kill: %v", err)
	}
	if res, err := kill(alice, id); err != nil || fmt.Sprint(res["cursorsKilled"]) != fmt.Sprintf("[%d]", id) {
		t.Fatalf("alice kills her cursor: %v, %v", res, err)
	}

	id = open()
	if res, err := kill(root, id); err != nil || fmt.Sprint(res["cursorsKilled"]) != fmt.Sprintf("[%d]", id) {
		t.Fatalf("root kills alice's cursor: %v, %v", res, err)
	}
	if res, err := kill(bob, id); err != nil || fmt.Sprint(res["cursorsNotFound"]) != fmt.Sprintf("[%d]", id) {
		t.Fatalf("a killed cursor: %v, %v", res, err)
	}
}

// cursorUsers starts a server with access control and returns clients of root and of alice and
// bob, two readWrite users of app, whose collection c holds {_id: 1..3}.
func cursorUsers(t *testing.T) (root, alice, bob *mongo.Client) {
	t.Helper()
	srv := startAuthServer(t, "root", "rootpw")
	ctx := context.Background()
	root = asUser(t, srv, "root", "rootpw", "", "")
	for _, user := range []string{"alice", "bob"} {
		cmd := bson.D{{Key: "createUser", Value: user}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"readWrite"}}}
		if err := root.Database("app").RunCommand(ctx, cmd).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	if _, err := root.Database("app").Collection("c").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}},
	}); err != nil {
		t.Fatal(err)
	}
	return root, asUser(t, srv, "alice", "pw", "app", ""), asUser(t, srv, "bob", "pw", "app", "")
}
