package integration

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestGetMoreAuthOtherUser checks that with access control on, a cursor is continued only
// by the user who opened it: another user's getMore answers Unauthorized 13 with mongos's
// message (its cursor manager refuses the checkout, before the session check, so the other
// session does not show), and the cursor lives on for its owner.
func TestGetMoreAuthOtherUser(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t, "root", "rootpw")
	ctx := context.Background()
	root := asUser(t, srv, "root", "rootpw", "", "")
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

	alice := asUser(t, srv, "alice", "pw", "app", "")
	bob := asUser(t, srv, "bob", "pw", "app", "")
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
