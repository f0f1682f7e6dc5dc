package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/zeebo/xxh3"
)

// Incremental backups: a backup's manifest lists every sstable and blob file of each shard
// (ManifestFile: name, size, xxh3), which Pebble never modifies once written and names
// uniquely within a store. A backup made with IncrementalFrom keeps only the files its base
// lacks (by name, size and checksum), and lists the others with the backup directory that
// holds them (From: the base's own, or the one the base took it from), so a restore
// gathers each shard from the backups of its chain.

// ManifestFile is one immutable file of a shard's checkpoint.
type ManifestFile struct {
	Name     string `json:"name"`
	Size     int64  `json:"size"`
	Checksum string `json:"checksum"` // xxh3 of the file's bytes, hex
	// From is the backup directory holding the file when it is not this backup's (an
	// incremental backup reuses it from the backup it builds on).
	From string `json:"from,omitempty"`
}

// ListFiles fills in the Files of every shard of the backup in dir (its checkpoints as
// written) and, when prev names the backup it builds on, removes from dir each file prev
// holds too (the same name, size and checksum in the same shard), listing it with the
// backup directory that holds it. m.IncrementalFrom is set to prev.
func ListFiles(dir string, m *Manifest, prev string) error {
	base := map[int]map[string]ManifestFile{}
	if prev != "" {
		pm, err := ReadManifest(prev)
		if err != nil {
			return fmt.Errorf("the backup to build on: %w", err)
		}
		if (pm.Cluster == nil) != (m.Cluster == nil) {
			return fmt.Errorf("%w: %s is the backup of %s, and this is the backup of %s", ErrBadManifest, prev, deployment(pm), deployment(m))
		}
		for _, s := range pm.Shards {
			if s.Keys > 0 && len(s.Files) == 0 {
				return fmt.Errorf("%w: %s lists no files (a backup made before incremental backups): take a full backup first", ErrBadManifest, prev)
			}
			files := map[string]ManifestFile{}
			for _, f := range s.Files {
				if f.From == "" {
					f.From = prev
				}
				files[f.Name] = f
			}
			base[s.ID] = files
		}
		m.IncrementalFrom = prev
	}
	for i := range m.Shards {
		s := &m.Shards[i]
		files, err := shardFiles(filepath.Join(dir, s.Dir))
		if err != nil {
			return err
		}
		for j, f := range files {
			if b, ok := base[s.ID][f.Name]; ok && b.Size == f.Size && b.Checksum == f.Checksum {
				if err := os.Remove(filepath.Join(dir, s.Dir, f.Name)); err != nil {
					return err
				}
				files[j].From = b.From
			}
		}
		s.Files = files
	}
	return nil
}

// shardFiles lists the immutable files of the Pebble directory dir, by name, with their
// sizes and checksums.
func shardFiles(dir string) ([]ManifestFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []ManifestFile
	for _, e := range ents {
		if !e.Type().IsRegular() || !immutable(e.Name()) {
			continue
		}
		size, sum, err := fileChecksum(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, ManifestFile{Name: e.Name(), Size: size, Checksum: hex64(sum)})
	}
	slices.SortFunc(out, func(a, b ManifestFile) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// fileChecksum returns the size and xxh3 of a file's bytes.
func fileChecksum(path string) (int64, uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	h := xxh3.New()
	n, err := io.Copy(h, f)
	return n, h.Sum64(), errors.Join(err, f.Close())
}

// restoreReused links or copies into dst, the restored directory of shard s, the files s
// reuses from other backups, checking each one's size.
func restoreReused(s ManifestShard, dst string) error {
	for _, f := range s.Files {
		if f.From == "" {
			continue
		}
		src := filepath.Join(f.From, s.Dir, f.Name)
		st, err := os.Stat(src)
		if err != nil {
			return fmt.Errorf("%w: shard %d's file %s, from the backup it builds on: %w", ErrBadManifest, s.ID, f.Name, err)
		}
		if st.Size() != f.Size {
			return fmt.Errorf("%w: shard %d's file %s in %s has %d bytes, the manifest says %d", ErrBadManifest, s.ID, f.Name, f.From, st.Size(), f.Size)
		}
		d := filepath.Join(dst, f.Name)
		if os.Link(src, d) == nil {
			continue
		}
		if err := copyFile(src, d); err != nil {
			return err
		}
	}
	return nil
}

// deployment says what m is the backup of.
func deployment(m *Manifest) string {
	if m.Cluster != nil {
		return "a cluster"
	}
	return "a single server"
}
