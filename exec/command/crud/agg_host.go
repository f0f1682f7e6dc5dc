package crud

import (
	"context"
	"errors"

	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
	"go.uber.org/zap"
)

// serverStages are the aggregation stages the executor provides to pipelines (agg.Host):
// those that write, report on the server or list its sessions.
var serverStages = map[string]func(e *Handlers) agg.StageParser{
	"$currentOp":         func(e *Handlers) agg.StageParser { return e.ParseCurrentOpStage },
	"$listLocalSessions": func(e *Handlers) agg.StageParser { return e.ParseListLocalSessionsStage },
	"$listSessions":      func(e *Handlers) agg.StageParser { return e.ParseListSessionsStage },
	"$listSearchIndexes": func(e *Handlers) agg.StageParser { return e.parseListSearchIndexesStage },
	"$vectorSearch":      func(e *Handlers) agg.StageParser { return e.parseVectorSearchStage },
	"$shardedDataDistribution": func(e *Handlers) agg.StageParser {
		return e.parseDataDistributionStage
	},
}

// StageParser implements agg.Host.
func (h *Handlers) StageParser(name string) agg.StageParser {
	if f := serverStages[name]; f != nil {
		return f(h)
	}
	return nil
}

// The server's stages implement agg's optional interfaces; these fail to compile if a
// method's name or signature drifts (an unexported method never satisfies them).
var (
	_ agg.SourceStage    = (*ListSessionsStage)(nil)
	_ agg.SourceStage    = (*vectorSearchStage)(nil)
	_ agg.ScoredSource   = (*vectorSearchStage)(nil)
	_ agg.SourceStage    = (*listSearchIndexesStage)(nil)
	_ agg.Collectionless = (*CurrentOpStage)(nil)
	_ agg.Collectionless = (*ListLocalSessionsStage)(nil)
	_ agg.Collectionless = (*DataDistributionStage)(nil)
)

// HostName implements agg.Host: the address the server listens on.
func (h *Handlers) HostName() string { return h.ListenAddr() }

// IndexUse implements agg.Host.
func (h *Handlers) IndexUse() *catalog.IndexUsage { return &h.Server.IndexUse }

// CollStats implements agg.Host: the sizes of ci on each shard owning its partitions, this
// node's measured here and the other nodes' by them.
func (h *Handlers) CollStats(ctx context.Context, ci *catalog.Coll) ([]agg.ShardStats, error) {
	per, err := h.Route.OwnedSizes(ctx, ci)
	if err != nil {
		return nil, err
	}
	var out []agg.ShardStats
	for shard, sz := range per {
		if sz == nil {
			continue
		}
		out = append(out, agg.ShardStats{Shard: shard, Count: sz.Count, Storage: func(dst []byte, scale int64) []byte {
			return route.AppendStorageFields(dst, sz, ci.Meta, scale)
		}})
	}
	return out, nil
}

// WritePath implements agg.Host: the server's write path.
func (h *Handlers) WritePath() *write.Path { return h.Write }

// Written implements agg.Host.
func (h *Handlers) Written(inserted, updated int64) {
	h.Counters.InsertedDocs.Add(inserted)
	h.Counters.UpdatedDocs.Add(updated)
}

// CreateTempCollection implements agg.Host.
func (h *Handlers) CreateTempCollection(c store.Collection) (*catalog.Coll, error) {
	unlock := h.Cat.LockDDL()
	slot := h.ReserveChange(c.DB)
	created, err := h.Storage.Catalog.CreateCollection(c)
	if err == nil {
		slot.Record(command.CreateEvent(created)) // MongoDB's $out creates it with a create command
	} else {
		slot.Release()
	}
	unlock()
	if err != nil {
		return nil, catalog.ChangeError(err, c.DB, c.Name)
	}
	return h.Cat.Info(created)
}

// ReplaceCollection implements agg.Host.
func (h *Handlers) ReplaceCollection(tmp *store.Collection, db, coll string, check func(cur *store.Collection) error) error {
	unlock := h.Cat.LockDDL()
	defer unlock()
	if err := check(h.Storage.Catalog.State().Collection(db, coll)); err != nil {
		return err
	}
	slot := h.ReserveChange(tmp.DB, db)
	renamed, dropped, err := h.Storage.Catalog.RenameCollection(tmp.DB, tmp.Name, db, coll, true)
	if err != nil {
		slot.Release()
		return catalog.ChangeError(err, db, coll)
	}
	if dropped != nil {
		h.Cat.DeleteData(dropped)
	}
	slot.Record(command.RenameEvent(tmp.DB, tmp.Name, renamed, dropped)) // a stream on the target sees it, then invalidates
	h.Log.Info("$out replaced collection", zap.String("ns", db+"."+coll))
	return nil
}

// DropTempCollection implements agg.Host: a failure is logged, and the data left behind is
// an orphan the next start removes.
func (h *Handlers) DropTempCollection(c *store.Collection) {
	unlock := h.Cat.LockDDL()
	defer unlock()
	dropped, err := h.Storage.Catalog.DropCollection(c.DB, c.Name)
	if errors.Is(err, store.ErrNotFound) {
		return
	}
	if err != nil {
		h.Log.Warn("cannot drop a temporary $out collection", zap.String("ns", c.DB+"."+c.Name), zap.Error(err))
		return
	}
	h.RecordDrop(dropped)
	h.Cat.DeleteData(dropped)
}
