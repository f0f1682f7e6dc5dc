package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// loggedWrite is one acknowledged write of the client-side log: what it did and the
// operationTime its reply carried.
type loggedWrite struct {
	op     string // "insert", "set", "delete"
	coll   string // "docs" or "counters"
	id     string
	n      int // the counter's new value (set)
	opTime uint64
}

// TestBackupDuringWrites runs `cleave backup` while 8 clients insert, update and delete,
// restores the backup with `cleave restore` into a new data directory, starts a server on
// it and checks it against the clients' log of acknowledged writes: it holds exactly the
// writes whose operationTime is before the backup's cluster time, and validate finds every
// collection clean.
func TestBackupDuringWrites(t *testing.T) {
	t.Parallel()
	for _, shards := range []string{"1", "3"} {
		t.Run("shards="+shards, func(t *testing.T) {
			t.Parallel()
			backupDuringWrites(t, shards)
		})
	}
}

// backupDuringWrites is one round of TestBackupDuringWrites on a server with shards shards.
func backupDuringWrites(t *testing.T, shards string) {
	src := startServer(t, "--shards", shards)
	ctx := context.Background()
	const writers = 8
	c := src.client(t, options.Client().SetMaxPoolSize(writers+2))
	db := c.Database("backup")
	// A sharded collection spreads the documents over every shard.
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "backup.docs"},
		{Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}}).Err(); err != nil {
		t.Fatalf("shardCollection: %v", err)
	}
	var (
		mu  sync.Mutex
		log []loggedWrite
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			if err := backupWriter(ctx, c, db, w, stop, func(lw loggedWrite) {
				mu.Lock()
				log = append(log, lw)
				mu.Unlock()
			}); err != nil {
				errs <- err
			}
		})
	}
	time.Sleep(time.Second)
	dir := filepath.Join(t.TempDir(), "backup")
	out, err := exec.Command(binary, "backup", "--to", dir, "--uri", src.uri()).CombinedOutput()
	if err != nil {
		t.Fatalf("cleave backup: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	time.Sleep(500 * time.Millisecond) // writes after the backup, which it must not hold
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("writer: %v", err)
	}
	cut := manifestClusterTime(t, dir)

	dst := &server{t: t, dir: t.TempDir(), args: []string{"--shards", shards}}
	out, err = exec.Command(binary, "restore", "--from", dir, "--dir", filepath.Join(dst.dir, "data")).CombinedOutput()
	if err != nil {
		t.Fatalf("cleave restore: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	dst.start()
	t.Cleanup(dst.stop)
	rc := dst.client(t)
	before, after := checkRestored(t, rc.Database("backup"), log, cut)
	if before == 0 || after == 0 {
		t.Errorf("%d writes before the backup's cluster time and %d after: the backup did not fall mid-load", before, after)
	}
	for _, coll := range []string{"docs", "counters"} {
		var res bson.M
		if err := rc.Database("backup").RunCommand(ctx, bson.D{{Key: "validate", Value: coll}}).Decode(&res); err != nil {
			t.Fatalf("validate %s: %v", coll, err)
		}
		if res["valid"] != true {
			t.Errorf("validate %s: %v", coll, res)
		}
	}
}

// backupWriter is one client: it inserts documents, sets its counter to the loop's index and
// deletes every third document it inserted, logging each acknowledged write with its
// operationTime (the session's, advanced by each reply), until stop is closed.
func backupWriter(ctx context.Context, c *mongo.Client, db *mongo.Database, w int, stop <-chan struct{}, logw func(loggedWrite)) error {
	sess, err := c.StartSession()
	if err != nil {
		return err
	}
	defer sess.EndSession(ctx)
	sctx := mongo.NewSessionContext(ctx, sess)
	counter := fmt.Sprintf("c%d", w)
	opTime := func() uint64 { ts := sess.OperationTime(); return uint64(ts.T)<<32 | uint64(ts.I) }
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		id := fmt.Sprintf("w%d-%d", w, i)
		if _, err := db.Collection("docs").InsertOne(sctx, bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: strings.Repeat("x", 200)}}); err != nil {
			return fmt.Errorf("insert %s: %w", id, err)
		}
		logw(loggedWrite{op: "insert", coll: "docs", id: id, opTime: opTime()})
		if _, err := db.Collection("counters").UpdateOne(sctx, bson.D{{Key: "_id", Value: counter}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: i}}}}, options.UpdateOne().SetUpsert(true)); err != nil {
			return fmt.Errorf("update %s: %w", counter, err)
		}
		logw(loggedWrite{op: "set", coll: "counters", id: counter, n: i, opTime: opTime()})
		if i%3 == 2 {
			old := fmt.Sprintf("w%d-%d", w, i-2)
			if _, err := db.Collection("docs").DeleteOne(sctx, bson.D{{Key: "_id", Value: old}}); err != nil {
				return fmt.Errorf("delete %s: %w", old, err)
			}
			logw(loggedWrite{op: "delete", coll: "docs", id: old, opTime: opTime()})
		}
	}
}

