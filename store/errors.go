package store

import "errors"

// Sentinel errors returned by the store, possibly wrapped with %w; compare them with errors.Is.
var (
	// ErrNotFound reports a missing document, database, collection or index.
	ErrNotFound = errors.New("store: not found")
	// ErrExists reports that a database or collection being created already exists.
	ErrExists = errors.New("store: already exists")
	// ErrReshardRunning reports a layout change's copy refused because another copy of the
	// same collection exists (Collection.ReshardOf): one change of a collection at a time.
	ErrReshardRunning = errors.New("store: a layout change of the collection is already under way")
	// ErrClosed reports a call on a closed DB, Snapshot, Batch or iterator.
	ErrClosed = errors.New("store: closed")
	// ErrLocked reports that another process (or another DB in this process) holds the directory.
	ErrLocked = errors.New("store: directory locked by another process")
	// ErrFormatTooNew reports a database written by a newer, unknown on-disk format version.
	ErrFormatTooNew = errors.New("store: on-disk format is newer than this binary supports")
	// ErrCorrupt reports a key, value or catalog record that cannot be decoded.
	ErrCorrupt = errors.New("store: corrupt record")
	// ErrInvalid reports an argument or catalog mutation that breaks an invariant
	// (for example partitions that do not start at hash 0).
	ErrInvalid = errors.New("store: invalid argument")
	// ErrDiskFull reports a write refused because the data volume's free space is under
	// the reserve (a *DiskFullError carries the figures); nothing of it was applied.
	ErrDiskFull = errors.New("store: disk full")
	// ErrIO reports a write that failed in Pebble (its WAL could not be written or synced),
	// and every write to that DB after it: the failed write may or may not survive a
	// restart, wholly; nothing acknowledged before it is lost.
	ErrIO = errors.New("store: I/O error")
)
