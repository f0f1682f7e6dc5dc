package store

import "errors"

// Sentinel errors returned by the store, possibly wrapped with %w; compare them with errors.Is.
var (
	// ErrNotFound reports a missing document, database, collection or index.
	ErrNotFound = errors.New("store: not found")
	// ErrExists reports that a database or collection being created already exists.
	ErrExists = errors.New("store: already exists")
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
)
