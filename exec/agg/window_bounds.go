package agg

import (
	"fmt"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// boundKind is what one end of a window is.
type boundKind int

const (
	boundUnbounded boundKind = iota // "unbounded": the partition's end
	boundCurrent                    // "current": the current document
	boundValue                      // a document offset or a range delta
)

// winBound is one end of a window: a document offset (n) or a range delta (v).
type winBound struct {
	kind boundKind
	n    int
	v    bsoncore.Value
}

// winBounds is a window: documents [lower, upper] (offsets from the current document) or
// range [lower, upper] (deltas added to its sortBy value, with unit for dates).
type winBounds struct {
	rangeBased   bool
	unit         string // range with a time unit
	lower, upper winBound
	// dateAdd adds a delta in unit to a date (range bounds with a unit).
	dateAdd *calc
}

// wholePartition is the default window, documents [unbounded, unbounded].
var wholePartition = winBounds{}

// toCurrent is the window of the order-dependent functions, documents [unbounded, current].
var toCurrent = winBounds{upper: winBound{kind: boundCurrent}}

// unboundedBoth reports whether the window is [unbounded, unbounded].
func (b *winBounds) unboundedBoth() bool {
	return b.lower.kind == boundUnbounded && b.upper.kind == boundUnbounded
}

// parseWindowBounds parses a window function's 'window' field.
func parseWindowBounds(env *Env, v bsoncore.Value, ws *windowSort) (winBounds, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return winBounds{}, mongoerr.New(mongoerr.FailedToParse, "'window' field must be an object")
	}
	docs, errDocs := d.LookupErr("documents")
	rng, errRange := d.LookupErr("range")
	unit, errUnit := d.LookupErr("unit")
	hasDocs, hasRange, hasUnit := errDocs == nil, errRange == nil, errUnit == nil
	elems, _ := d.Elements()
	switch {
	case hasDocs && hasRange:
		return winBounds{}, mongoerr.New(mongoerr.FailedToParse, "Window bounds can specify either 'documents' or 'unit', not both.")
	case !hasRange && hasUnit:
		return winBounds{}, mongoerr.New(mongoerr.FailedToParse, "Window bounds can only specify 'unit' with range-based bounds.")
	case !hasRange && !hasDocs:
		if len(elems) != 0 {
			return winBounds{}, mongoerr.New(mongoerr.FailedToParse,
				"'window' field can only contain 'documents' as the only argument or 'range' with an optional 'unit' field")
		}
		return wholePartition, nil
	case hasDocs:
		if len(elems) != 1 {
			return winBounds{}, mongoerr.New(mongoerr.FailedToParse, "'window' field that specifies documents cannot have other fields")
		}
		return parseDocumentBounds(env, docs, ws)
	}
	return parseRangeBounds(env, rng, unit, hasUnit, len(elems), ws)
}

// unpackBounds splits a [lower, upper] array.
func unpackBounds(name string, v bsoncore.Value) (bsoncore.Value, bsoncore.Value, error) {
	arr, ok := v.ArrayOK()
	var vals []bsoncore.Value
	if ok {
		vals, _ = arr.Values()
	}
	if len(vals) != 2 {
		return bsoncore.Value{}, bsoncore.Value{}, mongoerr.New(mongoerr.FailedToParse,
			"Window bounds must be a 2-element array: %s: %s", name, bsonx.ShellString(v))
	}
	return vals[0], vals[1], nil
}

// parseBound parses one end: "unbounded", "current" or a constant expression, which check
// validates and converts.
func parseBound(env *Env, v bsoncore.Value, check func(bsoncore.Value) (winBound, error)) (winBound, error) {
	if s, ok := v.StringValueOK(); ok {
		switch s {
		case "unbounded":
			return winBound{kind: boundUnbounded}, nil
		case "current":
			return winBound{kind: boundCurrent}, nil
		}
		return winBound{}, mongoerr.New(mongoerr.FailedToParse, "Window bounds must be 'unbounded', 'current', or a number.")
	}
	e, err := env.CompileExpr(v)
	if err != nil {
		return winBound{}, err
	}
	if !e.IsConstant() {
		return winBound{}, mongoerr.New(mongoerr.FailedToParse, "Window bounds expression must be a constant.")
	}
	c, err := e.Eval(query.EmptyDoc, nil)
	if err != nil {
		return winBound{}, err
	}
	return check(c)
}

// int32Whole converts v when it is a number with an int32 value (MongoDB's Value::integral).
func int32Whole(v bsoncore.Value) (int, bool) {
	n, ok := WholeNumber(v)
	if !ok || n != int64(int32(n)) {
		return 0, false
	}
	return int(n), true
}

