package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// RestoreOptions says what Restore restores where.
type RestoreOptions struct {
	// From is the backup directory, To the data directory to lay out (missing or empty).
	From, To string
	// ServerVersion is the running binary's: a backup made by another refuses to restore.
	ServerVersion string
}

// Restore copies the backup in o.From into the data directory o.To, which must be missing or
// empty, and verifies the copy against the backup's manifest (Verify); a server started on
// o.To with as many shards as the manifest names serves the backup's data. It refuses a
// missing or unreadable manifest (ErrNoManifest, ErrBadManifest), a backup of another server
// or store version (ErrBackupVersion) and a target that holds anything (ErrNotEmpty); when
// the copy or its check fails, what it copied is removed.
//
// Sstables and blob files, which Pebble never modifies, are hard-linked where the file
// system allows (the same volume), the other files copied.
func Restore(o RestoreOptions) (*Manifest, error) {
	m, err := readRestorable(o.From, o.ServerVersion)
	if err != nil {
		return nil, err
	}
	if m.Cluster != nil {
		return nil, fmt.Errorf("%w: %s is the backup of a cluster: restore it into a cluster (--etcd and --node)", ErrBadManifest, o.From)
	}
	if err := CheckEmptyDir(o.To); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.To, 0o755); err != nil {
		return nil, err
	}
	err = restoreShards(o.From, o.To, m)
	if err == nil {
		err = Verify(o.To, m)
	}
	if err != nil {
		removeContents(o.To)
		return nil, err
	}
	return m, nil
}

// readRestorable reads the manifest of the backup in dir and checks that this binary, of
// version serverVersion, can restore it.
func readRestorable(dir, serverVersion string) (*Manifest, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	if m.ServerVersion != serverVersion {
		return nil, fmt.Errorf("%w: the backup is of server version %s, this binary is %s", ErrBackupVersion, m.ServerVersion, serverVersion)
	}
	if m.StoreFormat > FormatVersion {
		return nil, fmt.Errorf("%w: the backup's store format is %d, this binary knows up to %d", ErrBackupVersion, m.StoreFormat, FormatVersion)
	}
	return m, nil
}

// restoreShards copies every shard directory m names from from to to.
func restoreShards(from, to string, m *Manifest) error {
	for _, s := range m.Shards {
		if err := copyDir(filepath.Join(from, s.Dir), filepath.Join(to, s.Dir)); err != nil {
			return fmt.Errorf("shard %d: %w", s.ID, err)
		}
		if err := restoreReused(s, filepath.Join(to, s.Dir)); err != nil {
			return err
		}
	}
	return syncDir(to)
}

// copyDir copies the regular files of src (a Pebble directory: no subdirectories) into dst,
// which it creates, and syncs them.
func copyDir(src, dst string) error {
	ents, err := os.ReadDir(src)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s is missing", ErrBadManifest, src)
	}
	if err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		s, d := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if immutable(e.Name()) && os.Link(s, d) == nil {
			continue
		}
		if err := copyFile(s, d); err != nil {
			return err
		}
	}
	return syncDir(dst)
}

// immutable reports whether a Pebble file is never written once made: sstables and blob
// files (a WAL may be recycled, a MANIFEST appended to).
func immutable(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".blob")
}

// copyFile copies src to a new file dst and syncs it.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	return errors.Join(err, out.Close())
}

// removeContents removes everything in dir, leaving dir itself.
func removeContents(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
