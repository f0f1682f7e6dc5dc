package agg

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// winKind is how a window function computes its value.
type winKind int

const (
	winAccum      winKind = iota // an accumulator folded over the window
	winFirst                     // the input of the window's first document
	winLast                      // the input of the window's last document
	winShift                     // the output of the document 'by' positions away
	winRank                      // $rank
	winDenseRank                 // $denseRank
	winDocNumber                 // $documentNumber
	winDerivative                // rise over run between the window's endpoints
	winLinearFill                // linear interpolation of null inputs
)

// winFunc is one compiled window function of $setWindowFields' output.
type winFunc struct {
	name   string
	kind   winKind
	bounds winBounds
	input  *expr.Expr
	// acc is the group accumulator of winAccum functions; state, when set, builds the state
	// of the window-only accumulators instead ($covariancePop, $expMovingAvg, ...).
	acc   *accSpec
	state func(p *winPart) accState
	// pairInput makes the input [sortBy value, input] ($integral).
	pairInput bool
	by        int            // $shift
	def       bsoncore.Value // $shift's default (missing: null)
	unitMs    int64          // $derivative, $integral: the output unit; 0: none
}

// winParser parses the specification d of the window function name.
type winParser func(env *Env, name string, d bsoncore.Document, ws *windowSort) (*winFunc, error)

// windowParsers maps MongoDB 7.0's window functions to their parsers; filled by init because
// the parsers consult it (isWindowFunction).
var windowParsers map[string]winParser

func init() {
	windowParsers = map[string]winParser{
		"$sum": parseWinAccum, "$avg": parseWinAccum, "$min": parseWinAccum, "$max": parseWinAccum,
		"$push": parseWinAccum, "$addToSet": parseWinAccum, "$stdDevPop": parseWinAccum,
		"$stdDevSamp": parseWinAccum, "$covariancePop": parseWinAccum, "$covarianceSamp": parseWinAccum,
		"$count": parseWinCount, "$first": parseWinFirstLast, "$last": parseWinFirstLast,
		"$top": parseWinN, "$bottom": parseWinN, "$topN": parseWinN, "$bottomN": parseWinN,
		"$firstN": parseWinN, "$lastN": parseWinN, "$maxN": parseWinN, "$minN": parseWinN,
		"$rank": parseWinRank, "$denseRank": parseWinRank, "$documentNumber": parseWinRank,
		"$shift": parseWinShift, "$expMovingAvg": parseWinExpMovingAvg, "$derivative": parseWinDerivative,
		"$integral": parseWinIntegral, "$linearFill": parseWinLeftUnbounded, "$locf": parseWinLeftUnbounded,
		"$median": parseWinQuantile, "$percentile": parseWinQuantile,
	}
}

// parseWindowFunc parses the output field's specification d: the first $-prefixed field
// names the function.
func parseWindowFunc(env *Env, d bsoncore.Document, ws *windowSort) (*winFunc, error) {
	elems, _ := d.Elements()
	for _, el := range elems {
		k := el.Key()
		if !strings.HasPrefix(k, "$") {
			continue
		}
		p := windowParsers[k]
		if p == nil {
			return nil, mongoerr.New(mongoerr.FailedToParse, "Unrecognized window function, %s", k)
		}
		return p(env, k, d, ws)
	}
	msg := "Expected a $-prefixed window function"
	if len(elems) > 0 && elems[0].Key() != "" {
		msg += ", " + elems[0].Key()
	}
	return nil, mongoerr.New(mongoerr.FailedToParse, "%s", msg)
}

// parseWinQuantile parses {$percentile: {input, p, method}, window} and {$median: {input,
// method}, window}.
func parseWinQuantile(env *Env, name string, d bsoncore.Document, ws *windowSort) (*winFunc, error) {
	arg, bounds, err := parseFuncAndWindow(env, name, d, ws)
	if err != nil {
		return nil, err
	}
	a := &accSpec{op: name}
	if err := a.parseQuantile(env, arg); err != nil {
		return nil, err
	}
	return &winFunc{name: name, kind: winAccum, bounds: bounds, acc: a}, nil
}

