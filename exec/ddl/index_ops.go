package ddl

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Build adds todo to collection c and fills them from the existing documents. The
// indexes enter the catalog not ready: the planner ignores them while writers maintain them
// (collInfo.writeIndexes). After a barrier, every write still to come maintains them, so the
// build only has to index the documents of a snapshot taken then (index_build.go). On
// failure (a duplicate key), the indexes and their entries are removed.
func (x *Runner) Build(ctx context.Context, c *store.Collection, todo []store.Index) error {
	var ids []store.IndexID
	db, name := c.DB, c.Name
	builder := x.nodeName()
	c, err := x.cat.Store().UpdateCollection(db, name, func(c *store.Collection) error {
		for _, x := range todo {
			if c.NextIndexID == 0 {
				c.NextIndexID = store.IDIndexID + 1
			}
			x.ID, x.Ready, x.Builder = c.NextIndexID, false, builder
			c.NextIndexID++
			ids = append(ids, x.ID)
			c.Indexes = append(c.Indexes, x)
		}
		return nil
	})
	if err != nil {
		return catalog.ChangeError(err, db, name)
	}
	if x.afterStart != nil {
		x.afterStart()
	}
	x.cat.Barrier()
	if err := x.fillIndexes(ctx, c, ids); err != nil {
		x.Abort(c, ids)
		return buildFailed(c, err)
	}
	_, err = x.cat.Store().UpdateCollection(c.DB, c.Name, func(c *store.Collection) error {
		found := 0
		for i := range c.Indexes {
			if ContainsID(ids, c.Indexes[i].ID) {
				c.Indexes[i].Ready = true
				found++
			}
		}
		if found < len(ids) {
			// NB: in cluster mode the partition manager took this node for gone (its
			// lease expired) and removed the build (AbortOrphaned).
			return mongoerr.New(mongoerr.IndexBuildAborted, "Index build aborted: the index was removed while it was being built")
		}
		return nil
	})
	if mongoerr.As(err) != nil {
		x.Abort(c, ids)
		return err
	}
	if err != nil {
		x.Abort(c, ids)
		return catalog.ChangeError(err, c.DB, c.Name)
	}
	for _, spec := range todo {
		x.log.Info("index built", zap.String("ns", c.DB+"."+c.Name), zap.String("index", spec.Name))
	}
	return nil
}

// Abort removes the unfinished indexes ids of c from the catalog and deletes their
// entries on every shard.
func (x *Runner) Abort(c *store.Collection, ids []store.IndexID) {
	_, err := x.cat.Store().UpdateCollection(c.DB, c.Name, func(c *store.Collection) error {
		kept := c.Indexes[:0]
		for _, x := range c.Indexes {
			if !ContainsID(ids, x.ID) {
				kept = append(kept, x)
			}
		}
		c.Indexes = kept
		return nil
	})
	if err != nil {
		x.log.Error("cannot remove a failed index build from the catalog", zap.String("ns", c.DB+"."+c.Name), zap.Error(err))
		return
	}
	x.DeleteIndexData(c, ids)
}

// DeleteIndexData deletes the entries of indexes ids of c on every shard, once the writers
// that may still maintain them are done: this node's here, the other nodes' through Peers
// (a failure there is logged; the entries of an index that no longer exists are only
// space, never read).
func (x *Runner) DeleteIndexData(c *store.Collection, ids []store.IndexID) {
	x.DeleteLocalIndexData(c, ids)
	if x.peers == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := x.onOtherNodes(ctx, c, "delete", ids); err != nil {
		x.log.Warn("cannot delete index entries on another node", zap.String("ns", c.DB+"."+c.Name), zap.Error(err))
	}
}

// DeleteLocalIndexData deletes the entries of indexes ids of c on this node's shards, once
// the writers that may still maintain them are done.
func (x *Runner) DeleteLocalIndexData(c *store.Collection, ids []store.IndexID) {
	x.cat.Barrier()
	for s, db := range x.cat.Shards() {
		if _, remote := db.Node(); remote {
			continue
		}
		b := db.NewBatch()
		for _, id := range ids {
			b.DeleteIndexData(c.ID, id)
		}
		if err := b.Commit(true); err != nil {
			x.log.Error("cannot delete index entries", zap.String("ns", c.DB+"."+c.Name), zap.Int("shard", s), zap.Error(err))
		}
		b.Close()
	}
}
