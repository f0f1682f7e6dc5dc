package expr

import (
	"math"
	"math/big"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/bsonx/decimal128"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// numericArg1 checks the operand of a one-number operator: ok false means the result is
// null (null or missing operand); a non-number fails with code 28765.
func numericArg1(name string, a bsoncore.Value) (ok bool, err error) {
	if nullish(a) {
		return false, nil
	}
	if !isNum(a) {
		return false, mongoerr.New(mongoerr.Location28765, "%s only supports numeric types, not %s", name, bsonx.TypeName(a.Type))
	}
	return true, nil
}

// absOp is $abs.
func absOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	a := args[0]
	if ok, err := numericArg1("$abs", a); !ok {
		return valNull, err
	}
	switch a.Type {
	case bsoncore.TypeInt32:
		return v.intResult(abs64(asInt64(a))), nil
	case bsoncore.TypeInt64:
		i := asInt64(a)
		if i == math.MinInt64 {
			return missing, mongoerr.New(mongoerr.Location28680, "can't take $abs of long long min")
		}
		return v.int64Val(abs64(i)), nil
	case bsoncore.TypeDouble:
		return v.doubleVal(math.Abs(asFloat(a))), nil
	}
	return v.decValue(asDec(a).Abs()), nil
}

// abs64 is |i| for i > MinInt64.
func abs64(i int64) int64 {
	if i < 0 {
		return -i
	}
	return i
}

// ceilFloor returns $ceil (up) or $floor: integers unchanged, doubles and decimals
// rounded to an integral value of the same type.
func ceilFloor(name string, up bool) evalFn {
	return func(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
		a := args[0]
		if ok, err := numericArg1(name, a); !ok {
			return valNull, err
		}
		switch a.Type {
		case bsoncore.TypeDouble:
			if up {
				return v.doubleVal(math.Ceil(asFloat(a))), nil
			}
			return v.doubleVal(math.Floor(asFloat(a))), nil
		case bsoncore.TypeDecimal128:
			mode := decimal128.Floor
			if up {
				mode = decimal128.Ceil
			}
			return v.decValue(asDec(a).Quantize(0, mode)), nil
		}
		return a, nil
	}
}

// unaryFloat returns an operator on one number computed as a double (decimals are
// computed as doubles too and returned as decimals); check validates the operand.
func unaryFloat(name string, f func(float64) float64, check func(float64, bsoncore.Value) error) evalFn {
	return func(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
		a := args[0]
		if ok, err := numericArg1(name, a); !ok {
			return valNull, err
		}
		x := asFloat(a)
		if check != nil && !math.IsNaN(x) {
			if err := check(x, a); err != nil {
				return missing, err
			}
		}
		if a.Type == bsoncore.TypeDecimal128 {
			return v.decValue(decFromFloatFull(f(x))), nil
		}
		return v.doubleVal(f(x)), nil
	}
}

// decFromFloatFull converts a double computed for a decimal operand, keeping 34 digits.
func decFromFloatFull(f float64) decimal128.Value {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return decimal128.FromFloat64(f)
	}
	d, _ := decimal128.Parse(strconv.FormatFloat(f, 'g', -1, 64))
	return d
}

// numString prints a number as MongoDB's Value::toString does in messages.
func numString(a bsoncore.Value) string {
	switch a.Type {
	case bsoncore.TypeDecimal128:
		return asDec(a).String()
	case bsoncore.TypeDouble:
		return strconv.FormatFloat(asFloat(a), 'g', -1, 64)
	}
	return strconv.FormatInt(asInt64(a), 10)
}

// positive returns a check that the operand of name is > 0 (code).
func positive(name string, code mongoerr.Code) func(float64, bsoncore.Value) error {
	return func(x float64, a bsoncore.Value) error {
		if x <= 0 {
			return mongoerr.New(code, "%s's argument must be a positive number, but is %s", name, numString(a))
		}
		return nil
	}
}

// sqrtCheck refuses negative operands of $sqrt.
func sqrtCheck(x float64, _ bsoncore.Value) error {
	if x < 0 {
		return mongoerr.New(mongoerr.Location28714, "$sqrt's argument must be greater than or equal to 0")
	}
	return nil
}

// logOp is $log: [number, base].
func logOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	a, b := args[0], args[1]
	if nullish(a) || nullish(b) {
		return valNull, nil
	}
	if !isNum(a) {
		return missing, mongoerr.New(mongoerr.Location28756, "$log's argument must be numeric, not %s", bsonx.TypeName(a.Type))
	}
	if !isNum(b) {
		return missing, mongoerr.New(mongoerr.Location28757, "$log's base must be numeric, not %s", bsonx.TypeName(b.Type))
	}
	x, base := asFloat(a), asFloat(b)
	if x <= 0 && !math.IsNaN(x) {
		return missing, mongoerr.New(mongoerr.Location28758, "$log's argument must be a positive number, but is %s", numString(a))
	}
	if (base <= 0 || base == 1) && !math.IsNaN(base) {
		return missing, mongoerr.New(mongoerr.Location28759, "$log's base must be a positive number not equal to 1, but is %s", numString(b))
	}
	r := math.Log(x) / math.Log(base)
	if a.Type == bsoncore.TypeDecimal128 || b.Type == bsoncore.TypeDecimal128 {
		return v.decValue(decFromFloatFull(r)), nil
	}
	return v.doubleVal(r), nil
}