// parseFuncAndWindow splits {$fn: arg, window: {...}}: it returns the function's argument
// and parses the bounds (default: the whole partition).
func parseFuncAndWindow(env *Env, _ string, d bsoncore.Document, ws *windowSort) (bsoncore.Value, winBounds, error) {
	var arg bsoncore.Value
	bounds := wholePartition
	elems, _ := d.Elements()
	for _, el := range elems {
		k := el.Key()
		switch {
		case k == "window":
			b, err := parseWindowBounds(env, el.Value(), ws)
			if err != nil {
				return arg, bounds, err
			}
			bounds = b
		case windowParsers[k] != nil:
			if arg.Type != 0 {
				return arg, bounds, mongoerr.New(mongoerr.FailedToParse, "Cannot specify two functions in window function spec")
			}
			arg = el.Value()
		default:
			return arg, bounds, mongoerr.New(mongoerr.FailedToParse, "Window function found an unknown argument: %s", k)
		}
	}
	return arg, bounds, nil
}

// parseWinAccum parses the accumulators that take an expression: {$sum: expr, window}.
func parseWinAccum(env *Env, name string, d bsoncore.Document, ws *windowSort) (*winFunc, error) {
	arg, bounds, err := parseFuncAndWindow(env, name, d, ws)
	if err != nil {
		return nil, err
	}
	e, err := env.CompileExpr(arg)
	if err != nil {
		return nil, err
	}
	f := &winFunc{name: name, kind: winAccum, bounds: bounds, input: e}
	switch name {
	case "$covariancePop", "$covarianceSamp":
		samp := name == "$covarianceSamp"
		f.state = func(*winPart) accState { return &covState{samp: samp} }
	default:
		f.acc = &accSpec{op: name, input: e, coll: env.Collator()}
	}
	return f, nil
}

// parseWinCount parses {$count: {}, window}, a $sum of 1.
func parseWinCount(env *Env, name string, d bsoncore.Document, ws *windowSort) (*winFunc, error) {
	arg, bounds, err := parseFuncAndWindow(env, name, d, ws)
	if err != nil {
		return nil, err
	}
	if ad, ok := arg.DocumentOK(); !ok || len(ad) != 5 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$count only accepts an empty object as input")
	}
	return &winFunc{name: name, kind: winAccum, bounds: bounds, acc: &accSpec{op: "$count"}}, nil
}

// parseWinFirstLast parses {$first: expr, window} and {$last: expr, window}.
func parseWinFirstLast(env *Env, name string, d bsoncore.Document, ws *windowSort) (*winFunc, error) {
	f := &winFunc{name: name, kind: winFirst, bounds: wholePartition, def: NullValue}
	if name == "$last" {
		f.kind = winLast
	}
	seenWindow := false
	elems, _ := d.Elements()
	for _, el := range elems {
		var err error
		switch el.Key() {
		case "window":
			if seenWindow {
				return nil, mongoerr.New(mongoerr.FailedToParse, "saw multiple 'window' fields in '%s' expression", name)
			}
			seenWindow = true
			f.bounds, err = parseWindowBounds(env, el.Value(), ws)
		case name:
			f.input, err = env.CompileExpr(el.Value())
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "%s got unexpected argument: %s", name, el.Key())
		}
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

// parseWinN parses the N-ary and sorted accumulators: {$topN: {n, sortBy, output}, window}.
func parseWinN(env *Env, name string, d bsoncore.Document, ws *windowSort) (*winFunc, error) {
	f := &winFunc{name: name, kind: winAccum, bounds: wholePartition}
	seenWindow := false
	elems, _ := d.Elements()
	for _, el := range elems {
		switch el.Key() {
		case name:
			if f.acc != nil {
				return nil, mongoerr.New(mongoerr.FailedToParse, "saw multiple specifications for '%s' expression", name)
			}
			f.acc = &accSpec{op: name, coll: env.Collator()}
			if err := f.acc.parseNamedArgs(env, el.Value()); err != nil {
				return nil, err
			}
		case "window":
			if seenWindow {
				return nil, mongoerr.New(mongoerr.FailedToParse, "saw multiple 'window' fields in '%s' expression", name)
			}
			seenWindow = true
			b, err := parseWindowBounds(env, el.Value(), ws)
			if err != nil {
				return nil, err
			}
			f.bounds = b
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "%s got unexpected argument: %s", name, el.Key())
		}
	}
	return f, nil
}

