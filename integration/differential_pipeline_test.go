package integration

import (
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// diffPlainColl is the unsharded collection; $lookup reads it from both sides.
const diffPlainColl = "plain"

// diffStage returns {name: arg}.
func diffStage(name string, arg any) bson.D { return bson.D{{Key: name, Value: arg}} }

// pipeline returns a random pipeline and the shape of its results.
func (g *diffGen) pipeline() ([]bson.D, *diffShape) {
	switch g.r.IntN(20) {
	case 0, 1, 2, 3, 4:
		return g.groupPipeline()
	case 5, 6:
		return g.sortedGroupPipeline()
	case 7, 8:
		return g.windowPipeline()
	case 9:
		return append(g.prefix(false), diffStage("$count", "n")), orderedShape()
	case 10:
		return g.sortByCountPipeline()
	case 11, 12:
		return g.bucketPipeline()
	case 13, 14:
		return g.facetPipeline()
	case 15, 16:
		return g.lookupPipeline()
	case 17:
		if g.chance(30) {
			return g.unionPipeline()
		}
		return g.unwindPipeline()
	case 18:
		return g.exprPipeline()
	default:
		// A $limit over an unspecified order: any n documents of the rest.
		p := append(g.prefix(false), diffStage("$limit", int64(1+g.r.IntN(40))))
		s := unorderedShape()
		s.window = true
		return p, s
	}
}

// prefix returns the stages a pipeline may start with: a $match (folded into the read), a
// $set or $unset (which keep what follows off the read path), and an $unwind of readings
// when unwind is true (the group key may then be readings.k).
func (g *diffGen) prefix(unwind bool) []bson.D {
	var p []bson.D
	if g.chance(60) {
		p = append(p, diffStage("$match", g.filter(1)))
	}
	switch g.r.IntN(12) {
	case 0:
		p = append(p, diffStage("$set", bson.D{{Key: "metricValue", Value: g.safeExpr()}}))
	case 1:
		p = append(p, diffStage("$unset", diffOneOf(g, "note", "location", "readings")))
	}
	if unwind {
		p = append(p, diffStage("$unwind", bson.D{{Key: "path", Value: "$readings"}, {Key: "includeArrayIndex", Value: "idx"},
			{Key: "preserveNullAndEmptyArrays", Value: g.chance(50)}}))
	}
	return p
}

// groupKey returns a $group _id expression, and whether its values may be arrays: a sort
// on array values is not total (["a", "b"] and ["b", "a"] sort alike), so such groups come
// in an unspecified order.
func (g *diffGen) groupKey(unwound bool) (key any, arrays bool) {
	keys := []any{"$deviceId", "$metricType", "$location.site", nil, "$status", "$tags", "$readings.k",
		bson.D{{Key: "d", Value: "$deviceId"}, {Key: "t", Value: "$metricType"}},
		bson.D{{Key: "$type", Value: "$metricValue"}}, bson.D{{Key: "$mod", Value: bson.A{"$seq", int32(10)}}},
		"$location", "$metricValue"}
	if unwound {
		keys = append(keys, "$readings.k", "$readings.k")
	}
	key = diffOneOf(g, keys...)
	return key, key == "$tags" || key == "$metricValue" || (key == "$readings.k" && !unwound)
}

// diffAcc is an accumulator the generator uses and how its result compares.
type diffAcc struct {
	spec  bson.D
	loose bool // the result is one of several equal values
	set   bool // the result is an array in unspecified order
}

// diffMergeableAccs are the accumulators a per-shard $group merges.
var diffMergeableAccs = []diffAcc{
	{spec: bson.D{{Key: "$sum", Value: "$metricValue"}}},
	{spec: bson.D{{Key: "$sum", Value: "$counter"}}},
	{spec: bson.D{{Key: "$sum", Value: "$bytes"}}},
	{spec: bson.D{{Key: "$sum", Value: int32(1)}}},
	{spec: bson.D{{Key: "$count", Value: bson.D{}}}},
	{spec: bson.D{{Key: "$sum", Value: "$readings.v"}}},
	{spec: bson.D{{Key: "$sum", Value: bson.D{{Key: "$cond", Value: bson.A{bson.D{{Key: "$isNumber", Value: "$metricValue"}}, int64(1), 0.5}}}}}},
	{spec: bson.D{{Key: "$avg", Value: "$metricValue"}}},
	{spec: bson.D{{Key: "$avg", Value: "$counter"}}},
	{spec: bson.D{{Key: "$avg", Value: "$bytes"}}},
	{spec: bson.D{{Key: "$avg", Value: "$location.coords.x"}}},
	{spec: bson.D{{Key: "$min", Value: "$metricValue"}}, loose: true},
	{spec: bson.D{{Key: "$max", Value: "$metricValue"}}, loose: true},
	{spec: bson.D{{Key: "$max", Value: "$ts"}}},
	{spec: bson.D{{Key: "$min", Value: "$deviceId"}}, loose: true},
	{spec: bson.D{{Key: "$max", Value: "$readings.v"}}, loose: true},
	{spec: bson.D{{Key: "$min", Value: "$note"}}},
	{spec: bson.D{{Key: "$addToSet", Value: "$metricType"}}, loose: true, set: true},
	{spec: bson.D{{Key: "$addToSet", Value: "$deviceId"}}, loose: true, set: true},
	{spec: bson.D{{Key: "$addToSet", Value: "$location.site"}}, set: true},
	// Standard deviations of values whose mean dwarfs their spread (counters near 2^31) lose
	// most digits to the order of Welford's updates, in MongoDB too: these inputs do not.
	{spec: bson.D{{Key: "$stdDevPop", Value: "$location.coords.y"}}},
	{spec: bson.D{{Key: "$stdDevSamp", Value: "$seq"}}},
	{spec: bson.D{{Key: "$maxN", Value: bson.D{{Key: "n", Value: int32(3)}, {Key: "input", Value: "$metricValue"}}}}, loose: true},
	{spec: bson.D{{Key: "$minN", Value: bson.D{{Key: "n", Value: int32(2)}, {Key: "input", Value: "$counter"}}}}, loose: true},
}

// diffOtherAccs are accumulators that do not merge per shard: the $group runs on the merged
// stream.
var diffOtherAccs = []diffAcc{
	{spec: bson.D{{Key: "$push", Value: "$seq"}}, set: true},
	{spec: bson.D{{Key: "$topN", Value: bson.D{{Key: "n", Value: int32(2)}, {Key: "sortBy", Value: bson.D{{Key: "metricValue", Value: int32(-1)}, {Key: "seq", Value: int32(1)}}},
		{Key: "output", Value: "$seq"}}}}},
	{spec: bson.D{{Key: "$bottom", Value: bson.D{{Key: "sortBy", Value: bson.D{{Key: "ts", Value: int32(1)}, {Key: "seq", Value: int32(1)}}},
		{Key: "output", Value: bson.A{"$seq", "$metricValue"}}}}}},
}

// accumulators returns a $group body with _id key and 1 to 4 accumulators, and its shape.
func (g *diffGen) accumulators(key any, from []diffAcc) (bson.D, *diffShape) {
	body := bson.D{{Key: "_id", Value: key}}
	shape := unorderedShape().withLoose("_id")
	for i := range 1 + g.r.IntN(4) {
		a := diffOneOf(g, from...)
		name := fmt.Sprintf("a%d", i)
		body = append(body, bson.E{Key: name, Value: a.spec})
		if a.loose {
			shape.withLoose(name)
		}
		if a.set {
			shape.withSets(name)
		}
	}
	return body, shape
}

// groupPipeline returns [$match] [$unwind] $group [$match] [$sort [$skip] [$limit]].
func (g *diffGen) groupPipeline() ([]bson.D, *diffShape) {
	unwound := g.chance(15)
	p := g.prefix(unwound)
	accs := diffMergeableAccs
	if g.chance(15) {
		accs = append(append([]diffAcc(nil), diffMergeableAccs...), diffOtherAccs...)
	}
	key, arrays := g.groupKey(unwound)
	body, shape := g.accumulators(key, accs)
	body = append(body, bson.E{Key: "n", Value: bson.D{{Key: "$sum", Value: int32(1)}}})
	p = append(p, diffStage("$group", body))
	if g.chance(20) {
		p = append(p, diffStage("$match", bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: int32(2)}}}}))
	}
	if !arrays && g.chance(60) {
		shape.ordered = true
		p = append(p, diffStage("$sort", diffOneOf(g, bson.D{{Key: "_id", Value: int32(1)}},
			bson.D{{Key: "n", Value: int32(-1)}, {Key: "_id", Value: int32(-1)}})))
		if g.chance(40) {
			p = append(p, diffStage("$skip", int64(g.r.IntN(5))))
		}
		if g.chance(40) {
			p = append(p, diffStage("$limit", int64(1+g.r.IntN(20))))
		}
	}
	return p, shape
}

