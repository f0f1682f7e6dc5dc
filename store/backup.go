package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/zeebo/xxh3"
)

// A backup is a directory holding one Pebble checkpoint per shard (shard-<n>/, DB.Checkpoint,
// all taken while no write commits) and a manifest (manifest.json) that names them and
// digests what they hold: per shard, every key and value but the ones each copy writes for
// itself (the format version, a replica's applied state); per collection, its documents'
// count and a digest of their keys and values over every shard. Restore copies a backup
// into an empty data directory and checks the copy against the manifest.
//
//	m := store.NewManifest(digests, names)       // digests: DigestDir of each checkpoint
//	err := store.WriteManifest(dir, &m)
//	m2, err := store.Restore(store.RestoreOptions{From: dir, To: data, ServerVersion: v})

// ManifestFormat is the version of the manifest's layout this binary writes and reads.
const ManifestFormat = 1

// ManifestName is the manifest's file name in a backup directory.
const ManifestName = "manifest.json"

// Backup errors, wrapped with the details; compare them with errors.Is.
var (
	// ErrNoManifest reports a directory without a backup manifest.
	ErrNoManifest = errors.New("store: no backup manifest")
	// ErrBadManifest reports a manifest that cannot be read, or data that does not match it.
	ErrBadManifest = errors.New("store: backup does not match its manifest")
	// ErrBackupVersion reports a backup made by another version of the server or store.
	ErrBackupVersion = errors.New("store: backup made by another version")
	// ErrNotEmpty reports a target directory that already holds something.
	ErrNotEmpty = errors.New("store: directory is not empty")
)

// Manifest describes a backup (manifest.json).
type Manifest struct {
	Format        int    `json:"format"`
	ServerVersion string `json:"serverVersion"`
	StoreFormat   uint32 `json:"storeFormat"`
	// ClusterTime is the cluster time the backup holds every write up to, (seconds << 32) |
	// counter; ClusterTimeString is it as MongoDB prints a Timestamp.
	ClusterTime       uint64    `json:"clusterTime"`
	ClusterTimeString string    `json:"clusterTimeString"`
	Created           time.Time `json:"created"`
	// WritePauseMicros is how long writes waited for the checkpoints.
	WritePauseMicros int64                `json:"writePauseMicros"`
	Shards           []ManifestShard      `json:"shards"`
	Collections      []ManifestCollection `json:"collections"`
	// IncrementalFrom is the backup directory this one builds on (an incremental backup):
	// its shards' Files name the backups holding the files it reuses.
	IncrementalFrom string `json:"incrementalFrom,omitempty"`
	// Cluster describes the backup of a cluster (its shards are then named by their
	// cluster-wide ids); nil for a single server's.
	Cluster *ManifestCluster `json:"cluster,omitempty"`
}

// ManifestCluster is what a cluster's backup adds to its manifest: the nodes whose copies
// it holds and the cluster's metadata (the etcd keys of its catalog and placement), in a
// file of its own.
type ManifestCluster struct {
	// Nodes are the cluster's nodes when it was backed up.
	Nodes []string `json:"nodes"`
	// Replicas is how many copies of each shard the cluster kept (--replicas).
	Replicas int `json:"replicas"`
	// MetadataFile holds the metadata (ClusterMetadata, JSON), relative to the backup;
	// MetadataKeys is its number of keys and MetadataChecksum the xxh3 of the file, hex.
	MetadataFile     string `json:"metadataFile"`
	MetadataKeys     int    `json:"metadataKeys"`
	MetadataChecksum string `json:"metadataChecksum"`
}

// ManifestShard is one shard's checkpoint in a backup.
type ManifestShard struct {
	ID  int    `json:"id"`
	Dir string `json:"dir"` // relative to the backup
	// Node is the node whose copy the checkpoint is (a cluster's backup only).
	Node     string `json:"node,omitempty"`
	Keys     int64  `json:"keys"`
	Checksum string `json:"checksum"` // xxh3 of every key and value, hex
	// Files are the checkpoint's sstables and blob files (backup_files.go).
	Files []ManifestFile `json:"files,omitempty"`
}

// ManifestCollection is one collection's documents in a backup, over every shard.
type ManifestCollection struct {
	NS       string `json:"ns"`
	ID       CollID `json:"id"`
	Count    int64  `json:"count"`
	Checksum string `json:"checksum"` // CombineDigests of the shards' CollDigests, hex
}

