package agg

import (
	"bytes"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// winEval computes one window function over one partition. at is called for documents
// 0, 1, 2, ... in order; its result (missing leaves the field out) must stay valid until
// the partition ends.
type winEval interface {
	at(i int) (bsoncore.Value, error)
}

// newWinEval returns the evaluator of f over partition p.
func newWinEval(p *winPart, f *winFunc) winEval {
	switch f.kind {
	case winFirst, winLast, winShift:
		return &endpointEval{p: p, f: f}
	case winRank, winDenseRank, winDocNumber:
		return &rankEval{p: p, f: f, run: 1}
	case winDerivative:
		return &derivativeEval{p: p, f: f}
	case winLinearFill:
		return &linearFillEval{p: p, f: f}
	}
	return &accumEval{p: p, f: f, stHi: -1}
}

// accumEval folds an accumulator over each document's window. Windows whose lower end
// stays put grow the previous state (running totals cost O(n)); others are recomputed.
type accumEval struct {
	p          *winPart
	f          *winFunc
	st         accState
	stLo, stHi int
	stMem      int64
	prevLo     int
	prevHi     int
	prev       bsoncore.Value
	hasPrev    bool
}

// at implements winEval.
func (e *accumEval) at(i int) (bsoncore.Value, error) {
	lo, hi, ok, err := e.p.endpoints(&e.f.bounds, i)
	if err != nil {
		return bsoncore.Value{}, err
	}
	if !ok {
		st, err := e.newState()
		if err != nil {
			return bsoncore.Value{}, err
		}
		return st.result()
	}
	if e.hasPrev && lo == e.prevLo && hi == e.prevHi {
		return e.prev, nil
	}
	if e.st == nil || lo != e.stLo || hi < e.stHi {
		if e.st, err = e.newState(); err != nil {
			return bsoncore.Value{}, err
		}
		e.p.mem -= e.stMem
		e.stLo, e.stHi, e.stMem = lo, lo-1, 0
	}
	for e.stHi < hi {
		e.stHi++
		v, err := e.input(e.stHi)
		if err != nil {
			return bsoncore.Value{}, err
		}
		n, err := e.st.add(v, e.p.docs[e.stHi])
		if err != nil {
			return bsoncore.Value{}, err
		}
		e.stMem += int64(n)
		e.p.mem += int64(n)
	}
	v, err := e.st.result()
	if err != nil {
		return bsoncore.Value{}, err
	}
	e.prevLo, e.prevHi, e.prev, e.hasPrev = lo, hi, v, true
	return v, nil
}

// newState returns a fresh accumulator state.
func (e *accumEval) newState() (accState, error) {
	if e.f.state != nil {
		return e.f.state(e.p), nil
	}
	return e.f.acc.newState(NullValue)
}

// input evaluates the accumulator's input on document j.
func (e *accumEval) input(j int) (bsoncore.Value, error) {
	d := e.p.docs[j]
	switch {
	case e.f.pairInput:
		vals, err := e.p.sortValues()
		if err != nil {
			return bsoncore.Value{}, err
		}
		y, err := e.f.input.Eval(d, e.p.vars)
		if err != nil {
			return bsoncore.Value{}, err
		}
		if y.Type == 0 {
			y = NullValue
		}
		return arrayValue([]bsoncore.Value{vals[j], y}), nil
	case e.f.acc != nil && e.f.acc.op == "$count":
		return one, nil
	case e.f.input != nil:
		return e.f.input.Eval(d, e.p.vars)
	case e.f.acc != nil && e.f.acc.input != nil:
		return e.f.acc.input.Eval(d, e.p.vars)
	}
	return bsoncore.Value{}, nil
}

// endpointEval is $first, $last and $shift: the input evaluated on one document of the
// window, or the default (null) when there is none.
type endpointEval struct {
	p *winPart
	f *winFunc
}

// at implements winEval.
func (e *endpointEval) at(i int) (bsoncore.Value, error) {
	j := -1
	switch e.f.kind {
	case winShift:
		if k := i + e.f.by; k >= 0 && k < len(e.p.docs) {
			j = k
		}
	default:
		lo, hi, ok, err := e.p.endpoints(&e.f.bounds, i)
		if err != nil {
			return bsoncore.Value{}, err
		}
		switch {
		case !ok:
		case e.f.kind == winFirst:
			j = lo
		default:
			j = hi
		}
	}
	if j < 0 {
		return e.f.def, nil
	}
	v, err := e.f.input.Eval(e.p.docs[j], e.p.vars)
	if err != nil {
		return bsoncore.Value{}, err
	}
	return ownValue(v), nil
}

// rankEval is $rank, $denseRank and $documentNumber over the sortBy field's sort key
// (null and missing tie; arrays rank by their sort key, as MongoDB does).
type rankEval struct {
	p         *winPart
	f         *winFunc
	last      []byte
	rank, run int64
}

// at implements winEval.
func (e *rankEval) at(i int) (bsoncore.Value, error) {
	switch e.f.kind {
	case winDocNumber:
		e.rank = int64(i) + 1
	default:
		key, err := stream.SortKey(nil, e.p.docs[i], e.p.s.sort.fields, e.p.s.env.Collator())
		if err != nil {
			return bsoncore.Value{}, err
		}
		same := i > 0 && bytes.Equal(key, e.last)
		e.last = key
		switch {
		case same:
			e.run++
		case e.f.kind == winRank:
			e.rank += e.run
			e.run = 1
		default:
			e.rank++
		}
	}
	return intOrLong(e.rank), nil
}

// intOrLong is n as an int32 when it fits, else an int64 (Value::createIntOrLong).
func intOrLong(n int64) bsoncore.Value {
	if n == int64(int32(n)) {
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(n))}
	}
	return bsonx.Int64Value(n)
}