// sortedGroupPipeline returns [$match] $sort(total) $group with order-sensitive accumulators
// ($first, $last, $push, $firstN) and $sort by _id: every result is defined.
func (g *diffGen) sortedGroupPipeline() ([]bson.D, *diffShape) {
	p := append(g.prefix(false), diffStage("$sort", g.sort()))
	key, arrays := g.groupKey(false)
	body := bson.D{{Key: "_id", Value: key},
		{Key: "f", Value: bson.D{{Key: diffOneOf(g, "$first", "$last"), Value: diffOneOf(g, "$metricValue", "$seq", "$tags", "$location")}}},
		{Key: "p", Value: bson.D{{Key: "$push", Value: diffOneOf(g, "$seq", "$metricValue")}}},
		{Key: "l", Value: bson.D{{Key: diffOneOf(g, "$firstN", "$lastN"), Value: bson.D{{Key: "n", Value: int32(2)}, {Key: "input", Value: "$seq"}}}}},
	}
	p = append(p, diffStage("$group", body))
	if arrays {
		return p, unorderedShape().withLoose("_id")
	}
	return append(p, diffStage("$sort", bson.D{{Key: "_id", Value: int32(1)}})), orderedShape().withLoose("_id")
}

// windowPipeline returns [$match] $sort(total) [$skip] [$limit] [$project/$addFields].
func (g *diffGen) windowPipeline() ([]bson.D, *diffShape) {
	p := append(g.prefix(false), diffStage("$sort", g.sort()))
	if g.chance(50) {
		p = append(p, diffStage("$skip", int64(g.r.IntN(50))))
	}
	if g.chance(70) {
		p = append(p, diffStage("$limit", int64(1+g.r.IntN(100))))
	}
	switch g.r.IntN(3) {
	case 0:
		p = append(p, diffStage("$project", bson.D{{Key: "seq", Value: int32(1)}, {Key: "x", Value: g.safeExpr()}, {Key: "deviceId", Value: int32(1)}}))
	case 1:
		p = append(p, diffStage("$addFields", bson.D{{Key: "x", Value: g.safeExpr()}}))
	}
	return p, orderedShape()
}

