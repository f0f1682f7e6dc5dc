package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Gate is what a backup closes to stop write commands while it checkpoints the shards: a
// write command holds it shared from before its first write until its operationTime is
// ticked. The zero value is open; a Gate must not be copied.
type Gate struct {
	mu sync.RWMutex
}

// Enter waits while a backup holds the gate closed; Leave leaves it. A command enters at
// most once (a backup waiting to close the gate lets no one in). NB: no leave function is
// returned, as the method value g.mu.RUnlock took an allocation per write command.
func (g *Gate) Enter() { g.mu.RLock() }

// Leave leaves the gate a command entered with Enter.
func (g *Gate) Leave() { g.mu.RUnlock() }

// closeCtx closes the gate: it waits until every command inside has left, letting no new
// one in meanwhile, and returns the function that opens it again. When ctx ends first it
// gives up (the commands waiting to enter go on as soon as the ones inside leave) and
// returns ctx's error.
func (g *Gate) closeCtx(ctx context.Context) (open func(), err error) {
	if g.mu.TryLock() {
		return g.mu.Unlock, nil
	}
	got, abandon := make(chan struct{}), make(chan struct{})
	go func() {
		g.mu.Lock()
		select {
		case got <- struct{}{}:
		case <-abandon:
			g.mu.Unlock()
		}
	}()
	select {
	case <-got:
		return g.mu.Unlock, nil
	case <-ctx.Done():
		close(abandon)
		return nil, ctx.Err()
	}
}

// Drain bounds: a backup waits at most DrainTimeout for the write commands under way to
// finish once it stops new ones (so writes never wait longer than that and the checkpoints),
// and tries DrainAttempts times, DrainBackoff apart, letting the writes and the DDL lock go
// between attempts: a long write (an insertMany of a million documents) or one waiting for
// the DDL lock the backup holds (abortTransaction dropping what its transaction created)
// would otherwise stop every write for as long.
const (
	DrainTimeout  = 500 * time.Millisecond
	DrainAttempts = 10
	DrainBackoff  = 200 * time.Millisecond
)

// Options says what Run backs up where.
type Options struct {
	// Dir is the backup directory: missing or empty, on the server's file system (absolute).
	Dir string
	// Cat is the catalog of the shards to back up, all of this process.
	Cat *catalog.Catalog
	// Gate is the write commands' gate.
	Gate *Gate
	// Tick returns the backup's cluster time, a tick of the server's clock.
	Tick func() uint64
	// ServerVersion goes into the manifest; a restore by another version refuses it.
	ServerVersion string
	Log           *zap.Logger
	// IncrementalFrom is the backup directory this backup builds on (absolute; "" for a
	// full backup): the sstables it holds are not copied again (store.ListFiles).
	IncrementalFrom string
	// DrainTimeout is how long each attempt waits for the writes under way; 0 means
	// DrainTimeout.
	DrainTimeout time.Duration
}

// Result is what a backup did.
type Result struct {
	Manifest store.Manifest
	// ClusterTime is the backup's cluster time; Pause how long writes waited, of which Drain
	// waiting for the writes under way (the gate and the key locks), the rest the
	// checkpoints; Took the whole backup, digests and manifest included.
	ClusterTime        uint64
	Pause, Drain, Took time.Duration
}

// Run backs up every shard of o.Cat and the catalog (in shard 0) into o.Dir: it takes the
// DDL lock, flushes the memtables, closes the gate, takes every key lock, ticks the cluster
// time, checkpoints each shard, releases, then digests the checkpoints and writes the
// manifest. On failure it removes what it wrote.
func Run(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	dbs, err := localDBs(o.Cat)
	if err != nil {
		return nil, err
	}
	if err := prepareDir(o.Dir); err != nil {
		return nil, err
	}
	res, err := run(ctx, o, dbs)
	if err != nil {
		removeContents(o.Dir)
		return nil, err
	}
	res.Took = time.Since(start)
	o.Log.Info("backup done", zap.String("dir", o.Dir), zap.Int("shards", len(dbs)),
		zap.Int("collections", len(res.Manifest.Collections)), zap.Duration("write_pause", res.Pause), zap.Duration("drain", res.Drain),
		zap.Duration("took", res.Took))
	return res, nil
}

