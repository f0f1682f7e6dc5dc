package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestBackupClusterIncremental takes a full backup of a cluster of 3 replicated nodes,
// writes (inserts, updates, deletes), takes an incremental backup from it through another
// node, restores the incremental one into a new etcd and 3 new nodes and checks that it
// holds exactly the documents the cluster held when it was taken; the incremental backup
// reuses files of the full one, and a single server's backup is refused as its base.
func TestBackupClusterIncremental(t *testing.T) {
	t.Parallel()
	_, nodes, _ := replicatedNodes(t, 3)
	ctx := context.Background()
	dbn := dbName(t)
	c := nodes[0].client(t)
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: dbn + ".docs"},
		{Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}}).Err(); err != nil {
		t.Fatalf("shardCollection: %v", err)
	}
	coll := c.Database(dbn).Collection("docs")
	insert := func(from, to int) {
		docs := make([]any, 0, to-from)
		for i := from; i < to; i++ {
			docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i}, {Key: "pad", Value: strings.Repeat("p", 200)}})
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	insert(0, 3000)
	tmp := t.TempDir()
	full, incr := filepath.Join(tmp, "full"), filepath.Join(tmp, "incr")
	runTool(t, "backup", "--to", full, "--uri", nodes[1].uri())
	insert(3000, 4000)
	if _, err := coll.UpdateMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 500}}}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: -1}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 3800}}}}); err != nil {
		t.Fatal(err)
	}
	want := collDocs(t, coll)
	out := runTool(t, "backup", "--to", incr, "--incremental-from", full, "--uri", nodes[2].uri())
	t.Logf("%s", out)
	if reused := reusedFiles(t, incr); reused == 0 {
		t.Errorf("the incremental backup reused no file of the full one:\n%s", out)
	}
	restored := restoreClusterBackup(t, incr, 3)
	rc := restored[0].client(t)
	waitReplicated(t, rc, 3, 3, 90*time.Second)
	if got := collDocs(t, rc.Database(dbn).Collection("docs")); !reflect.DeepEqual(got, want) {
		t.Errorf("the restored incremental backup holds %d documents, the cluster held %d", len(got), len(want))
	}

	single := startServer(t)
	sdir := filepath.Join(tmp, "single")
	runTool(t, "backup", "--to", sdir, "--uri", single.uri())
	bad, err := exec.Command(binary, "backup", "--to", filepath.Join(tmp, "bad"), "--incremental-from", sdir, "--uri", nodes[0].uri()).CombinedOutput()
	if err == nil || !strings.Contains(string(bad), "the backup of a single server") {
		t.Errorf("an incremental cluster backup from a single server's: %v\n%s", err, bad)
	}
}

// reusedFiles counts the files the backup in dir lists from other backups.
func reusedFiles(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Shards []struct {
			Files []struct {
				From string `json:"from"`
			} `json:"files"`
		} `json:"shards"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range m.Shards {
		for _, f := range s.Files {
			if f.From != "" {
				n++
			}
		}
	}
	return n
}
