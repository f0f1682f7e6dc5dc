package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
)

// FormatVersion is the on-disk format this binary writes ('m' 'v' key). Open refuses a
// database with a higher version. Bump it, with a migration, when the key layout or a value
// encoding changes incompatibly.
const FormatVersion uint32 = 1

// DB is one Pebble database: one shard. It is safe for concurrent use; reads through it see the
// latest committed state. Close it only after every Batch, Snapshot and iterator is done.
type DB struct {
	pdb     *pebble.DB
	dir     string
	logger  *zap.Logger
	lock    *pebble.Lock
	health  io.Closer // disk-health checker of the OS file system, or a no-op
	closed  atomic.Bool
	events  *eventCounters
	totals  collTotals            // per-collection stats totals, see stats.go
	spans   *tableSpans           // the large collections, whose tables are their own (spans.go)
	readOps reader                // reads of the latest committed state
	space   *spaceGuard           // refuses writes that add data when the disk is low
	failed  atomic.Pointer[error] // set by the first failed commit: writes are refused
	pacer   *syncPacer            // paces WAL syncs, counts them and the synced commits
	ids     *idCache              // the hashes of _ids looked up in the _id index (idcache.go)
	docs    *docCache             // documents read by key; nil when off (doccache.go)
	// afterApply, set by tests only, runs between Pebble's apply of a batch and the end of
	// its invalidation: it widens the window in which a read could see the batch half.
	afterApply func()
	// logs are the open write logs (writelog.go); nil when none is open, which is nearly
	// always.
	logs  atomic.Pointer[[]*WriteLog]
	wlogs writeLogs
	// memTables is Options.MemTables, for PaceBulkWrite.
	memTables int
	// changes stamps the batches that carry change records (changes.go).
	changes changeState
	// applied counts the batches applied since Open (Applied).
	applied atomic.Uint64
	// partStats caches Stats of hash ranges while nothing is applied (stats.go);
	// statsScans counts the scans it did not save, for tests.
	partStats  partStatsCache
	statsScans atomic.Int64
	// proposer, when set, replicates every batch (replicated.go); replApplied is the index of
	// the last replicated entry applied.
	proposer    atomic.Pointer[Proposer]
	replApplied atomic.Uint64
	// digests are the digests made at checksum entries (ChecksumAt), by index.
	digests struct {
		sync.Mutex
		m map[uint64]ReplicaChecksum
	}
}

// Applied returns how many batches the DB has applied since it opened, counted once a batch
// is visible and before its writer may acknowledge it: a snapshot taken after reading n sees
// every write acknowledged before, and while Applied still returns n, nothing was written
// after it (a cursor's documents read ahead are still the present).
func (db *DB) Applied() uint64 { return db.applied.Load() }

// Open opens (creating if needed) the database in opts.Dir. It fails with a clear error,
// never a panic, when the directory is unusable: ErrLocked when another process (or another
// DB in this process) has it open, ErrFormatTooNew when a newer binary wrote it.
func Open(opts Options) (*DB, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	logger := opts.Logger.Named("store").With(zap.String("dir", opts.Dir))
	events := &eventCounters{}
	fsys, health := openFS(&opts, logger, events)
	if err := fsys.MkdirAll(opts.Dir, 0o755); err != nil {
		_ = health.Close()
		return nil, fmt.Errorf("store: open %s: cannot create directory: %w", opts.Dir, err)
	}
	lock, err := pebble.LockDirectory(opts.Dir, fsys)
	if err != nil {
		_ = health.Close()
		return nil, lockError(opts.Dir, err)
	}
	pacer := &syncPacer{off: opts.NoSyncPacing}
	spans := newTableSpans(opts.TableSplitBytes)
	po := pebbleOptions(&opts, fsys, lock, logger, events)
	po.WALMinSyncInterval = pacer.interval        // syncpace.go
	po.Experimental.SpanPolicyFunc = spans.policy // spans.go
	pdb, err := pebble.Open(opts.Dir, po)
	if err != nil {
		_ = lock.Close()
		_ = health.Close()
		return nil, fmt.Errorf("store: open %s: %w", opts.Dir, err)
	}
	db := &DB{pdb: pdb, dir: opts.Dir, logger: logger, lock: lock, health: health, events: events, pacer: pacer,
		space: newSpaceGuard(fsys, opts.Dir, &opts, logger), ids: new(idCache), spans: spans, memTables: opts.MemTables}
	db.readOps = reader{r: pdb}
	db.docs = newDocCache(db.ids, opts.DocCacheSize)
	if err := db.checkFormat(); err != nil {
		_ = db.Close()
		return nil, err
	}
	if err := db.totals.load(pdb); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open %s: loading stats: %w", opts.Dir, err)
	}
	db.totals.each(spans.note)
	if err := db.loadReplicaApplied(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open %s: reading the replica's applied state: %w", opts.Dir, err)
	}
	if err := db.loadChangesTrimmed(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open %s: reading the change log's trim point: %w", opts.Dir, err)
	}
	logger.Info("store opened")
	return db, nil
}

