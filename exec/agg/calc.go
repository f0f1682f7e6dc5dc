package agg

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// calc is one fixed expression over named parameters ({$subtract: ["$$a", "$$b"]}, a
// $dateAdd with a unit, ...). Window functions, $densify and $bucketAuto compute with it so
// that their arithmetic follows the expression language's type rules (int → long → double,
// decimal wins, date − date is milliseconds). A calc is immutable; each stream evaluates it
// with its own Vars.
type calc struct {
	e     *expr.Expr
	names []string
}

// newCalc compiles spec with the parameters names.
func newCalc(spec bsoncore.Value, names ...string) (*calc, error) {
	e, err := expr.Compile(spec, &expr.Options{Params: names})
	if err != nil {
		return nil, err
	}
	return &calc{e: e, names: names}, nil
}

// mustCalc compiles a spec written in this package; it panics on a bad one, which the
// package's tests would catch.
func mustCalc(spec bsoncore.Value, names ...string) *calc {
	c, err := newCalc(spec, names...)
	if err != nil {
		panic(err)
	}
	return c
}

// eval evaluates c with args bound to its parameters, in order. The result is a copy that
// outlives vars' buffer.
func (c *calc) eval(vars *expr.Vars, args ...bsoncore.Value) (bsoncore.Value, error) {
	for i, n := range c.names {
		vars.Set(n, args[i])
	}
	v, err := c.e.Eval(query.EmptyDoc, vars)
	if err != nil {
		return bsoncore.Value{}, err
	}
	return ownValue(v), nil
}

// opValue builds {op: [args...]}.
func opValue(op string, args ...bsoncore.Value) bsoncore.Value {
	return objValue([]string{op}, []bsoncore.Value{arrayValue(args)})
}

// objValue builds a document of keys and vals.
func objValue(keys []string, vals []bsoncore.Value) bsoncore.Value {
	idx, b := bsoncore.AppendDocumentStart(nil)
	for i, k := range keys {
		b = bsoncore.AppendValueElement(b, k, vals[i])
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b}
}

// Parameters of the shared calcs.
var (
	paramA = bsonx.StringValue("$$a")
	paramB = bsonx.StringValue("$$b")
)

// Shared calcs: a op b.
var (
	calcAdd      = mustCalc(opValue("$add", paramA, paramB), "a", "b")
	calcSubtract = mustCalc(opValue("$subtract", paramA, paramB), "a", "b")
	calcMultiply = mustCalc(opValue("$multiply", paramA, paramB), "a", "b")
	calcDivide   = mustCalc(opValue("$divide", paramA, paramB), "a", "b")
	calcMod      = mustCalc(opValue("$mod", paramA, paramB), "a", "b")
	calcPow      = mustCalc(opValue("$pow", paramA, paramB), "a", "b")
	// calcDecimalAdd adds a and b as decimals, so that thresholds such as 0.1 + 0.2 are exact.
	calcDecimalAdd = mustCalc(opValue("$add",
		objValue([]string{"$toDecimal"}, []bsoncore.Value{paramA}),
		objValue([]string{"$toDecimal"}, []bsoncore.Value{paramB})), "a", "b")
	calcToDouble  = mustCalc(objValue([]string{"$toDouble"}, []bsoncore.Value{paramA}), "a")
	calcToDecimal = mustCalc(objValue([]string{"$toDecimal"}, []bsoncore.Value{paramA}), "a")
)

// timeUnitMillis is the length of the fixed-size time units; month, quarter and year vary.
var timeUnitMillis = map[string]int64{
	"millisecond": 1, "second": 1000, "minute": 60 * 1000, "hour": 3600 * 1000,
	"day": 24 * 3600 * 1000, "week": 7 * 24 * 3600 * 1000,
}

// checkTimeUnit checks a time unit name as MongoDB's parseTimeUnit does.
func checkTimeUnit(unit string) error {
	if _, ok := timeUnitMillis[unit]; ok || unit == "month" || unit == "quarter" || unit == "year" {
		return nil
	}
	return mongoerr.New(mongoerr.FailedToParse, "unknown time unit value: %s", unit)
}

// dateAddCalc returns {$dateAdd: {startDate: $$a, unit: unit, amount: $$b}} (UTC).
func dateAddCalc(unit string) (*calc, error) {
	return newCalc(objValue([]string{"$dateAdd"}, []bsoncore.Value{
		objValue([]string{"startDate", "unit", "amount"}, []bsoncore.Value{paramA, bsonx.StringValue(unit), paramB}),
	}), "a", "b")
}
