package integration

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cleavedb/cleave/exec/collation"
)

// diffQuery is one generated read, run alike on the unsharded and the sharded collection.
type diffQuery struct {
	kind        string // find, aggregate, count (the command), countDocuments, distinct
	filter      bson.D
	sort        bson.D
	projection  bson.D
	skip, limit int64
	batchSize   int32
	hint        any // nil: none
	pipeline    []bson.D
	key         string             // distinct's field
	collation   *options.Collation // nil: the collection's (simple)
	shape       *diffShape
	// full is the query without its final skip/limit when those cut an unspecified order:
	// the sharded result must then be a subset of full's unsharded result, of the same size.
	full *diffQuery
}

// diffShape says how two results of a query compare.
type diffShape struct {
	// ordered: the query defines the order of its results; otherwise they are multisets.
	ordered bool
	// loose are top-level fields holding a value picked among equal ones (group _ids, $min,
	// $max, $addToSet, distinct): int32(7), int64(7) and 7.0 compare equal there.
	loose map[string]bool
	// sets are top-level arrays whose element order is unspecified ($push, $addToSet).
	sets map[string]bool
	// facets are the shapes of $facet's output arrays.
	facets map[string]*diffShape
	// window: the pipeline ends with a $limit over an unspecified order.
	window bool
	// fold is the query's collation, when it has one: strings it finds equal are one value
	// in the loose fields (a $group under a case-insensitive collation keeps whichever of
	// "Berlin" and "berlin" it met first, and the shards meet them in another order).
	fold *collation.Collation
}

// orderedShape returns the shape of results in a defined order, with strict fields.
func orderedShape() *diffShape { return &diffShape{ordered: true} }

// unorderedShape returns the shape of results in an unspecified order.
func unorderedShape() *diffShape { return &diffShape{} }

// withLoose marks fields as loose.
func (s *diffShape) withLoose(fields ...string) *diffShape {
	if s.loose == nil {
		s.loose = map[string]bool{}
	}
	for _, f := range fields {
		s.loose[f] = true
	}
	return s
}

// withSets marks fields as sets.
func (s *diffShape) withSets(fields ...string) *diffShape {
	if s.sets == nil {
		s.sets = map[string]bool{}
	}
	for _, f := range fields {
		s.sets[f] = true
	}
	return s
}

// diffGen generates the queries; query i of a seed has a generator of its own, so that one
// query can be replayed alone.
type diffGen struct{ r *rand.Rand }

// newDiffGen returns the generator of query i of seed.
func newDiffGen(seed uint64, i int) *diffGen {
	return &diffGen{r: rand.New(rand.NewPCG(seed, uint64(i)+1))}
}

// diffOneOf returns one of vs.
func diffOneOf[T any](g *diffGen, vs ...T) T { return vs[g.r.IntN(len(vs))] }

// chance reports true with probability p percent.
func (g *diffGen) chance(p int) bool { return g.r.IntN(100) < p }

// query returns a random query.
func (g *diffGen) query() *diffQuery {
	q := g.queryWithoutCollation()
	if g.chance(25) { // drawn last: the rest of a seed's queries stay as they were
		q.collation = diffOneOf(g, diffCollations...)
		if q.full != nil {
			q.full.collation = q.collation
		}
		q.shape.fold = mustCollation(q.collation)
	}
	return q
}

// mustCollation returns c parsed as the server parses it.
func mustCollation(c *options.Collation) *collation.Collation {
	doc, err := bson.Marshal(collationDoc(c))
	if err != nil {
		panic(err)
	}
	parsed, err := collation.Parse(doc)
	if err != nil {
		panic(err)
	}
	return parsed
}

// diffCollations are the collations queries may run with: case and accent insensitive,
// upper case first, numeric, punctuation ignored.
var diffCollations = []*options.Collation{
	{Locale: "en", Strength: 1}, {Locale: "en", Strength: 2}, {Locale: "en"},
	{Locale: "en", CaseFirst: "upper"}, {Locale: "en", NumericOrdering: true},
	{Locale: "en", Alternate: "shifted"}, {Locale: "fr_CA"}, {Locale: "simple"},
}

