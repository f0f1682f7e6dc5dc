package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
)

// Spills. A TempStore is scratch space for the blocking stages of queries (sorts, groups)
// that outgrow their memory bound: mongod's <dbpath>/_tmp. It is one Pebble DB without WAL
// or fsync (noSyncFS, below) and with small memtables and cache, opened on the first spill and
// closed, its directory wiped, when the last spill is done. Nothing in it survives a restart:
// the directory is also wiped when the TempStore is created and closed.
//
// A Spill is one keyspace in it: Add appends (key, value) records, Iter reads them back in
// key order. Pebble does the external merge sort: records go through its memtables into
// sorted sstables, compactions merge those, and one iterator merges what is left. Records
// with equal keys come back in the order they were added: Add appends a sequence number to
// every key. That makes the order exactly (key, insertion) provided no key is a proper
// prefix of another, which holds for self-delimiting encodings such as bsonx's.
//
//	sp, err := tmp.NewSpill()
//	err = sp.Add(sortKey, doc) // ... for every record
//	it, err := sp.Iter()
//	for it.Next() {
//		use(it.Key(), it.Value())
//	}
//	err = errors.Join(it.Err(), it.Close(), sp.Close())

// Defaults of TempOptions. Spilling exists to bound memory: what the store keeps in memory
// (up to two memtables, the cache, a batch) must stay small. The cache barely matters: a
// spill is read once, in order.
const (
	DefaultTempMemTableSize uint64 = 2 << 20
	DefaultTempCacheSize    int64  = 1 << 20
)

// spillBatchBytes is how many bytes of records a Spill buffers before committing them; well
// under half a memtable, so that Pebble copies batches into the memtable rather than
// flushing each one on its own.
const spillBatchBytes = 256 << 10

// spillIDLen and spillSeqLen are the sizes of the spill ID that prefixes a spill's keys and
// of the sequence number that ends them.
const (
	spillIDLen  = 8
	spillSeqLen = 8
)

// TempOptions configures a TempStore.
type TempOptions struct {
	// Dir is the directory of the temporary DB; it is wiped when the TempStore is created,
	// whenever the last open spill closes, and at Close. Empty means a private directory
	// under os.TempDir(), created when needed and removed when idle (FS must then be nil).
	Dir string
	// FS is the file system; nil means the OS's disk.
	FS vfs.FS
	// MemTableSize is the size of one memtable; 0 means DefaultTempMemTableSize.
	MemTableSize uint64
	// CacheSize is the block cache size; 0 means DefaultTempCacheSize.
	CacheSize int64
	// Logger receives the store's and Pebble's logs; nil means zap.NewNop().
	Logger *zap.Logger
}

// TempStore is the scratch store of spills. It is safe for concurrent use; concurrent spills
// share its Pebble DB, each in its own keyspace.
type TempStore struct {
	opts   TempOptions
	fs     vfs.FS
	logger *zap.Logger
	mu     struct {
		sync.Mutex
		pdb    *pebble.DB // nil while no spill is open
		dir    string     // the directory pdb lives in
		refs   int        // open spills
		nextID uint64
		closed bool
	}
}

