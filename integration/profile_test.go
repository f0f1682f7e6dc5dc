package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestProfile: profile reads and sets the slow-operation threshold and sample rate as a
// mongos does (levels -1 and 0 only), and the threshold decides which commands getLog's
// global log shows.
func TestProfile(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database("prof")
	type status struct {
		Was        int32   `bson:"was"`
		SlowMS     int32   `bson:"slowms"`
		SampleRate float64 `bson:"sampleRate"`
	}
	var st status
	if err := db.RunCommand(ctx, bson.D{{Key: "profile", Value: -1}}).Decode(&st); err != nil || st != (status{0, 100, 1}) {
		t.Fatalf("profile -1: %+v, %v", st, err)
	}
	// Every command is slow from now on, and logged at info.
	if err := db.RunCommand(ctx, bson.D{{Key: "profile", Value: 0}, {Key: "slowms", Value: 0}, {Key: "sampleRate", Value: 1.0}}).Decode(&st); err != nil || st != (status{0, 100, 1}) {
		t.Fatalf("profile 0: %+v (the previous settings), %v", st, err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "profile", Value: -1}}).Decode(&st); err != nil || st != (status{0, 0, 1}) {
		t.Fatalf("profile -1 after setting: %+v, %v", st, err)
	}
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "marker", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	var logs struct {
		Log []string `bson:"log"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getLog", Value: "global"}}).Decode(&logs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range logs.Log {
		found = found || strings.Contains(l, `"cmd":"insert"`) && strings.Contains(l, `"db":"prof"`)
	}
	if !found {
		t.Fatalf("with slowms 0 the insert is not in the log:\n%s", strings.Join(logs.Log, "\n"))
	}
	for _, tc := range []struct {
		cmd  bson.D
		code int32
	}{
		{bson.D{{Key: "profile", Value: 1}}, 2},
		{bson.D{{Key: "profile", Value: 2}}, 2},
		{bson.D{{Key: "profile", Value: 0}, {Key: "sampleRate", Value: 1.5}}, 2},
		{bson.D{{Key: "profile", Value: 0}, {Key: "filter", Value: bson.D{{Key: "millis", Value: bson.D{{Key: "$gt", Value: 5}}}}}}, 238},
		{bson.D{{Key: "profile", Value: 0}, {Key: "bogus", Value: 1}}, 40415},
		{bson.D{{Key: "profile", Value: "x"}}, 14},
	} {
		var ce mongo.CommandError
		if err := db.RunCommand(ctx, tc.cmd).Err(); !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("%v: %v, want code %d", tc.cmd, err, tc.code)
		}
	}
}