// sortByCountPipeline returns [$match] $sortByCount [$sort by count and _id].
func (g *diffGen) sortByCountPipeline() ([]bson.D, *diffShape) {
	key := diffOneOf[any](g, "$metricType", "$location.site", "$deviceId", bson.D{{Key: "$type", Value: "$metricValue"}}, "$tags")
	p := append(g.prefix(false), diffStage("$sortByCount", key))
	if key != "$tags" && g.chance(50) {
		return append(p, diffStage("$sort", bson.D{{Key: "count", Value: int32(-1)}, {Key: "_id", Value: int32(1)}})), orderedShape().withLoose("_id")
	}
	return p, unorderedShape().withLoose("_id")
}

// bucketPipeline returns [$match] $bucket over a number or date field; without a default,
// values outside the boundaries fail with 40066.
func (g *diffGen) bucketPipeline() ([]bson.D, *diffShape) {
	spec := bson.D{}
	switch g.r.IntN(4) {
	case 0:
		spec = append(spec, bson.E{Key: "groupBy", Value: "$metricValue"},
			bson.E{Key: "boundaries", Value: bson.A{int32(-1000), int64(-10), 0.0, 0.5, int32(10), int64(100), 1000.5}})
	case 1:
		spec = append(spec, bson.E{Key: "groupBy", Value: "$counter"},
			bson.E{Key: "boundaries", Value: bson.A{int32(0), int32(100), int64(500), 1000.0}})
	case 2:
		spec = append(spec, bson.E{Key: "groupBy", Value: "$location.floor"},
			bson.E{Key: "boundaries", Value: bson.A{int32(0), int32(3), int32(6), int32(10)}})
	default:
		spec = append(spec, bson.E{Key: "groupBy", Value: "$ts"},
			bson.E{Key: "boundaries", Value: bson.A{diffEpoch, diffEpoch.AddDate(0, 3, 0), diffEpoch.AddDate(0, 6, 0), diffEpoch.AddDate(1, 0, 0)}})
	}
	if g.chance(90) {
		spec = append(spec, bson.E{Key: "default", Value: "other"})
	}
	shape := orderedShape()
	if g.chance(60) {
		out, s := g.accumulators(nil, diffMergeableAccs)
		spec = append(spec, bson.E{Key: "output", Value: out[1:]})
		shape.loose, shape.sets = s.loose, s.sets
	}
	return append(g.prefix(false), diffStage("$bucket", spec)), shape
}

