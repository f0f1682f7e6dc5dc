package expr

import (
	"math"
	"math/big"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/bsonx/decimal128"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// NumRank orders the numeric types by width (MongoDB's getWidestNumeric): int32 <
// int64 < double < decimal128; 0 for anything else. A switch, not a map: $sum and $avg widen
// by it for every document they add.
func NumRank(t bsoncore.Type) int {
	switch t {
	case bsoncore.TypeInt32:
		return 1
	case bsoncore.TypeInt64:
		return 2
	case bsoncore.TypeDouble:
		return 3
	case bsoncore.TypeDecimal128:
		return 4
	}
	return 0
}

// isNum reports whether v is one of the four numeric types.
func isNum(v bsoncore.Value) bool { return NumRank(v.Type) > 0 }

// asInt64 returns an int32 or int64 value.
func asInt64(v bsoncore.Value) int64 {
	switch v.Type {
	case bsoncore.TypeInt32:
		i, _ := v.Int32OK()
		return int64(i)
	case bsoncore.TypeInt64:
		i, _ := v.Int64OK()
		return i
	}
	return 0
}

// asFloat returns any number as a double.
func asFloat(v bsoncore.Value) float64 {
	switch v.Type {
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return f
	case bsoncore.TypeDecimal128:
		return asDec(v).Float64()
	}
	return float64(asInt64(v))
}

// asDec returns any number as a decimal: decimals as they are, ints exactly, doubles
// rounded to 15 digits as MongoDB's Value::coerceToDecimal does. Non-numbers give 0.
func asDec(v bsoncore.Value) decimal128.Value {
	switch v.Type {
	case bsoncore.TypeDecimal128:
		h, l, _ := v.Decimal128OK()
		return decimal128.FromWords(h, l)
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return decimal128.FromFloat64(f)
	}
	return decimal128.FromInt64(asInt64(v))
}

// decValue builds a decimal128 value.
func (v *Vars) decValue(d decimal128.Value) bsoncore.Value { return v.decimalVal(d.H, d.L) }

// dateMillis returns the milliseconds of a datetime value.
func dateMillis(v bsoncore.Value) int64 {
	ms, _ := v.DateTimeOK()
	return ms
}

// intResult returns an int32 if x fits, else an int64 (Value::createIntOrLong).
func (v *Vars) intResult(x int64) bsoncore.Value { return v.intVal(x) }

// roundToInt64 rounds a double to the nearest int64 (halves away from zero); ok is
// false for NaN and out-of-range values.
func roundToInt64(f float64) (int64, bool) {
	r := math.Round(f)
	if math.IsNaN(r) || r < -9.223372036854775808e18 || r >= 9.223372036854775808e18 {
		return 0, false
	}
	return int64(r), true
}

// addOp is $add: numbers and at most one date; null if any operand is null or missing.
func addOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	rank, dates := 1, 0
	for _, a := range args {
		switch {
		case nullish(a):
			return valNull, nil
		case a.Type == bsoncore.TypeDateTime:
			if dates++; dates > 1 {
				return missing, mongoerr.New(mongoerr.Location16612, "only one date allowed in an $add expression")
			}
		case isNum(a):
			rank = max(rank, NumRank(a.Type))
		default:
			return missing, mongoerr.New(mongoerr.Location16554, "$add only supports numeric or date types, not %s", bsonx.TypeName(a.Type))
		}
	}
	if dates > 0 {
		return addDate(v, args, rank)
	}
	switch rank {
	case 4:
		sum := decimal128.FromInt64(0)
		for _, a := range args {
			sum = decimal128.Add(sum, asDec(a))
		}
		return v.decValue(sum), nil
	case 3:
		return v.doubleVal(sumFloat(args)), nil
	}
	var sum int64
	for _, a := range args {
		s, ok := addInt64(sum, asInt64(a))
		if !ok {
			return v.doubleVal(sumFloat(args)), nil
		}
		sum = s
	}
	if rank == 2 {
		return v.int64Val(sum), nil
	}
	return v.intResult(sum), nil
}

