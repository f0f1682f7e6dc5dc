package store

import "github.com/cockroachdb/pebble/v2/vfs"

// noSyncFS is a file system whose files never reach the disk on purpose: Sync and its
// variants return at once. The temporary store uses it, since nothing in it must survive a
// crash (it is wiped at the next start), so spills never wait for an fsync, not even for
// Pebble's flushes and MANIFEST edits.
type noSyncFS struct{ vfs.FS }

// Create implements vfs.FS.
func (fs noSyncFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return noSync(fs.FS.Create(name, category))
}

// Open implements vfs.FS.
func (fs noSyncFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return noSync(fs.FS.Open(name, opts...))
}

// OpenReadWrite implements vfs.FS.
func (fs noSyncFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return noSync(fs.FS.OpenReadWrite(name, category, opts...))
}

// OpenDir implements vfs.FS.
func (fs noSyncFS) OpenDir(name string) (vfs.File, error) {
	return noSync(fs.FS.OpenDir(name))
}

// ReuseForWrite implements vfs.FS.
func (fs noSyncFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	return noSync(fs.FS.ReuseForWrite(oldname, newname, category))
}

// Unwrap implements vfs.FS.
func (fs noSyncFS) Unwrap() vfs.FS { return fs.FS }

// noSync wraps f, if any, in a noSyncFile.
func noSync(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

// noSyncFile is a file whose syncs do nothing.
type noSyncFile struct{ vfs.File }

// Sync implements vfs.File.
func (noSyncFile) Sync() error { return nil }

// SyncData implements vfs.File.
func (noSyncFile) SyncData() error { return nil }

// SyncTo implements vfs.File; it reports a full sync so that callers do not follow up.
func (noSyncFile) SyncTo(int64) (bool, error) { return true, nil }
