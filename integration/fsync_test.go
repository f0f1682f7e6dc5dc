package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestFsyncLock: fsync flushes every shard; mongosh's db.fsyncLock() holds every write
// (one with maxTimeMS fails with 50, one without waits) while reads go on, locks nest, and
// the last db.fsyncUnlock() lets the waiting write through; an unlock too many answers
// MongoDB's 20. flushRouterConfig answers flushed; setFeatureCompatibilityVersion "7.0" wants
// confirm: true as MongoDB 7.0's does, and other versions are refused; addShard says how a
// cleave cluster grows instead.
func TestFsyncLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Manager rounds every 50 ms: one waits on the key locks while the server is locked.
	srv := startServer(t, "--shards", "2", "--partition-check-interval", "50ms")
	c := srv.client(t)
	coll := c.Database(dbName(t)).Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	admin := c.Database("admin")
	var fs struct {
		NumFiles  int32 `bson:"numFiles"`
		LockCount int64 `bson:"lockCount"`
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "fsync", Value: 1}}).Decode(&fs); err != nil || fs.NumFiles != 2 {
		t.Fatalf("fsync: %+v, %v; want both shards flushed", fs, err)
	}
	out := srv.mongosh(t, "admin", "--eval", `print(Number(db.fsyncLock().lockCount), Number(db.fsyncLock().lockCount))`)
	if strings.TrimSpace(out) != "1 2" {
		t.Fatalf("two db.fsyncLock(): %q", out)
	}
	err := coll.Database().RunCommand(ctx, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 2}}}},
		{Key: "maxTimeMS", Value: 300}}).Err()
	wantCode(t, err, 50, "operation exceeded time limit")
	done := make(chan error, 1)
	go func() {
		_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}})
		done <- err
	}()
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("a read under the lock: %d, %v", n, err)
	}
	if out := srv.mongosh(t, "admin", "--eval", `print(Number(db.fsyncUnlock().lockCount))`); strings.TrimSpace(out) != "1" {
		t.Fatalf("first db.fsyncUnlock(): %q", out)
	}
	select {
	case err := <-done:
		t.Fatalf("a write finished under the remaining lock: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "fsyncUnlock", Value: 1}}).Decode(&fs); err != nil || fs.LockCount != 0 {
		t.Fatalf("last fsyncUnlock: %+v, %v", fs, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the held write after the last unlock: %v", err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
		t.Fatalf("%d documents (%v), want 2: the held write and not the timed-out one", n, err)
	}
	wantCode(t, admin.RunCommand(ctx, bson.D{{Key: "fsyncUnlock", Value: 1}}).Err(), 20, "fsyncUnlock called when not locked")
	var fl struct {
		Flushed bool `bson:"flushed"`
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "flushRouterConfig", Value: 1}}).Decode(&fl); err != nil || !fl.Flushed {
		t.Fatalf("flushRouterConfig: %+v, %v", fl, err)
	}
	fcv := func(v string, confirm bool) error {
		cmd := bson.D{{Key: "setFeatureCompatibilityVersion", Value: v}}
		if confirm {
			cmd = append(cmd, bson.E{Key: "confirm", Value: true})
		}
		return admin.RunCommand(ctx, cmd).Err()
	}
	wantCode(t, fcv("7.0", false), 7369100, "Please re-run this command with 'confirm: true'")
	if err := fcv("7.0", true); err != nil {
		t.Fatalf("setFeatureCompatibilityVersion 7.0 with confirm: %v", err)
	}
	wantCode(t, fcv("6.0", true), 20, "featureCompatibilityVersion 7.0 only")
	wantCode(t, fcv("5.0", true), 2, "is not a valid value")
	wantCode(t, admin.RunCommand(ctx, bson.D{{Key: "addShard", Value: "rs1/localhost:27018"}}).Err(), 20, "a node started with --etcd joins it")

	// A server stopped while fsync-locked lets the held write finish and exits cleanly (it
	// interrupted the write, and could wait 20 s for a partition manager's round blocked on
	// the key locks, then exit with 1 without closing its storage).
	if err := admin.RunCommand(ctx, bson.D{{Key: "fsync", Value: 1}, {Key: "lock", Value: true}}).Err(); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() {
		_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}})
		held <- err
	}()
	time.Sleep(200 * time.Millisecond)
	srv.stop() // fails the test unless the exit is clean (0)
	if err := <-held; err != nil {
		t.Errorf("the write held by the fsync lock at shutdown: %v, want it applied", err)
	}
}
