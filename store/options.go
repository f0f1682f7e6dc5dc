package store

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
)

// Defaults applied by Options.EnsureDefaults. A DB's memory is bounded by its block cache
// (CacheSize, or a shared Cache) plus MemTableSize * MemTables of memtables: Pebble stops
// writes (a write stall) rather than queue more memtables for flushing.
const (
	DefaultCacheSize int64 = 256 << 20
	// DefaultMemTableSize and DefaultMemTables: four memtables of 32 MiB take what two of
	// 64 MiB took (128 MiB), and absorb a burst of writes while one is flushed: with two,
	// insertMany from 32 clients stalled on "memtable count limit reached" (issue 13).
	DefaultMemTableSize      uint64 = 32 << 20
	DefaultMemTables                = 4
	DefaultDiskSlowThreshold        = 2 * time.Second
	// DefaultLargeValueSize is the size from which a document is stored apart from its key, in
	// a blob file (Pebble's value separation): a data block then holds small values only
	// (blocks are 32 KiB, db.go), so a point lookup that lands next to a 16 MiB document reads
	// a small block.
	DefaultLargeValueSize = 16 << 10
	// DefaultTableSplitBytes is the size of a collection's documents in a DB from which its
	// documents and each of its indexes get sstables of their own (spans.go). Below it, Pebble
	// holds a collection in one or two levels, and tables moved down instead of merged would
	// leave its reads more levels to merge: split from 64 MiB, a fresh load of 100,000 1 KiB
	// documents was left in L5 and L6 instead of L6 alone, and mbench's sortx (an index range,
	// then 100 documents fetched) cost 28–60% more CPU, agg 10–21%. From a few hundred MiB a
	// collection spans several levels either way (after 1 million inserts, reads cost the same
	// within noise).
	DefaultTableSplitBytes int64 = 256 << 20
	// DefaultDiskReserve and DefaultDiskReservePercent: writes that add data are refused
	// while the data volume has less free space than the smaller of 1 GiB and 5% of its
	// size, which leaves flushes and compactions room to run (space.go).
	DefaultDiskReserve        int64 = 1 << 30
	DefaultDiskReservePercent       = 5.0
	// DefaultDiskCheckInterval is how old a reading of the free space may get before a
	// write reads it again (MongoDB's disk space monitor reads it every second).
	DefaultDiskCheckInterval = time.Second
	// DefaultCompactionConcurrency is the most compactions a DB runs at once when it falls
	// behind; see Options.CompactionConcurrency.
	DefaultCompactionConcurrency = 2
)

// Options configures one DB. The zero value plus a Dir is valid after EnsureDefaults.
type Options struct {
	// Dir is the database directory; Open creates it if needed.
	Dir string
	// FS is the file system; nil means the OS's disk. Tests use vfs.NewMem() or
	// vfs.NewCrashableMem().
	FS vfs.FS
	// CacheSize is the block cache size in bytes, used when Cache is nil.
	CacheSize int64
	// Cache, when set, is a block cache shared with other DBs (one per process is typical when
	// several shards run in one process); the DB takes its own reference. CacheSize is ignored.
	Cache *pebble.Cache
	// DocCacheSize bounds the documents kept by key for point reads of the latest state
	// (doccache.go), in bytes; 0 means DefaultDocCacheSize, a negative value turns it off.
	DocCacheSize int64
	// MemTableSize is the size of one memtable in bytes.
	MemTableSize uint64
	// MemTables is the most memtables (the one written and those waiting to be flushed) before
	// writes stall; at least 2.
	MemTables int
	// BloomBitsPerKey sets the bloom filter of sstables (point reads such as GetDoc skip tables
	// that cannot hold the key); 0 means 10, a negative value disables filters.
	BloomBitsPerKey int
	// LargeValueSize is the value size from which flushes and compactions move a value into a
	// blob file, leaving a handle in the sstable (Pebble's value separation); 0 means
	// DefaultLargeValueSize, a negative value keeps every value in its sstable.
	LargeValueSize int
	// TableSplitBytes is the size of a collection's documents from which flushes and
	// compactions write its documents and each of its indexes into tables of their own
	// (spans.go); 0 means DefaultTableSplitBytes, a negative value never.
	TableSplitBytes int64
	// DiskSlowThreshold is how long a disk write may take before a warning is logged; it only
	// applies to the OS file system (FS == nil). Negative disables the check.
	DiskSlowThreshold time.Duration
	// DiskReserve is the free space, in bytes, under which writes that add data are refused
	// with a *DiskFullError; 0 means DefaultDiskReserve, a negative value no byte bound.
	DiskReserve int64
	// DiskReservePercent bounds the reserve to this share of the volume's size (the smaller
	// bound applies); 0 means DefaultDiskReservePercent, a negative value no share bound.
	// With both bounds off, free space is never read.
	DiskReservePercent float64
	// DiskCheckInterval is how old a reading of the free space may get; 0 means
	// DefaultDiskCheckInterval.
	DiskCheckInterval time.Duration
	// CompactionConcurrency is the most compactions the DB runs at once. It runs one while it
	// keeps up, and one more for every 10 sublevels of L0 (the tables flushed and not yet
	// compacted, each of which a point read may visit) or GiB of compaction debt, up to this.
	// 0 means DefaultCompactionConcurrency. With one (Pebble's default), a sustained insertMany
	// load piled up L0 until Pebble stopped writes, 12 to 18 times a minute (issue 13; db.go).
	CompactionConcurrency int
	// NoSyncPacing turns group commit pacing off (syncpace.go): every WAL sync starts as
	// soon as the previous one ends. For comparisons; it changes no guarantee.
	NoSyncPacing bool
	// Logger receives the store's and Pebble's logs; nil means zap.NewNop().
	Logger *zap.Logger

	// noCompactions turns Pebble's automatic compactions off (tests that pile up L0).
	noCompactions bool
}

