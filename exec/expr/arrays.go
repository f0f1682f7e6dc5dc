package expr

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// sizeOp is $size.
func sizeOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	if args[0].Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location17124, "The argument to $size must be an array. Type of argument was: %s", bsonx.TypeName(args[0].Type))
	}
	return v.int32Val(int32(len(arrayValues(args[0])))), nil
}

// isArrayOp is $isArray.
func isArrayOp(_ *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	return boolVal(args[0].Type == bsoncore.TypeArray), nil
}

// elemAt returns element i of arr (negative i counts from the end), or missing.
func elemAt(arr bsoncore.Value, i int64) bsoncore.Value {
	vals := arrayValues(arr)
	if i < 0 {
		i += int64(len(vals))
	}
	if i < 0 || i >= int64(len(vals)) {
		return missing
	}
	return vals[i]
}

// arrayElemAtOp is $arrayElemAt: [array, index].
func arrayElemAtOp(_ *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	arr, idx := args[0], args[1]
	if nullish(arr) || nullish(idx) {
		return valNull, nil
	}
	if arr.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location28689, "$arrayElemAt's first argument must be an array, but is %s", bsonx.TypeName(arr.Type))
	}
	if !isNum(idx) {
		return missing, mongoerr.New(mongoerr.Location28690, "$arrayElemAt's second argument must be a numeric value, but is %s", bsonx.TypeName(idx.Type))
	}
	i, ok := int32Arg(idx)
	if !ok {
		return missing, mongoerr.New(mongoerr.Location28691, "$arrayElemAt's second argument must be representable as a 32-bit integer: %s", numString(idx))
	}
	return elemAt(arr, int64(i)), nil
}

// firstLastOp returns $first or $last (last) on an array.
func firstLastOp(name string, last bool) evalFn {
	return func(_ *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
		arr := args[0]
		if nullish(arr) {
			return valNull, nil
		}
		if arr.Type != bsoncore.TypeArray {
			return missing, mongoerr.New(mongoerr.Location28689, "%s's argument must be an array, but is %s", name, bsonx.TypeName(arr.Type))
		}
		if last {
			return elemAt(arr, -1), nil
		}
		return elemAt(arr, 0), nil
	}
}

// inOp is $in: [value, array].
func inOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	if args[1].Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location40081, "$in requires an array as a second argument, found: %s", bsonx.TypeName(args[1].Type))
	}
	for _, e := range arrayValues(args[1]) {
		if v.compare(args[0], e) == 0 {
			return valTrue, nil
		}
	}
	return valFalse, nil
}

// concatArraysOp is $concatArrays.
func concatArraysOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	var out []bsoncore.Value
	for _, a := range args {
		if nullish(a) {
			return valNull, nil
		}
		if a.Type != bsoncore.TypeArray {
			return missing, mongoerr.New(mongoerr.Location28664, "$concatArrays only supports arrays, not %s", bsonx.TypeName(a.Type))
		}
		out = append(out, arrayValues(a)...)
	}
	return v.arrayVal(out), nil
}

// reverseArrayOp is $reverseArray.
func reverseArrayOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	a := args[0]
	if nullish(a) {
		return valNull, nil
	}
	if a.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location34435, "The argument to $reverseArray must be an array, but was of type: %s", bsonx.TypeName(a.Type))
	}
	vals := arrayValues(a)
	for i, j := 0, len(vals)-1; i < j; i, j = i+1, j-1 {
		vals[i], vals[j] = vals[j], vals[i]
	}
	return v.arrayVal(vals), nil
}