// queryWithoutCollation generates a query of a random kind.
func (g *diffGen) queryWithoutCollation() *diffQuery {
	switch p := g.r.IntN(100); {
	case p < 28:
		return g.find()
	case p < 34:
		return &diffQuery{kind: "countDocuments", filter: g.filter(2), skip: g.window(20), limit: g.window(50), shape: orderedShape()}
	case p < 38:
		q := &diffQuery{kind: "count", filter: g.filter(2), skip: g.window(20), limit: g.window(50), shape: orderedShape()}
		if g.chance(20) {
			q.limit = -q.limit // count takes its absolute value
		}
		return q
	case p < 45:
		key := diffOneOf(g, "deviceId", "metricType", "metricValue", "location.site", "location", "tags", "readings.k", "readings.v", "status", "readings")
		return &diffQuery{kind: "distinct", key: key, filter: g.filter(2), shape: orderedShape().withLoose("values")}
	case p < 48:
		return g.errorQuery()
	}
	q := &diffQuery{kind: "aggregate", batchSize: g.batchSize(false)}
	q.pipeline, q.shape = g.pipeline()
	if q.shape.window {
		q.full = &diffQuery{kind: "aggregate", pipeline: q.pipeline[:len(q.pipeline)-1], shape: q.shape}
	}
	return q
}

// window returns 0 half the time, else a skip or limit up to n.
func (g *diffGen) window(n int) int64 {
	if g.chance(50) {
		return 0
	}
	return int64(1 + g.r.IntN(n))
}

// batchSize returns a cursor batch size, small ones included to exercise getMore (tiny
// ones only when few documents come back: each batch is a round trip).
func (g *diffGen) batchSize(few bool) int32 {
	if few {
		return diffOneOf[int32](g, 0, 0, 1, 3, 10, 101)
	}
	return diffOneOf[int32](g, 0, 0, 25, 101)
}

// find returns a find with a filter, maybe a total sort, a window and a projection.
func (g *diffGen) find() *diffQuery {
	q := &diffQuery{kind: "find", filter: g.filter(2), shape: orderedShape()}
	if g.chance(70) {
		q.sort = g.sort()
	} else {
		q.shape = unorderedShape()
	}
	q.skip, q.limit = g.window(30), g.window(60)
	q.batchSize = g.batchSize(q.limit > 0)
	if q.limit > 0 && g.chance(15) {
		q.limit = -q.limit // one batch, then the cursor closes
	}
	if g.chance(10) {
		q.hint = diffOneOf[any](g, "metricValue_1_seq_1", bson.D{{Key: "seq", Value: int32(1)}},
			bson.D{{Key: "$natural", Value: int32(-1)}}, "metricType_1_ts_-1_seq_1")
	}
	if g.chance(50) {
		q.projection = g.projection()
	}
	if q.sort == nil && (q.skip > 0 || q.limit != 0) {
		full := *q
		full.skip, full.limit = 0, 0
		q.full = &full
	}
	return q
}

// num returns a number to compare with: any numeric type, NaN now and then.
func (g *diffGen) num() any {
	switch g.r.IntN(12) {
	case 0:
		return math.NaN()
	case 1:
		return diffDecimal(g.r)
	case 2:
		return g.r.Float64()*2000 - 1000
	}
	return diffNumber(g.r, int64(g.r.IntN(2001)-1000))
}

// device returns a deviceId to look for (null included).
func (g *diffGen) device() any {
	for {
		if v, ok := diffDevice(g.r); ok {
			return v
		}
	}
}

// date returns a ts to compare with.
func (g *diffGen) date() time.Time {
	return diffEpoch.Add(time.Duration(g.r.IntN(365*24)) * time.Hour)
}

// filter returns a filter of up to three conditions; depth bounds $or/$and nesting.
func (g *diffGen) filter(depth int) bson.D {
	d := bson.D{}
	for range diffOneOf(g, 0, 1, 1, 1, 2, 2, 3) {
		d = append(d, g.cond(depth))
	}
	return d
}

// cmpOp returns a comparison operator.
func (g *diffGen) cmpOp() string { return diffOneOf(g, "$gt", "$gte", "$lt", "$lte", "$eq", "$ne") }