// openFS returns the file system to use and a closer for its disk-health checker.
func openFS(opts *Options, logger *zap.Logger, events *eventCounters) (vfs.FS, io.Closer) {
	if opts.FS != nil {
		return opts.FS, io.NopCloser(nil)
	}
	if opts.DiskSlowThreshold < 0 {
		return vfs.Default, io.NopCloser(nil)
	}
	slow := newEventListener(logger, events).DiskSlow
	return vfs.WithDiskHealthChecks(vfs.Default, opts.DiskSlowThreshold, nil, slow)
}

// lockError explains a failure to lock dir: a bare errno or Pebble's in-process message means
// the lock is held elsewhere; a path error means the LOCK file itself could not be created.
func lockError(dir string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("store: open %s: cannot create lock file: %w", dir, err)
	}
	return fmt.Errorf("%w: %s (%w)", ErrLocked, dir, err)
}

// The sstable block layout of every level (issue 13), the one CockroachDB and go-ethereum give
// Pebble: data blocks of 32 KiB instead of 4 KiB, and index blocks of up to 256 KiB, so that a
// 4 MiB table of 1 KiB documents has a one-level index (it had a two-level one): a point read
// looks up two cached blocks per table (index, data) instead of three, and a scan decodes an
// eighth as many blocks. Measured with 100,000 1 KiB documents compacted into sstables and a
// warm cache (-count 5 medians, CPU ns per op): BenchmarkGetDoc Serial 4074 -> 2572, Parallel
// 3328 -> 2585; BenchmarkFetch Random/SeekExact 2358 -> 1793; BenchmarkDocIterScan Full 3.8 ->
// 10.1 M docs/s; BenchmarkInsertBatch unchanged (9501 -> 8294 CPU ns/doc); mbench workload c
// (find by _id, 32 threads) 38.0 -> 31.3 us of server CPU per op. The price is paid on
// misses: one reads and decompresses 32 KiB, and a cached block keeps a hot document's
// neighbours too, so the cache fills sooner (mbench's server peaked at 310 MiB RSS instead of
// 250, within the 256 MiB cache's bound) and holds fewer hot documents when the data is much
// larger than the cache.
// Every table records its own layout: tables written before, with 4 KiB blocks and two-level
// indexes, stay readable, and compactions rewrite them with this one (TestOpenOldBlockLayout).
const (
	dataBlockSize  = 32 << 10
	indexBlockSize = 256 << 10
)

// l0TargetFileSize is the size at which flushes cut their tables (see pebbleOptions).
const l0TargetFileSize = 8 << 20

// l0CompactionThreshold is Pebble's L0CompactionThreshold, 8 instead of Pebble's 4: L0
// (about one sublevel per flush under inserts) is compacted into the level below from half
// that many sublevels, 4 instead of 2, Pebble's L0 score being twice its sublevels over the
// threshold (issue 43). A sharded collection's documents are ordered by their shard key's
// hash, so every flushed table of new documents spans the collection's whole range, and each
// L0 compaction merges it with all of the level below; waiting for twice the flushes rewrites
// that level half as often. mbench on 2 shards (100,000 documents loaded; server CPU per op,
// medians of alternated rounds on a machine other processes kept busy): insert at 8 threads
// 2,931 µs per insertMany against 3,241 (-10%, four rounds), at 32 threads 2,786 against
// 3,346 (two), c and a within noise, no write stall (docs/benchmarks.md). Point reads skip
// the extra sublevels through their bloom filters. It stays well below bulkPaceMargin of
// l0StopWritesThreshold (TestL0Thresholds), so that compactions start long before bulk writes
// are paced or writes stop.
const l0CompactionThreshold = 8