// sliceOp is $slice: [array, n] or [array, position, n].
func sliceOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	for _, a := range args {
		if nullish(a) {
			return valNull, nil
		}
	}
	arr := args[0]
	if arr.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location28724, "First argument to $slice must be an array, but is of type: %s", bsonx.TypeName(arr.Type))
	}
	if !isNum(args[1]) {
		return missing, mongoerr.New(mongoerr.Location28725, "Second argument to $slice must be a numeric value, but was of type: %s", bsonx.TypeName(args[1].Type))
	}
	first, ok := int32Arg(args[1])
	if !ok {
		return missing, mongoerr.New(mongoerr.Location28726, "Second argument to $slice can't be represented as a 32-bit integer: %s", numString(args[1]))
	}
	vals := arrayValues(arr)
	n := int64(len(vals))
	var start, end int64
	if len(args) == 2 {
		if first >= 0 {
			start, end = 0, min(int64(first), n)
		} else {
			start, end = max(n+int64(first), 0), n
		}
		return v.arrayVal(vals[start:end]), nil
	}
	if !isNum(args[2]) {
		return missing, mongoerr.New(mongoerr.Location28727, "Third argument to $slice must be numeric, but was of type: %s", bsonx.TypeName(args[2].Type))
	}
	count, ok := int32Arg(args[2])
	if !ok {
		return missing, mongoerr.New(mongoerr.Location28728, "Third argument to $slice can't be represented as a 32-bit integer: %s", numString(args[2]))
	}
	if count <= 0 {
		return missing, mongoerr.New(mongoerr.Location28729, "Third argument to $slice must be positive: %s", numString(args[2]))
	}
	start = int64(first)
	if start < 0 {
		start = max(n+start, 0)
	}
	start = min(start, n)
	end = min(start+int64(count), n)
	return v.arrayVal(vals[start:end]), nil
}

// indexOfArrayOp is $indexOfArray: [array, value, start, end].
func indexOfArrayOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	arr := args[0]
	if nullish(arr) {
		return valNull, nil
	}
	if arr.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location40090, "$indexOfArray requires an array as a first argument, found: %s", bsonx.TypeName(arr.Type))
	}
	vals := arrayValues(arr)
	start, end := 0, len(vals)
	for i, a := range args[2:] {
		n, err := indexArg("$indexOfArray", a)
		if err != nil {
			return missing, err
		}
		if i == 0 {
			start = n
		} else {
			end = min(n, len(vals))
		}
	}
	for i := start; i < end; i++ {
		if bsonx.Equal(vals[i], args[1]) {
			return v.int32Val(int32(i)), nil
		}
	}
	return v.int32Val(-1), nil
}

// rangeMemoryLimit is MongoDB's limit on the memory of a $range result (64 MiB at 16
// bytes an element, the size of its Value).
const rangeMemoryLimit = 64 << 20

// rangeOp is $range: [start, end, step].
func rangeOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	names := []string{"starting", "ending", "step"}
	var nums [3]int64
	nums[2] = 1
	for i, a := range args {
		if !isNum(a) {
			return missing, mongoerr.New(mongoerr.Code(34443+2*i), "$range requires a numeric %s value, found value of type: %s", names[i], bsonx.TypeName(a.Type))
		}
		n, ok := int32Arg(a)
		if !ok {
			return missing, mongoerr.New(mongoerr.Code(34444+2*i), "$range requires a %s value that can be represented as a 32-bit integer, found value: %s", names[i], numString(a))
		}
		nums[i] = int64(n)
	}
	start, end, step := nums[0], nums[1], nums[2]
	if step == 0 {
		return missing, mongoerr.New(mongoerr.Location34449, "$range requires a non-zero step value")
	}
	count := int64(0)
	if (step > 0 && end > start) || (step < 0 && end < start) {
		count = (end - start + step - sign64(step)) / step
	}
	if count*16 > rangeMemoryLimit {
		return missing, mongoerr.New(mongoerr.ExceededMemoryLimit, "$range would use too much memory (%d bytes) and cannot spill to disk. Memory limit: %d bytes", count*16, rangeMemoryLimit)
	}
	out := make([]bsoncore.Value, 0, count)
	for i := start; (step > 0 && i < end) || (step < 0 && i > end); i += step {
		out = append(out, v.int32Val(int32(i)))
	}
	return v.arrayVal(out), nil
}

// sign64 returns the sign of x.
func sign64(x int64) int64 {
	if x < 0 {
		return -1
	}
	return 1
}
