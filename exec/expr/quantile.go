package expr

import (
	"math"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Quantile is the parsed argument of $percentile ({input, p, method}) or $median ({input,
// method}), as an accumulator, a window function or an expression (MongoDB 7.0). The only
// method of 7.0 is "approximate"; cleave answers it exactly (the discrete percentile: a
// value of the input), which is what MongoDB's t-digest gives on small inputs and within
// its error bounds on large ones.
type Quantile struct {
	Name   string         // "$percentile" or "$median"
	Input  bsoncore.Value // the input expression, unparsed
	Ps     []float64      // the percentiles asked for; $median: [0.5]
	Median bool
}

// ParseQuantile parses the argument of name ($percentile or $median). objCode is MongoDB's
// code for an argument that is not an object: 7429703 for the accumulator, 7436200 for the
// expression.
func ParseQuantile(name string, arg bsoncore.Value, objCode mongoerr.Code, opts *Options) (*Quantile, error) {
	return parseQuantile(name, arg, objCode, func(p bsoncore.Value) (bsoncore.Value, bool, error) {
		e, err := Compile(p, opts)
		if err != nil || !e.IsConstant() {
			return bsoncore.Value{}, false, err
		}
		v, err := e.Eval(nil, nil)
		return v, true, err
	})
}

// constEval evaluates 'p': its value and whether it is constant.
type constEval func(p bsoncore.Value) (bsoncore.Value, bool, error)

// parseQuantile is ParseQuantile with the evaluation of 'p' given.
func parseQuantile(name string, arg bsoncore.Value, objCode mongoerr.Code, evalP constEval) (*Quantile, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(objCode, "specification must be an object; found %s", bsonx.ShellString(arg))
	}
	q := &Quantile{Name: name, Median: name == "$median"}
	var p, method bsoncore.Value
	seen := map[string]bool{}
	elems, _ := d.Elements()
	for _, el := range elems {
		k := el.Key()
		if seen[k] {
			return nil, mongoerr.New(mongoerr.Location40413, "BSON field '%s.%s' is a duplicate field", name, k)
		}
		seen[k] = true
		switch {
		case k == "input":
			q.Input = el.Value()
		case k == "p" && !q.Median:
			p = el.Value()
		case k == "method":
			method = el.Value()
		default:
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", name, k)
		}
	}
	for _, f := range []struct {
		name string
		v    bsoncore.Value
	}{{"input", q.Input}, {"p", p}, {"method", method}} {
		if f.v.Type == 0 && (f.name != "p" || !q.Median) {
			return nil, mongoerr.New(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", name, f.name)
		}
	}
	m, ok := method.StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.method' is the wrong type '%s', expected type 'string'", name, bsonx.TypeName(method.Type))
	}
	if m != "approximate" {
		return nil, mongoerr.New(mongoerr.BadValue, "Currently only 'approximate' can be used as percentile 'method'.")
	}
	if q.Median {
		q.Ps = []float64{0.5}
		return q, nil
	}
	var err error
	q.Ps, err = parsePercentiles(p, evalP)
	return q, err
}

// parsePercentiles reads 'p': a constant expression giving a non-empty array of numbers
// in [0, 1].
func parsePercentiles(p bsoncore.Value, evalP constEval) ([]float64, error) {
	v, constant, err := evalP(p)
	if err != nil {
		return nil, err
	}
	if !constant {
		return nil, mongoerr.New(mongoerr.Location7750300, "The $percentile 'p' field must be an array of constant values, but found value: %s.", bsonx.ShellString(p))
	}
	const msg = "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: %s"
	vals := arrayValues(v)
	if v.Type != bsoncore.TypeArray || len(vals) == 0 {
		return nil, mongoerr.New(mongoerr.Location7750301, msg, bsonx.ShellString(v))
	}
	ps := make([]float64, len(vals))
	for i, x := range vals {
		if !isNum(x) {
			return nil, mongoerr.New(mongoerr.Location7750302, msg, bsonx.ShellString(x))
		}
		ps[i] = asFloat(x)
		if !(ps[i] >= 0 && ps[i] <= 1) {
			return nil, mongoerr.New(mongoerr.Location7750303, msg, strconv.FormatFloat(ps[i], 'g', -1, 64))
		}
	}
	return ps, nil
}

// Percentiles returns the discrete percentiles ps of sorted (ascending, no NaN): for each
// p the value of rank ceil(n·p)−1 (the lowest rank on a tie, p = 1 the largest), as
// MongoDB computes them. Nothing in sorted gives nil.
func Percentiles(sorted []float64, ps []float64) []float64 {
	if len(sorted) == 0 {
		return nil
	}
	out := make([]float64, len(ps))
	n := len(sorted)
	for i, p := range ps {
		r := n - 1
		if p < 1 {
			r = max(0, int(math.Ceil(float64(n)*p))-1)
		}
		out[i] = sorted[r]
	}
	return out
}

// Value is q's result from the percentiles pctls (nil: there was no numeric input): an
// array of doubles for $percentile (of nulls without input), a double for $median (null).
func (q *Quantile) Value(pctls []float64) bsoncore.Value {
	if q.Median {
		if pctls == nil {
			return valNull
		}
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, pctls[0])}
	}
	idx, b := bsoncore.AppendArrayStart(nil)
	for i := range q.Ps {
		if pctls == nil {
			b = bsoncore.AppendNullElement(b, bsonx.ArrayKey(i))
		} else {
			b = bsoncore.AppendDoubleElement(b, bsonx.ArrayKey(i), pctls[i])
		}
	}
	b, _ = bsoncore.AppendArrayEnd(b, idx)
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: b}
}

// AsFloat returns a number as a double (a decimal rounded to the nearest), 0 for anything
// else.
func AsFloat(v bsoncore.Value) float64 { return asFloat(v) }

// quantileNode is $percentile or $median as an expression: over an array's numeric
// elements, or a number alone (every percentile is that number).
type quantileNode struct {
	q     *Quantile
	input node
}

// parseQuantileExpr parses {$percentile: {input, p, method}} and {$median: {input, method}}.
func parseQuantileExpr(p *parser, name string, arg bsoncore.Value) (node, error) {
	q, err := parseQuantile(name, arg, mongoerr.Location7436200, func(pv bsoncore.Value) (bsoncore.Value, bool, error) {
		n, err := p.parse(pv)
		if err != nil || !isConst(n) {
			return bsoncore.Value{}, false, err
		}
		return n.(*constNode).v, true, nil
	})
	if err != nil {
		return nil, err
	}
	in, err := p.parse(q.Input)
	if err != nil {
		return nil, err
	}
	return &quantileNode{q: q, input: in}, nil
}

// eval implements node.
func (n *quantileNode) eval(v *Vars) (bsoncore.Value, error) {
	in, err := n.input.eval(v)
	if err != nil {
		return missing, err
	}
	var vals []float64
	switch {
	case isNum(in):
		f := asFloat(in)
		pctls := make([]float64, len(n.q.Ps))
		for i := range pctls {
			pctls[i] = f
		}
		return n.q.Value(pctls), nil
	case in.Type == bsoncore.TypeArray:
		for _, x := range arrayValues(in) {
			if f := asFloat(x); isNum(x) && !math.IsNaN(f) {
				vals = append(vals, f)
			}
		}
	}
	slices.Sort(vals)
	return n.q.Value(Percentiles(vals, n.q.Ps)), nil
}