// sumFloat adds numbers as doubles; int64 operands are summed exactly first so that
// large longs keep their precision.
func sumFloat(args []bsoncore.Value) float64 {
	exact := new(big.Int)
	var f float64
	for _, a := range args {
		switch a.Type {
		case bsoncore.TypeInt32, bsoncore.TypeInt64:
			exact.Add(exact, big.NewInt(asInt64(a)))
		case bsoncore.TypeDateTime:
			exact.Add(exact, big.NewInt(dateMillis(a)))
		default:
			f += asFloat(a)
		}
	}
	ef, _ := new(big.Float).SetInt(exact).Float64()
	return f + ef
}

// addDate is $add with one date operand: the result is a date, the numbers are
// milliseconds (doubles and decimals rounded to the nearest millisecond).
func addDate(v *Vars, args []bsoncore.Value, rank int) (bsoncore.Value, error) {
	overflow := mongoerr.New(mongoerr.Overflow, "date overflow in $add")
	if rank >= 3 {
		var total int64
		var ok bool
		if rank == 4 {
			sum := decimal128.FromInt64(0)
			for _, a := range args {
				if a.Type == bsoncore.TypeDateTime {
					sum = decimal128.Add(sum, decimal128.FromInt64(dateMillis(a)))
				} else {
					sum = decimal128.Add(sum, asDec(a))
				}
			}
			total, ok = sum.Quantize(0, decimal128.HalfEven).Int64()
		} else {
			total, ok = roundToInt64(sumFloat(args))
		}
		if !ok {
			return missing, overflow
		}
		return v.dateVal(total), nil
	}
	var total int64
	for _, a := range args {
		x := asInt64(a)
		if a.Type == bsoncore.TypeDateTime {
			x = dateMillis(a)
		}
		s, ok := addInt64(total, x)
		if !ok {
			return missing, overflow
		}
		total = s
	}
	return v.dateVal(total), nil
}

// addInt64 adds with overflow detection.
func addInt64(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0)
}

// mulInt64 multiplies with overflow detection.
func mulInt64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return p, true
}

// subtractOp is $subtract: numbers, date − date (milliseconds as a long) and date −
// number (a date).
func subtractOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	l, r := args[0], args[1]
	switch {
	case isNum(l) && isNum(r):
		return subtractNumbers(v, l, r), nil
	case nullish(l) || nullish(r):
		return valNull, nil
	case l.Type == bsoncore.TypeDateTime && r.Type == bsoncore.TypeDateTime:
		d, ok := addInt64(dateMillis(l), -dateMillis(r))
		if !ok || dateMillis(r) == math.MinInt64 {
			return missing, mongoerr.New(mongoerr.Overflow, "date overflow in $subtract")
		}
		return v.int64Val(d), nil
	case l.Type == bsoncore.TypeDateTime && isNum(r):
		var ms int64
		var ok bool
		switch r.Type {
		case bsoncore.TypeDecimal128:
			ms, ok = asDec(r).Neg().Quantize(0, decimal128.HalfEven).Int64()
		case bsoncore.TypeDouble:
			ms, ok = roundToInt64(-asFloat(r))
		default:
			ms, ok = -asInt64(r), asInt64(r) != math.MinInt64
		}
		if ok {
			ms, ok = addInt64(dateMillis(l), ms)
		}
		if !ok {
			return missing, mongoerr.New(mongoerr.Overflow, "date overflow in $subtract")
		}
		return v.dateVal(ms), nil
	case l.Type == bsoncore.TypeDateTime:
		return missing, mongoerr.New(mongoerr.Location16613, "cant $subtract a %s from a Date", bsonx.TypeName(r.Type))
	}
	return missing, mongoerr.New(mongoerr.Location16556, "cant $subtract a %s from a %s", bsonx.TypeName(r.Type), bsonx.TypeName(l.Type))
}

