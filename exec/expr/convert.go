package expr

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/bsonx/decimal128"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// typeOp is $type: the type's alias ("missing" for a missing value).
func typeOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	return v.stringVal(bsonx.TypeName(args[0].Type)), nil
}

// isNumberOp is $isNumber.
func isNumberOp(_ *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	return boolVal(isNum(args[0])), nil
}

// convertTargets maps $convert's 'to' names and codes to types.
var convertTargets = map[string]bsoncore.Type{
	"double": bsoncore.TypeDouble, "string": bsoncore.TypeString, "objectId": bsoncore.TypeObjectID,
	"bool": bsoncore.TypeBoolean, "date": bsoncore.TypeDateTime, "int": bsoncore.TypeInt32,
	"long": bsoncore.TypeInt64, "decimal": bsoncore.TypeDecimal128,
}

// targetType resolves the 'to' argument of $convert.
func targetType(to bsoncore.Value) (bsoncore.Type, error) {
	if s, ok := to.StringValueOK(); ok {
		if t, ok := convertTargets[s]; ok {
			return t, nil
		}
		return 0, mongoerr.New(mongoerr.BadValue, "Unknown type name: %s", s)
	}
	if isNum(to) {
		i, ok := integral(to)
		if !ok {
			return 0, mongoerr.New(mongoerr.FailedToParse, "In $convert, numeric 'to' argument is not an integer")
		}
		for _, t := range convertTargets {
			if int64(t) == i {
				return t, nil
			}
		}
		return 0, mongoerr.New(mongoerr.FailedToParse, "In $convert, numeric value for 'to' does not correspond to a BSON type: %d", i)
	}
	return 0, mongoerr.New(mongoerr.FailedToParse, "$convert's 'to' argument must be a string or number, but is %s", bsonx.TypeName(to.Type))
}

// convError is a failed conversion (onError applies to it).
func convError(format string, args ...any) error {
	return mongoerr.New(mongoerr.ConversionFailure, format+" in $convert with no onError value", args...)
}

// unsupported is the error for a conversion MongoDB does not define.
func unsupported(from, to bsoncore.Type) error {
	return convError("Unsupported conversion from %s to %s", bsonx.TypeName(from), bsonx.TypeName(to))
}

// convertValue converts a non-null value to type t.
func convertValue(v *Vars, in bsoncore.Value, t bsoncore.Type) (bsoncore.Value, error) {
	switch t {
	case bsoncore.TypeDouble:
		return toDouble(v, in)
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return toInteger(v, in, t)
	case bsoncore.TypeDecimal128:
		return toDecimal(v, in)
	case bsoncore.TypeBoolean:
		return boolVal(truthy(in)), nil
	case bsoncore.TypeString:
		return toStringValue(v, in)
	case bsoncore.TypeObjectID:
		return toObjectID(v, in)
	case bsoncore.TypeDateTime:
		return toDate(v, in)
	}
	return missing, unsupported(in.Type, t)
}

// toDouble converts to a double.
func toDouble(v *Vars, in bsoncore.Value) (bsoncore.Value, error) {
	switch in.Type {
	case bsoncore.TypeDouble:
		return in, nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return v.doubleVal(float64(asInt64(in))), nil
	case bsoncore.TypeDecimal128:
		d := asDec(in)
		f := d.Float64()
		if math.IsInf(f, 0) && !d.IsInf() {
			return missing, convError("Conversion would overflow target type")
		}
		return v.doubleVal(f), nil
	case bsoncore.TypeBoolean:
		return v.doubleVal(boolFloat(in)), nil
	case bsoncore.TypeDateTime:
		return v.doubleVal(float64(dateMillis(in))), nil
	case bsoncore.TypeString:
		s := in.StringValue()
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !strings.Contains(err.Error(), "range") || strings.TrimSpace(s) != s || s == "" ||
			strings.ContainsAny(s, "_xXpP") {
			return missing, convError("Failed to parse number '%s'", s)
		}
		return v.doubleVal(f), nil
	}
	return missing, unsupported(in.Type, bsoncore.TypeDouble)
}