// EnsureDefaults fills unset fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.DocCacheSize == 0 {
		o.DocCacheSize = DefaultDocCacheSize
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = DefaultMemTableSize
	}
	if o.MemTables == 0 {
		o.MemTables = DefaultMemTables
	}
	if o.BloomBitsPerKey == 0 {
		o.BloomBitsPerKey = 10
	}
	if o.LargeValueSize == 0 {
		o.LargeValueSize = DefaultLargeValueSize
	}
	if o.TableSplitBytes == 0 {
		o.TableSplitBytes = DefaultTableSplitBytes
	}
	if o.DiskSlowThreshold == 0 {
		o.DiskSlowThreshold = DefaultDiskSlowThreshold
	}
	if o.DiskReserve == 0 {
		o.DiskReserve = DefaultDiskReserve
	}
	if o.DiskReservePercent == 0 {
		o.DiskReservePercent = DefaultDiskReservePercent
	}
	if o.DiskCheckInterval == 0 {
		o.DiskCheckInterval = DefaultDiskCheckInterval
	}
	if o.CompactionConcurrency == 0 {
		o.CompactionConcurrency = DefaultCompactionConcurrency
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o
}

// Validate reports the first invalid field, wrapping ErrInvalid. Call it after EnsureDefaults.
func (o *Options) Validate() error {
	switch {
	case o.Dir == "":
		return fmt.Errorf("%w: Options.Dir is empty", ErrInvalid)
	case o.CacheSize < 0:
		return fmt.Errorf("%w: Options.CacheSize %d is negative", ErrInvalid, o.CacheSize)
	case o.MemTableSize < 1<<20 || o.MemTableSize >= 4<<30:
		// Pebble refuses memtables of 4 GiB and more; below 1 MiB every write would flush.
		return fmt.Errorf("%w: Options.MemTableSize %d not in [1 MiB, 4 GiB)", ErrInvalid, o.MemTableSize)
	case o.MemTables < 2:
		return fmt.Errorf("%w: Options.MemTables %d is below 2", ErrInvalid, o.MemTables)
	case o.CompactionConcurrency < 1:
		return fmt.Errorf("%w: Options.CompactionConcurrency %d is below 1", ErrInvalid, o.CompactionConcurrency)
	case o.DiskReservePercent >= 100:
		return fmt.Errorf("%w: Options.DiskReservePercent %v is not below 100", ErrInvalid, o.DiskReservePercent)
	case o.Logger == nil:
		return fmt.Errorf("%w: Options.Logger is nil (call EnsureDefaults)", ErrInvalid)
	}
	return nil
}
