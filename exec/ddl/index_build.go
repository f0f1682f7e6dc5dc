package ddl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
)

// buildBatchDocs is how many documents an index build indexes per batch (and per set of
// key locks, so that writers wait at most one batch).
const buildBatchDocs = 256

// buildDoc is one document of the build's snapshot.
type buildDoc struct {
	hash uint64
	id   []byte
	doc  []byte
}

// fillIndexes writes the entries of the not-ready indexes ids of c for every document of
// every shard: this node's here, the other nodes' through Peers (cluster mode), each
// node on its own shards.
func (x *Runner) fillIndexes(ctx context.Context, c *store.Collection, ids []store.IndexID) error {
	if err := x.FillLocal(ctx, c, ids); err != nil {
		return err
	}
	if x.peers == nil {
		return nil
	}
	return x.onOtherNodes(ctx, c, "build", ids)
}

// FillLocal writes the entries of the not-ready indexes ids of c for every document of
// this node's shards, except those of partitions now on another node's shard (a partition
// moved to another node: its source range here awaits deletion, and that node indexes its
// copy; a move holds the DDL lock of both its nodes). Between this node's own shards
// nothing is skipped, as before moves between nodes: a document of a partition being moved
// between two local shards is indexed on both, and the copy that is retired takes its
// entries with it (skipping by the map lost entries: TestKillMixedWorkload). Ownership is
// read from the catalog as it is when each shard's snapshot is taken.
//
// Why no write is lost: the indexes are in the catalog (not ready) and a barrier has passed,
// so every write committed after the snapshot maintains them itself. The build therefore
// indexes only the documents of the snapshot, and only those still unchanged: under each
// document's key lock it re-reads the document and skips it if a writer changed or deleted
// it since (that writer already did, or undid, its entries). Unique keys are checked
// against the entries already written, the writers' included, under their key locks.
func (x *Runner) FillLocal(ctx context.Context, c *store.Collection, ids []store.IndexID) error {
	ci, err := x.cat.Info(c)
	if err != nil {
		return err
	}
	var building []*catalog.Index
	for _, xi := range ci.WriteIndexes {
		if ContainsID(ids, xi.Meta.ID) {
			building = append(building, xi)
		}
	}
	for s, sh := range x.cat.Shards() {
		if _, remote := sh.Node(); remote {
			continue
		}
		if err := x.fillShard(ctx, ci, building, s); err != nil {
			return err
		}
	}
	return nil
}

// fillShard indexes the documents shard s holds of ci.
func (x *Runner) fillShard(ctx context.Context, ci *catalog.Coll, building []*catalog.Index, s int) error {
	snap, err := x.cat.Shards()[s].NewSnapshot()
	if err != nil {
		return catalog.StoreError(err)
	}
	defer func() { _ = snap.Close() }()
	owner := ci.Map
	if cur, err := x.cat.Lookup(ci.Meta.DB, ci.Meta.Name); err == nil && cur != nil && cur.Meta.ID == ci.Meta.ID {
		owner = cur.Map
	}
	it, err := snap.NewDocIter(ci.Meta.ID, 0, 0)
	if err != nil {
		return catalog.StoreError(err)
	}
	defer func() { _ = it.Close() }()
	var batch []buildDoc
	shards := x.cat.Shards()
	for it.Next() {
		if _, remote := shards[owner.Partition(owner.Locate(it.Hash())).Shard].Node(); remote {
			continue // a partition moved to another node: its source range, deleted after its grace period
		}
		batch = append(batch, buildDoc{
			hash: it.Hash(),
			id:   append([]byte(nil), it.ID()...),
			doc:  append([]byte(nil), it.Doc()...),
		})
		if len(batch) == buildBatchDocs {
			if err := x.fillBatch(ctx, ci, building, s, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := it.Err(); err != nil {
		return catalog.StoreError(err)
	}
	return x.fillBatch(ctx, ci, building, s, batch)
}

// fillBatch indexes one batch of snapshot documents under their key locks.
func (x *Runner) fillBatch(ctx context.Context, ci *catalog.Coll, building []*catalog.Index, s int, docs []buildDoc) error {
	if len(docs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var hashes []uint64
	if ci.Capped != nil { // a capped collection's writers may delete any document (eviction)
		hashes = append(hashes, write.CappedLockHash(ci.Meta.ID))
	}
	for _, d := range docs {
		hashes = append(hashes, write.DocLockHash(ci.Meta.ID, d.id))
		for _, xi := range building {
			if xi.Unique {
				_ = xi.Keys(d.doc, func(key []byte) error {
					hashes = append(hashes, write.UniqueLockHash(ci.Meta.ID, xi.Meta.ID, key))
					return nil
				})
			}
		}
	}
	unlock, err := x.cat.Locks().LockManyCtx(ctx, hashes)
	if err != nil {
		return err
	}
	defer unlock()
	db := x.cat.Shards()[s]
	b := db.NewBatch()
	defer b.Close()
	staged := map[string][]byte{} // unique keys this batch gives: index|key → _id
	multikey := map[store.IndexID][]string{}
	for _, d := range docs {
		cur, err := db.GetDoc(ci.Meta.ID, d.hash, d.id, nil)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return catalog.StoreError(err)
		}
		if !bytes.Equal(cur, d.doc) {
			continue // changed since the snapshot: its writer maintained the index
		}
		for _, xi := range building {
			if err := x.indexDoc(b, ci, xi, d, staged); err != nil {
				return err
			}
			for _, p := range xi.NewMultikeyPaths(d.doc) {
				if !slices.Contains(multikey[xi.Meta.ID], p) {
					multikey[xi.Meta.ID] = append(multikey[xi.Meta.ID], p)
				}
			}
		}
	}
	// The flags go first, as a writer's do (write.Writer.Commit), so the index is never
	// ready without them.
	for idx, paths := range multikey {
		if err := x.cat.MarkMultikey(ci.Meta.ID, idx, paths); err != nil {
			return catalog.StoreError(err)
		}
	}
	return catalog.StoreError(b.Commit(true))
}

// indexDoc stages the entries of document d in index xi, failing with E11000 if a unique key
// is already held by another document.
func (x *Runner) indexDoc(b catalog.Batch, ci *catalog.Coll, xi *catalog.Index, d buildDoc, staged map[string][]byte) error {
	db := x.cat.Shards()[ci.Map.Partition(ci.Map.Locate(d.hash)).Shard]
	return xi.Keys(d.doc, func(key []byte) error {
		if xi.Unique {
			sk := fmt.Sprintf("%d|%s", xi.Meta.ID, key)
			if holder, ok := staged[sk]; ok && !bytes.Equal(holder, d.id) {
				return x.write.NewWriter(ci).DupKeyError(xi, d.doc)
			}
			_, id, found, err := db.HasIndexKeyPrefix(ci.Meta.ID, xi.Meta.ID, key)
			if err != nil {
				return catalog.StoreError(err)
			}
			if found && !bytes.Equal(id, d.id) {
				return x.write.NewWriter(ci).DupKeyError(xi, d.doc)
			}
			staged[sk] = d.id
		}
		b.SetIndex(ci.Meta.ID, xi.Meta.ID, key, d.hash, d.id)
		return nil
	})
}
