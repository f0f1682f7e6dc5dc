package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestBackupIncremental takes a full backup of a server with 2 shards, writes more (inserts,
// updates, deletes), takes an incremental backup from the full one, writes again and takes a
// second incremental from the first: each incremental holds only the sstables the backup
// it builds on lacks (the others are listed with the backup holding them), and a restore
// of each incremental holds exactly the documents the server held when it was taken.
func TestBackupIncremental(t *testing.T) {
	t.Parallel()
	src := startServer(t, "--shards", "2")
	ctx := context.Background()
	coll := src.client(t).Database("incr").Collection("docs")
	want := map[string]int{}
	insert := func(from, to, v int) {
		t.Helper()
		var docs []any
		for i := from; i < to; i++ {
			id := fmt.Sprintf("d%06d", i)
			docs = append(docs, bson.D{{Key: "_id", Value: id}, {Key: "v", Value: v}, {Key: "pad", Value: strings.Repeat("p", 300)}})
			want[id] = v
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	insert(0, 5000, 1)
	root := t.TempDir()
	full := filepath.Join(root, "full")
	backupTo(t, src, full, "")

	insert(5000, 6000, 2)
	if _, err := coll.UpdateMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: "d000100"}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 3}}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		want[fmt.Sprintf("d%06d", i)] = 3
	}
	if _, err := coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: "d004900"}, {Key: "$lt", Value: "d005000"}}}}); err != nil {
		t.Fatal(err)
	}
	for i := 4900; i < 5000; i++ {
		delete(want, fmt.Sprintf("d%06d", i))
	}
	incr1 := filepath.Join(root, "incr1")
	out := backupTo(t, src, incr1, full)
	if !strings.Contains(out, "incremental from "+full) {
		t.Errorf("cleave backup --incremental-from says nothing of its base:\n%s", out)
	}
	checkReused(t, incr1, true, full)
	afterIncr1 := maps(want)

	insert(6000, 6500, 4)
	incr2 := filepath.Join(root, "incr2")
	backupTo(t, src, incr2, incr1)
	// Pebble may have compacted the tables incr1 holds by now: no reuse is required.
	checkReused(t, incr2, false, full, incr1)

	checkRestoredDocs(t, incr1, "2", afterIncr1)
	checkRestoredDocs(t, incr2, "2", want)
}

// maps copies m.
func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// backupTo runs `cleave backup --to dir` (with --incremental-from prev unless "") against
// srv and returns its output.
func backupTo(t *testing.T, srv *server, dir, prev string) string {
	t.Helper()
	args := []string{"backup", "--to", dir, "--uri", srv.uri()}
	if prev != "" {
		args = append(args, "--incremental-from", prev)
	}
	out, err := exec.Command(binary, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("cleave %v: %v\n%s", args, err, out)
	}
	t.Logf("%s", out)
	return string(out)
}

// checkReused checks the files the incremental backup in dir lists: those reused from the
// backups of bases (each reused file absent from dir and present in the backup named; some
// when mustReuse), and every other one in dir.
func checkReused(t *testing.T, dir string, mustReuse bool, bases ...string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		IncrementalFrom string `json:"incrementalFrom"`
		Shards          []struct {
			Dir   string `json:"dir"`
			Files []struct {
				Name string `json:"name"`
				From string `json:"from"`
			} `json:"files"`
		} `json:"shards"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.IncrementalFrom != bases[len(bases)-1] {
		t.Errorf("incrementalFrom = %q, want %q", m.IncrementalFrom, bases[len(bases)-1])
	}
	reused, kept := 0, 0
	for _, s := range m.Shards {
		for _, f := range s.Files {
			_, here := os.Stat(filepath.Join(dir, s.Dir, f.Name))
			if f.From == "" {
				kept++
				if here != nil {
					t.Errorf("%s/%s is listed as this backup's but missing", s.Dir, f.Name)
				}
				continue
			}
			reused++
			if here == nil {
				t.Errorf("%s/%s is reused from %s but copied too", s.Dir, f.Name, f.From)
			}
			if !contains(bases, f.From) {
				t.Errorf("%s/%s is reused from %s, not one of %v", s.Dir, f.Name, f.From, bases)
			}
			if _, err := os.Stat(filepath.Join(f.From, s.Dir, f.Name)); err != nil {
				t.Errorf("%s/%s is reused from %s, which lacks it: %v", s.Dir, f.Name, f.From, err)
			}
		}
	}
	if (mustReuse && reused == 0) || kept == 0 {
		t.Errorf("%s reuses %d sstables and holds %d: want some of each (the data before and after its base)", dir, reused, kept)
	}
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkRestoredDocs restores the backup in dir (`cleave restore`), starts a server on it
// with shards shards and checks that incr.docs holds exactly want (_id → v).
func checkRestoredDocs(t *testing.T, dir, shards string, want map[string]int) {
	t.Helper()
	dst := &server{t: t, dir: t.TempDir(), args: []string{"--shards", shards}}
	out, err := exec.Command(binary, "restore", "--from", dir, "--dir", filepath.Join(dst.dir, "data")).CombinedOutput()
	if err != nil {
		t.Fatalf("cleave restore --from %s: %v\n%s", dir, err, out)
	}
	dst.start()
	defer dst.stop()
	got := map[string]int{}
	var docs []bson.M
	cur, err := dst.client(t).Database("incr").Collection("docs").Find(context.Background(), bson.D{})
	if err == nil {
		err = cur.All(context.Background(), &docs)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		got[d["_id"].(string)] = int(d["v"].(int32))
	}
	if len(got) != len(want) {
		t.Errorf("restore of %s: %d documents, want %d", dir, len(got), len(want))
	}
	for id, v := range want {
		if got[id] != v {
			t.Errorf("restore of %s: %s has v = %d, want %d", dir, id, got[id], v)
			return
		}
	}
}