// NewTempStore returns a TempStore over opts.Dir, which it wipes. It opens nothing: Pebble
// starts with the first spill.
func NewTempStore(opts TempOptions) (*TempStore, error) {
	if opts.MemTableSize == 0 {
		opts.MemTableSize = DefaultTempMemTableSize
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = DefaultTempCacheSize
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	switch {
	case opts.Dir == "" && opts.FS != nil:
		return nil, fmt.Errorf("%w: TempOptions.FS needs a Dir", ErrInvalid)
	case opts.MemTableSize < 1<<20 || opts.MemTableSize >= 4<<30:
		return nil, fmt.Errorf("%w: TempOptions.MemTableSize %d not in [1 MiB, 4 GiB)", ErrInvalid, opts.MemTableSize)
	case opts.CacheSize < 0:
		return nil, fmt.Errorf("%w: TempOptions.CacheSize %d is negative", ErrInvalid, opts.CacheSize)
	}
	t := &TempStore{opts: opts, fs: opts.FS, logger: opts.Logger.Named("spill")}
	if t.fs == nil {
		t.fs = vfs.Default
	}
	if opts.Dir != "" {
		if err := t.fs.RemoveAll(opts.Dir); err != nil {
			return nil, fmt.Errorf("store: wiping temp directory %s: %w", opts.Dir, err)
		}
		t.logger = t.logger.With(zap.String("dir", opts.Dir))
	}
	return t, nil
}

// Dir returns the directory given in TempOptions ("" for a private one).
func (t *TempStore) Dir() string { return t.opts.Dir }

// NewSpill starts a spill, opening the temporary DB if no other spill has it open.
func (t *TempStore) NewSpill() (*Spill, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		return nil, ErrClosed
	}
	if t.mu.pdb == nil {
		if err := t.openLocked(); err != nil {
			return nil, err
		}
	}
	t.mu.refs++
	t.mu.nextID++
	s := &Spill{t: t, pdb: t.mu.pdb, id: t.mu.nextID}
	s.prefix = binary.BigEndian.AppendUint64(nil, s.id)
	s.end = binary.BigEndian.AppendUint64(nil, s.id+1)
	return s, nil
}

// openLocked wipes the directory and opens Pebble in it. t.mu is held.
func (t *TempStore) openLocked() error {
	dir := t.opts.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "cleave-spill-"); err != nil {
			return fmt.Errorf("store: creating a temp directory: %w", err)
		}
	} else if err := t.fs.RemoveAll(dir); err != nil {
		return fmt.Errorf("store: wiping temp directory %s: %w", dir, err)
	}
	if err := t.fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("store: creating temp directory %s: %w", dir, err)
	}
	pdb, err := pebble.Open(dir, &pebble.Options{
		FS:                 noSyncFS{t.fs},
		CacheSize:          t.opts.CacheSize,
		MemTableSize:       t.opts.MemTableSize,
		DisableWAL:         true, // scratch data: a crash loses nothing anyone needs
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             t.logger.Sugar().Named("pebble"),
	})
	if err != nil {
		_ = t.fs.RemoveAll(dir)
		return fmt.Errorf("store: opening temp store in %s: %w", dir, err)
	}
	t.mu.pdb, t.mu.dir = pdb, dir
	t.logger.Debug("temp store opened", zap.String("path", dir))
	return nil
}

// closeLocked closes Pebble and removes its files. t.mu is held.
func (t *TempStore) closeLocked() error {
	if t.mu.pdb == nil {
		return nil
	}
	err := t.mu.pdb.Close()
	if rerr := t.fs.RemoveAll(t.mu.dir); err == nil {
		err = rerr
	}
	t.logger.Debug("temp store closed", zap.String("path", t.mu.dir))
	t.mu.pdb, t.mu.dir = nil, ""
	if err != nil {
		return fmt.Errorf("store: closing temp store: %w", err)
	}
	return nil
}

// release ends one spill: the last one closes the DB, others drop their records.
func (t *TempStore) release(s *Spill) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed || t.mu.pdb != s.pdb {
		return nil // Close already removed everything
	}
	t.mu.refs--
	if t.mu.refs == 0 {
		return t.closeLocked()
	}
	if err := s.pdb.DeleteRange(s.prefix, s.end, pebble.NoSync); err != nil {
		return fmt.Errorf("store: dropping spill %d: %w", s.id, err)
	}
	return nil
}

// Close closes the DB if a spill still has it open (those spills must not be used
// afterwards) and wipes the directory. Later NewSpill calls fail with ErrClosed.
func (t *TempStore) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		return ErrClosed
	}
	t.mu.closed = true
	var errs []error
	if t.mu.refs > 0 {
		errs = append(errs, fmt.Errorf("store: temp store closed with %d open spills", t.mu.refs))
	}
	errs = append(errs, t.closeLocked())
	if t.opts.Dir != "" {
		if err := t.fs.RemoveAll(t.opts.Dir); err != nil {
			errs = append(errs, fmt.Errorf("store: wiping temp directory %s: %w", t.opts.Dir, err))
		}
	}
	return errors.Join(errs...)
}