// powOp is $pow: integers stay integers when the result fits (int, then long),
// otherwise doubles; decimals give decimals.
func powOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	b, e := args[0], args[1]
	if nullish(b) || nullish(e) {
		return valNull, nil
	}
	if !isNum(b) {
		return missing, mongoerr.New(mongoerr.Location28762, "$pow's base must be numeric, not %s", bsonx.TypeName(b.Type))
	}
	if !isNum(e) {
		return missing, mongoerr.New(mongoerr.Location28763, "$pow's exponent must be numeric, not %s", bsonx.TypeName(e.Type))
	}
	bf, ef := asFloat(b), asFloat(e)
	if bf == 0 && ef < 0 {
		return missing, mongoerr.New(mongoerr.Location28764, "$pow cannot take a base of 0 and a negative exponent")
	}
	rank := max(NumRank(b.Type), NumRank(e.Type))
	switch rank {
	case 4:
		return v.decValue(decFromFloatFull(math.Pow(bf, ef))), nil
	case 3:
		return v.doubleVal(math.Pow(bf, ef)), nil
	}
	bi, ei := asInt64(b), asInt64(e)
	if r, ok := intPow(bi, ei); ok {
		if rank == 1 {
			return v.intResult(r), nil
		}
		return v.int64Val(r), nil
	}
	return v.doubleVal(math.Pow(bf, ef)), nil
}

// intPow computes b^e exactly when the result is an int64; negative exponents only
// for bases ±1.
func intPow(b, e int64) (int64, bool) {
	if e < 0 {
		switch b {
		case 1:
			return 1, true
		case -1:
			if e%2 == 0 {
				return 1, true
			}
			return -1, true
		}
		return 0, false
	}
	r := new(big.Int).Exp(big.NewInt(b), big.NewInt(min(e, 64)), nil)
	if e > 64 && b != 0 && b != 1 && b != -1 {
		return 0, false
	}
	if e > 64 && b == -1 && e%2 == 1 {
		return -1, true
	}
	if !r.IsInt64() {
		return 0, false
	}
	return r.Int64(), true
}

// roundTrunc returns $round (half to even) or $trunc: [number, place], place an
// integer in [-20, 100] (default 0).
func roundTruncOp(name string, mode decimal128.Rounding) evalFn {
	return func(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
		a := args[0]
		place := int64(0)
		if len(args) > 1 {
			p := args[1]
			if nullish(p) {
				return valNull, nil
			}
			i, ok := integral(p)
			if !ok {
				return missing, mongoerr.New(mongoerr.Location51082, "precision argument to  %s must be a integral value", name)
			}
			if i < -20 || i > 100 {
				return missing, mongoerr.New(mongoerr.Location51083, "cannot apply %s with precision value %d value must be in [-20, 100]", name, i)
			}
			place = i
		}
		if nullish(a) {
			return valNull, nil
		}
		if !isNum(a) {
			return missing, mongoerr.New(mongoerr.Location51081, "%s only supports numeric types, not %s", name, bsonx.TypeName(a.Type))
		}
		return roundNumber(v, a, int(place), mode)
	}
}

// roundNumber rounds one number to place decimal places.
func roundNumber(v *Vars, a bsoncore.Value, place int, mode decimal128.Rounding) (bsoncore.Value, error) {
	switch a.Type {
	case bsoncore.TypeDouble:
		f := asFloat(a)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return a, nil
		}
		d, _ := decimal128.Parse(strconv.FormatFloat(f, 'e', 33, 64))
		return v.doubleVal(d.Quantize(-place, mode).Float64()), nil
	case bsoncore.TypeDecimal128:
		return v.decValue(asDec(a).Quantize(-place, mode)), nil
	}
	if place >= 0 {
		return a, nil
	}
	r, ok := decimal128.FromInt64(asInt64(a)).Quantize(-place, mode).Int64()
	if !ok {
		return missing, mongoerr.New(mongoerr.Overflow, "overflow in $round")
	}
	if a.Type == bsoncore.TypeInt32 {
		return v.intResult(r), nil
	}
	return v.int64Val(r), nil
}

// integral returns the value of a number that is a whole number in int64 range.
func integral(a bsoncore.Value) (int64, bool) {
	switch a.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		return asInt64(a), true
	case bsoncore.TypeDouble:
		f := asFloat(a)
		if f != math.Trunc(f) || f < -9.2e18 || f > 9.2e18 {
			return 0, false
		}
		return int64(f), true
	case bsoncore.TypeDecimal128:
		return asDec(a).Int64()
	}
	return 0, false
}