// parseWinRank parses {$rank: {}}, {$denseRank: {}} and {$documentNumber: {}}.
func parseWinRank(_ *Env, name string, d bsoncore.Document, ws *windowSort) (*winFunc, error) {
	elems, _ := d.Elements()
	if len(elems) != 1 {
		return nil, mongoerr.New(mongoerr.Location5371601, "Rank style window functions take no other arguments")
	}
	if ad, ok := elems[0].Value().DocumentOK(); !ok || len(ad) != 5 {
		return nil, mongoerr.New(mongoerr.Location5371603, "%s must be specified with '{}' as the value", name)
	}
	if !ws.present || len(ws.fields) != 1 {
		return nil, mongoerr.New(mongoerr.Location5371602, "%s must be specified with a top level sortBy expression with exactly one element", name)
	}
	kinds := map[string]winKind{"$rank": winRank, "$denseRank": winDenseRank, "$documentNumber": winDocNumber}
	return &winFunc{name: name, kind: kinds[name], bounds: toCurrent}, nil
}

// parseWinShift parses {$shift: {output, by, default}}.
func parseWinShift(env *Env, name string, d bsoncore.Document, ws *windowSort) (*winFunc, error) {
	f := &winFunc{name: name, kind: winShift, def: NullValue}
	elems, _ := d.Elements()
	var args bsoncore.Document
	for _, el := range elems {
		switch k := el.Key(); {
		case k == "window":
			return nil, mongoerr.New(mongoerr.FailedToParse, "$shift does not accept a 'window' field")
		case windowParsers[k] != nil:
			if args != nil {
				return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify multiple functions in window function spec")
			}
			a, ok := el.Value().DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.FailedToParse, "Argument to $shift must be an object")
			}
			args = a
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "Window function found an unknown argument: %s", k)
		}
	}
	if err := f.parseShiftArgs(env, args); err != nil {
		return nil, err
	}
	if !ws.present {
		return nil, mongoerr.New(mongoerr.FailedToParse, "'$shift' requires a sortBy")
	}
	return f, nil
}

// parseShiftArgs parses $shift's {output, by, default}.
func (f *winFunc) parseShiftArgs(env *Env, args bsoncore.Document) error {
	elems, _ := args.Elements()
	seenBy := false
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "output":
			e, err := env.CompileExpr(v)
			if err != nil {
				return err
			}
			f.input = e
		case "default":
			e, err := env.CompileExpr(v)
			if err != nil {
				return err
			}
			if !e.IsConstant() {
				return mongoerr.New(mongoerr.FailedToParse, "'$shift:default' expression must yield a constant value.")
			}
			c, err := e.Eval(query.EmptyDoc, nil)
			if err != nil {
				return err
			}
			f.def = ownValue(c)
		case "by":
			n, ok := int32Whole(v)
			if !ok {
				return mongoerr.New(mongoerr.FailedToParse, "'$shift:by' field must be an integer, but found  by: %s", bsonx.ShellString(v))
			}
			f.by, seenBy = n, true
		default:
			return mongoerr.New(mongoerr.FailedToParse, "Unknown argument in $shift")
		}
	}
	if f.input == nil {
		return mongoerr.New(mongoerr.FailedToParse, "$shift requires an 'output' expression.")
	}
	if !seenBy {
		return mongoerr.New(mongoerr.FailedToParse, "$shift requires 'by' as an integer value.")
	}
	return nil
}