// CollDigest is a collection's documents in one shard: how many, and the xxh3 of their keys
// and values in key order.
type CollDigest struct {
	Count int64
	Sum   uint64
}

// DirDigest is what DigestDir finds in one shard's database.
type DirDigest struct {
	Keys  int64
	Sum   uint64
	Colls map[CollID]CollDigest
}

// ShardDir is the directory of shard i in a data or backup directory.
func ShardDir(dir string, i int) string { return filepath.Join(dir, "shard-"+strconv.Itoa(i)) }

// DigestDir opens the Pebble database in dir read only (a checkpoint's WAL is replayed in
// memory) and digests it.
func DigestDir(dir string) (DirDigest, error) {
	pdb, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Merger: statsMerger, Logger: quietLogger{}})
	if err != nil {
		return DirDigest{}, fmt.Errorf("store: open %s: %w", dir, err)
	}
	d, err := digestColls(pdb)
	if cerr := pdb.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("store: close %s: %w", dir, cerr)
	}
	return d, err
}

// digestColls digests every key of r, as digest does, and each collection's documents.
func digestColls(r pebble.Reader) (DirDigest, error) {
	out := DirDigest{Colls: map[CollID]CollDigest{}}
	all := xxh3.New()
	coll := xxh3.New()
	cur, inColl := CollID(0), false
	var cd CollDigest
	endColl := func() {
		if inColl {
			cd.Sum = coll.Sum64()
			out.Colls[cur] = cd
		}
	}
	err := eachStateKV(r, func(k, v []byte) {
		writeKV(all, k, v)
		out.Keys++
		if c, _, _, isDoc := DocKeyParts(k); isDoc {
			if !inColl || c != cur {
				endColl()
				cur, inColl, cd = c, true, CollDigest{}
				coll.Reset()
			}
			writeKV(coll, k, v)
			cd.Count++
		}
	})
	endColl()
	out.Sum = all.Sum64()
	return out, err
}

// writeKV hashes a key and its value, each after its length.
func writeKV(h *xxh3.Hasher, k, v []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(k)))
	_, _ = h.Write(n[:])
	_, _ = h.Write(k)
	binary.BigEndian.PutUint64(n[:], uint64(len(v)))
	_, _ = h.Write(n[:])
	_, _ = h.Write(v)
}

// CombineDigests is a collection's digest over its shards' (in shard order; a shard without
// its documents counts as empty).
func CombineDigests(ds []CollDigest) CollDigest {
	h := xxh3.New()
	var out CollDigest
	var b [16]byte
	for _, d := range ds {
		binary.BigEndian.PutUint64(b[:], uint64(d.Count))
		binary.BigEndian.PutUint64(b[8:], d.Sum)
		_, _ = h.Write(b[:])
		out.Count += d.Count
	}
	out.Sum = h.Sum64()
	return out
}

// NewManifest returns the manifest of a backup whose shards digest as digests (shard i's
// checkpoint in shard-<i>/), naming its collections by names (id → "db.coll"). Documents of
// a collection names lacks (a dropped collection's, which a start removes) are in the shards'
// digests only. The caller fills in the version and the times.
func NewManifest(digests []DirDigest, names map[CollID]string) Manifest {
	ids := make([]int, len(digests))
	for i := range ids {
		ids[i] = i
	}
	return NewShardsManifest(ids, digests, names)
}

// NewShardsManifest is NewManifest for shards named by ids (a cluster's, in increasing
// order): shard ids[i] digests as digests[i], its checkpoint in shard-<ids[i]>/.
func NewShardsManifest(ids []int, digests []DirDigest, names map[CollID]string) Manifest {
	m := Manifest{Format: ManifestFormat, StoreFormat: FormatVersion, Created: time.Now().UTC()}
	for i, d := range digests {
		m.Shards = append(m.Shards, ManifestShard{ID: ids[i], Dir: "shard-" + strconv.Itoa(ids[i]), Keys: d.Keys, Checksum: hex64(d.Sum)})
	}
	for id, ns := range names {
		c := collDigest(digests, id)
		m.Collections = append(m.Collections, ManifestCollection{NS: ns, ID: id, Count: c.Count, Checksum: hex64(c.Sum)})
	}
	slices.SortFunc(m.Collections, func(a, b ManifestCollection) int { return strings.Compare(a.NS, b.NS) })
	return m
}