// facetPipeline returns [$match] $facet with two or three sub-pipelines.
func (g *diffGen) facetPipeline() ([]bson.D, *diffShape) {
	facets := bson.D{}
	shape := orderedShape()
	shape.facets = map[string]*diffShape{}
	for i := range 2 + g.r.IntN(2) {
		var sub []bson.D
		var s *diffShape
		switch g.r.IntN(5) {
		case 0:
			sub, s = g.groupPipeline()
		case 1:
			sub, s = g.windowPipeline()
		case 2:
			sub, s = append(g.prefix(false), diffStage("$count", "n")), orderedShape()
		case 3:
			sub, s = g.sortByCountPipeline()
		default:
			sub, s = g.bucketPipeline()
		}
		name := fmt.Sprintf("f%d", i)
		facets = append(facets, bson.E{Key: name, Value: sub})
		shape.facets[name] = s
	}
	p := []bson.D{}
	if g.chance(50) {
		p = append(p, diffStage("$match", g.filter(1)))
	}
	return append(p, diffStage("$facet", facets)), shape
}

// lookupPipeline returns a $match on a range of seq, a $lookup into the unsharded copy by
// equality or by a correlated pipeline, a $project and a $sort by seq.
func (g *diffGen) lookupPipeline() ([]bson.D, *diffShape) {
	lo := int32(g.r.IntN(4900))
	const width = 100
	var lookup bson.D
	proj := bson.D{{Key: "seq", Value: int32(1)}, {Key: "deviceId", Value: int32(1)}, {Key: "n", Value: bson.D{{Key: "$size", Value: "$j"}}}}
	switch g.r.IntN(3) {
	case 0:
		lookup = bson.D{{Key: "from", Value: diffPlainColl}, {Key: "localField", Value: "deviceId"}, {Key: "foreignField", Value: "deviceId"}, {Key: "as", Value: "j"}}
		proj = append(proj, bson.E{Key: "ids", Value: "$j.seq"})
	case 1:
		lookup = bson.D{{Key: "from", Value: diffPlainColl}, {Key: "localField", Value: "counter"}, {Key: "foreignField", Value: "seq"}, {Key: "as", Value: "j"}}
		proj = append(proj, bson.E{Key: "ids", Value: "$j.deviceId"})
	default:
		// The equality reads the foreign index; the correlated pipeline runs on its matches.
		lookup = bson.D{{Key: "from", Value: diffPlainColl}, {Key: "localField", Value: "deviceId"}, {Key: "foreignField", Value: "deviceId"},
			{Key: "let", Value: bson.D{{Key: "s", Value: "$seq"}}},
			{Key: "pipeline", Value: bson.A{
				diffStage("$match", bson.D{{Key: "$expr", Value: bson.D{{Key: "$lt", Value: bson.A{"$seq", "$$s"}}}}}),
				diffStage("$group", bson.D{{Key: "_id", Value: nil}, {Key: "c", Value: bson.D{{Key: "$sum", Value: "$counter"}}},
					{Key: "m", Value: bson.D{{Key: "$max", Value: "$seq"}}}}),
			}}, {Key: "as", Value: "j"}}
		proj = append(proj, bson.E{Key: "g", Value: "$j"})
	}
	p := []bson.D{
		diffStage("$match", bson.D{{Key: "seq", Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: lo + width}}}}),
		diffStage("$lookup", lookup),
		diffStage("$project", proj),
		diffStage("$sort", bson.D{{Key: "seq", Value: int32(1)}}),
	}
	return p, orderedShape()
}

