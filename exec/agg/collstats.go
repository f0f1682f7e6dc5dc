package agg

import (
	"context"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// collStatsStage is $collStats: one document per shard that owns partitions of the
// collection, as mongos answers it (mongosh's getShardDistribution reads it). It reads
// statistics, never documents.
type collStatsStage struct {
	raw          bsoncore.Document
	env          *Env
	storageScale int64 // 0: no storageStats
	count        bool
	latency      bool
	queryExec    bool
}

// parseCollStatsStage parses {$collStats: {latencyStats?, storageStats?, count?, queryExecStats?}}.
func parseCollStatsStage(env *Env, name string, arg bsoncore.Value) (Stage, error) {
	if env.Host == nil {
		return nil, noHost(name)
	}
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location5447000, "$collStats must take a nested object but found: %s", bsonx.ShellString(arg))
	}
	s := &collStatsStage{raw: d, env: env}
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
				n, ok := WholeNumber(v)
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

// Open implements Stage; the stage is a source (OpenSource), so it only runs first.
func (s *collStatsStage) Open(stream.Stream) (stream.Stream, error) {
	return nil, mongoerr.New(mongoerr.Location40602, "$collStats is only valid as the first stage in a pipeline")
}

// Spec implements Stage.
func (s *collStatsStage) Spec() bsoncore.Document {
	return StageSpec("$collStats", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: s.raw})
}

// OpenSource produces the stage's documents for collection ci (nil: it does not exist).
func (s *collStatsStage) OpenSource(ci *catalog.Coll) (stream.Stream, error) {
	ns := s.env.DB + "." + s.env.Coll
	if ci == nil {
		if s.storageScale > 0 || s.count {
			what := "storageStats"
			if s.storageScale == 0 {
				what = "count"
			}
			return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Unable to retrieve %s in $collStats stage :: caused by :: Collection [%s] not found.", what, ns)
		}
		return &stream.Slice{Docs: []bsoncore.Document{s.shardDoc(ns, 0, nil)}}, nil
	}
	var docs []bsoncore.Document
	per, err := s.env.Host.CollStats(context.Background(), ci)
	if err != nil {
		return nil, err
	}
	for i := range per {
		docs = append(docs, s.shardDoc(ns, per[i].Shard, &per[i]))
	}
	return &stream.Slice{Docs: docs}, nil
}

// shardDoc is the stage's document for one shard.
func (s *collStatsStage) shardDoc(ns string, shardIdx int, sz *ShardStats) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("ns", ns).
		AppendString("shard", catalog.ShardName(shardIdx)).
		AppendString("host", catalog.ShardName(shardIdx)+"/"+s.env.Host.HostName()).
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
		idx, out := bsoncore.AppendDocumentStart(nil)
		out = sz.Storage(out, s.storageScale)
		out, _ = bsoncore.AppendDocumentEnd(out, idx)
		b.AppendDocument("storageStats", out)
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

// ShardStats is one shard's part of a collection, as $collStats reports it: the shard, its
// documents, and the writer of its storageStats fields (the fields collStats answers,
// without ns and sharded), scaled.
type ShardStats struct {
	Shard   int
	Count   int64
	Storage func(dst []byte, scale int64) []byte
}

// noHost is the error of a stage only a server runs, parsed without one (a pipeline of
// agg's own tests): the stage is unknown there.
func noHost(name string) error {
	return mongoerr.New(mongoerr.Location40324, "Unrecognized pipeline stage name: '%s'", name)
}