// manifestClusterTime reads the backup's cluster time from its manifest.
func manifestClusterTime(t *testing.T, dir string) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		ClusterTime uint64 `json:"clusterTime"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.ClusterTime == 0 {
		t.Fatalf("manifest: %v %s", err, b)
	}
	return m.ClusterTime
}

// checkRestored compares the restored database with the state the log's writes before cut
// make, and returns how many writes were before and after cut.
func checkRestored(t *testing.T, db *mongo.Database, log []loggedWrite, cut uint64) (before, after int) {
	t.Helper()
	wantDocs := map[string]bool{}
	wantCounters := map[string]int{}
	for _, w := range log { // each writer's writes are in order, and no two writers share a key
		switch {
		case w.opTime == cut:
			t.Fatalf("a write has the backup's cluster time %d: %+v", cut, w)
		case w.opTime > cut:
			after++
			continue
		}
		before++
		switch w.op {
		case "insert":
			wantDocs[w.id] = true
		case "delete":
			delete(wantDocs, w.id)
		case "set":
			wantCounters[w.id] = w.n
		}
	}
	gotDocs := map[string]bool{}
	for _, d := range findAll(t, db.Collection("docs")) {
		gotDocs[d["_id"].(string)] = true
	}
	for id := range wantDocs {
		if !gotDocs[id] {
			t.Errorf("document %s, inserted before the backup's cluster time, is missing", id)
		}
	}
	for id := range gotDocs {
		if !wantDocs[id] {
			t.Errorf("document %s is restored, but was not there at the backup's cluster time", id)
		}
	}
	gotCounters := map[string]int{}
	for _, d := range findAll(t, db.Collection("counters")) {
		n, _ := d["n"].(int64)
		if n32, ok := d["n"].(int32); ok {
			n = int64(n32)
		}
		gotCounters[d["_id"].(string)] = int(n)
	}
	if fmt.Sprint(gotCounters) != fmt.Sprint(wantCounters) {
		t.Errorf("counters = %v, want %v (their values at the backup's cluster time)", gotCounters, wantCounters)
	}
	return before, after
}

// findAll returns every document of coll.
func findAll(t *testing.T, coll *mongo.Collection) []bson.M {
	t.Helper()
	ctx := context.Background()
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.M
	if err := cur.All(ctx, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBackupRefusals: a backup refuses a directory that holds something, and a restore a
// directory without a backup (store's tests cover the other refusals).
func TestBackupRefusals(t *testing.T) {
	t.Parallel()
	srv := sharedServer(t)
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"BackupNotEmpty", []string{"backup", "--to", full, "--uri", srv.uri()}, "is not empty (IllegalOperation)"},
		{"RestoreNoManifest", []string{"restore", "--from", t.TempDir(), "--dir", filepath.Join(t.TempDir(), "d")}, "not a backup"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(binary, tc.args...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("cleave %v: %v\n%s\nwant an error with %q", tc.args, err, out, tc.want)
			}
		})
	}
}

// TestBackupClusterSingleCopyRefused checks what a cluster of single-copy shards (--replicas
// 1) answers to a backup: IllegalOperation, saying so, and nothing written.
func TestBackupClusterSingleCopyRefused(t *testing.T) {
	t.Parallel()
	_, nodes := startClusterNodes(t, 2)
	dir := filepath.Join(t.TempDir(), "backup")
	out, err := exec.Command(binary, "backup", "--to", dir, "--uri", nodes[0].uri()).CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 ||
		!strings.Contains(string(out), "not supported in a cluster of single-copy shards (--replicas 1) yet (IllegalOperation)") {
		t.Fatalf("cleave backup of a --replicas 1 cluster: %v\n%s\nwant exit code 1 and IllegalOperation", err, out)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the refused backup left %d entries in %s", len(entries), dir)
	}
}
