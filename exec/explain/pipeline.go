package explain

import (
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// AppendSplitPipeline appends splitPipeline: the shards' part and the merger's part.
func AppendSplitPipeline(out []byte, p *agg.Pipeline, sp *agg.SplitPlan, ns string) []byte {
	sidx, o := bsoncore.AppendDocumentElementStart(out, "splitPipeline")
	aidx, a := bsoncore.AppendArrayElementStart(o, "shardsPart")
	for i, d := range sp.ShardsPart(p) {
		a = bsoncore.AppendDocumentElement(a, bsonx.ArrayKey(i), d)
	}
	o, _ = bsoncore.AppendArrayEnd(a, aidx)
	var mergeGroup bsoncore.Document
	if sp.Group != nil {
		mergeGroup = DoingMerge(sp.Group.Spec())
	}
	o = AppendMergerPart(o, sp.Source.Query, ns, mergeGroup, sp.Merger(p))
	out, _ = bsoncore.AppendDocumentEnd(o, sidx)
	return out
}

// AppendMergerPart appends mergerPart: $mergeCursors, the skip and limit applied after the
// merge, the merging $group, and the stages that follow.
func AppendMergerPart(out []byte, q *query.Query, ns string, mergeGroup bsoncore.Document, rest []agg.Stage) []byte {
	aidx, a := bsoncore.AppendArrayElementStart(out, "mergerPart")
	n := 0
	next := func() string { n++; return bsonx.ArrayKey(n - 1) }
	midx, m := bsoncore.AppendDocumentElementStart(a, next())
	cidx, c := bsoncore.AppendDocumentElementStart(m, "$mergeCursors")
	if len(q.Sort) > 0 {
		c = bsoncore.AppendDocumentElement(c, "sort", bsonx.SortSpecDoc(q.Sort))
	}
	c = bsoncore.AppendBooleanElement(c, "compareWholeSortKey", false)
	c = bsoncore.AppendStringElement(c, "tailableMode", "normal")
	c = bsoncore.AppendStringElement(c, "nss", ns)
	c = bsoncore.AppendBooleanElement(c, "allowPartialResults", false)
	c = bsoncore.AppendBooleanElement(c, "recordRemoteOpWaitTime", false)
	c = bsoncore.AppendBooleanElement(c, "requestQueryStatsFromRemotes", false)
	m, _ = bsoncore.AppendDocumentEnd(c, cidx)
	a, _ = bsoncore.AppendDocumentEnd(m, midx)
	if q.Skip > 0 {
		a = bsoncore.AppendDocumentElement(a, next(), bsoncore.NewDocumentBuilder().AppendInt64("$skip", q.Skip).Build())
	}
	if q.Limit > 0 {
		a = bsoncore.AppendDocumentElement(a, next(), bsoncore.NewDocumentBuilder().AppendInt64("$limit", q.Limit).Build())
	}
	if mergeGroup != nil {
		a = bsoncore.AppendDocumentElement(a, next(), mergeGroup)
	}
	for _, s := range rest {
		a = bsoncore.AppendDocumentElement(a, next(), s.Spec())
	}
	out, _ = bsoncore.AppendArrayEnd(a, aidx)
	return out
}

// AppendShardPart appends shards.<name>: the shard's host and its stages, a $cursor (the
// shard's plan and partitions, and its statistics when the pipeline ran) followed by the
// partial $group, or by the rest of the pipeline when the pipeline is not split.
func AppendShardPart(out []byte, s *query.ShardStream, pl *query.Plan, ns, verbosity string, hosts Hosts,
	p *agg.Pipeline, sp *agg.SplitPlan) []byte {
	q := sp.Source.Query
	name := catalog.ShardName(s.Shard)
	sidx, o := bsoncore.AppendDocumentElementStart(out, name)
	o = bsoncore.AppendStringElement(o, "host", hosts(s.Shard))
	aidx, a := bsoncore.AppendArrayElementStart(o, "stages")
	cidx, c := bsoncore.AppendDocumentElementStart(a, "0")
	kidx, k := bsoncore.AppendDocumentElementStart(c, "$cursor")
	pidx, qp := bsoncore.AppendDocumentElementStart(k, "queryPlanner")
	qp = bsoncore.AppendStringElement(qp, "namespace", ns)
	qp = AppendPartitions(qp, s)
	qp = AppendShardPlan(qp, q, pl, "")
	k, _ = bsoncore.AppendDocumentEnd(qp, pidx)
	if verbosity != "queryPlanner" {
		xidx, x := bsoncore.AppendDocumentElementStart(k, "executionStats")
		x = bsonx.AppendNumber(x, "nReturned", s.Stats.Returned)
		x = bsonx.AppendNumber(x, "totalKeysExamined", s.Stats.KeysExamined)
		x = bsonx.AppendNumber(x, "totalDocsExamined", s.Stats.DocsExamined)
		x = bsoncore.AppendDoubleElement(x, "requestCharge", s.Stats.Charge())
		x = AppendPartitionCharges(x, s)
		k, _ = bsoncore.AppendDocumentEnd(x, xidx)
	}
	c, _ = bsoncore.AppendDocumentEnd(k, kidx)
	a, _ = bsoncore.AppendDocumentEnd(c, cidx)
	switch {
	case sp.Group != nil:
		a = bsoncore.AppendDocumentElement(a, "1", sp.Group.Spec())
	case !sp.Split:
		for i, st := range sp.Merger(p) {
			a = bsoncore.AppendDocumentElement(a, bsonx.ArrayKey(i+1), st.Spec())
		}
	}
	o, _ = bsoncore.AppendArrayEnd(a, aidx)
	out, _ = bsoncore.AppendDocumentEnd(o, sidx)
	return out
}

// AppendStageSpecs appends the stages' specs as an array.
func AppendStageSpecs(out []byte, key string, first bsoncore.Document, stages []agg.Stage) []byte {
	aidx, a := bsoncore.AppendArrayElementStart(out, key)
	n := 0
	if first != nil {
		a = bsoncore.AppendDocumentElement(a, bsonx.ArrayKey(n), first)
		n++
	}
	for _, s := range stages {
		a = bsoncore.AppendDocumentElement(a, bsonx.ArrayKey(n), s.Spec())
		n++
	}
	out, _ = bsoncore.AppendArrayEnd(a, aidx)
	return out
}

// DoingMerge returns a $group spec with $DoingMerge: true, the merging half of a split group.
func DoingMerge(spec bsoncore.Document) bsoncore.Document {
	el, _ := bsonx.FirstElement(spec)
	inner, _ := el.Value().DocumentOK()
	idx, b := bsoncore.AppendDocumentStart(nil)
	iidx, b := bsoncore.AppendDocumentElementStart(b, el.Key())
	b = append(b, inner[4:len(inner)-1]...)
	b = bsoncore.AppendBooleanElement(b, "$doingMerge", true)
	b, _ = bsoncore.AppendDocumentEnd(b, iidx)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}
