package crud

import (
	"context"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// collStatsStage is $collStats: one document per shard that owns partitions of the
// collection, as mongos answers it (mongosh's getShardDistribution reads it). It reads
// statistics, never documents.
type collStatsStage struct {
	raw          bsoncore.Document
	env          *agg.Env
	e            *Handlers
	storageScale int64 // 0: no storageStats
	count        bool
	latency      bool
	queryExec    bool
}

// parseCollStatsStage parses {$collStats: {latencyStats?, storageStats?, count?, queryExecStats?}}.
func (h *Handlers) parseCollStatsStage(env *agg.Env, _ string, arg bsoncore.Value) (agg.Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location5447000, "$collStats must take a nested object but found: %s", bsonx.ShellString(arg))
	}
	s := &collStatsStage{raw: d, env: env, e: h}
	elems, _ := d.Elements()
	for _, el := range elems {
		sub, ok := el.Value().DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$collStats.%s' is the wrong type '%s', expected type 'object'",
				el.Key(), bsonx.TypeName(el.Value().Type))
		}
		switch el.Key() {
		case "storageStats":
			s.storageScale = 1
			if v := sub.Lookup("scale"); v.Type != 0 {
				n, ok := agg.WholeNumber(v)
				if !ok || n < 1 {
					return nil, mongoerr.New(mongoerr.Location51024, "BSON field 'scale' value must be >= 1, actual value '%s'", bsonx.ShellString(v))
				}
				s.storageScale = n
			}
		case "count":
			s.count = true
		case "latencyStats":
			s.latency = true
		case "queryExecStats":
			s.queryExec = true
		default:
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field '$collStats.%s' is an unknown field.", el.Key())
		}
	}
	return s, nil
}

// Open implements agg.Stage; the stage is a source (OpenSource), so it only runs first.
func (s *collStatsStage) Open(stream.Stream) (stream.Stream, error) {
	return nil, mongoerr.New(mongoerr.Location40602, "$collStats is only valid as the first stage in a pipeline")
}

// Spec implements agg.Stage.
func (s *collStatsStage) Spec() bsoncore.Document {
	return agg.StageSpec("$collStats", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: s.raw})
}

// OpenSource produces the stage's documents for collection ci (nil: it does not exist).
func (s *collStatsStage) OpenSource(ci *catalog.Coll) (stream.Stream, error) {
	e := s.e
	ns := s.env.DB + "." + s.env.Coll
	if ci == nil {
		if s.storageScale > 0 || s.count {
			what := "storageStats"
			if s.storageScale == 0 {
				what = "count"
			}
			return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Unable to retrieve %s in $collStats stage :: caused by :: Collection [%s] not found.", what, ns)
		}
		return &stream.Slice{Docs: []bsoncore.Document{s.shardDoc(ns, 0, nil, nil)}}, nil
	}
	var docs []bsoncore.Document
	per, err := e.Route.OwnedSizes(context.Background(), ci)
	if err != nil {
		return nil, err
	}
	for shardIdx, sz := range per {
		if sz == nil {
			continue
		}
		docs = append(docs, s.shardDoc(ns, shardIdx, sz, ci.Meta))
	}
	return &stream.Slice{Docs: docs}, nil
}

// shardDoc is the stage's document for one shard.
func (s *collStatsStage) shardDoc(ns string, shardIdx int, sz *route.CollSizes, c *store.Collection) bsoncore.Document {
	e := s.e
	b := bsoncore.NewDocumentBuilder().AppendString("ns", ns).
		AppendString("shard", sharding.Name(shardIdx)).
		AppendString("host", sharding.Name(shardIdx)+"/"+e.ListenAddr()).
		AppendDateTime("localTime", time.Now().UnixMilli())
	if s.latency {
		op := func() bsoncore.Document {
			return bsoncore.NewDocumentBuilder().AppendInt64("latency", 0).AppendInt64("ops", 0).
				AppendInt64("queryableEncryptionLatencyMicros", 0).Build()
		}
		b.AppendDocument("latencyStats", bsoncore.NewDocumentBuilder().AppendDocument("reads", op()).
			AppendDocument("writes", op()).AppendDocument("commands", op()).AppendDocument("transactions", op()).Build())
	}
	if s.storageScale > 0 && sz != nil {
		b.AppendDocument("storageStats", appendStorageStats(nil, sz, c, s.storageScale))
	}
	if s.count && sz != nil {
		if sz.Count <= math.MaxInt32 {
			b.AppendInt32("count", int32(sz.Count))
		} else {
			b.AppendInt64("count", sz.Count)
		}
	}
	if s.queryExec {
		b.AppendDocument("queryExecStats", bsoncore.NewDocumentBuilder().AppendDocument("collectionScans",
			bsoncore.NewDocumentBuilder().AppendInt64("total", 0).AppendInt64("nonTailable", 0).Build()).Build())
	}
	return b.Build()
}

// appendStorageStats builds a storageStats document (the fields collStats answers, without
// ns and sharded) for sizes sz of collection c, scaled.
func appendStorageStats(dst []byte, sz *route.CollSizes, c *store.Collection, scale int64) bsoncore.Document {
	idx, out := bsoncore.AppendDocumentStart(dst)
	out = route.AppendStorageFields(out, sz, c, scale)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}
