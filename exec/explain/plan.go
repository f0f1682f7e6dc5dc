package explain

import (
	"strconv"
	"time"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// AppendWinningPlan appends winningPlan in mongos' shape: SINGLE_SHARD, SHARD_MERGE or
// SHARD_MERGE_SORT over the per-shard plans (each under stage root, when not ""), with the
// partitions targeted.
func AppendWinningPlan(out []byte, q *query.Query, p *query.Plan, shards []*query.ShardStream, ns, root string, hosts Hosts) []byte {
	stage := "SINGLE_SHARD"
	switch {
	case len(shards) > 1 && len(q.Sort) > 0 && p.Sorted:
		stage = "SHARD_MERGE_SORT"
	case len(shards) > 1:
		stage = "SHARD_MERGE"
	}
	idx, out := bsoncore.AppendDocumentElementStart(out, "winningPlan")
	out = bsoncore.AppendStringElement(out, "stage", stage)
	aidx, out := bsoncore.AppendArrayElementStart(out, "shards")
	for i, s := range shards {
		sidx, o := bsoncore.AppendDocumentElementStart(out, strconv.Itoa(i))
		o = bsoncore.AppendStringElement(o, "shardName", "shard-"+strconv.Itoa(s.Shard))
		o = bsoncore.AppendStringElement(o, "connectionString", hosts(s.Shard))
		o = bsoncore.AppendStringElement(o, "namespace", ns)
		o = AppendPartitions(o, s)
		o = AppendShardPlan(o, q, p, root)
		out, _ = bsoncore.AppendDocumentEnd(o, sidx)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// AppendPartitions appends the partitions a shard's part of the query reads: id and hash
// range, and the shard-key hashes read within it when the query fixes the shard key, or the
// hash ranges read within it (shardKeyRanges) when it fixes a hierarchical key's prefix.
func AppendPartitions(out []byte, s *query.ShardStream) []byte {
	aidx, out := bsoncore.AppendArrayElementStart(out, "partitions")
	for i, pr := range s.PartitionsRead() {
		pidx, o := bsoncore.AppendDocumentElementStart(out, strconv.Itoa(i))
		o = bsoncore.AppendInt64Element(o, "id", int64(pr.ID))
		o = bsoncore.AppendInt64Element(o, "min", int64(pr.Lo))
		o = bsoncore.AppendInt64Element(o, "max", int64(pr.Hi))
		if pr.Hashes != nil {
			hidx, h := bsoncore.AppendArrayElementStart(o, "shardKeyHashes")
			for j, x := range pr.Hashes {
				h = bsoncore.AppendInt64Element(h, strconv.Itoa(j), int64(x))
			}
			o, _ = bsoncore.AppendArrayEnd(h, hidx)
		}
		if pr.Spans != nil {
			o = appendSpans(o, pr.Spans)
		}
		out, _ = bsoncore.AppendDocumentEnd(o, pidx)
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	return out
}

// appendSpans appends shardKeyRanges: [{min, max}, ...], the hash ranges a query fixing a
// hierarchical key's prefix reads in one partition (max 0 is the end of the hash space, as a
// partition's max is).
func appendSpans(o []byte, spans [][2]uint64) []byte {
	sidx, o := bsoncore.AppendArrayElementStart(o, "shardKeyRanges")
	for j, r := range spans {
		ridx, d := bsoncore.AppendDocumentElementStart(o, strconv.Itoa(j))
		d = bsoncore.AppendInt64Element(d, "min", int64(r[0]))
		d = bsoncore.AppendInt64Element(d, "max", int64(r[1]))
		o, _ = bsoncore.AppendDocumentEnd(d, ridx)
	}
	o, _ = bsoncore.AppendArrayEnd(o, sidx)
	return o
}

// The stages explain puts above a shard's plan (AppendShardPlan's root): none, count's COUNT,
// or, for a count of the whole collection answered from its counters, COUNT over
// RECORD_STORE_FAST_COUNT in place of the plan.
const (
	RootCount     = "COUNT"
	RootFastCount = "RECORD_STORE_FAST_COUNT"
)

// AppendShardPlan appends one shard's winningPlan: the stage tree mongod would report, under
// stage root when it is not "" (RootCount, RootFastCount).
func AppendShardPlan(out []byte, q *query.Query, p *query.Plan, root string) []byte {
	if root == RootFastCount {
		idx, o := bsoncore.AppendDocumentElementStart(out, "winningPlan")
		o = bsoncore.AppendStringElement(o, "stage", RootCount)
		iidx, o := bsoncore.AppendDocumentElementStart(o, "inputStage")
		o = bsoncore.AppendStringElement(o, "stage", RootFastCount)
		o, _ = bsoncore.AppendDocumentEnd(o, iidx)
		o, _ = bsoncore.AppendDocumentEnd(o, idx)
		return o
	}
	stages := shardStages(q, p, root)
	var build func(dst []byte, key string, i int) []byte
	build = func(dst []byte, key string, i int) []byte {
		idx, o := bsoncore.AppendDocumentElementStart(dst, key)
		o = bsoncore.AppendStringElement(o, "stage", stages[i].name)
		if stages[i].extra != nil {
			o = stages[i].extra(o)
		}
		if i+1 < len(stages) {
			o = build(o, "inputStage", i+1)
		}
		o, _ = bsoncore.AppendDocumentEnd(o, idx)
		return o
	}
	return build(out, "winningPlan", 0)
}

// stage is one stage of a shard's plan tree: its name and the fields it adds.
type stage struct {
	name  string
	extra func([]byte) []byte
}

// shardStages returns the stages of a shard's plan of q, outermost first: root, projection,
// limit, skip, a blocking sort, then the access path.
func shardStages(q *query.Query, p *query.Plan, root string) []stage {
	var stages []stage
	if root != "" {
		stages = append(stages, stage{name: root})
	}
	if q.Proj != nil {
		stages = append(stages, stage{name: "PROJECTION_DEFAULT"})
	}
	if q.Limit > 0 {
		n := q.Limit
		stages = append(stages, stage{name: "LIMIT", extra: func(o []byte) []byte {
			return bsonx.AppendNumber(o, "limitAmount", n)
		}})
	}
	if q.Skip > 0 {
		n := q.Skip
		stages = append(stages, stage{name: "SKIP", extra: func(o []byte) []byte {
			return bsonx.AppendNumber(o, "skipAmount", n)
		}})
	}
	if len(q.Sort) > 0 && !p.Sorted {
		stages = append(stages, stage{name: "SORT"})
	}
	return append(stages, accessStages(p)...)
}

// accessStages returns the stages of p's access path: IDHACK, [FETCH] IXSCAN (or
// DISTINCT_SCAN, COUNT_SCAN), [FETCH] OR over index scans, EOF or COLLSCAN.
func accessStages(p *query.Plan) []stage {
	switch p.Kind {
	case query.PlanIDs:
		return []stage{{name: "IDHACK"}}
	case query.PlanIndex:
		var stages []stage
		scan := "IXSCAN"
		switch {
		case p.DistinctScan:
			scan = "DISTINCT_SCAN"
			stages = append(stages, stage{name: "FETCH"})
		case p.CountScan():
			scan = "COUNT_SCAN"
		case !p.KeysOnly:
			stages = append(stages, stage{name: "FETCH"})
		}
		return append(stages, stage{name: scan, extra: func(o []byte) []byte {
			return appendIxscan(o, p, p.Index, len(p.Ranges))
		}})
	case query.PlanOr:
		if p.TextOr {
			return []stage{{name: "FETCH"}, {name: "OR", extra: func(o []byte) []byte { return appendTextOr(o, p) }}}
		}
		if p.Text != nil {
			return textStages(p)
		}
		var stages []stage
		if !p.KeysOnly {
			stages = append(stages, stage{name: "FETCH"})
		}
		return append(stages, stage{name: "OR", extra: func(o []byte) []byte { return appendBranches(o, p) }})
	case query.PlanEOF:
		return []stage{{name: "EOF"}}
	}
	return []stage{{name: "COLLSCAN", extra: func(o []byte) []byte {
		return bsoncore.AppendStringElement(o, "direction", "forward")
	}}}
}

// appendBranches appends the inputStages of an OR (or TEXT_OR): an IXSCAN per branch.
func appendBranches(o []byte, p *query.Plan) []byte { return appendScans(o, p, p.Branches) }

// appendScans appends inputStages: an IXSCAN per scan of plan p.
func appendScans(o []byte, p *query.Plan, scans []query.IndexScan) []byte {
	idx, a := bsoncore.AppendArrayElementStart(o, "inputStages")
	for i, b := range scans {
		bidx, x := bsoncore.AppendDocumentElementStart(a, bsonx.ArrayKey(i))
		x = bsoncore.AppendStringElement(x, "stage", "IXSCAN")
		x = appendIxscan(x, p, b.Index, len(b.Ranges))
		a, _ = bsoncore.AppendDocumentEnd(x, bidx)
	}
	o, _ = bsoncore.AppendArrayEnd(a, idx)
	return o
}

// appendTextOr appends the inputStages of the OR of a $text under an $or: the search's
// stages (textStages, over its TextTerms IXSCANs), then an IXSCAN per other branch.
func appendTextOr(o []byte, p *query.Plan) []byte {
	idx, a := bsoncore.AppendArrayElementStart(o, "inputStages")
	stages := textStages(p)
	var build func(dst []byte, key string, i int) []byte
	build = func(dst []byte, key string, i int) []byte {
		sidx, x := bsoncore.AppendDocumentElementStart(dst, key)
		x = bsoncore.AppendStringElement(x, "stage", stages[i].name)
		if i+1 == len(stages) { // TEXT_OR: the term scans
			x = appendScans(x, p, p.Branches[:p.TextTerms])
		} else {
			if stages[i].extra != nil {
				x = stages[i].extra(x)
			}
			x = build(x, "inputStage", i+1)
		}
		dst, _ = bsoncore.AppendDocumentEnd(x, sidx)
		return dst
	}
	a = build(a, "0", 0)
	for i, b := range p.Branches[p.TextTerms:] {
		bidx, x := bsoncore.AppendDocumentElementStart(a, bsonx.ArrayKey(i+1))
		x = bsoncore.AppendStringElement(x, "stage", "IXSCAN")
		x = appendIxscan(x, p, b.Index, len(b.Ranges))
		a, _ = bsoncore.AppendDocumentEnd(x, bidx)
	}
	o, _ = bsoncore.AppendArrayEnd(a, idx)
	return o
}

// textStages returns the stages of a $text plan as MongoDB shows them: TEXT_MATCH (the
// parsed query), FETCH, then TEXT_OR over one IXSCAN per term.
func textStages(p *query.Plan) []stage {
	match := func(o []byte) []byte {
		o = bsoncore.AppendStringElement(o, "indexName", p.Index.Meta.Name)
		terms, negated, phrases, negPhrases := p.Text.Parsed()
		idx, d := bsoncore.AppendDocumentElementStart(o, "parsedTextQuery")
		d = bsonx.AppendStringArray(d, "terms", terms)
		d = bsonx.AppendStringArray(d, "negatedTerms", negated)
		d = bsonx.AppendStringArray(d, "phrases", phrases)
		d = bsonx.AppendStringArray(d, "negatedPhrases", negPhrases)
		o, _ = bsoncore.AppendDocumentEnd(d, idx)
		return bsoncore.AppendInt32Element(o, "textIndexVersion", 3)
	}
	return []stage{{name: "TEXT_MATCH", extra: match}, {name: "FETCH"},
		{name: "TEXT_OR", extra: func(o []byte) []byte { return appendBranches(o, p) }}}
}

// appendIxscan appends the fields of an IXSCAN stage of plan p reading index xi over n key
// ranges (a wildcard plan's shows its path and bounds).
func appendIxscan(o []byte, p *query.Plan, xi *catalog.Index, n int) []byte {
	if p.Wildcard != nil {
		o = p.AppendWildcardKeyPattern(o, "keyPattern")
	} else {
		o = bsoncore.AppendDocumentElement(o, "keyPattern", xi.Meta.Key)
	}
	o = bsoncore.AppendStringElement(o, "indexName", xi.Meta.Name)
	o = bsoncore.AppendBooleanElement(o, "isUnique", xi.Unique)
	o = bsoncore.AppendBooleanElement(o, "isSparse", xi.Sparse)
	o = bsoncore.AppendBooleanElement(o, "isPartial", xi.Partial != nil)
	if c := xi.Collation.Document(); c != nil {
		o = bsoncore.AppendDocumentElement(o, "collation", c)
	}
	dir := "forward"
	if p.Reverse {
		dir = "backward"
	}
	o = bsoncore.AppendStringElement(o, "direction", dir)
	if p.Wildcard != nil {
		o = p.AppendWildcardBounds(o, "indexBounds")
	}
	return bsoncore.AppendInt32Element(o, "indexRanges", int32(n))
}

// AppendShardStats appends executionStats.executionStages.shards: per shard, what it read,
// and, when charged, the request units of its partitions.
func AppendShardStats(out []byte, shards []*query.ShardStream, charged bool) []byte {
	idx, out := bsoncore.AppendDocumentElementStart(out, "executionStages")
	aidx, o := bsoncore.AppendArrayElementStart(out, "shards")
	for i, s := range shards {
		sidx, x := bsoncore.AppendDocumentElementStart(o, bsonx.ArrayKey(i))
		x = bsoncore.AppendStringElement(x, "shardName", "shard-"+strconv.Itoa(s.Shard))
		x = bsonx.AppendNumber(x, "nReturned", s.Stats.Returned)
		x = bsonx.AppendNumber(x, "totalKeysExamined", s.Stats.KeysExamined)
		x = bsonx.AppendNumber(x, "totalDocsExamined", s.Stats.DocsExamined)
		if charged {
			x = bsoncore.AppendDoubleElement(x, "requestCharge", s.Stats.Charge())
			x = AppendPartitionCharges(x, s)
		} else {
			x = bsoncore.AppendDoubleElement(x, "requestCharge", 0)
		}
		o, _ = bsoncore.AppendDocumentEnd(x, sidx)
	}
	o, _ = bsoncore.AppendArrayEnd(o, aidx)
	out, _ = bsoncore.AppendDocumentEnd(o, idx)
	return out
}

// AppendPartitionCharges appends the request units each partition of a shard's part was
// charged: [{partition: id, requestCharge: RU}].
func AppendPartitionCharges(dst []byte, s *query.ShardStream) []byte {
	aidx, o := bsoncore.AppendArrayElementStart(dst, "partitions")
	for i, pc := range s.PartitionCharges() {
		pidx, x := bsoncore.AppendDocumentElementStart(o, bsonx.ArrayKey(i))
		x = bsoncore.AppendInt64Element(x, "partition", int64(pc.ID))
		x = bsoncore.AppendDoubleElement(x, "requestCharge", pc.RU)
		o, _ = bsoncore.AppendDocumentEnd(x, pidx)
	}
	o, _ = bsoncore.AppendArrayEnd(o, aidx)
	return o
}

// Hosts names the connection string of a shard in explain output, as listShards' host: the
// shard's name and the address of the node that owns it.
type Hosts func(shard int) string

// AppendExecutionStats appends executionStats: the documents returned, the time, the keys
// and documents examined over shards, the request units charged, and each shard's share
// (its request units per partition only when charged: a fast count costs nothing).
func AppendExecutionStats(out []byte, shards []*query.ShardStream, nReturned int64, elapsed time.Duration, charge float64, charged bool) []byte {
	idx, out := bsoncore.AppendDocumentElementStart(out, "executionStats")
	var docs, keys int64
	for _, s := range shards {
		docs += s.Stats.DocsExamined
		keys += s.Stats.KeysExamined
	}
	out = bsonx.AppendNumber(out, "nReturned", nReturned)
	out = bsonx.AppendNumber(out, "executionTimeMillis", elapsed.Milliseconds())
	out = bsonx.AppendNumber(out, "totalKeysExamined", keys)
	out = bsonx.AppendNumber(out, "totalDocsExamined", docs)
	out = bsoncore.AppendDoubleElement(out, "requestCharge", charge)
	out = AppendShardStats(out, shards, charged)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}
