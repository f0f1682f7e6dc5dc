package crud

import (
	"context"

	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// serverStages are the aggregation stages the executor provides to pipelines (agg.Host):
// those that write, report on the server or list its sessions.
var serverStages = map[string]func(e *Handlers) agg.StageParser{
	"$out":               func(*Handlers) agg.StageParser { return parseOutStage },
	"$merge":             func(*Handlers) agg.StageParser { return parseMergeStage },
	"$currentOp":         func(e *Handlers) agg.StageParser { return e.ParseCurrentOpStage },
	"$listLocalSessions": func(e *Handlers) agg.StageParser { return e.ParseListLocalSessionsStage },
	"$listSessions":      func(e *Handlers) agg.StageParser { return e.ParseListSessionsStage },
	// refused as MongoDB 7.0 does without Atlas (search_index.go)
	"$listSearchIndexes": func(*Handlers) agg.StageParser { return parseListSearchIndexesStage },
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
	_ agg.Collectionless = (*CurrentOpStage)(nil)
	_ agg.Collectionless = (*ListLocalSessionsStage)(nil)
)

// parseListSearchIndexesStage refuses $listSearchIndexes as MongoDB 7.0 Community does,
// whatever its argument.
func parseListSearchIndexesStage(_ *agg.Env, _ string, _ bsoncore.Value) (agg.Stage, error) {
	return nil, mongoerr.New(mongoerr.Location6047401, "$listSearchIndexes stage is only allowed on MongoDB Atlas")
}

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
