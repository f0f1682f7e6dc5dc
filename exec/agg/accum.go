package agg

import (
	"bytes"
	"math"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// accState is the running state of one accumulator for one group.
type accState interface {
	// add folds in one document: v is the accumulator's evaluated input (missing has Type
	// 0), doc the document (for $top/$bottom). It returns the bytes of memory it added.
	add(v bsoncore.Value, doc bsoncore.Document) (int, error)
	// result returns the accumulated value (never missing).
	result() (bsoncore.Value, error)
}

// accSpec is one compiled accumulator of $group: {field: {op: arg}}.
type accSpec struct {
	field string
	op    string
	input *expr.Expr // nil for $count and $top/$bottom families
	// The N-ary and sorted accumulators.
	n      *expr.Expr
	sortBy []bsonx.SortField
	output *expr.Expr
	coll   bsonx.Collator // the pipeline's collation: $addToSet's equality, $min/$max, sortBy
	js     *jsAccumulator // $accumulator (jsaccum.go); input is its accumulateArgs
	quant  *expr.Quantile // $percentile, $median (quantile.go)
}

// accumulators are the $group accumulators by name.
var accumulators = map[string]bool{
	"$sum": true, "$avg": true, "$min": true, "$max": true, "$first": true, "$last": true,
	"$push": true, "$addToSet": true, "$count": true, "$mergeObjects": true,
	"$stdDevPop": true, "$stdDevSamp": true, "$top": true, "$bottom": true, "$topN": true,
	"$bottomN": true, "$firstN": true, "$lastN": true, "$maxN": true, "$minN": true,
	"$accumulator": true, "$percentile": true, "$median": true,
}

// parseAccumulator compiles {op: arg} for field.
func parseAccumulator(env *Env, field string, v bsoncore.Value) (*accSpec, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40234, "The field '%s' must be an accumulator object", field)
	}
	elems, _ := d.Elements()
	if len(elems) != 1 {
		return nil, mongoerr.New(mongoerr.Location40238, "The field '%s' must specify one accumulator", field)
	}
	op, arg := elems[0].Key(), elems[0].Value()
	if !accumulators[op] {
		return nil, mongoerr.New(mongoerr.Location15952, "unknown group operator '%s'", op)
	}
	a := &accSpec{field: field, op: op, coll: env.Collator()}
	var err error
	switch op {
	case "$count":
		if ad, ok := arg.DocumentOK(); !ok || len(ad) > 5 {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "$count takes no arguments, i.e. $count: {}")
		}
	case "$top", "$bottom", "$topN", "$bottomN", "$firstN", "$lastN", "$maxN", "$minN":
		err = a.parseNamedArgs(env, arg)
	case "$accumulator":
		a.js, a.input, err = parseJSAccumulator(env, arg)
	case "$percentile", "$median":
		err = a.parseQuantile(env, arg)
	default:
		if arg.Type == bsoncore.TypeArray {
			return nil, mongoerr.New(mongoerr.Location40237, "The %s accumulator is a unary operator", op)
		}
		a.input, err = env.CompileExpr(arg)
	}
	return a, err
}

// parseNamedArgs parses the {n, input} or {n, sortBy, output} argument of the N-ary and
// sorted accumulators.
func (a *accSpec) parseNamedArgs(env *Env, arg bsoncore.Value) error {
	d, ok := arg.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.Location5787900, "specification must be an object; found %s", bsonx.TypeName(arg.Type))
	}
	sorted := a.op == "$top" || a.op == "$bottom" || a.op == "$topN" || a.op == "$bottomN"
	needN := a.op != "$top" && a.op != "$bottom"
	elems, _ := d.Elements()
	var err error
	for _, el := range elems {
		v := el.Value()
		switch k := el.Key(); {
		case k == "n" && needN:
			a.n, err = env.CompileExpr(v)
		case k == "input" && !sorted:
			a.input, err = env.CompileExpr(v)
		case k == "output" && sorted:
			a.output, err = env.CompileExpr(v)
		case k == "sortBy" && sorted:
			sd, ok := v.DocumentOK()
			if !ok {
				return mongoerr.New(mongoerr.Location5788604, "%s sortBy must be an object", a.op)
			}
			a.sortBy, err = query.ParseSort(sd)
		default:
			return mongoerr.New(mongoerr.Location5787901, "Unknown argument for '%s' operator: %s", a.op, k)
		}
		if err != nil {
			return err
		}
	}
	switch {
	case needN && a.n == nil:
		return mongoerr.New(mongoerr.Location5787906, "Missing value for 'n'")
	case !sorted && a.input == nil:
		return mongoerr.New(mongoerr.Location5787907, "Missing value for 'input'")
	case sorted && a.output == nil:
		return mongoerr.New(mongoerr.Location5788001, "Missing value for 'output'")
	case sorted && len(a.sortBy) == 0:
		return mongoerr.New(mongoerr.Location5788003, "Missing value for 'sortBy'")
	}
	return nil
}