// unwindPipeline returns [$match] $unwind of an array field, then a $group, a total $sort
// with a $limit, or nothing.
func (g *diffGen) unwindPipeline() ([]bson.D, *diffShape) {
	path := diffOneOf(g, "tags", "readings", "metricValue")
	p := g.prefix(false)
	p = append(p, diffStage("$unwind", bson.D{{Key: "path", Value: "$" + path}, {Key: "includeArrayIndex", Value: "idx"},
		{Key: "preserveNullAndEmptyArrays", Value: g.chance(50)}}))
	switch g.r.IntN(3) {
	case 0:
		body, shape := g.accumulators("$"+path, diffMergeableAccs)
		return append(p, diffStage("$group", body)), shape
	case 1:
		s := bson.D{{Key: path, Value: int32(1)}}
		for _, e := range g.sort("idx") {
			if e.Key != path {
				s = append(s, e)
			}
		}
		return append(p, diffStage("$sort", s), diffStage("$limit", int64(1+g.r.IntN(200)))), orderedShape()
	}
	return append(p, diffStage("$project", bson.D{{Key: path, Value: int32(1)}, {Key: "idx", Value: int32(1)}})), unorderedShape()
}

// unionPipeline returns [$match] $project, $unionWith of the unsharded copy (filtered),
// and a $group or nothing.
func (g *diffGen) unionPipeline() ([]bson.D, *diffShape) {
	proj := diffStage("$project", bson.D{{Key: "seq", Value: int32(1)}, {Key: "deviceId", Value: int32(1)}, {Key: "metricValue", Value: int32(1)}})
	p := append(g.prefix(false), proj, diffStage("$unionWith", bson.D{{Key: "coll", Value: diffPlainColl},
		{Key: "pipeline", Value: bson.A{diffStage("$match", g.filter(1)), proj}}}))
	if g.chance(50) {
		body, shape := g.accumulators("$deviceId", diffMergeableAccs)
		return append(p, diffStage("$group", body)), shape
	}
	return p, unorderedShape()
}