// boolFloat is 1 for true, 0 for false.
func boolFloat(in bsoncore.Value) float64 {
	if b, _ := in.BooleanOK(); b {
		return 1
	}
	return 0
}

// toInteger converts to an int or a long (t), truncating fractions and refusing
// values out of range.
func toInteger(v *Vars, in bsoncore.Value, t bsoncore.Type) (bsoncore.Value, error) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if t == bsoncore.TypeInt32 {
		lo, hi = math.MinInt32, math.MaxInt32
	}
	var n int64
	switch in.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n = asInt64(in)
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		d := asDec(in)
		if d.IsNaN() {
			return missing, convError("Attempt to convert NaN value to integer type")
		}
		if d.IsInf() {
			return missing, convError("Attempt to convert infinity value to integer type")
		}
		i, ok := d.Quantize(0, decimal128.Trunc).Int64()
		if !ok {
			return missing, convError("Conversion would overflow target type")
		}
		n = i
	case bsoncore.TypeBoolean:
		n = int64(boolFloat(in))
	case bsoncore.TypeDateTime:
		if t == bsoncore.TypeInt32 {
			return missing, unsupported(in.Type, t)
		}
		n = dateMillis(in)
	case bsoncore.TypeString:
		s := in.StringValue()
		bits := 64
		if t == bsoncore.TypeInt32 {
			bits = 32
		}
		x, err := strconv.ParseInt(s, 10, bits)
		if err != nil || strings.HasPrefix(s, "+") {
			if err != nil && strings.Contains(err.Error(), "range") {
				return missing, convError("Failed to parse number '%s': Overflow", s)
			}
			return missing, convError("Failed to parse number '%s': Did not consume whole string.", s)
		}
		n = x
	default:
		return missing, unsupported(in.Type, t)
	}
	if n < lo || n > hi {
		return missing, convError("Conversion would overflow target type")
	}
	if t == bsoncore.TypeInt32 {
		return v.int32Val(int32(n)), nil
	}
	return v.int64Val(n), nil
}

// toDecimal converts to a decimal128.
func toDecimal(v *Vars, in bsoncore.Value) (bsoncore.Value, error) {
	switch in.Type {
	case bsoncore.TypeDecimal128:
		return in, nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
		return v.decValue(asDec(in)), nil
	case bsoncore.TypeBoolean:
		return v.decValue(decimal128.FromInt64(int64(boolFloat(in)))), nil
	case bsoncore.TypeDateTime:
		return v.decValue(decimal128.FromInt64(dateMillis(in))), nil
	case bsoncore.TypeString:
		d, ok := decimal128.Parse(in.StringValue())
		if !ok {
			return missing, convError("Failed to parse number '%s'", in.StringValue())
		}
		return v.decValue(d), nil
	}
	return missing, unsupported(in.Type, bsoncore.TypeDecimal128)
}

// toStringValue converts to a string.
func toStringValue(v *Vars, in bsoncore.Value) (bsoncore.Value, error) {
	switch in.Type {
	case bsoncore.TypeString:
		return in, nil
	case bsoncore.TypeBoolean:
		if b, _ := in.BooleanOK(); b {
			return v.stringVal("true"), nil
		}
		return v.stringVal("false"), nil
	case bsoncore.TypeObjectID:
		id, _ := in.ObjectIDOK()
		return v.stringVal(hex.EncodeToString(id[:])), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128,
		bsoncore.TypeDateTime, bsoncore.TypeSymbol:
		s, err := coerceToString(in)
		if err != nil {
			return missing, err
		}
		return v.stringVal(s), nil
	}
	return missing, unsupported(in.Type, bsoncore.TypeString)
}

// toObjectID converts a 24-digit hex string to an ObjectId.
func toObjectID(v *Vars, in bsoncore.Value) (bsoncore.Value, error) {
	switch in.Type {
	case bsoncore.TypeObjectID:
		return in, nil
	case bsoncore.TypeString:
		s := in.StringValue()
		if len(s) != 24 {
			return missing, convError("Failed to parse objectId '%s': Invalid string length for parsing to OID, expected 24 but found %d", s, len(s))
		}
		b, err := hex.DecodeString(s)
		if err != nil {
			return missing, convError("Failed to parse objectId '%s': Invalid character found in hex string", s)
		}
		start := len(v.buf)
		v.buf = append(v.buf, b...)
		return v.finish(bsoncore.TypeObjectID, start), nil
	}
	return missing, unsupported(in.Type, bsoncore.TypeObjectID)
}