// emaUsage is the error of a malformed $expMovingAvg.
const emaUsage = "$expMovingAvg sub object must have exactly two fields: An 'input' field, and either an 'N' field or an 'alpha' field"

// parseWinExpMovingAvg parses {$expMovingAvg: {input, N | alpha}}.
func parseWinExpMovingAvg(env *Env, name string, d bsoncore.Document, ws *windowSort) (*winFunc, error) {
	elems, _ := d.Elements()
	sub, ok := elems[0].Value().DocumentOK()
	if len(elems) != 1 || !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$expMovingAvg must have exactly one argument that is an object")
	}
	in, errIn := sub.LookupErr("input")
	if n, _ := sub.Elements(); len(n) != 2 || errIn != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, emaUsage)
	}
	if !ws.present {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$expMovingAvg requires an explicit 'sortBy'")
	}
	e, err := env.CompileExpr(in)
	if err != nil {
		return nil, err
	}
	vars := expr.NewVars()
	var alpha bsoncore.Value
	if nv, err := sub.LookupErr("N"); err == nil {
		f, ok := bsonx.NumberAsFloat64(nv)
		switch {
		case !ok:
			return nil, mongoerr.New(mongoerr.FailedToParse, "'N' field must be an integer, but found type %s", bsonx.TypeName(nv.Type))
		case f != math.Floor(f):
			return nil, mongoerr.New(mongoerr.FailedToParse,
				"'N' field must be an integer, but found  N: %s. To use a non-integer, use the 'alpha' argument instead", bsonx.ShellString(nv))
		case f <= 0:
			return nil, mongoerr.New(mongoerr.FailedToParse, "'N' must be greater than zero. Got %d", int64(f))
		}
		n1, _ := calcToDecimal.eval(vars, bsonx.Int64Value(int64(f)+1))
		two, _ := calcToDecimal.eval(vars, bsonx.Int64Value(2))
		if alpha, err = calcDivide.eval(vars, two, n1); err != nil {
			return nil, err
		}
	} else if av, err := sub.LookupErr("alpha"); err == nil {
		f, ok := bsonx.NumberAsFloat64(av)
		if !ok {
			return nil, mongoerr.New(mongoerr.FailedToParse, "'alpha' must be a number")
		}
		if !(f > 0 && f < 1) {
			return nil, mongoerr.New(mongoerr.FailedToParse, "'alpha' must be between 0 and 1 (exclusive), found alpha: %s", bsonx.ShellString(av))
		}
		if alpha, err = calcToDecimal.eval(vars, av); err != nil {
			return nil, err
		}
	} else {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Got unrecognized field in $expMovingAvg"+emaUsage)
	}
	one, _ := calcToDecimal.eval(vars, bsonx.Int64Value(1))
	rest, err := calcSubtract.eval(vars, one, alpha)
	if err != nil {
		return nil, err
	}
	return &winFunc{name: name, kind: winAccum, bounds: toCurrent, input: e,
		state: func(p *winPart) accState { return &emaState{alpha: alpha, rest: rest, vars: p.cvars} }}, nil
}

// parseWinUnit parses the 'unit' of $derivative and $integral into milliseconds.
func parseWinUnit(v bsoncore.Value) (int64, error) {
	u, ok := v.StringValueOK()
	if !ok {
		return 0, mongoerr.New(mongoerr.FailedToParse, "unit' must be a string, but got %s", bsonx.TypeName(v.Type))
	}
	if err := checkTimeUnit(u); err != nil {
		return 0, err
	}
	ms, ok := timeUnitMillis[u]
	if !ok {
		return 0, mongoerr.New(mongoerr.Location5490710, "unit must be 'week' or smaller")
	}
	return ms, nil
}