// subtractNumbers is l − r in the wider type, longs overflowing to doubles.
func subtractNumbers(v *Vars, l, r bsoncore.Value) bsoncore.Value {
	switch max(NumRank(l.Type), NumRank(r.Type)) {
	case 4:
		return v.decValue(decimal128.Sub(asDec(l), asDec(r)))
	case 3:
		return v.doubleVal(asFloat(l) - asFloat(r))
	case 2:
		a, b := asInt64(l), asInt64(r)
		d := a - b
		if (b > 0 && d > a) || (b < 0 && d < a) {
			return v.doubleVal(float64(a) - float64(b))
		}
		return v.int64Val(d)
	}
	return v.intResult(asInt64(l) - asInt64(r))
}

// multiplyOp is $multiply.
func multiplyOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	rank := 1
	for _, a := range args {
		switch {
		case nullish(a):
			return valNull, nil
		case isNum(a):
			rank = max(rank, NumRank(a.Type))
		default:
			return missing, mongoerr.New(mongoerr.Location16555, "$multiply only supports numeric types, not %s", bsonx.TypeName(a.Type))
		}
	}
	switch rank {
	case 4:
		p := decimal128.FromInt64(1)
		for _, a := range args {
			p = decimal128.Mul(p, asDec(a))
		}
		return v.decValue(p), nil
	case 3:
		return v.doubleVal(productFloat(args)), nil
	}
	p := int64(1)
	for _, a := range args {
		q, ok := mulInt64(p, asInt64(a))
		if !ok {
			return v.doubleVal(productFloat(args)), nil
		}
		p = q
	}
	if rank == 2 {
		return v.int64Val(p), nil
	}
	return v.intResult(p), nil
}

// productFloat multiplies numbers as doubles.
func productFloat(args []bsoncore.Value) float64 {
	p := 1.0
	for _, a := range args {
		p *= asFloat(a)
	}
	return p
}

// divideOp is $divide: always a double, or a decimal if either operand is one.
func divideOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	l, r := args[0], args[1]
	if !isNum(l) || !isNum(r) {
		if nullish(l) || nullish(r) {
			return valNull, nil
		}
		return missing, mongoerr.New(mongoerr.Location16609, "$divide only supports numeric types, not %s and %s", bsonx.TypeName(l.Type), bsonx.TypeName(r.Type))
	}
	if l.Type == bsoncore.TypeDecimal128 || r.Type == bsoncore.TypeDecimal128 {
		rd := asDec(r)
		if rd.IsZero() {
			return missing, mongoerr.New(mongoerr.BadValue, "can't $divide by zero")
		}
		return v.decValue(decimal128.Quo(asDec(l), rd)), nil
	}
	rf := asFloat(r)
	if rf == 0 {
		return missing, mongoerr.New(mongoerr.BadValue, "can't $divide by zero")
	}
	return v.doubleVal(asFloat(l) / rf), nil
}

// modOp is $mod: the remainder with the dividend's sign, in the wider type.
func modOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	l, r := args[0], args[1]
	if !isNum(l) || !isNum(r) {
		if nullish(l) || nullish(r) {
			return valNull, nil
		}
		return missing, mongoerr.New(mongoerr.Location16611, "$mod only supports numeric types, not %s and %s", bsonx.TypeName(l.Type), bsonx.TypeName(r.Type))
	}
	rank := max(NumRank(l.Type), NumRank(r.Type))
	if rank == 4 {
		ld, rd := asDec(l), asDec(r)
		if rd.IsZero() {
			return missing, mongoerr.New(mongoerr.Location16610, "can't $mod by zero")
		}
		return v.decValue(decimal128.Rem(ld, rd)), nil
	}
	if rank == 3 {
		rf := asFloat(r)
		if rf == 0 {
			return missing, mongoerr.New(mongoerr.Location16610, "can't $mod by zero")
		}
		return v.doubleVal(math.Mod(asFloat(l), rf)), nil
	}
	a, b := asInt64(l), asInt64(r)
	if b == 0 {
		return missing, mongoerr.New(mongoerr.Location16610, "can't $mod by zero")
	}
	m := int64(0)
	if b != -1 {
		m = a % b
	}
	if rank == 2 {
		return v.int64Val(m), nil
	}
	return v.intResult(m), nil
}