// derivativeEval is $derivative: (input(last) − input(first)) / (sortBy(last) −
// sortBy(first)) over the window, scaled to unit when there is one.
type derivativeEval struct {
	p *winPart
	f *winFunc
}

// at implements winEval.
func (e *derivativeEval) at(i int) (bsoncore.Value, error) {
	lo, hi, ok, err := e.p.endpoints(&e.f.bounds, i)
	if err != nil || !ok {
		return NullValue, err
	}
	vals, err := e.p.sortValues()
	if err != nil {
		return bsoncore.Value{}, err
	}
	t0, t1 := vals[lo], vals[hi]
	dates := t0.Type == bsoncore.TypeDateTime && t1.Type == bsoncore.TypeDateTime
	switch {
	case e.f.unitMs != 0 && !dates:
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location5624900, "$derivative with 'unit' expects the sortBy field to be a Date")
	case e.f.unitMs == 0 && (t0.Type == bsoncore.TypeDateTime || t1.Type == bsoncore.TypeDateTime):
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location5624901, "$derivative where the sortBy is a Date requires an 'unit'")
	case e.f.unitMs == 0 && (!bsonx.IsNumber(t0.Type) || !bsonx.IsNumber(t1.Type)):
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location5624902, "$derivative (with no 'unit') expects the sortBy field to be numeric")
	}
	run, err := calcSubtract.eval(e.p.cvars, t1, t0)
	if err != nil {
		return bsoncore.Value{}, err
	}
	y0, err := e.evalInput(lo)
	if err != nil {
		return bsoncore.Value{}, err
	}
	y1, err := e.evalInput(hi)
	if err != nil {
		return bsoncore.Value{}, err
	}
	rise, err := calcSubtract.eval(e.p.cvars, y1, y0)
	if err != nil {
		return bsoncore.Value{}, err
	}
	if nullish(rise) {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location5624903, "$derivative input must not be null or missing")
	}
	res, err := calcDivide.eval(e.p.cvars, rise, run)
	if me := mongoerr.As(err); me != nil && me.Code == mongoerr.BadValue {
		// Division by zero: a one-document window, such as the partition's first.
		return NullValue, nil
	}
	if err != nil || e.f.unitMs == 0 {
		return res, err
	}
	return calcMultiply.eval(e.p.cvars, res, bsonx.Int64Value(e.f.unitMs))
}

// evalInput evaluates the input on document j, copied.
func (e *derivativeEval) evalInput(j int) (bsoncore.Value, error) {
	v, err := e.f.input.Eval(e.p.docs[j], e.p.vars)
	return ownValue(v), err
}

// linearFillEval is $linearFill: null and missing inputs are interpolated between the
// nearest non-null inputs before and after, by sortBy value; without both, null.
type linearFillEval struct {
	p        *winPart
	f        *winFunc
	x1, y1   bsoncore.Value // the last non-null point
	x2, y2   bsoncore.Value // the next one, once searched
	has1     bool
	has2     bool
	x2At     int
	lastSort bsoncore.Value
}