// exprPipeline returns [$match] $addFields with expressions, a $match on them, and a
// $group by one of them or a total $sort.
func (g *diffGen) exprPipeline() ([]bson.D, *diffShape) {
	p := append(g.prefix(false), diffStage("$addFields", bson.D{{Key: "x", Value: g.safeExpr()}, {Key: "y", Value: g.safeExpr()}}))
	if g.chance(50) {
		p = append(p, diffStage("$match", bson.D{{Key: "x", Value: bson.D{{Key: "$ne", Value: nil}}}}))
	}
	if g.chance(50) {
		body, shape := g.accumulators("$x", diffMergeableAccs)
		return append(p, diffStage("$group", body)), shape
	}
	return append(p, diffStage("$sort", g.sort()), diffStage("$limit", int64(1+g.r.IntN(50)))), orderedShape()
}

// errorQuery returns a query that fails, at parse time or on the documents, always with the
// same code whichever document fails first.
func (g *diffGen) errorQuery() *diffQuery {
	agg := func(stages ...bson.D) *diffQuery {
		var p []bson.D // a $match may leave no document to fail on, alike on both sides
		if g.chance(30) {
			p = append(p, diffStage("$match", g.filter(1)))
		}
		return &diffQuery{kind: "aggregate", pipeline: append(p, stages...), shape: unorderedShape()}
	}
	find := func(filter bson.D) *diffQuery {
		return &diffQuery{kind: "find", filter: filter, shape: unorderedShape()}
	}
	switch g.r.IntN(16) {
	case 0:
		return find(bson.D{{Key: "metricValue", Value: bson.D{{Key: "$foo", Value: int32(1)}}}})
	case 1:
		return find(bson.D{{Key: "$or", Value: bson.A{}}})
	case 2:
		return find(bson.D{{Key: "metricType", Value: bson.D{{Key: "$regex", Value: "("}}}})
	case 3:
		return find(bson.D{{Key: "$expr", Value: bson.D{{Key: "$divide", Value: bson.A{"$seq", int32(0)}}}}})
	case 4:
		q := find(g.filter(1))
		q.sort = bson.D{{Key: "metricValue", Value: int32(2)}}
		return q
	case 5:
		q := find(g.filter(1))
		q.projection = bson.D{{Key: "seq", Value: int32(1)}, {Key: "note", Value: int32(0)}}
		return q
	case 6:
		return agg(diffStage("$group", bson.D{{Key: "_id", Value: "$deviceId"}, {Key: "a", Value: bson.D{{Key: "$foo", Value: int32(1)}}}}))
	case 7:
		return agg(diffStage("$bucket", bson.D{{Key: "groupBy", Value: "$counter"}, {Key: "boundaries", Value: bson.A{int32(10), int32(0)}}}))
	case 8:
		return agg(diffStage("$unwind", "readings"))
	case 9:
		return agg(diffStage("$bucket", bson.D{{Key: "groupBy", Value: "$metricValue"}, {Key: "boundaries", Value: bson.A{int32(0), int32(10)}}}))
	case 10:
		return agg(diffStage("$project", bson.D{{Key: "x", Value: bson.D{{Key: "$divide", Value: bson.A{"$seq", int32(0)}}}}}))
	case 11:
		return agg(diffStage("$group", bson.D{{Key: "_id", Value: "$deviceId"}, {Key: "s", Value: bson.D{{Key: "$sum", Value: bson.D{{Key: "$divide", Value: bson.A{"$seq", int32(0)}}}}}}}))
	case 12:
		return agg(diffStage("$addFields", bson.D{{Key: "x", Value: bson.D{{Key: "$add", Value: bson.A{"$note", int32(1)}}}}}))
	case 13:
		return agg(diffStage("$match", bson.D{{Key: "$expr", Value: bson.D{{Key: "$toInt", Value: "$note"}}}}))
	case 14:
		return agg(diffStage("$lookup", bson.D{{Key: "from", Value: diffPlainColl}, {Key: "as", Value: "x"}}))
	default:
		return agg(diffStage("$facet", bson.D{{Key: "a", Value: bson.A{diffStage("$facet", bson.D{})}}}))
	}
}