// parseDocumentBounds parses documents: [lower, upper].
func parseDocumentBounds(env *Env, v bsoncore.Value, ws *windowSort) (winBounds, error) {
	lv, uv, err := unpackBounds("documents", v)
	if err != nil {
		return winBounds{}, err
	}
	check := func(c bsoncore.Value) (winBound, error) {
		n, ok := int32Whole(c)
		if !ok {
			return winBound{}, mongoerr.New(mongoerr.FailedToParse, "Numeric document-based bounds must be an integer")
		}
		return winBound{kind: boundValue, n: n}, nil
	}
	b := winBounds{}
	if b.lower, err = parseBound(env, lv, check); err != nil {
		return winBounds{}, err
	}
	if b.upper, err = parseBound(env, uv, check); err != nil {
		return winBounds{}, err
	}
	lo, hi, both := b.lower.n, b.upper.n, b.lower.kind != boundUnbounded && b.upper.kind != boundUnbounded
	if both && lo > hi {
		return winBounds{}, mongoerr.New(mongoerr.Location5339900, "Lower bound must not exceed upper bound: [%d, %d]", lo, hi)
	}
	if !b.unboundedBoth() && !ws.present {
		return winBounds{}, mongoerr.New(mongoerr.Location5339901, "Document-based bounds require a sortBy")
	}
	return b, nil
}

// parseRangeBounds parses range: [lower, upper] with an optional unit.
func parseRangeBounds(env *Env, rng, unit bsoncore.Value, hasUnit bool, nfields int, ws *windowSort) (winBounds, error) {
	lv, uv, err := unpackBounds("range", rng)
	if err != nil {
		return winBounds{}, err
	}
	b := winBounds{rangeBased: true}
	check := func(c bsoncore.Value) (winBound, error) {
		if !bsonx.IsNumber(c.Type) {
			return winBound{}, mongoerr.New(mongoerr.FailedToParse, "Range-based bounds expression must be a number")
		}
		return winBound{kind: boundValue, v: ownValue(c)}, nil
	}
	if hasUnit {
		if nfields != 2 {
			return winBounds{}, mongoerr.New(mongoerr.FailedToParse, "'window' field that specifies unit cannot have other fields besides 'range'")
		}
		u, ok := unit.StringValueOK()
		if !ok {
			return winBounds{}, mongoerr.New(mongoerr.FailedToParse, "'unit' must be a string")
		}
		check = func(c bsoncore.Value) (winBound, error) {
			if _, ok := int32Whole(c); !ok {
				return winBound{}, mongoerr.New(mongoerr.FailedToParse, "With 'unit', range-based bounds must be an integer")
			}
			return winBound{kind: boundValue, v: ownValue(c)}, nil
		}
		if b.lower, err = parseBound(env, lv, check); err != nil {
			return winBounds{}, err
		}
		if b.upper, err = parseBound(env, uv, check); err != nil {
			return winBounds{}, err
		}
		if err := checkTimeUnit(u); err != nil {
			return winBounds{}, err
		}
		b.unit = u
		if b.dateAdd, err = dateAddCalc(u); err != nil {
			return winBounds{}, err
		}
	} else {
		if nfields != 1 {
			return winBounds{}, mongoerr.New(mongoerr.FailedToParse, "'window' field that specifies range cannot have other fields besides 'unit'")
		}
		if b.lower, err = parseBound(env, lv, check); err != nil {
			return winBounds{}, err
		}
		if b.upper, err = parseBound(env, uv, check); err != nil {
			return winBounds{}, err
		}
	}
	if err := b.checkForward(); err != nil {
		return winBounds{}, err
	}
	if !ws.present || len(ws.fields) != 1 {
		return winBounds{}, mongoerr.New(mongoerr.Location5339902, "Range-based bounds require sortBy a single field")
	}
	return b, nil
}

// checkForward checks lower <= upper, with "current" as 0.
func (b *winBounds) checkForward() error {
	if b.lower.kind == boundUnbounded || b.upper.kind == boundUnbounded {
		return nil
	}
	zero := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 0)}
	lo, hi := b.lower.v, b.upper.v
	if b.lower.kind == boundCurrent {
		lo = zero
	}
	if b.upper.kind == boundCurrent {
		hi = zero
	}
	if bsonx.Compare(lo, hi) > 0 {
		return mongoerr.New(mongoerr.Location5339900, "Lower bound must not exceed upper bound: [%s, %s]", boundString(lo), boundString(hi))
	}
	return nil
}

// boundString prints a bound as MongoDB's Value::toString does.
func boundString(v bsoncore.Value) string {
	if f, ok := bsonx.NumberAsFloat64(v); ok && v.Type != bsoncore.TypeDecimal128 {
		return fmt.Sprint(f)
	}
	return bsonx.ShellString(v)
}

// endpoints returns the window [lo, hi] of document i of the partition, or ok false when
// the window is empty.
func (p *winPart) endpoints(b *winBounds, i int) (lo, hi int, ok bool, err error) {
	if !b.rangeBased {
		lo, hi = 0, len(p.docs)-1
		if b.lower.kind != boundUnbounded {
			lo = i + b.lower.n
		}
		if b.upper.kind != boundUnbounded {
			hi = i + b.upper.n
		}
		if lo > len(p.docs)-1 || hi < 0 {
			return 0, 0, false, nil
		}
		return max(lo, 0), min(hi, len(p.docs)-1), true, nil
	}
	return p.rangeEndpoints(b, i)
}