// toDate converts to a date: longs, doubles and decimals are milliseconds, strings are
// parsed, ObjectIds and timestamps give their time.
func toDate(v *Vars, in bsoncore.Value) (bsoncore.Value, error) {
	switch in.Type {
	case bsoncore.TypeDateTime:
		return in, nil
	case bsoncore.TypeInt64:
		return v.dateVal(asInt64(in)), nil
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		d := asDec(in)
		if d.IsNaN() || d.IsInf() {
			return missing, convError("Attempt to convert %s value to date", map[bool]string{true: "NaN", false: "infinity"}[d.IsNaN()])
		}
		ms, ok := d.Quantize(0, decimal128.Trunc).Int64()
		if !ok {
			return missing, convError("Conversion would overflow target type")
		}
		return v.dateVal(ms), nil
	case bsoncore.TypeObjectID, bsoncore.TypeTimestamp:
		ms, _ := coerceToDate(in)
		return v.dateVal(ms), nil
	case bsoncore.TypeString:
		ms, err := parseISODate(in.StringValue(), time.UTC)
		if err != nil {
			return missing, mongoerr.Wrap(err, mongoerr.ConversionFailure, "%s", mongoerr.As(err).Message)
		}
		return v.dateVal(ms), nil
	}
	return missing, unsupported(in.Type, bsoncore.TypeDateTime)
}

// convertNode is $convert: {input, to, onError, onNull}, and the $toX shorthands
// (fixed target, no onError or onNull).
type convertNode struct {
	input, to, onError, onNull node
	target                     bsoncore.Type // for the shorthands
}

func (n *convertNode) eval(v *Vars) (bsoncore.Value, error) {
	in, err := n.input.eval(v)
	if err != nil {
		return missing, err
	}
	t := n.target
	if n.to != nil {
		to, err := n.to.eval(v)
		if err != nil {
			return missing, err
		}
		if nullish(to) {
			return valNull, nil
		}
		if t, err = targetType(to); err != nil {
			return missing, err
		}
	}
	if nullish(in) {
		if n.onNull != nil {
			return n.onNull.eval(v)
		}
		return valNull, nil
	}
	r, err := convertValue(v, in, t)
	if err != nil && n.onError != nil {
		if me := mongoerr.As(err); me != nil && me.Code == mongoerr.ConversionFailure {
			return n.onError.eval(v)
		}
	}
	return r, err
}

// parseConvert compiles $convert.
func parseConvert(p *parser, _ string, arg bsoncore.Value) (node, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$convert expects an object of named arguments but found: %s", bsonx.TypeName(arg.Type))
	}
	n := &convertNode{}
	for _, f := range docFields(arg) {
		x, err := p.parse(f.val)
		if err != nil {
			return nil, err
		}
		switch f.name {
		case "input":
			n.input = x
		case "to":
			n.to = x
		case "onError":
			n.onError = x
		case "onNull":
			n.onNull = x
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "$convert found an unknown argument: %s", f.name)
		}
	}
	if n.input == nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Missing 'input' parameter to $convert")
	}
	if n.to == nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Missing 'to' parameter to $convert")
	}
	if isConst(n.input, n.to, n.onError, n.onNull) {
		return fold(n), nil
	}
	return n, nil
}

// parseTo compiles a $toX shorthand for target type t.
func parseTo(t bsoncore.Type) parseFn {
	return func(p *parser, name string, arg bsoncore.Value) (node, error) {
		ops := operandList(arg)
		if err := checkArity(name, len(ops), 1, 1); err != nil {
			return nil, err
		}
		in, err := p.parse(ops[0])
		if err != nil {
			return nil, err
		}
		n := &convertNode{input: in, target: t}
		if isConst(in) {
			return fold(n), nil
		}
		return n, nil
	}
}