// cond returns one condition of a filter.
func (g *diffGen) cond(depth int) bson.E {
	op := func(o string, v any) bson.D { return bson.D{{Key: o, Value: v}} }
	switch g.r.IntN(24) {
	case 0, 1:
		return bson.E{Key: "deviceId", Value: g.device()}
	case 2:
		return bson.E{Key: "deviceId", Value: op("$in", bson.A{g.device(), g.device(), g.device()})}
	case 3:
		lo := fmt.Sprintf("dev-%03d", g.r.IntN(200))
		return bson.E{Key: "deviceId", Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: lo + "z"}}}
	case 4:
		return bson.E{Key: "deviceId", Value: op(g.cmpOp(), g.num())}
	case 5:
		return bson.E{Key: "deviceId", Value: op(diffOneOf(g, "$exists", "$type"), diffOneOf[any](g, true, false, "number", "string", "null", "object"))}
	case 6, 7:
		return bson.E{Key: "metricValue", Value: op(g.cmpOp(), g.num())}
	case 8:
		return bson.E{Key: "metricValue", Value: op(diffOneOf(g, "$in", "$nin"), bson.A{g.num(), g.num(), nil, int32(5)})}
	case 9:
		return bson.E{Key: "metricValue", Value: op("$type", diffOneOf(g, "double", "int", "long", "decimal", "number", "array", "null", "string", "object", "bool"))}
	case 10:
		return bson.E{Key: diffOneOf(g, "metricValue", "location", "readings", "tags", "ts"), Value: op("$exists", g.chance(50))}
	case 11:
		if g.chance(50) {
			return bson.E{Key: "metricType", Value: diffOneOf[any](g, "temp", "Temp", "湿度", nil, int32(1))}
		}
		return bson.E{Key: "metricType", Value: bson.D{{Key: "$regex", Value: diffOneOf(g, "^t", "e$", "^TEMP", "é")}, {Key: "$options", Value: diffOneOf(g, "", "i")}}}
	case 12:
		return g.locationCond()
	case 13:
		return g.readingsCond()
	case 14:
		return g.tagsCond()
	case 15:
		lo := g.date()
		return bson.E{Key: "ts", Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: lo.Add(time.Duration(g.r.IntN(60*24)) * time.Hour)}}}
	case 16:
		if g.chance(50) {
			return bson.E{Key: "seq", Value: op("$mod", bson.A{int32(7), int32(g.r.IntN(7))})}
		}
		return bson.E{Key: diffOneOf(g, "counter", "bytes", "seq"), Value: op(g.cmpOp(), diffNumber(g.r, int64(g.r.IntN(2000))))}
	case 17:
		return bson.E{Key: diffOneOf(g, "status", "note"), Value: op("$in", bson.A{"ok", true, "warn", "naïve 3", "日本語 7"})}
	case 18:
		if depth > 0 {
			return bson.E{Key: diffOneOf(g, "$or", "$and", "$nor"), Value: bson.A{g.filter(depth - 1), g.filter(depth - 1)}}
		}
		return bson.E{Key: "status", Value: "ok"}
	case 19:
		return bson.E{Key: "$expr", Value: g.exprCond()}
	case 20:
		ids := bson.A{}
		for range 1 + g.r.IntN(4) {
			i := g.r.IntN(6000)
			ids = append(ids, diffOneOf[any](g, int32(i), int64(i)+1<<33, float64(i)+0.25, fmt.Sprintf("id-%05d", i), float64(i)))
		}
		if len(ids) == 1 {
			return bson.E{Key: "_id", Value: ids[0]}
		}
		return bson.E{Key: "_id", Value: op("$in", ids)}
	case 21:
		return bson.E{Key: "metricValue", Value: op("$not", op(g.cmpOp(), g.num()))}
	case 22:
		return bson.E{Key: "metricValue", Value: op("$elemMatch", op(g.cmpOp(), g.num()))}
	default:
		return bson.E{Key: diffOneOf(g, "metricValue", "deviceId", "metricType", "location"), Value: nil}
	}
}

// locationCond returns a condition on location's nested fields.
func (g *diffGen) locationCond() bson.E {
	switch g.r.IntN(4) {
	case 0:
		return bson.E{Key: "location.site", Value: diffOneOf(g, diffSites...)}
	case 1:
		return bson.E{Key: "location.floor", Value: bson.D{{Key: g.cmpOp(), Value: diffNumber(g.r, int64(g.r.IntN(10)))}}}
	case 2:
		return bson.E{Key: "location.coords.x", Value: bson.D{{Key: diffOneOf(g, "$lt", "$gte"), Value: g.r.Float64() * 100}}}
	default:
		return bson.E{Key: "location", Value: bson.D{{Key: "$type", Value: diffOneOf(g, "object", "null")}}}
	}
}

