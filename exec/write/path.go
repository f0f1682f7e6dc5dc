package write

import (
	"context"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
)

// Path applies document writes: it finds the documents a statement targets (through
// query), locks their keys, re-reads them, applies the change, keeps every index in step,
// checks unique keys and commits one atomic batch per shard (writer.go, op.go).
// Sharding plugs in through the StageHook it is given.
type Path struct {
	cat   *catalog.Catalog
	query *query.Engine
	hook  StageHook
	log   *zap.Logger
	// shards, when set, replaces the catalog's shards: a transaction's views (WithShards).
	shards []catalog.Shard
	// gate, when it holds one, is waited on before a writer takes its key locks (WithGate);
	// atomic, as a test switches it while the partition manager writes the config
	// collections through the path. Nil for a transaction's path (WithShards).
	gate *atomic.Pointer[Gate]
	// groupHook, when set, runs when a multi statement read a group of documents, before it
	// locks them (Knobs.BeforeGroupLock); insertHook when an insert is about to lock its
	// documents (Knobs.BeforeInsertLock).
	groupHook, insertHook func()
}

// Knobs are the write path's test failpoints.
type Knobs struct {
	// BeforeGroupLock runs in a multi update or delete after it read each group of
	// documents and before it locks them: the failpoint pauseMultiWriteBeforeLock, with
	// which a test moves their partition in between. Nil: nothing.
	BeforeGroupLock func()
	// BeforeInsertLock runs in an insert, its collection looked up, before it locks its
	// documents: the failpoint pauseInsertBeforeLock, with which a test drops or replaces
	// the collection in between. Nil: nothing.
	BeforeInsertLock func()
}

// WithKnobs sets the path's test failpoints and returns it; set them before the path is
// used.
func (wp *Path) WithKnobs(k Knobs) *Path {
	wp.groupHook, wp.insertHook = k.BeforeGroupLock, k.BeforeInsertLock
	return wp
}

// Gate holds writes back: Wait returns once none of the documents and unique keys whose
// key-lock hashes (DocLockHash, UniqueLockHash) it is given is held by someone else, or ctx's error when ctx ends first.
// The executor's open transactions are one: a write outside a transaction to a document a
// transaction wrote waits for that transaction to end, as MongoDB's does.
type Gate interface {
	Wait(ctx context.Context, hashes []uint64) error
}

// WithGate sets the gate writes wait on and returns wp.
func (wp *Path) WithGate(g Gate) *Path {
	if g == nil {
		wp.gate.Store(nil)
	} else {
		wp.gate.Store(&g)
	}
	return wp
}

// waitGate waits on the path's gate, if any, for hashes.
func (wp *Path) waitGate(ctx context.Context, hashes []uint64) error {
	if wp.gate == nil {
		return nil
	}
	if g := wp.gate.Load(); g != nil {
		return (*g).Wait(ctx, hashes)
	}
	return nil
}

// NewPath returns the write path over cat's collections; hook, when not nil, sees every
// staged document write.
func NewPath(cat *catalog.Catalog, q *query.Engine, hook StageHook) *Path {
	return &Path{cat: cat, query: q, hook: hook, log: zap.NewNop(), gate: &atomic.Pointer[Gate]{}}
}

// WithLogger sets the logger of the writes a validator lets through with a warning
// (validationAction "warn") and returns wp.
func (wp *Path) WithLogger(l *zap.Logger) *Path {
	wp.log = l
	return wp
}

// WithShards returns a path that reads and stages through shards instead of the catalog's
// (same length and order), its query engine too: a multi-document transaction reads its
// snapshot with its own writes and stages into its buffer through them.
func (wp *Path) WithShards(shards []catalog.Shard) *Path {
	c := *wp
	c.shards = shards
	c.gate = nil // the transaction's own writes: its views check them against the others
	c.query = wp.query.WithShards(shards)
	return &c
}

// Query returns the query engine the path reads with.
func (wp *Path) Query() *query.Engine { return wp.query }

// shardList returns the shards writes read from and stage into.
func (wp *Path) shardList() []catalog.Shard {
	if wp.shards != nil {
		return wp.shards
	}
	return wp.cat.Shards()
}