// pebbleOptions translates opts into Pebble's options.
func pebbleOptions(opts *Options, fsys vfs.FS, lock *pebble.Lock, logger *zap.Logger, events *eventCounters) *pebble.Options {
	po := &pebble.Options{
		FS:                          fsys,
		Lock:                        lock,
		Cache:                       opts.Cache,
		CacheSize:                   opts.CacheSize,
		MemTableSize:                opts.MemTableSize,
		MemTableStopWritesThreshold: opts.MemTables,
		L0CompactionThreshold:       l0CompactionThreshold,
		L0StopWritesThreshold:       l0StopWritesThreshold,
		Merger:                      statsMerger,
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      logger.Sugar().Named("pebble"), // "store.pebble", with the dir field

		EventListener: newEventListener(logger, events),
	}
	// MinLZ where Pebble finds it faster than Snappy (amd64; Snappy elsewhere): on mbench's
	// 1 KiB documents it spent a fifth less CPU compressing flushed and compacted blocks than
	// Snappy, for slightly smaller tables (issue 13). Every block records its algorithm, so
	// tables written with Snappy stay readable. Compression left off saved no CPU there and
	// wrote 18% more bytes.
	po.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionFastest })
	// One compaction while the DB keeps up; one more for every 10 sublevels of L0 or GiB of
	// compaction debt (Pebble's defaults), up to Options.CompactionConcurrency. mbench insert
	// (insertMany of 100 1 KiB documents, 32 threads, 60 s, one shard, alternating runs): with
	// one compaction, Pebble's default, writes stopped 11 and 9 times and the slowest insertMany
	// took 2.0 and 2.2 s (L0 reached 680 tables, 2.4 GB); with up to two, 0 and 3 times and
	// 0.46 s, for 3% fewer documents/s (60,355 against 62,414, the compactions being done while
	// they are due). From 4 sublevels instead of 10 it stopped writes as often.
	po.CompactionConcurrencyRange = func() (int, int) { return 1, opts.CompactionConcurrency }
	po.DisableAutomaticCompactions = opts.noCompactions
	// Flushes cut L0 tables at 8 MiB instead of Pebble's 2 (each level below doubles it): the
	// tables of a large collection's documents and indexes are moved down whole (spans.go), and
	// 1 million 1 KiB documents made 400 tables of 2 MiB (85–121 at 8 MiB, 145–153 unsplit at
	// 2), each an open file in Pebble's file cache (1,000 files) for every read.
	po.TargetFileSizes[0] = l0TargetFileSize
	for i := range po.Levels {
		po.Levels[i].BlockSize = dataBlockSize
		po.Levels[i].IndexBlockSize = indexBlockSize
		if opts.BloomBitsPerKey > 0 {
			po.Levels[i].FilterPolicy = bloom.FilterPolicy(opts.BloomBitsPerKey)
		}
	}
	if opts.LargeValueSize > 0 {
		policy := pebble.ValueSeparationPolicy{
			Enabled:     true,
			MinimumSize: opts.LargeValueSize,
			// As Pebble's own cmd/pebble: a table may reference up to 10 overlapping blob
			// files before a compaction rewrites its values into new ones; blob files older
			// than 5 minutes are rewritten once 20% of their bytes are garbage (overwritten or
			// deleted documents), which bounds the disk space large documents can waste.
			MaxBlobReferenceDepth: 10,
			RewriteMinimumAge:     5 * time.Minute,
			TargetGarbageRatio:    0.2,
		}
		po.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy { return policy }
	}
	return po
}

// formatKey is the key of the on-disk format version record.
var formatKey = []byte{prefixMeta, metaVersion}

// checkFormat writes the format version into a new database and refuses a newer one.
func (db *DB) checkFormat() error {
	v, closer, err := db.pdb.Get(formatKey)
	if errors.Is(err, pebble.ErrNotFound) {
		var buf [4]byte
		binary.BigEndian.PutUint32(buf[:], FormatVersion)
		if err := db.pdb.Set(formatKey, buf[:], pebble.Sync); err != nil {
			return fmt.Errorf("store: open %s: writing format version: %w", db.dir, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: open %s: reading format version: %w", db.dir, err)
	}
	if len(v) != 4 {
		return errors.Join(fmt.Errorf("%w: %s: format version record has %d bytes", ErrCorrupt, db.dir, len(v)), closer.Close())
	}
	got := binary.BigEndian.Uint32(v) // before Close, which ends v's validity
	if err := closer.Close(); err != nil {
		return fmt.Errorf("store: open %s: reading format version: %w", db.dir, err)
	}
	if got > FormatVersion {
		return fmt.Errorf("%w: %s has format version %d, this binary knows up to %d",
			ErrFormatTooNew, db.dir, got, FormatVersion)
	}
	return nil
}

// Close flushes nothing extra (committed data is already in the WAL), closes Pebble and
// releases the directory lock. A second Close returns ErrClosed.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return ErrClosed
	}
	err := db.pdb.Close()
	if lerr := db.lock.Close(); err == nil {
		err = lerr
	}
	_ = db.health.Close()
	if err != nil {
		return fmt.Errorf("store: close %s: %w", db.dir, err)
	}
	db.logger.Info("store closed")
	return nil
}

// Dir returns the directory the DB was opened in.
func (db *DB) Dir() string { return db.dir }

// Flush writes the memtable to an sstable. Tests and shutdown paths use it; normal operation
// never needs it.
func (db *DB) Flush() error {
	if db.closed.Load() {
		return ErrClosed
	}
	return db.pdb.Flush()
}