// rangeEndpoints is endpoints for range bounds: the documents whose sortBy value lies within
// [base + lower, base + upper], base being document i's. The values of the expected type
// (numbers, or dates with a unit) form one ascending run of the sorted partition.
func (p *winPart) rangeEndpoints(b *winBounds, i int) (lo, hi int, ok bool, err error) {
	if p.s.sort.fields[0].Desc {
		return 0, 0, false, mongoerr.New(mongoerr.Location5429404, "Missing _sortExpr with range-based bounds")
	}
	vals, runStart, runEnd, err := p.sortRuns(b.unit != "")
	if err != nil {
		return 0, 0, false, err
	}
	base := vals[i]
	switch {
	case b.unit != "" && base.Type != bsoncore.TypeDateTime:
		return 0, 0, false, mongoerr.New(mongoerr.Location5429513, "Invalid range: Expected the sortBy field to be a Date, but it was %s", bsonx.TypeName(base.Type))
	case b.unit == "" && base.Type == bsoncore.TypeDateTime:
		return 0, 0, false, mongoerr.New(mongoerr.Location5429413, "Invalid range: For windows that involve date or time ranges, a unit must be provided.")
	case b.unit == "" && !bsonx.IsNumber(base.Type):
		return 0, 0, false, mongoerr.New(mongoerr.Location5429414, "Invalid range: Expected the sortBy field to be a number, but it was %s", bsonx.TypeName(base.Type))
	}
	start, end := runStart[i], runEnd[i]
	switch b.lower.kind {
	case boundCurrent:
		lo = i
	case boundUnbounded:
		lo = start
	default:
		thr, err := p.threshold(b, base, b.lower.v)
		if err != nil {
			return 0, 0, false, err
		}
		lo = start + sort.Search(end-start, func(j int) bool { return bsonx.Compare(vals[start+j], thr) >= 0 })
		if lo == end {
			return 0, 0, false, nil
		}
	}
	switch b.upper.kind {
	case boundCurrent:
		hi = i
	case boundUnbounded:
		hi = end - 1
	default:
		thr, err := p.threshold(b, base, b.upper.v)
		if err != nil {
			return 0, 0, false, err
		}
		j := lo + sort.Search(end-lo, func(j int) bool { return bsonx.Compare(vals[lo+j], thr) > 0 })
		if j == lo {
			return 0, 0, false, nil
		}
		hi = j - 1
	}
	return lo, hi, lo <= hi, nil
}

// threshold is base + delta: a decimal sum for numbers, a $dateAdd for dates.
func (p *winPart) threshold(b *winBounds, base, delta bsoncore.Value) (bsoncore.Value, error) {
	if b.unit != "" {
		return b.dateAdd.eval(p.cvars, base, delta)
	}
	return calcDecimalAdd.eval(p.cvars, base, delta)
}

// sortRuns returns the partition's sortBy values and, per document, the run of documents
// around it whose values have the expected type (dates when dates is set, else numbers).
func (p *winPart) sortRuns(dates bool) (vals []bsoncore.Value, start, end []int, err error) {
	vals, err = p.sortValues()
	if err != nil {
		return nil, nil, nil, err
	}
	k := 0
	if dates {
		k = 1
	}
	if p.runStart[k] == nil {
		expected := func(v bsoncore.Value) bool {
			if dates {
				return v.Type == bsoncore.TypeDateTime
			}
			return bsonx.IsNumber(v.Type)
		}
		n := len(vals)
		start, end = make([]int, n), make([]int, n)
		for j := 0; j < n; j++ {
			start[j] = j
			if j > 0 && expected(vals[j]) && expected(vals[j-1]) {
				start[j] = start[j-1]
			}
		}
		for j := n - 1; j >= 0; j-- {
			end[j] = j + 1
			if j < n-1 && expected(vals[j]) && expected(vals[j+1]) {
				end[j] = end[j+1]
			}
		}
		p.runStart[k], p.runEnd[k] = start, end
	}
	return vals, p.runStart[k], p.runEnd[k], nil
}

// sortValues returns the value of the (single) sortBy field of each document, evaluated as
// a field path; missing is null.
func (p *winPart) sortValues() ([]bsoncore.Value, error) {
	if p.sortVals != nil {
		return p.sortVals, nil
	}
	vals := make([]bsoncore.Value, len(p.docs))
	for j, d := range p.docs {
		v, err := p.s.sort.path.Eval(d, p.vars)
		if err != nil {
			return nil, err
		}
		if expr.IsMissing(v) {
			v = NullValue
		}
		vals[j] = ownValue(v)
		p.mem += int64(len(v.Data) + 24)
	}
	p.sortVals = vals
	return vals, nil
}
