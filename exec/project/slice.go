package project

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// parseSlice parses the argument of $slice: n (first n, or last -n) or [skip, limit]
// with limit > 0. Anything else is, since MongoDB 4.4, an aggregation $slice; the
// errors MongoDB then reports are reproduced for constant arguments.
func parseSlice(arg bsoncore.Value) (*field, error) {
	if bsonx.IsNumber(arg.Type) {
		return &field{kind: kSlice, limit: toInt(arg)}, nil
	}
	if arg.Type != bsoncore.TypeArray {
		return nil, sliceSyntax(arg, "Location31273: $slice only supports numbers and [skip, limit] arrays", 1)
	}
	vals, _ := bsoncore.Array(arg.Data).Values()
	switch {
	case len(vals) == 2 && bsonx.IsNumber(vals[0].Type) && bsonx.IsNumber(vals[1].Type) && toInt(vals[1]) > 0:
		return &field{kind: kSlice, skip: toInt(vals[0]), limit: toInt(vals[1]), hasSkip: true}, nil
	case len(vals) == 2 || len(vals) == 3:
		if s, ok := vals[0].StringValueOK(); ok && strings.HasPrefix(s, "$") {
			return nil, mongoerr.New(mongoerr.NotImplemented, "aggregation expressions in find projections are not supported: $slice")
		}
		if vals[0].Type == bsoncore.TypeNull || vals[1].Type == bsoncore.TypeNull {
			return &field{kind: kComputed, literal: bsoncore.Value{Type: bsoncore.TypeNull}}, nil
		}
		return nil, mongoerr.New(codeSliceFirstArg, "First argument to $slice must be an array, but is of type: %s", bsonx.TypeName(vals[0].Type))
	}
	return nil, sliceSyntax(arg, "Location31272: $slice array argument should be of form [skip, limit]", len(vals))
}

// sliceSyntax is MongoDB's error for a $slice that is neither find nor expression syntax.
func sliceSyntax(arg bsoncore.Value, why string, n int) error {
	return mongoerr.New(codeSliceSyntax, "Invalid $slice syntax. The given syntax { $slice: %s } did not match the find() syntax because :: %s :: The given syntax did not match the expression $slice syntax. :: caused by :: Expression $slice takes at least 2 arguments, and at most 3, but %d were passed in.",
		bsonx.ShellString(arg), why, n)
}

// toInt converts a number to int, truncating and saturating (±Inf are the extremes).
func toInt(v bsoncore.Value) int {
	if i, ok := bsonx.NumberAsInt64(v); ok {
		return clampInt(i)
	}
	f, _ := bsonx.NumberAsFloat64(v)
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int(f)
}

// clampInt limits an int64 to the int32 range.
func clampInt(i int64) int {
	switch {
	case i > math.MaxInt32:
		return math.MaxInt32
	case i < math.MinInt32:
		return math.MinInt32
	}
	return int(i)
}

// sliceBounds returns the [start, end) range $slice selects from n elements.
func (f *field) sliceBounds(n int) (int, int) {
	if !f.hasSkip {
		if f.limit >= 0 {
			return 0, min(f.limit, n)
		}
		return max(0, n+f.limit), n
	}
	start := f.skip
	if start < 0 {
		start = max(0, n+start)
	}
	start = min(start, n)
	return start, start + min(f.limit, n-start)
}