// newState returns fresh state for one group whose _id is id (the N-ary accumulators
// evaluate n against {_id: id}).
func (a *accSpec) newState(id bsoncore.Value) (accState, error) {
	switch a.op {
	case "$sum", "$count":
		return &sumState{}, nil
	case "$avg":
		return &avgState{}, nil
	case "$min":
		return &minMaxState{sign: -1, coll: a.coll}, nil
	case "$max":
		return &minMaxState{sign: 1, coll: a.coll}, nil
	case "$first":
		return &firstLastState{}, nil
	case "$last":
		return &firstLastState{last: true}, nil
	case "$push":
		return &pushState{}, nil
	case "$addToSet":
		return &pushState{seen: map[string]bool{}, coll: a.coll}, nil
	case "$mergeObjects":
		return &mergeObjectsState{}, nil
	case "$stdDevPop":
		return &stdDevState{}, nil
	case "$stdDevSamp":
		return &stdDevState{sample: true}, nil
	case "$top", "$bottom":
		return &rankState{a: a, n: 1, single: true, bottom: a.op == "$bottom"}, nil
	case "$accumulator":
		return a.js.newState(id)
	case "$percentile", "$median":
		return &quantileState{q: a.quant}, nil
	}
	n, err := a.evalN(id)
	if err != nil {
		return nil, err
	}
	switch a.op {
	case "$topN", "$bottomN":
		return &rankState{a: a, n: n, bottom: a.op == "$bottomN"}, nil
	case "$firstN":
		return &firstNState{n: n}, nil
	case "$lastN":
		return &firstNState{n: n, last: true}, nil
	case "$maxN":
		return &minMaxNState{n: n, sign: 1, coll: a.coll}, nil
	default:
		return &minMaxNState{n: n, sign: -1, coll: a.coll}, nil
	}
}

// evalN evaluates 'n' against {_id: id} and checks it is a positive integer.
func (a *accSpec) evalN(id bsoncore.Value) (int64, error) {
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = bsoncore.AppendValueElement(b, "_id", id)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	v, err := a.n.Eval(b, nil)
	if err != nil {
		return 0, err
	}
	n, ok := WholeNumber(v)
	if !ok {
		return 0, mongoerr.New(mongoerr.Location5787902, "Value for 'n' must be of integral type, but found %s", bsonx.ShellString(v))
	}
	if n <= 0 {
		return 0, mongoerr.New(mongoerr.Location5787908, "'n' must be greater than 0, found %d", n)
	}
	return n, nil
}

// ownValue copies v so that it outlives the document and scratch buffer it points into.
func ownValue(v bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
}

// nullish reports whether v is missing, null or undefined.
func nullish(v bsoncore.Value) bool {
	return v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined
}

// NullValue is BSON null.
var NullValue = bsoncore.Value{Type: bsoncore.TypeNull}

// sumState is $sum (and $count, whose input is 1).
type sumState struct{ s numAcc }

// add implements accState.
func (st *sumState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) { return 0, st.s.add(v) }

// result implements accState.
func (st *sumState) result() (bsoncore.Value, error) { return st.s.value(), nil }

// avgState is $avg: the mean of the numeric inputs, null if there are none.
type avgState struct {
	s numAcc
	n int64
}

// add implements accState.
func (st *avgState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	if !bsonx.IsNumber(v.Type) {
		return 0, nil
	}
	st.n++
	return 0, st.s.add(v)
}

// result implements accState: the decimal mean when any input was a decimal, else the
// double one (MongoDB's AccumulatorAvg).
func (st *avgState) result() (bsoncore.Value, error) {
	if st.n == 0 {
		return NullValue, nil
	}
	if st.s.t == bsoncore.TypeDecimal128 {
		return expr.DivideNumbers(st.s.decimal(), bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, st.n)})
	}
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, st.s.dd.double()/float64(st.n))}, nil
}