// readingsCond returns a condition on the readings array of documents.
func (g *diffGen) readingsCond() bson.E {
	k := diffOneOf(g, diffReadingKeys...)
	switch g.r.IntN(4) {
	case 0:
		return bson.E{Key: "readings", Value: bson.D{{Key: "$elemMatch", Value: bson.D{{Key: "k", Value: k},
			{Key: "v", Value: bson.D{{Key: g.cmpOp(), Value: diffNumber(g.r, int64(g.r.IntN(100)))}}}}}}}
	case 1:
		return bson.E{Key: "readings.k", Value: k}
	case 2:
		return bson.E{Key: "readings.v", Value: bson.D{{Key: g.cmpOp(), Value: diffNumber(g.r, int64(g.r.IntN(100)))}}}
	default:
		return bson.E{Key: "readings", Value: bson.D{{Key: "$size", Value: int32(g.r.IntN(4))}}}
	}
}

// tagsCond returns a condition on tags (an array, a string or missing).
func (g *diffGen) tagsCond() bson.E {
	switch g.r.IntN(4) {
	case 0:
		return bson.E{Key: "tags", Value: diffOneOf(g, diffTags...)}
	case 1:
		return bson.E{Key: "tags", Value: bson.D{{Key: "$all", Value: bson.A{diffOneOf(g, diffTags...), diffOneOf(g, diffTags...)}}}}
	case 2:
		return bson.E{Key: "tags", Value: bson.D{{Key: "$size", Value: int32(g.r.IntN(4))}}}
	default:
		return bson.E{Key: "tags.0", Value: diffOneOf(g, diffTags...)}
	}
}

// exprCond returns an $expr condition that cannot fail.
func (g *diffGen) exprCond() bson.D {
	switch g.r.IntN(4) {
	case 0:
		return bson.D{{Key: g.cmpOp(), Value: bson.A{"$metricValue", g.num()}}}
	case 1:
		return bson.D{{Key: "$eq", Value: bson.A{"$deviceId", g.device()}}}
	case 2:
		return bson.D{{Key: "$lt", Value: bson.A{"$counter", "$seq"}}}
	default:
		return bson.D{{Key: "$in", Value: bson.A{"$metricType", bson.A{"temp", "co2", nil}}}}
	}
}

// diffSortFields are the fields a generated sort uses.
var diffSortFields = []string{"metricValue", "deviceId", "ts", "metricType", "location.site", "location.floor",
	"readings.v", "tags", "status", "note", "counter", "bytes", "location", "metricValue"}

// sort returns a sort of one or two fields made total by _id (and then by tail, the fields
// that tell apart the documents $unwind made of one).
func (g *diffGen) sort(tail ...string) bson.D {
	if len(tail) == 0 {
		// Sorts that indexes provide: each shard reads in order and the streams merge.
		switch dir := diffOneOf[int32](g, 1, -1); g.r.IntN(10) {
		case 0:
			return bson.D{{Key: "seq", Value: dir}}
		case 1:
			return bson.D{{Key: "metricValue", Value: dir}, {Key: "seq", Value: dir}}
		case 2:
			return bson.D{{Key: "metricType", Value: dir}, {Key: "ts", Value: -dir}, {Key: "seq", Value: dir}}
		case 3:
			return bson.D{{Key: "_id", Value: dir}}
		}
	}
	d := bson.D{}
	for range 1 + g.r.IntN(2) {
		f := diffOneOf(g, diffSortFields...)
		if !slices.ContainsFunc(d, func(e bson.E) bool { return e.Key == f }) {
			d = append(d, bson.E{Key: f, Value: diffOneOf[int32](g, 1, -1)})
		}
	}
	d = append(d, bson.E{Key: "_id", Value: diffOneOf[int32](g, 1, -1)})
	for _, f := range tail {
		d = append(d, bson.E{Key: f, Value: int32(1)})
	}
	return d
}