// at implements winEval.
func (e *linearFillEval) at(i int) (bsoncore.Value, error) {
	vals, err := e.p.sortValues()
	if err != nil {
		return bsoncore.Value{}, err
	}
	y, err := e.f.input.Eval(e.p.docs[i], e.p.vars)
	if err != nil {
		return bsoncore.Value{}, err
	}
	y = ownValue(y)
	x := vals[i]
	if err := e.check(i, x, y); err != nil {
		return bsoncore.Value{}, err
	}
	if !nullish(y) {
		e.x1, e.y1, e.has1, e.has2 = x, y, true, false
		return y, nil
	}
	if !e.has1 {
		return NullValue, nil
	}
	if !e.has2 || e.x2At <= i {
		if e.has2, err = e.findNext(i, vals); err != nil || !e.has2 {
			return NullValue, err
		}
	}
	// y1 + (x − x1) × ((y2 − y1) / (x2 − x1))
	dy, err := calcSubtract.eval(e.p.cvars, e.y2, e.y1)
	if err != nil {
		return bsoncore.Value{}, err
	}
	dx, err := calcSubtract.eval(e.p.cvars, e.x2, e.x1)
	if err != nil {
		return bsoncore.Value{}, err
	}
	slope, err := calcDivide.eval(e.p.cvars, dy, dx)
	if err != nil {
		return bsoncore.Value{}, err
	}
	off, err := calcSubtract.eval(e.p.cvars, x, e.x1)
	if err != nil {
		return bsoncore.Value{}, err
	}
	if off, err = calcMultiply.eval(e.p.cvars, off, slope); err != nil {
		return bsoncore.Value{}, err
	}
	return calcAdd.eval(e.p.cvars, e.y1, off)
}

// check validates document i's input and sortBy value as MongoDB's $linearFill does.
func (e *linearFillEval) check(i int, x, y bsoncore.Value) error {
	if !bsonx.IsNumber(y.Type) && !nullish(y) {
		return mongoerr.New(mongoerr.TypeMismatch, "Value to be filled must be numeric or nullish, but found %s", bsonx.TypeName(y.Type))
	}
	if !bsonx.IsNumber(x.Type) && x.Type != bsoncore.TypeDateTime {
		return mongoerr.New(mongoerr.TypeMismatch, "Value of the sortBy field must be numeric or a date, but found %s", bsonx.TypeName(x.Type))
	}
	if i > 0 {
		if bsonx.Compare(x, e.lastSort) == 0 {
			return mongoerr.New(mongoerr.Location6050106, "There can be no repeated values in the sort field")
		}
		if (x.Type == bsoncore.TypeDateTime) != (e.lastSort.Type == bsoncore.TypeDateTime) {
			return mongoerr.New(mongoerr.TypeMismatch, "Conflicting sort value types, previously received type %s, but found %s",
				bsonx.TypeName(e.lastSort.Type), bsonx.TypeName(x.Type))
		}
	}
	e.lastSort = x
	return nil
}

// findNext finds the first document after i with a non-null input and sortBy value.
func (e *linearFillEval) findNext(i int, vals []bsoncore.Value) (bool, error) {
	for j := i + 1; j < len(e.p.docs); j++ {
		y, err := e.f.input.Eval(e.p.docs[j], e.p.vars)
		if err != nil {
			return false, err
		}
		if !nullish(y) && !nullish(vals[j]) {
			e.x2, e.y2, e.x2At = vals[j], ownValue(y), j
			return true, nil
		}
	}
	return false, nil
}

// covState is $covariancePop and $covarianceSamp over [x, y] pairs of numbers (Welford).
type covState struct {
	samp        bool
	n           int64
	mx, my, cxy float64
}

// add implements accState.
func (st *covState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return 0, nil
	}
	vals, _ := arr.Values()
	if len(vals) != 2 {
		return 0, nil
	}
	x, okx := bsonx.NumberAsFloat64(vals[0])
	y, oky := bsonx.NumberAsFloat64(vals[1])
	if !okx || !oky {
		return 0, nil
	}
	st.n++
	dx := x - st.mx
	st.mx += dx / float64(st.n)
	st.my += (y - st.my) / float64(st.n)
	st.cxy += dx * (y - st.my)
	return 0, nil
}

// result implements accState.
func (st *covState) result() (bsoncore.Value, error) {
	n := st.n
	if st.samp {
		n--
	}
	if n <= 0 {
		return NullValue, nil
	}
	return bsonx.DoubleValue(st.cxy / float64(n)), nil
}

// locfState is $locf: the last non-null input so far, else null.
type locfState struct{ last bsoncore.Value }

// add implements accState.
func (st *locfState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	if nullish(v) {
		return 0, nil
	}
	st.last = ownValue(v)
	return len(v.Data), nil
}