// run is Run once o.Dir is ready: it checkpoints, retrying while the writes do not drain in
// time, then digests the checkpoints and writes the manifest.
func run(ctx context.Context, o Options, dbs []*store.DB) (*Result, error) {
	drain := o.DrainTimeout
	if drain <= 0 {
		drain = DrainTimeout
	}
	res := &Result{}
	var state *store.CatalogState
	var err error
	for attempt := 1; ; attempt++ {
		if state, err = attemptCheckpoint(ctx, o, dbs, drain, res); !errors.Is(err, errNotDrained) {
			break
		}
		o.Log.Info("backup: the writes under way did not drain in time; retrying",
			zap.Int("attempt", attempt), zap.Duration("drain_timeout", drain))
		if attempt == DrainAttempts {
			return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress,
				"the writes under way did not finish within %s of the backup stopping new ones, %d times; retry", drain, attempt)
		}
		select {
		case <-time.After(DrainBackoff):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	if err := writeManifest(o, dbs, state, res); err != nil {
		return nil, err
	}
	return res, nil
}

// errNotDrained reports an attempt whose writes did not drain in time.
var errNotDrained = errors.New("backup: the writes under way did not drain in time")

// attemptCheckpoint takes the DDL lock, flushes the memtables (the WAL each checkpoint
// copies while writes wait is then short) and checkpoints.
func attemptCheckpoint(ctx context.Context, o Options, dbs []*store.DB, drain time.Duration, res *Result) (*store.CatalogState, error) {
	unlockDDL, err := o.Cat.LockDDLCtx(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockDDL()
	for i, db := range dbs {
		if err := db.Flush(); err != nil {
			return nil, fmt.Errorf("flushing shard %d: %w", i, err)
		}
	}
	return checkpoint(ctx, o, dbs, drain, res)
}

// writeManifest digests the checkpoints and writes the manifest of the collections state
// names.
func writeManifest(o Options, dbs []*store.DB, state *store.CatalogState, res *Result) error {
	digests := make([]store.DirDigest, len(dbs))
	for i := range dbs {
		var err error
		if digests[i], err = store.DigestDir(store.ShardDir(o.Dir, i)); err != nil {
			return fmt.Errorf("digesting shard %d's checkpoint: %w", i, err)
		}
	}
	res.Manifest = store.NewManifest(digests, collectionNames(state))
	fillManifest(&res.Manifest, o.ServerVersion, res)
	if err := store.ListFiles(o.Dir, &res.Manifest, o.IncrementalFrom); err != nil {
		if o.IncrementalFrom == "" {
			return fmt.Errorf("listing the checkpoints' files: %w", err)
		}
		return mongoerr.Wrap(err, mongoerr.BadValue, "incremental backup from %s: %v", o.IncrementalFrom, err)
	}
	if err := store.WriteManifest(o.Dir, &res.Manifest); err != nil {
		return fmt.Errorf("writing the manifest: %w", err)
	}
	return nil
}

// collectionNames names the collections of state by id ("db.coll"), views left out.
func collectionNames(state *store.CatalogState) map[store.CollID]string {
	names := map[store.CollID]string{}
	for _, d := range state.Databases() {
		for _, c := range state.Collections(d.Name) {
			if !catalog.IsView(c) {
				names[c.ID] = c.DB + "." + c.Name
			}
		}
	}
	return names
}

// fillManifest records the server version and res's times in m.
func fillManifest(m *store.Manifest, serverVersion string, res *Result) {
	m.ServerVersion = serverVersion
	m.ClusterTime = res.ClusterTime
	m.ClusterTimeString = fmt.Sprintf("Timestamp(%d, %d)", res.ClusterTime>>32, uint32(res.ClusterTime))
	m.WritePauseMicros = res.Pause.Microseconds()
}

// checkpoint stops the writes, ticks the backup's cluster time, checkpoints every shard and
// lets the writes go on; it returns the catalog as the checkpoints hold it.
func checkpoint(ctx context.Context, o Options, dbs []*store.DB, drain time.Duration, res *Result) (*store.CatalogState, error) {
	dctx, cancel := context.WithTimeout(ctx, drain)
	defer cancel()
	stopped := time.Now()
	open, err := o.Gate.closeCtx(dctx)
	if err != nil {
		return nil, drainError(ctx, err)
	}
	defer func() {
		open()
		res.Pause = time.Since(stopped)
	}()
	unlock, err := o.Cat.Locks().LockAllCtx(dctx)
	if err != nil {
		return nil, drainError(ctx, err)
	}
	defer unlock()
	res.Drain = time.Since(stopped)
	res.ClusterTime = o.Tick()
	state := o.Cat.Store().State()
	// In parallel: a checkpoint is mostly fsyncs (the WAL, the new files, the directory).
	errs := make([]error, len(dbs))
	var wg sync.WaitGroup
	for i, db := range dbs {
		wg.Go(func() {
			if err := db.Checkpoint(store.ShardDir(o.Dir, i)); err != nil {
				errs[i] = fmt.Errorf("shard %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	return state, errors.Join(errs...)
}

// drainError is the error of a wait for the writers that ended: ctx's own when it ended,
// else errNotDrained.
func drainError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w: %w", errNotDrained, err)
}

// localDBs returns the stores of the catalog's shards, which must all be of this process.
func localDBs(cat *catalog.Catalog) ([]*store.DB, error) {
	var dbs []*store.DB
	for i, sh := range cat.Shards() {
		db, ok := catalog.LocalDB(sh)
		if !ok {
			return nil, mongoerr.New(mongoerr.IllegalOperation, "backup: shard %d is not a local store", i)
		}
		dbs = append(dbs, db)
	}
	return dbs, nil
}

// prepareDir creates dir, which must be absolute, and missing or empty.
func prepareDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return mongoerr.New(mongoerr.BadValue, "backup directory must be an absolute path, not %q", dir)
	}
	if err := store.CheckEmptyDir(dir); err != nil {
		if errors.Is(err, store.ErrNotEmpty) {
			return mongoerr.New(mongoerr.IllegalOperation, "backup directory %s is not empty", dir)
		}
		return mongoerr.New(mongoerr.InvalidPath, "backup directory %s: %v", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return mongoerr.New(mongoerr.InvalidPath, "cannot create backup directory %s: %v", dir, err)
	}
	return nil
}

// removeContents removes everything in dir, leaving dir itself.
func removeContents(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