// collDigest is collection id's digest over digests.
func collDigest(digests []DirDigest, id CollID) CollDigest {
	ds := make([]CollDigest, len(digests))
	for i, d := range digests {
		ds[i] = d.Colls[id]
	}
	return CombineDigests(ds)
}

// hex64 formats a digest as 16 hex digits.
func hex64(v uint64) string { return fmt.Sprintf("%016x", v) }

// WriteManifest writes m into backup directory dir, durably: through a temporary file, a
// sync and a rename, so that a backup with a manifest is a complete one.
func WriteManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ManifestName+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, ManifestName)); err != nil {
		return err
	}
	return syncDir(dir)
}

// ReadManifest reads the manifest of backup directory dir and checks its shape: the format,
// and that it names its shards' directories in order.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoManifest, dir)
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadManifest, filepath.Join(dir, ManifestName), err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("%w: manifest format %d, this binary reads %d", ErrBackupVersion, m.Format, ManifestFormat)
	}
	if len(m.Shards) == 0 {
		return nil, fmt.Errorf("%w: %s names no shards", ErrBadManifest, filepath.Join(dir, ManifestName))
	}
	for i, s := range m.Shards {
		// A server's shards are 0..n-1; a cluster's are its cluster-wide ids, in order.
		inOrder := s.ID == i || (m.Cluster != nil && (i == 0 || s.ID > m.Shards[i-1].ID))
		if !inOrder || s.Dir != "shard-"+strconv.Itoa(s.ID) {
			return nil, fmt.Errorf("%w: shard %d of the manifest is %d in %q", ErrBadManifest, i, s.ID, s.Dir)
		}
	}
	return &m, nil
}

// Verify checks the shards under dir (shard-<n>/, a backup or a restored data directory)
// against m: every shard's keys and checksum, and every collection's count and checksum.
func Verify(dir string, m *Manifest) error {
	digests := make([]DirDigest, len(m.Shards))
	for i, s := range m.Shards {
		d, err := VerifyShard(filepath.Join(dir, s.Dir), s)
		if err != nil {
			return err
		}
		digests[i] = d
	}
	return VerifyCollections(m, digests)
}

// VerifyShard checks the Pebble database in dir against shard s of a manifest (its keys and
// checksum) and returns its digest.
func VerifyShard(dir string, s ManifestShard) (DirDigest, error) {
	d, err := DigestDir(dir)
	if err != nil {
		return DirDigest{}, fmt.Errorf("%w: shard %d: %w", ErrBadManifest, s.ID, err)
	}
	if d.Keys != s.Keys || hex64(d.Sum) != s.Checksum {
		return DirDigest{}, fmt.Errorf("%w: shard %d holds %d keys with checksum %s, the manifest says %d with %s",
			ErrBadManifest, s.ID, d.Keys, hex64(d.Sum), s.Keys, s.Checksum)
	}
	return d, nil
}

// VerifyCollections checks every collection of m (its count and checksum) against the
// digests of m's shards, in m's order.
func VerifyCollections(m *Manifest, digests []DirDigest) error {
	for _, c := range m.Collections {
		d := collDigest(digests, c.ID)
		if d.Count != c.Count || hex64(d.Sum) != c.Checksum {
			return fmt.Errorf("%w: collection %s holds %d documents with checksum %s, the manifest says %d with %s",
				ErrBadManifest, c.NS, d.Count, hex64(d.Sum), c.Count, c.Checksum)
		}
	}
	return nil
}

// CheckEmptyDir fails with ErrNotEmpty when dir exists and holds anything; a missing dir is
// fine.
func CheckEmptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%w: %s", ErrNotEmpty, dir)
	}
	return nil
}

// syncDir syncs a directory, so that the files created or renamed in it survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// quietLogger drops Pebble's messages: a read-only open of a checkpoint has nothing to say
// that its error does not.
type quietLogger struct{}

// Infof implements pebble.Logger.
func (quietLogger) Infof(string, ...any) {}

// Errorf implements pebble.Logger.
func (quietLogger) Errorf(string, ...any) {}

// Fatalf implements pebble.Logger.
func (quietLogger) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