// projection returns a find projection.
func (g *diffGen) projection() bson.D {
	one := int32(1)
	switch g.r.IntN(6) {
	case 0, 1:
		d := bson.D{}
		for _, f := range []string{"deviceId", "metricValue", "location.site", "ts", "tags", "readings.v", "counter"} {
			if g.chance(40) {
				d = append(d, bson.E{Key: f, Value: one})
			}
		}
		if g.chance(30) {
			d = append(d, bson.E{Key: "_id", Value: int32(0)})
		}
		return append(d, bson.E{Key: "seq", Value: one})
	case 2:
		d := bson.D{}
		for _, f := range []string{"readings", "note", "location.coords", "tags", "metricValue", "bytes"} {
			if g.chance(40) {
				d = append(d, bson.E{Key: f, Value: int32(0)})
			}
		}
		return append(d, bson.E{Key: "status", Value: int32(0)})
	case 3:
		return bson.D{{Key: "seq", Value: one}, {Key: "tags", Value: bson.D{{Key: "$slice", Value: diffOneOf[any](g, int32(1), int32(-1), bson.A{int32(1), int32(2)})}}}}
	case 4:
		return bson.D{{Key: "seq", Value: one}, {Key: "readings", Value: bson.D{{Key: "$elemMatch", Value: bson.D{{Key: "k", Value: diffOneOf(g, diffReadingKeys...)}}}}}}
	default:
		return bson.D{{Key: "seq", Value: one}, {Key: "x", Value: g.safeExpr()}, {Key: "y", Value: g.safeExpr()}}
	}
}

// safeExpr returns an aggregation expression that evaluates on every document without error.
func (g *diffGen) safeExpr() any {
	arrayOr := func(f string) bson.D {
		return bson.D{{Key: "$cond", Value: bson.A{bson.D{{Key: "$isArray", Value: f}}, f, bson.A{}}}}
	}
	switch g.r.IntN(16) {
	case 0:
		return bson.D{{Key: "$type", Value: "$metricValue"}}
	case 1:
		return bson.D{{Key: "$ifNull", Value: bson.A{"$metricValue", "missing"}}}
	case 2:
		return bson.D{{Key: "$cond", Value: bson.A{bson.D{{Key: "$isNumber", Value: "$metricValue"}},
			bson.D{{Key: "$multiply", Value: bson.A{"$metricValue", int32(2)}}}, nil}}}
	case 3:
		return bson.D{{Key: "$convert", Value: bson.D{{Key: "input", Value: "$metricValue"}, {Key: "to", Value: "double"},
			{Key: "onError", Value: -1.5}, {Key: "onNull", Value: -2.5}}}}
	case 4:
		return bson.D{{Key: "$toUpper", Value: "$note"}}
	case 5:
		return bson.D{{Key: "$substrCP", Value: bson.A{"$note", int32(0), int32(3)}}}
	case 6:
		return bson.D{{Key: "$cond", Value: bson.A{bson.D{{Key: "$isArray", Value: "$tags"}}, bson.D{{Key: "$size", Value: "$tags"}}, int32(-1)}}}
	case 7:
		return bson.D{{Key: "$add", Value: bson.A{"$counter", "$seq"}}}
	case 8:
		return bson.D{{Key: "$map", Value: bson.D{{Key: "input", Value: arrayOr("$readings")}, {Key: "in", Value: "$$this.v"}}}}
	case 9:
		return bson.D{{Key: "$filter", Value: bson.D{{Key: "input", Value: arrayOr("$readings")},
			{Key: "cond", Value: bson.D{{Key: "$gt", Value: bson.A{"$$this.v", int32(50)}}}}}}}
	case 10:
		return bson.D{{Key: "$sum", Value: "$readings.v"}}
	case 11:
		return bson.D{{Key: "$max", Value: bson.A{"$counter", "$seq", "$metricValue"}}}
	case 12:
		return bson.D{{Key: "$mod", Value: bson.A{"$seq", int32(7)}}}
	case 13:
		return bson.D{{Key: "$dateToString", Value: bson.D{{Key: "format", Value: "%Y-%m"}, {Key: "date", Value: "$ts"}}}}
	case 14:
		return bson.D{{Key: "$cmp", Value: bson.A{"$metricValue", int32(0)}}}
	default:
		return bson.D{{Key: "$arrayElemAt", Value: bson.A{arrayOr("$tags"), int32(0)}}}
	}
}