// minMaxState is $min (sign -1) and $max (sign 1): nulls and missing values are ignored.
type minMaxState struct {
	sign int
	v    bsoncore.Value
	coll bsonx.Collator
}

// add implements accState.
func (st *minMaxState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	if nullish(v) {
		return 0, nil
	}
	if st.v.Type == 0 || bsonx.Compare(bsonx.Collate(st.coll, v), bsonx.Collate(st.coll, st.v))*st.sign > 0 {
		n := len(v.Data) - len(st.v.Data)
		st.v = ownValue(v)
		return n, nil
	}
	return 0, nil
}

// result implements accState.
func (st *minMaxState) result() (bsoncore.Value, error) {
	if st.v.Type == 0 {
		return NullValue, nil
	}
	return st.v, nil
}

// firstLastState is $first and $last; a missing value counts, as null.
type firstLastState struct {
	last bool
	set  bool
	v    bsoncore.Value
}

// add implements accState.
func (st *firstLastState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	if st.set && !st.last {
		return 0, nil
	}
	st.set = true
	n := len(v.Data) - len(st.v.Data)
	st.v = ownValue(v)
	return n, nil
}

// result implements accState.
func (st *firstLastState) result() (bsoncore.Value, error) {
	if st.v.Type == 0 {
		return NullValue, nil
	}
	return st.v, nil
}

// pushState is $push, and $addToSet when seen is set; missing values are skipped.
type pushState struct {
	vals []bsoncore.Value
	seen map[string]bool
	coll bsonx.Collator // $addToSet: values equal under the collation are one
}

// add implements accState.
func (st *pushState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	if v.Type == 0 {
		return 0, nil
	}
	if st.seen != nil {
		k := string(bsonx.AppendKey(nil, bsonx.Collate(st.coll, v)))
		if st.seen[k] {
			return 0, nil
		}
		st.seen[k] = true
	}
	st.vals = append(st.vals, ownValue(v))
	return len(v.Data) + 24, nil
}

// result implements accState.
func (st *pushState) result() (bsoncore.Value, error) { return arrayValue(st.vals), nil }

// arrayValue builds an array of vals.
func arrayValue(vals []bsoncore.Value) bsoncore.Value {
	idx, b := bsoncore.AppendArrayStart(nil)
	for i, v := range vals {
		b = bsoncore.AppendValueElement(b, bsonx.ArrayKey(i), v)
	}
	b, _ = bsoncore.AppendArrayEnd(b, idx)
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: b}
}

// mergeObjectsState is $mergeObjects: later fields overwrite earlier ones; nulls are ignored.
type mergeObjectsState struct {
	names []string
	vals  map[string]bsoncore.Value
}

// add implements accState.
func (st *mergeObjectsState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	if nullish(v) {
		return 0, nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return 0, mongoerr.New(mongoerr.Location40400, "$mergeObjects requires object inputs, but input %s is of type %s", bsonx.ShellString(v), bsonx.TypeName(v.Type))
	}
	if st.vals == nil {
		st.vals = map[string]bsoncore.Value{}
	}
	elems, _ := d.Elements()
	n := 0
	for _, el := range elems {
		k := el.Key()
		if _, ok := st.vals[k]; !ok {
			st.names = append(st.names, k)
		}
		st.vals[k] = ownValue(el.Value())
		n += len(el)
	}
	return n, nil
}

// result implements accState.
func (st *mergeObjectsState) result() (bsoncore.Value, error) {
	idx, b := bsoncore.AppendDocumentStart(nil)
	for _, k := range st.names {
		b = bsoncore.AppendValueElement(b, k, st.vals[k])
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b}, nil
}

// stdDevState is $stdDevPop and $stdDevSamp (Welford's algorithm over numeric inputs).
type stdDevState struct {
	sample  bool
	n       int64
	mean, m float64
}

// add implements accState.
func (st *stdDevState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	f, ok := bsonx.NumberAsFloat64(v)
	if !ok {
		return 0, nil
	}
	st.n++
	d := f - st.mean
	st.mean += d / float64(st.n)
	st.m += d * (f - st.mean)
	return 0, nil
}

// result implements accState.
func (st *stdDevState) result() (bsoncore.Value, error) {
	den := st.n
	if st.sample {
		den--
	}
	if den <= 0 {
		return NullValue, nil
	}
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, math.Sqrt(st.m/float64(den)))}, nil
}

