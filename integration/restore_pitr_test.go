package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestRestoreUntil restores a backup to a point in time (cleave restore --until): writes
// of every kind (inserts, updates that set, unset and shorten arrays, replacements,
// deletes, create with options, createIndexes, dropIndexes, collMod, rename, drop,
// shardCollection, a transaction) before and after a marked cluster time; the backup taken
// before them, replayed up to the mark from a later backup's log and from the live server's,
// holds exactly what the server held at the mark, collection by collection (a checksum of
// the documents in _id order, the indexes and the options).
func TestRestoreUntil(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	ctx := context.Background()
	c := srv.client(t)
	db := c.Database("pitr")
	run := func(cmd bson.D) {
		t.Helper()
		if err := db.RunCommand(ctx, cmd).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	run(bson.D{{Key: "create", Value: "gone"}})
	for i := range 20 {
		if _, err := db.Collection("a").InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i},
			{Key: "arr", Value: bson.A{1, 2, 3, 4}}, {Key: "sub", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil {
			t.Fatal(err)
		}
	}
	base := filepath.Join(t.TempDir(), "base")
	backupTo(t, srv, base, "")

	writesBefore(ctx, t, c, db, run)
	var mark struct {
		OperationTime bson.Timestamp `bson:"operationTime"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Decode(&mark); err != nil {
		t.Fatal(err)
	}
	want := dbChecksums(t, db)
	writesAfter(ctx, t, db, run)
	if got := dbChecksums(t, db); fmt.Sprint(got) == fmt.Sprint(want) {
		t.Fatal("the writes after the mark changed nothing: the test would prove nothing")
	}
	later := filepath.Join(t.TempDir(), "later")
	backupTo(t, srv, later, "")
	until := fmt.Sprintf("Timestamp(%d, %d)", mark.OperationTime.T, mark.OperationTime.I)

	for _, logFrom := range []string{later, srv.uri()} {
		dst := &server{t: t, dir: t.TempDir(), args: []string{"--shards", "2"}}
		out, err := exec.Command(binary, "restore", "--from", base, "--dir", filepath.Join(dst.dir, "data"),
			"--until", until, "--log-from", logFrom).CombinedOutput()
		if err != nil {
			t.Fatalf("cleave restore --until %s --log-from %s: %v\n%s", until, logFrom, err, out)
		}
		t.Logf("%s", out)
		if !strings.Contains(string(out), "replayed ") {
			t.Errorf("restore --until printed no replay:\n%s", out)
		}
		dst.start()
		got := dbChecksums(t, dst.client(t).Database("pitr"))
		dst.stop()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("restored to %s from the log of %s:\n got %v\nwant %v", until, logFrom, got, want)
		}
	}
}

// TestRestoreUntilOutsideLog checks the refusals of points the log does not cover: before
// the backup, and after what a later backup's log holds; each names the window and leaves
// nothing behind.
func TestRestoreUntilOutsideLog(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := context.Background()
	coll := srv.client(t).Database("pitr").Collection("a")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "base")
	backupTo(t, srv, base, "")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	later := filepath.Join(t.TempDir(), "later")
	backupTo(t, srv, later, "")
	for _, tc := range []struct{ until, want string }{
		{"Timestamp(1, 0)", "is before the backup's cluster time"},
		{"Timestamp(4000000000, 0)", "is after what the change log of " + later + " holds, the writes from Timestamp("},
		{"2096-01-01T00:00:00Z", "is after what the change log"},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		out, err := exec.Command(binary, "restore", "--from", base, "--dir", dir, "--until", tc.until, "--log-from", later).CombinedOutput()
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("--until %s: %v, want exit code 1\n%s", tc.until, err, out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("--until %s:\n%s\nwant %q", tc.until, out, tc.want)
		}
		if entries, _ := filepath.Glob(filepath.Join(dir, "*")); len(entries) != 0 {
			t.Errorf("--until %s left %v behind", tc.until, entries)
		}
	}
}

// writesBefore makes writes of every kind, to be replayed.
func writesBefore(ctx context.Context, t *testing.T, c *mongo.Client, db *mongo.Database, run func(bson.D)) {
	t.Helper()
	a := db.Collection("a")
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 100}, {Key: "v", Value: int64(7)}}, bson.D{{Key: "_id", Value: 101}, {Key: "v", Value: 1.5}}}))
	must(a.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: "one"}, {Key: "sub.y", Value: 2}}}, {Key: "$unset", Value: bson.D{{Key: "sub.x", Value: ""}}}}))
	must(a.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$push", Value: bson.D{{Key: "arr", Value: bson.D{{Key: "$each", Value: bson.A{}}, {Key: "$slice", Value: 2}}}}}, {Key: "$inc", Value: bson.D{{Key: "v", Value: 10}}}}))
	must(a.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "arr.1", Value: "two"}}}}))
	must(a.UpdateMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 10}}}}, bson.D{{Key: "$mul", Value: bson.D{{Key: "v", Value: 3}}}}))
	must(a.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 4}}, bson.D{{Key: "whole", Value: "new"}}))
	must(a.DeleteOne(ctx, bson.D{{Key: "_id", Value: 5}}))
	must(a.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{6, 7}}}}}))
	must(a.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "v", Value: 1}}, Options: options.Index().SetName("v_1")}))
	must(a.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "sub.y", Value: -1}}, Options: options.Index().SetSparse(true)}))
	run(bson.D{{Key: "create", Value: "valid"}, {Key: "validator", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$type", Value: "int"}}}}}})
	must(db.Collection("valid").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 1}}))
	run(bson.D{{Key: "collMod", Value: "valid"}, {Key: "validationLevel", Value: "moderate"}})
	must(db.Collection("b").InsertOne(ctx, bson.D{{Key: "_id", Value: "x"}}))
	must(c.Database("admin").RunCommand(ctx, bson.D{{Key: "renameCollection", Value: "pitr.b"}, {Key: "to", Value: "pitr.b2"}}).Raw())
	run(bson.D{{Key: "drop", Value: "gone"}})
	must(c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "pitr.sh"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}}).Raw())
	must(db.Collection("sh").InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "p"}}, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "q"}}}))
	must(db.Collection("sh").UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "q"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "w", Value: true}}}}))
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	must(sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		if _, err := a.InsertOne(sc, bson.D{{Key: "_id", Value: 200}, {Key: "txn", Value: true}}); err != nil {
			return nil, err
		}
		return a.UpdateOne(sc, bson.D{{Key: "_id", Value: 8}}, bson.D{{Key: "$set", Value: bson.D{{Key: "txn", Value: true}}}})
	}))
}

// writesAfter makes writes after the mark, which a restore to it must not hold.
func writesAfter(ctx context.Context, t *testing.T, db *mongo.Database, run func(bson.D)) {
	t.Helper()
	a := db.Collection("a")
	for _, err := range []error{
		func() error { _, err := a.InsertOne(ctx, bson.D{{Key: "_id", Value: 300}}); return err }(),
		func() error {
			_, err := a.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "late", Value: 1}}}})
			return err
		}(),
		func() error { _, err := a.DeleteOne(ctx, bson.D{{Key: "_id", Value: 9}}); return err }(),
		func() error { return a.Indexes().DropOne(ctx, "v_1") }(),
		func() error {
			_, err := db.Collection("late").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
			return err
		}(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	run(bson.D{{Key: "drop", Value: "valid"}})
	run(bson.D{{Key: "drop", Value: "b2"}})
}

// dbChecksums returns, for each collection of db, a checksum of its documents in _id order,
// its indexes (name, key, options) and its options.
func dbChecksums(t *testing.T, db *mongo.Database) map[string]string {
	t.Helper()
	ctx := context.Background()
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range specs {
		h := sha256.New()
		var dump strings.Builder
		_, _ = fmt.Fprintf(h, "%s %s|", s.Type, s.Options)
		_, _ = fmt.Fprintf(&dump, "%s %s|", s.Type, s.Options)
		cur, err := db.Collection(s.Name).Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for cur.Next(ctx) {
			h.Write(cur.Current)
			dump.WriteString(cur.Current.String())
			n++
		}
		if err := cur.Err(); err != nil {
			t.Fatal(err)
		}
		idx, err := db.Collection(s.Name).Indexes().ListSpecifications(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range idx {
			line := fmt.Sprintf("|%s %s unique=%v sparse=%v", x.Name, x.KeysDocument, x.Unique != nil && *x.Unique, x.Sparse != nil && *x.Sparse)
			h.Write([]byte(line))
			dump.WriteString(line)
		}
		out[s.Name] = fmt.Sprintf("%d docs %s", n, hex.EncodeToString(h.Sum(nil))[:16])
		if testing.Verbose() {
			t.Logf("%s: %s", s.Name, dump.String())
		}
	}
	return out
}

// TestRestoreUntilHistoryLost restores a backup whose writes after it the server's change
// log no longer holds (--change-retention 1s, trimmed every 200 ms by
// --change-retention-interval): the restore is refused, naming the time the log now starts
// at and the backup's, and leaves nothing behind.
func TestRestoreUntilHistoryLost(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--change-retention", "1s", "--change-retention-interval", "200ms")
	ctx := context.Background()
	c := srv.client(t)
	coll := c.Database("pitr").Collection("a")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "base")
	backupTo(t, srv, base, "")
	from := bson.Timestamp{T: uint32(manifestClusterTime(t, base) >> 32), I: uint32(manifestClusterTime(t, base))}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	// Well within the default interval (a minute), which would fail it.
	waitFor(t, 30*time.Second, "the change log to be trimmed past the backup", func() bool {
		cs, err := c.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetStartAtOperationTime(&from))
		if err == nil {
			_ = cs.Close(ctx)
		}
		var ce mongo.CommandError
		return errors.As(err, &ce) && ce.Code == 286
	})
	var now struct {
		OperationTime bson.Timestamp `bson:"operationTime"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Decode(&now); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	until := fmt.Sprintf("%d:%d", now.OperationTime.T, now.OperationTime.I)
	out, err := exec.Command(binary, "restore", "--from", base, "--dir", dir, "--until", until, "--log-from", srv.uri()).CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("restore past the log's window: %v, want exit code 1\n%s", err, out)
	}
	want := regexp.MustCompile(`the change log does not reach back to the backup's time: the change log of \S+ holds the writes from Timestamp\(\d+, \d+\) on, and a replay from the backup at ` +
		regexp.QuoteMeta(fmt.Sprintf("Timestamp(%d, %d)", from.T, from.I)) + ` needs them from then`)
	if !want.Match(out) {
		t.Errorf("restore past the log's window:\n%s\nwant %s", out, want)
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, "*")); len(entries) != 0 {
		t.Errorf("the refused restore left %v behind", entries)
	}
}
