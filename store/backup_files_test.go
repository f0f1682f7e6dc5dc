package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// takeBackup checkpoints dbs into dir with their manifest, built on prev ("" for a full
// backup).
func takeBackup(t *testing.T, dbs []*DB, dir, prev string) *Manifest {
	t.Helper()
	digests := make([]DirDigest, len(dbs))
	for i, db := range dbs {
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := db.Checkpoint(ShardDir(dir, i)); err != nil {
			t.Fatal(err)
		}
		d, err := DigestDir(ShardDir(dir, i))
		if err != nil {
			t.Fatal(err)
		}
		digests[i] = d
	}
	m := NewManifest(digests, map[CollID]string{7: "db.a", 8: "db.b"})
	m.ServerVersion = "7.0.16"
	if err := ListFiles(dir, &m, prev); err != nil {
		t.Fatal(err)
	}
	if err := WriteManifest(dir, &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// TestBackupIncrementalRestores: an incremental backup holds only the files its base lacks,
// lists the others with their base, and restores to the same digests as the live stores;
// one whose base lost a reused file is refused, leaving nothing behind.
func TestBackupIncrementalRestores(t *testing.T) {
	f := newBackupFixture(t)
	root := t.TempDir()
	full := filepath.Join(root, "full")
	takeBackup(t, f.dbs, full, "")
	for i, db := range f.dbs {
		b := db.NewBatch()
		for n := 50; n < 80; n++ {
			b.SetDoc(7, uint64(i), idN(n), docN(n, 100))
		}
		mustCommit(t, b)
	}
	incr := filepath.Join(root, "incr")
	m := takeBackup(t, f.dbs, incr, full)
	reused := 0
	for _, s := range m.Shards {
		for _, file := range s.Files {
			_, err := os.Stat(filepath.Join(incr, s.Dir, file.Name))
			switch {
			case file.From == "" && err != nil:
				t.Errorf("%s/%s is listed as the backup's own and missing", s.Dir, file.Name)
			case file.From != "" && (file.From != full || err == nil):
				t.Errorf("%s/%s is reused from %q and present: %v", s.Dir, file.Name, file.From, err)
			case file.From != "":
				reused++
			}
		}
	}
	if reused == 0 {
		t.Fatalf("the incremental backup reuses nothing of %+v", m.Shards)
	}
	to := filepath.Join(t.TempDir(), "restored")
	if _, err := Restore(RestoreOptions{From: incr, To: to, ServerVersion: "7.0.16"}); err != nil {
		t.Fatal(err)
	}
	// A base that lost a file the incremental reuses.
	for _, s := range m.Shards {
		for _, file := range s.Files {
			if file.From != "" {
				if err := os.Remove(filepath.Join(full, s.Dir, file.Name)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	to2 := filepath.Join(t.TempDir(), "restored")
	if _, err := Restore(RestoreOptions{From: incr, To: to2, ServerVersion: "7.0.16"}); !errors.Is(err, ErrBadManifest) {
		t.Fatalf("restore of an incremental backup whose base lost a file: %v, want ErrBadManifest", err)
	}
	if ents, _ := os.ReadDir(to2); len(ents) > 0 {
		t.Errorf("a refused restore left %d entries", len(ents))
	}
}

// TestBackupClusterShardsRestore: a cluster's backup names its shards by cluster-wide id; a
// restore lays each out in its target directory without the applied state of the raft group
// it was taken from, verified, and refuses a restore as a single server's.
func TestBackupClusterShardsRestore(t *testing.T) {
	f := newBackupFixture(t)
	if err := f.dbs[0].ApplyReplicated(5, 2, nil); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "backup")
	ids := []int{3, 9}
	digests := make([]DirDigest, len(f.dbs))
	for i, db := range f.dbs {
		if err := db.Checkpoint(ShardDir(dir, ids[i])); err != nil {
			t.Fatal(err)
		}
		var err error
		if digests[i], err = DigestDir(ShardDir(dir, ids[i])); err != nil {
			t.Fatal(err)
		}
	}
	m := NewShardsManifest(ids, digests, map[CollID]string{7: "db.a", 8: "db.b"})
	m.ServerVersion = "7.0.16"
	mc, err := WriteClusterMetadata(dir, &ClusterMetadata{Revision: 9, KVs: []ClusterKV{{Key: "catalog/rev", Value: nil}}})
	if err != nil {
		t.Fatal(err)
	}
	m.Cluster = &mc
	if err := WriteManifest(dir, &m); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(RestoreOptions{From: dir, To: filepath.Join(t.TempDir(), "d"), ServerVersion: "7.0.16"}); !errors.Is(err, ErrBadManifest) {
		t.Errorf("restore of a cluster's backup as a server's: %v, want ErrBadManifest", err)
	}
	root := t.TempDir()
	targets := map[int]string{3: filepath.Join(root, "a", "replica-3"), 9: filepath.Join(root, "b", "replica-9")}
	if _, err := RestoreClusterShards(ClusterRestoreOptions{From: dir, Targets: targets, ServerVersion: "7.0.16"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadClusterMetadata(dir, &m); err != nil {
		t.Fatal(err)
	}
	db, err := Open(Options{Dir: targets[3], CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer closeT(t, db)
	if index, term, err := db.ReplicaApplied(); err != nil || index != 0 || term != 0 {
		t.Errorf("restored copy's applied state = (%d, %d, %v), want none", index, term, err)
	}
	if docs, _ := db.CollStats(7); docs != 25 {
		t.Errorf("restored shard 3 has %d documents of collection 7, want 25", docs)
	}
}
