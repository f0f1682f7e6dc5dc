package crud

import (
	"cmp"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/vector"
)

// VectorShardPart is what one shard's part of a $vectorSearch did: the vectors it compared
// and the hits it found (at most limit), which the router merged by score.
type VectorShardPart struct {
	Shard    int
	Examined int64
	Found    int
}

// addParts records shards' parts of the search (this node's, or another's reply).
func (s *vectorSearchStage) addParts(parts ...VectorShardPart) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parts = append(s.parts, parts...)
}

// AppendVectorParts appends parts as an array of {shard, examined, found} under key.
func AppendVectorParts(out []byte, key string, parts []VectorShardPart) []byte {
	aidx, out := bsoncore.AppendArrayElementStart(out, key)
	for i, p := range parts {
		d := bsoncore.NewDocumentBuilder().AppendInt32("shard", int32(p.Shard)).
			AppendInt64("examined", p.Examined).AppendInt32("found", int32(p.Found)).Build()
		out = bsoncore.AppendDocumentElement(out, strconv.Itoa(i), d)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	return out
}

// decodeVectorParts reads what AppendVectorParts wrote (nothing from a node that sent none).
func decodeVectorParts(v bsoncore.Value) []VectorShardPart {
	arr, _ := v.ArrayOK()
	vals, _ := arr.Values()
	out := make([]VectorShardPart, 0, len(vals))
	for _, x := range vals {
		d, ok := x.DocumentOK()
		if !ok {
			continue
		}
		shard, _ := d.Lookup("shard").AsInt64OK()
		examined, _ := d.Lookup("examined").AsInt64OK()
		found, _ := d.Lookup("found").AsInt64OK()
		out = append(out, VectorShardPart{Shard: int(shard), Examined: examined, Found: int(found)})
	}
	return out
}

// appendVectorSearchExplain appends, for explain of a pipeline starting with $vectorSearch,
// how mongos splits it and each shard's part: splitPipeline (the search on each shard; the
// merge of the shards' best by score, the limit and the later stages on the router) and
// shards.<name> {host, stages: [{$vectorSearch: {…spec, explain}}]}, where explain tells the
// search (an HNSW walk of numCandidates × Oversample candidates, or exact), the vectors it
// compared and the hits it found. The search ran (OpenSource) on this node's shards and, in
// cluster mode, on the owners of the others, which answered their parts. ok is false when p
// does not start with $vectorSearch.
func (h *Handlers) appendVectorSearchExplain(out []byte, p *agg.Pipeline) ([]byte, bool) {
	vs, ok := p.FirstStage().(*vectorSearchStage)
	if !ok {
		return out, false
	}
	spec, _ := vs.raw.DocumentOK()
	sidx, o := bsoncore.AppendDocumentElementStart(out, "splitPipeline")
	o = explainStages(o, "shardsPart", agg.StageSpec("$vectorSearch", vs.raw))
	merge := bsoncore.NewDocumentBuilder().AppendDocument("$mergeCursors", bsoncore.NewDocumentBuilder().
		AppendDocument("sort", bsoncore.NewDocumentBuilder().AppendInt32("$vectorSearchScore", -1).Build()).Build()).Build()
	limit := bsoncore.NewDocumentBuilder().AppendInt64("$limit", int64(vs.q.Limit)).Build()
	merger := []bsoncore.Document{merge, limit}
	for _, st := range p.Stages[1:] {
		merger = append(merger, st.Spec())
	}
	o = explainStages(o, "mergerPart", merger...)
	out, _ = bsoncore.AppendDocumentEnd(o, sidx)
	vs.mu.Lock()
	parts := slices.Clone(vs.parts)
	vs.mu.Unlock()
	slices.SortFunc(parts, func(a, b VectorShardPart) int { return cmp.Compare(a.Shard, b.Shard) })
	hidx, o := bsoncore.AppendDocumentElementStart(out, "shards")
	for _, part := range parts {
		pidx, x := bsoncore.AppendDocumentElementStart(o, catalog.ShardName(part.Shard))
		x = bsoncore.AppendStringElement(x, "host", h.shardConnString(part.Shard))
		st := bsoncore.NewDocumentBuilder().AppendDocument("$vectorSearch", appendVectorPart(spec, vs, part)).Build()
		x = explainStages(x, "stages", st)
		o, _ = bsoncore.AppendDocumentEnd(x, pidx)
	}
	out, _ = bsoncore.AppendDocumentEnd(o, hidx)
	return out, true
}

// appendVectorPart returns the $vectorSearch spec with the shard's explain appended.
func appendVectorPart(spec bsoncore.Document, vs *vectorSearchStage, part VectorShardPart) bsoncore.Document {
	d := append([]byte(nil), spec[:len(spec)-1]...)
	eidx, e := bsoncore.AppendDocumentElementStart(d, "explain")
	if vs.q.Exact {
		e = bsoncore.AppendStringElement(e, "type", "exact")
	} else {
		e = bsoncore.AppendStringElement(e, "type", "hnsw")
		e = bsoncore.AppendInt64Element(e, "candidates", int64(vs.q.NumCandidates*vector.Oversample))
	}
	e = bsonx.AppendNumber(e, "vectorsExamined", part.Examined)
	e = bsonx.AppendNumber(e, "nReturned", int64(part.Found))
	d, _ = bsoncore.AppendDocumentEnd(e, eidx)
	d = append(d, 0)
	bsoncore.UpdateLength(d, 0, int32(len(d)))
	return d
}

// explainStages appends the documents as an array under key.
func explainStages(out []byte, key string, docs ...bsoncore.Document) []byte {
	aidx, out := bsoncore.AppendArrayElementStart(out, key)
	for i, d := range docs {
		out = bsoncore.AppendDocumentElement(out, strconv.Itoa(i), d)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	return out
}