// Spill is one sorted run of records in a TempStore. It is not safe for concurrent use.
type Spill struct {
	t       *TempStore
	pdb     *pebble.DB
	id      uint64
	prefix  []byte // the spill ID: every key starts with it
	end     []byte // the next spill ID: the keyspace's upper bound
	b       *pebble.Batch
	seq     uint64
	key     []byte // scratch
	records int64
	bytes   int64
	closed  bool
}

// Add appends a record. Its key is copied, and made unique with a sequence number.
func (s *Spill) Add(key, value []byte) error {
	if s.closed {
		return ErrClosed
	}
	if s.b == nil {
		s.b = s.pdb.NewBatch()
	}
	s.key = append(append(s.key[:0], s.prefix...), key...)
	s.key = binary.BigEndian.AppendUint64(s.key, s.seq)
	s.seq++
	if err := s.b.Set(s.key, value, nil); err != nil {
		return fmt.Errorf("store: spill %d: %w", s.id, err)
	}
	s.records++
	s.bytes += int64(len(key) + len(value))
	if s.b.Len() >= spillBatchBytes {
		return s.flush()
	}
	return nil
}

// flush commits the buffered records.
func (s *Spill) flush() error {
	if s.b == nil {
		return nil
	}
	b := s.b
	s.b = nil
	err := b.Commit(pebble.NoSync)
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store: spill %d: %w", s.id, err)
	}
	return nil
}

// Records reports how many records Add wrote.
func (s *Spill) Records() int64 { return s.records }

// Bytes reports the bytes of the keys and values given to Add.
func (s *Spill) Bytes() int64 { return s.bytes }

// Iter commits what Add buffered and returns an iterator over the records in key order
// (then insertion order). It sees the records added before it was created.
func (s *Spill) Iter() (*SpillIter, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if err := s.flush(); err != nil {
		return nil, err
	}
	it, err := s.pdb.NewIter(&pebble.IterOptions{LowerBound: s.prefix, UpperBound: s.end})
	if err != nil {
		return nil, fmt.Errorf("store: spill %d: %w", s.id, err)
	}
	return &SpillIter{it: it}, nil
}

// Close drops the spill's records; close its iterators first. A second Close returns
// ErrClosed.
func (s *Spill) Close() error {
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	if s.b != nil {
		_ = s.b.Close()
		s.b = nil
	}
	s.t.logger.Debug("spill closed", zap.Uint64("spill_id", s.id),
		zap.Int64("records", s.records), zap.Int64("bytes", s.bytes))
	return s.t.release(s)
}

// SpillIter reads a spill in key order, in the style of the store's other iterators:
// `for it.Next() { it.Key(), it.Value() }`, then Err. Slices are valid until the next call
// to Next and must not be modified.
type SpillIter struct {
	it      *pebble.Iterator
	started bool
	valid   bool
	err     error
	closed  bool
}

// Next moves to the next record (the first on the first call) and reports whether there is
// one. After false, check Err.
func (i *SpillIter) Next() bool {
	if i.err != nil || i.closed {
		return false
	}
	switch {
	case !i.started:
		i.started = true
		i.valid = i.it.First()
	case i.valid:
		i.valid = i.it.Next()
	default:
		return false
	}
	if !i.valid {
		i.err = i.it.Error()
		return false
	}
	if len(i.it.Key()) < spillIDLen+spillSeqLen {
		i.err = fmt.Errorf("%w: spill key of %d bytes", ErrCorrupt, len(i.it.Key()))
		i.valid = false
	}
	return i.valid
}

// Key returns the current record's key, as given to Add.
func (i *SpillIter) Key() []byte {
	k := i.it.Key()
	return k[spillIDLen : len(k)-spillSeqLen]
}

// Value returns the current record's value.
func (i *SpillIter) Value() []byte {
	v, err := i.it.ValueAndErr()
	if err != nil && i.err == nil {
		i.err = err
	}
	return v
}

// Err returns the error that ended the iteration, if any.
func (i *SpillIter) Err() error { return i.err }

// Close releases the iterator. It is idempotent.
func (i *SpillIter) Close() error {
	if i.closed {
		return nil
	}
	i.closed = true
	return i.it.Close()
}

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
