package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// openStorage opens (creating if needed) one store per shard under cfg.Dir and the catalog
// in shard 0, joins the cluster in cluster mode (cluster.go; listen is the bound address),
// and drops the data of collections a crash left behind. It returns the storage, the
// cluster view (nil for a single node), the node's local shards and the function that
// closes them.
func openStorage(cfg *Config, listen net.Addr, logger *zap.Logger) (*exec.Storage, *clusterView, []catalog.Shard, func() error, error) {
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("cannot use data directory %s: %w", cfg.Dir, unwrapPathErr(err))
	}
	if n := existingShards(cfg.Dir); n > cfg.Shards {
		return nil, nil, nil, nil, fmt.Errorf("data directory %s holds %d shards: start with --shards %d or more", cfg.Dir, n, n)
	}
	// Spilled sorts and groups go to <dir>/_tmp, wiped now and at close.
	tmp, err := store.NewTempStore(store.TempOptions{Dir: filepath.Join(cfg.Dir, "_tmp"), Logger: logger.Named("store")})
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("cannot use data directory %s: %w", cfg.Dir, unwrapPathErr(err))
	}
	st := &exec.Storage{Temp: tmp}
	if cfg.Cluster.Etcd != "" && cfg.Cluster.Replicas > 1 {
		return openReplicated(cfg, listen, st, logger)
	}
	var dbs []*store.DB
	var view *clusterView
	closeAll := func() error {
		errs := []error{tmp.Close()}
		if view != nil {
			errs = append(errs, view.node.Close()) // leave the cluster before closing the stores
		}
		for _, db := range dbs {
			errs = append(errs, db.Close())
		}
		return errors.Join(errs...)
	}
	// One block cache for all shards, so that --cache-size bounds the process, not each
	// shard; every DB takes its own reference, and ours is dropped once they are open.
	cache := pebble.NewCache(cfg.CacheSize)
	defer cache.Unref()
	for i := 0; i < cfg.Shards; i++ {
		dir := filepath.Join(cfg.Dir, "shard-"+strconv.Itoa(i))
		db, err := store.Open(storeOptions(cfg, cache, dir, logger.Named("store").With(zap.Int("shard", i))))
		if err != nil {
			_ = closeAll()
			return nil, nil, nil, nil, fmt.Errorf("cannot open data directory %s: %w", dir, unwrapPathErr(err))
		}
		dbs = append(dbs, db)
		st.Shards = append(st.Shards, catalog.Local(db))
	}
	cat, err := store.OpenCatalog(dbs[0])
	if err != nil {
		_ = closeAll()
		return nil, nil, nil, nil, fmt.Errorf("cannot read the catalog in %s: %w", cfg.Dir, err)
	}
	st.Catalog = cat
	local := slices.Clone(st.Shards)
	if cfg.Cluster.Etcd != "" {
		if view, err = joinCluster(cfg, listen, dbs, cat, st, logger); err != nil {
			_ = closeAll()
			return nil, nil, nil, nil, err
		}
	}
	for i, db := range dbs {
		orphans, err := store.OrphanCollections(db, cat.State().Live)
		if err != nil {
			_ = closeAll()
			return nil, nil, nil, nil, fmt.Errorf("cannot scan shard %d: %w", i, err)
		}
		for _, id := range orphans {
			logger.Info("dropping data of a dropped collection", zap.Int("shard", i), zap.Uint32("coll_id", uint32(id)))
			if err := db.DeleteCollectionData(id); err != nil {
				_ = closeAll()
				return nil, nil, nil, nil, fmt.Errorf("cannot clean shard %d: %w", i, err)
			}
		}
	}
	return st, view, local, closeAll, nil
}

// existingShards returns how many shard-<n> directories dir holds (the highest n + 1).
func existingShards(dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		s, ok := strings.CutPrefix(e.Name(), "shard-")
		if !ok || !e.IsDir() {
			continue
		}
		if i, err := strconv.Atoi(s); err == nil && i+1 > n {
			n = i + 1
		}
	}
	return n
}

// unwrapPathErr drops the path that our own message already names.
func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// compactionConcurrency is the most compactions each of shards stores runs at once when it
// falls behind (store.Options.CompactionConcurrency): the cores shared between the shards, and
// at least store.DefaultCompactionConcurrency, so that one shard's L0 can always be drained by
// a second compaction.
func compactionConcurrency(cores, shards int) int {
	return max(store.DefaultCompactionConcurrency, cores/max(shards, 1))
}

// storeOptions are the options of a shard's store in dir.
func storeOptions(cfg *Config, cache *pebble.Cache, dir string, logger *zap.Logger) store.Options {
	return store.Options{
		Dir: dir, Cache: cache, MemTableSize: uint64(cfg.MemTableSize()), NoSyncPacing: !cfg.SyncPacing,
		DocCacheSize: cfg.ShardDocCacheSize(),
		DiskReserve:  storeReserve(cfg.DiskReserve), DiskReservePercent: storeReserve(cfg.DiskReservePercent),
		CompactionConcurrency: compactionConcurrency(runtime.GOMAXPROCS(0), cfg.Shards),
		Logger:                logger,
	}
}