// result implements accState.
func (st *locfState) result() (bsoncore.Value, error) {
	if st.last.Type == 0 {
		return NullValue, nil
	}
	return st.last, nil
}

// emaState is $expMovingAvg: cur = input × alpha + cur × (1 − alpha), in decimal; the
// result is a double unless an input was a decimal.
type emaState struct {
	alpha, rest bsoncore.Value
	vars        *expr.Vars
	cur         bsoncore.Value
	decimal     bool
}

// add implements accState.
func (st *emaState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	if !bsonx.IsNumber(v.Type) {
		return 0, nil
	}
	st.decimal = st.decimal || v.Type == bsoncore.TypeDecimal128
	x, err := calcToDecimal.eval(st.vars, v)
	if err != nil {
		return 0, err
	}
	if st.cur.Type == 0 {
		st.cur = x
		return 0, nil
	}
	if x, err = calcMultiply.eval(st.vars, x, st.alpha); err != nil {
		return 0, err
	}
	r, err := calcMultiply.eval(st.vars, st.cur, st.rest)
	if err != nil {
		return 0, err
	}
	st.cur, err = calcAdd.eval(st.vars, x, r)
	return 0, err
}

// result implements accState.
func (st *emaState) result() (bsoncore.Value, error) {
	switch {
	case st.cur.Type == 0:
		return NullValue, nil
	case st.decimal:
		return st.cur, nil
	}
	return calcToDouble.eval(st.vars, st.cur)
}

// integralState is $integral: the trapezoidal rule over consecutive [sortBy, input]
// points, divided by unit's milliseconds when there is a unit.
type integralState struct {
	unitMs int64
	vars   *expr.Vars
	prev   []bsoncore.Value
	n, nan int
	sum    numAcc
}

// add implements accState.
func (st *integralState) add(v bsoncore.Value, _ bsoncore.Document) (int, error) {
	pt, _ := v.Array().Values()
	if len(pt) != 2 || !bsonx.IsNumber(pt[1].Type) || (!bsonx.IsNumber(pt[0].Type) && pt[0].Type != bsoncore.TypeDateTime) {
		return 0, mongoerr.New(mongoerr.Location5423900, "The input value of $integral window function must be a vector of 2 value, the first value must be numeric or date type and the second must be numeric.")
	}
	switch {
	case st.unitMs != 0 && pt[0].Type != bsoncore.TypeDateTime:
		return 0, mongoerr.New(mongoerr.Location5423901, "$integral with 'outputUnit' expects the sortBy field to be a Date")
	case st.unitMs == 0 && !bsonx.IsNumber(pt[0].Type):
		return 0, mongoerr.New(mongoerr.Location5423902, "$integral (with no 'outputUnit') expects the sortBy field to be numeric")
	}
	if isNaN(pt[0]) || isNaN(pt[1]) {
		st.nan++
	}
	if st.n > 0 && !isNaN(st.prev[0]) && !isNaN(st.prev[1]) && !isNaN(pt[0]) && !isNaN(pt[1]) {
		dx, err := calcSubtract.eval(st.vars, pt[0], st.prev[0])
		if err != nil {
			return 0, err
		}
		sy, err := calcAdd.eval(st.vars, pt[1], st.prev[1])
		if err != nil {
			return 0, err
		}
		area, err := calcMultiply.eval(st.vars, sy, dx)
		if err != nil {
			return 0, err
		}
		if area, err = calcDivide.eval(st.vars, area, bsonx.DoubleValue(2)); err != nil {
			return 0, err
		}
		if err := st.sum.add(area); err != nil {
			return 0, err
		}
	}
	st.n++
	st.prev = []bsoncore.Value{ownValue(pt[0]), ownValue(pt[1])}
	return 0, nil
}

// result implements accState.
func (st *integralState) result() (bsoncore.Value, error) {
	switch {
	case st.n == 0:
		return NullValue, nil
	case st.nan > 0:
		return bsonx.DoubleValue(math.NaN()), nil
	case st.unitMs != 0:
		return calcDivide.eval(st.vars, st.sum.value(), bsonx.Int64Value(st.unitMs))
	}
	return st.sum.value(), nil
}

// isNaN reports whether v is a double or decimal NaN.
func isNaN(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeDouble:
		return math.IsNaN(v.Double())
	case bsoncore.TypeDecimal128:
		f, _ := bsonx.NumberAsFloat64(v)
		return math.IsNaN(f)
	}
	return false
}