// parseWinWithUnit parses {$derivative|$integral: {input, unit}, window}; it reports whether
// a window was given.
func parseWinWithUnit(env *Env, name string, d bsoncore.Document, ws *windowSort, f *winFunc) (bool, error) {
	switch {
	case !ws.present:
		return false, mongoerr.New(mongoerr.FailedToParse, "%s requires a sortBy", name)
	case len(ws.fields) != 1:
		return false, mongoerr.New(mongoerr.FailedToParse, "%s requires a non-compound sortBy", name)
	}
	var args bsoncore.Value
	seenWindow := false
	elems, _ := d.Elements()
	for _, el := range elems {
		switch el.Key() {
		case "window":
			if seenWindow && name == "$integral" {
				return false, mongoerr.New(mongoerr.FailedToParse, "There can be only one 'window' field for $integral")
			}
			b, err := parseWindowBounds(env, el.Value(), ws)
			if err != nil {
				return false, err
			}
			f.bounds, seenWindow = b, true
		case name:
			args = el.Value()
		default:
			return false, mongoerr.New(mongoerr.FailedToParse, "%s got unexpected argument: %s", name, el.Key())
		}
	}
	ad, ok := args.DocumentOK()
	if !ok {
		return false, mongoerr.New(mongoerr.FailedToParse, "%s expects an object, but got a %s: %s: %s",
			name, bsonx.TypeName(args.Type), name, bsonx.ShellString(args))
	}
	elems, _ = ad.Elements()
	for _, el := range elems {
		var err error
		switch el.Key() {
		case "input":
			f.input, err = env.CompileExpr(el.Value())
		case "unit":
			f.unitMs, err = parseWinUnit(el.Value())
		default:
			return false, mongoerr.New(mongoerr.FailedToParse, "%s got unexpected argument: %s", name, el.Key())
		}
		if err != nil {
			return false, err
		}
	}
	if f.input == nil {
		return false, mongoerr.New(mongoerr.FailedToParse, "%s requires an 'input' expression", name)
	}
	return seenWindow, nil
}

// parseWinDerivative parses {$derivative: {input, unit}, window}; the window is required.
func parseWinDerivative(env *Env, name string, d bsoncore.Document, ws *windowSort) (*winFunc, error) {
	f := &winFunc{name: name, kind: winDerivative}
	seenWindow, err := parseWinWithUnit(env, name, d, ws, f)
	if err != nil {
		return nil, err
	}
	if !seenWindow {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$derivative requires explicit window bounds")
	}
	return f, nil
}

// parseWinIntegral parses {$integral: {input, unit}, window}.
func parseWinIntegral(env *Env, name string, d bsoncore.Document, ws *windowSort) (*winFunc, error) {
	f := &winFunc{name: name, kind: winAccum, bounds: wholePartition, pairInput: true}
	if _, err := parseWinWithUnit(env, name, d, ws, f); err != nil {
		return nil, err
	}
	unitMs := f.unitMs
	f.state = func(p *winPart) accState { return &integralState{unitMs: unitMs, vars: p.cvars} }
	return f, nil
}

// parseWinLeftUnbounded parses {$locf: expr} and {$linearFill: expr}, which take no window.
func parseWinLeftUnbounded(env *Env, name string, d bsoncore.Document, ws *windowSort) (*winFunc, error) {
	var arg bsoncore.Value
	seenWindow := false
	elems, _ := d.Elements()
	for _, el := range elems {
		switch k := el.Key(); {
		case k == "window":
			seenWindow = true
		case windowParsers[k] != nil:
			if arg.Type != 0 {
				return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify two functions in window function spec")
			}
			arg = el.Value()
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "Window function found an unknown argument: %s", k)
		}
	}
	if seenWindow {
		return nil, mongoerr.New(mongoerr.FailedToParse, "'window' field is not allowed in %s", name)
	}
	e, err := env.CompileExpr(arg)
	if err != nil {
		return nil, err
	}
	if name == "$linearFill" {
		if !ws.present || len(ws.fields) != 1 {
			return nil, mongoerr.New(mongoerr.Location605001, "$linearFill must be specified with a top level sortBy expression with exactly one element")
		}
		return &winFunc{name: name, kind: winLinearFill, input: e}, nil
	}
	return &winFunc{name: name, kind: winAccum, bounds: toCurrent, input: e,
		state: func(*winPart) accState { return &locfState{} }}, nil
}
