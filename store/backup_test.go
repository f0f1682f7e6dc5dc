package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// backupFixture is two shards on disk with documents in two collections, the second
// shard's memtable not flushed (its documents are only in the WAL a checkpoint copies),
// checkpointed into a backup directory with its manifest.
type backupFixture struct {
	dbs    []*DB
	backup string
	m      Manifest
}

// newBackupFixture writes the shards and takes the backup.
func newBackupFixture(t *testing.T) *backupFixture {
	t.Helper()
	root := t.TempDir()
	f := &backupFixture{backup: filepath.Join(root, "backup")}
	for i := range 2 {
		db, err := Open(Options{Dir: ShardDir(filepath.Join(root, "data"), i), CacheSize: 8 << 20, MemTableSize: 4 << 20})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		f.dbs = append(f.dbs, db)
		b := db.NewBatch()
		for n := range 50 {
			coll := CollID(7 + n%2)
			b.SetDoc(coll, uint64(i), idN(n), docN(n+i, 100))
			b.AddStats(coll, uint64(i), 1, 100)
		}
		mustCommit(t, b)
	}
	if err := f.dbs[0].Flush(); err != nil {
		t.Fatal(err)
	}
	digests := make([]DirDigest, len(f.dbs))
	for i, db := range f.dbs {
		if err := db.Checkpoint(ShardDir(f.backup, i)); err != nil {
			t.Fatal(err)
		}
		d, err := DigestDir(ShardDir(f.backup, i))
		if err != nil {
			t.Fatal(err)
		}
		digests[i] = d
	}
	f.m = NewManifest(digests, map[CollID]string{7: "db.a", 8: "db.b", 9: "db.empty"})
	f.m.ServerVersion = "7.0.16"
	if err := WriteManifest(f.backup, &f.m); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestBackupRestoreVerifies: a restore lays out every shard, its copy digests as the
// manifest says, and a store opened on it holds the documents.
func TestBackupRestoreVerifies(t *testing.T) {
	f := newBackupFixture(t)
	if got := f.m.Collections; len(got) != 3 || got[0].NS != "db.a" || got[0].Count != 50 || got[1].Count != 50 || got[2].Count != 0 {
		t.Fatalf("collections = %+v", got)
	}
	to := filepath.Join(t.TempDir(), "restored")
	m, err := Restore(RestoreOptions{From: f.backup, To: to, ServerVersion: "7.0.16"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != 2 {
		t.Fatalf("shards = %+v", m.Shards)
	}
	for i := range 2 {
		db, err := Open(Options{Dir: ShardDir(to, i), CacheSize: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if docs, _ := db.CollStats(7); docs != 25 {
			t.Errorf("shard %d: collection 7 has %d documents, want 25", i, docs)
		}
		closeT(t, db)
	}
}

// TestBackupRestoreRefuses: a restore refuses a missing, unreadable or tampered manifest,
// another version's backup and a target that holds anything, and leaves no copy behind.
func TestBackupRestoreRefuses(t *testing.T) {
	f := newBackupFixture(t)
	write := func(t *testing.T, edit func(m *Manifest)) string {
		dir := t.TempDir()
		for _, s := range f.m.Shards {
			if err := copyDir(filepath.Join(f.backup, s.Dir), filepath.Join(dir, s.Dir)); err != nil {
				t.Fatal(err)
			}
		}
		m := f.m
		m.Collections = append([]ManifestCollection(nil), f.m.Collections...)
		edit(&m)
		if err := WriteManifest(dir, &m); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	cases := []struct {
		name string
		from func(t *testing.T) string
		to   func(t *testing.T) string
		want error
	}{
		{"NoManifest", func(t *testing.T) string { return t.TempDir() }, nil, ErrNoManifest},
		{"CorruptManifest", func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte("{\"format\": 1, "), 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}, nil, ErrBadManifest},
		{"OtherServerVersion", func(t *testing.T) string { return write(t, func(m *Manifest) { m.ServerVersion = "6.0.0" }) }, nil, ErrBackupVersion},
		{"OtherManifestFormat", func(t *testing.T) string { return write(t, func(m *Manifest) { m.Format = 2 }) }, nil, ErrBackupVersion},
		{"ChecksumMismatch", func(t *testing.T) string {
			return write(t, func(m *Manifest) { m.Collections[1].Checksum = "0000000000000000" })
		}, nil, ErrBadManifest},
		{"CountMismatch", func(t *testing.T) string { return write(t, func(m *Manifest) { m.Shards[1].Keys++ }) }, nil, ErrBadManifest},
		{"TargetNotEmpty", func(*testing.T) string { return f.backup }, func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}, ErrNotEmpty},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			to := filepath.Join(t.TempDir(), "restored")
			if tc.to != nil {
				to = tc.to(t)
			}
			_, err := Restore(RestoreOptions{From: tc.from(t), To: to, ServerVersion: "7.0.16"})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Restore: %v, want %v", err, tc.want)
			}
			if tc.to == nil {
				if ents, _ := os.ReadDir(to); len(ents) > 0 {
					t.Errorf("a refused restore left %d entries in %s", len(ents), to)
				}
			}
		})
	}
}