// ranked is one candidate of $top/$bottom/$maxN/$minN: its order key and value.
type ranked struct {
	key []byte
	seq int64
	v   bsoncore.Value
}

// rankState is $top, $bottom, $topN and $bottomN: the outputs of the first (or last) n
// documents in sortBy order, in that order.
type rankState struct {
	a      *accSpec
	n      int64
	single bool
	bottom bool
	items  []ranked // ascending by (key, seq)
	seq    int64
}

// add implements accState.
func (st *rankState) add(_ bsoncore.Value, doc bsoncore.Document) (int, error) {
	key, err := stream.SortKey(nil, doc, st.a.sortBy, st.a.coll)
	if err != nil {
		return 0, err
	}
	st.seq++
	r := ranked{key: key, seq: st.seq}
	if int64(len(st.items)) >= st.n {
		// Full: a new document must beat the worst kept one (ties keep the earlier one).
		if !st.bottom && bytes.Compare(key, st.items[len(st.items)-1].key) >= 0 {
			return 0, nil
		}
		if st.bottom && bytes.Compare(key, st.items[0].key) < 0 {
			return 0, nil
		}
	}
	v, err := st.a.output.Eval(doc, nil)
	if err != nil {
		return 0, err
	}
	if v.Type == 0 {
		v = NullValue
	}
	r.v = ownValue(v)
	i := sort.Search(len(st.items), func(i int) bool {
		c := bytes.Compare(st.items[i].key, key)
		return c > 0 || (c == 0 && st.items[i].seq > r.seq)
	})
	st.items = append(st.items, ranked{})
	copy(st.items[i+1:], st.items[i:])
	st.items[i] = r
	n := len(key) + len(r.v.Data)
	if int64(len(st.items)) > st.n {
		var drop ranked
		if st.bottom {
			drop, st.items = st.items[0], st.items[1:]
		} else {
			drop, st.items = st.items[len(st.items)-1], st.items[:len(st.items)-1]
		}
		n -= len(drop.key) + len(drop.v.Data)
	}
	return n, nil
}

// result implements accState.
func (st *rankState) result() (bsoncore.Value, error) {
	if st.single {
		if len(st.items) == 0 {
			return NullValue, nil
		}
		return st.items[0].v, nil
	}
	vals := make([]bsoncore.Value, len(st.items))
	for i, r := range st.items {
		vals[i] = r.v
	}
	return arrayValue(vals), nil
}

// firstNState is $firstN and $lastN: missing values count, as null.
type firstNState struct {
	n    int64
	last bool
	vals []bsoncore.Value
}

// add implements accState.
func (st *firstNState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	if !st.last && int64(len(st.vals)) >= st.n {
		return 0, nil
	}
	if v.Type == 0 {
		v = NullValue
	}
	st.vals = append(st.vals, ownValue(v))
	n := len(v.Data)
	if int64(len(st.vals)) > st.n {
		n -= len(st.vals[0].Data)
		st.vals = st.vals[1:]
	}
	return n, nil
}

// result implements accState.
func (st *firstNState) result() (bsoncore.Value, error) { return arrayValue(st.vals), nil }

// minMaxNState is $maxN (sign 1) and $minN (sign -1): the n largest or smallest values,
// best first; nulls and missing values are ignored.
type minMaxNState struct {
	n    int64
	sign int
	coll bsonx.Collator   // strings compare under the pipeline's collation
	vals []bsoncore.Value // best first
}

// add implements accState.
func (st *minMaxNState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	if nullish(v) {
		return 0, nil
	}
	cv := bsonx.Collate(st.coll, v)
	better := func(i int) bool { return bsonx.Compare(cv, bsonx.Collate(st.coll, st.vals[i]))*st.sign > 0 }
	if int64(len(st.vals)) >= st.n && !better(len(st.vals)-1) {
		return 0, nil
	}
	i := sort.Search(len(st.vals), better)
	st.vals = append(st.vals, bsoncore.Value{})
	copy(st.vals[i+1:], st.vals[i:])
	st.vals[i] = ownValue(v)
	n := len(v.Data)
	if int64(len(st.vals)) > st.n {
		n -= len(st.vals[len(st.vals)-1].Data)
		st.vals = st.vals[:len(st.vals)-1]
	}
	return n, nil
}

// result implements accState.
func (st *minMaxNState) result() (bsoncore.Value, error) { return arrayValue(st.vals), nil }
