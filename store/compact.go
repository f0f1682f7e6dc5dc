package store

import (
	"context"
	"fmt"
)

// CompactCollection runs a Pebble manual compaction over the key ranges of coll in this DB
// (its documents and its index entries), down to the bottom level: deleted and overwritten
// versions and range tombstones are dropped and their space returned to the file system.
// It flushes the memtable first, and returns the estimated on-disk size of those ranges
// before and after. Cancelling ctx
// (killOp, maxTimeMS) stops it between compactions; the compactions already running finish
// in the background, as Pebble's Compact documents.
func (db *DB) CompactCollection(ctx context.Context, coll CollID) (before, after uint64, err error) {
	if db.closed.Load() {
		return 0, 0, ErrClosed
	}
	var buf [16]byte
	ranges := [][2][]byte{
		{appendDocPrefix(nil, coll), KeyPrefixEnd(appendDocPrefix(buf[:0], coll))},
		{appendIndexCollPrefix(nil, coll), KeyPrefixEnd(appendIndexCollPrefix(buf[:0], coll))},
	}
	// The memtable first: its data is on no table yet, so "before" would not count it, and
	// the compaction flushes it anyway.
	if err := db.pdb.Flush(); err != nil {
		return 0, 0, fmt.Errorf("store: compact: %w", err)
	}
	size := func() (uint64, error) {
		var n uint64
		for _, r := range ranges {
			s, err := db.pdb.EstimateDiskUsage(r[0], r[1])
			if err != nil {
				return 0, err
			}
			n += s
		}
		return n, nil
	}
	if before, err = size(); err != nil {
		return 0, 0, fmt.Errorf("store: compact: %w", err)
	}
	for _, r := range ranges {
		if err := db.pdb.Compact(ctx, r[0], r[1], true); err != nil {
			return before, 0, fmt.Errorf("store: compact: %w", err)
		}
	}
	if after, err = size(); err != nil {
		return before, 0, fmt.Errorf("store: compact: %w", err)
	}
	return before, after, nil
}
