package agg

import (
	"math"
	"math/bits"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// granularity rounds $bucketAuto boundaries to a preferred-number series (Renard, E,
// 1-2-5), or to powers of two when series is nil.
type granularity struct {
	name   string
	series []float64
}

// granularitySeries are MongoDB's base series, one decade each (the values are those of
// MongoDB's granularity_rounder_preferred_numbers.cpp, Renard R80 included).
var granularitySeries = map[string][]float64{
	"R5":  {10, 16, 25, 40, 63},
	"R10": {100, 125, 160, 200, 250, 315, 400, 500, 630, 800},
	"R20": {100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560, 630, 710, 800, 900},
	"R40": {100, 106, 112, 118, 125, 132, 140, 150, 160, 170, 180, 190, 200, 212, 224, 236, 250, 265, 280, 300,
		315, 355, 375, 400, 425, 450, 475, 500, 530, 560, 600, 630, 670, 710, 750, 800, 850, 900, 950},
	"R80": {103, 109, 115, 122, 128, 136, 145, 155, 165, 175, 185, 195, 206, 218, 230, 243, 258, 272, 290, 307,
		325, 345, 365, 387, 412, 437, 462, 487, 515, 545, 575, 615, 650, 690, 730, 775, 825, 875, 925, 975},
	"1-2-5": {10, 20, 50},
	"E6":    {10, 15, 22, 33, 47, 68},
	"E12":   {10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82},
	"E24":   {10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30, 33, 36, 39, 43, 47, 51, 56, 62, 68, 75, 82, 91},
	"E48": {100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205, 215, 226, 237, 249,
		261, 274, 287, 301, 316, 332, 348, 365, 383, 402, 422, 442, 464, 487, 511, 536, 562, 590, 619, 649, 681,
		715, 750, 787, 825, 866, 909, 953},
	"E96": {100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143, 147, 150, 154, 158,
		162, 165, 169, 174, 178, 182, 187, 191, 196, 200, 205, 210, 215, 221, 226, 232, 237, 243, 249, 255, 261,
		267, 274, 280, 287, 294, 301, 309, 316, 324, 332, 340, 348, 357, 365, 374, 383, 392, 402, 412, 422, 432,
		442, 453, 464, 475, 487, 499, 511, 523, 536, 549, 562, 576, 590, 604, 619, 634, 649, 665, 681, 698, 715,
		732, 750, 768, 787, 806, 825, 845, 866, 887, 909, 931, 953, 976},
	"E192": {100, 101, 102, 104, 105, 106, 107, 109, 110, 111, 113, 114, 115, 117, 118, 120, 121, 123, 124, 126,
		127, 129, 130, 132, 133, 135, 137, 138, 140, 142, 143, 145, 147, 149, 150, 152, 154, 156, 158, 160, 162,
		164, 165, 167, 169, 172, 174, 176, 178, 180, 182, 184, 187, 189, 191, 193, 196, 198, 200, 203, 205, 208,
		210, 213, 215, 218, 221, 223, 226, 229, 232, 234, 237, 240, 243, 246, 249, 252, 255, 258, 261, 264, 267,
		271, 274, 277, 280, 284, 287, 291, 294, 298, 301, 305, 309, 312, 316, 320, 324, 328, 332, 336, 340, 344,
		348, 352, 357, 361, 365, 370, 374, 379, 383, 388, 392, 397, 402, 407, 412, 417, 422, 427, 432, 437, 442,
		448, 453, 459, 464, 470, 475, 481, 487, 493, 499, 505, 511, 517, 523, 530, 536, 542, 549, 556, 562, 569,
		576, 583, 590, 597, 604, 612, 619, 626, 634, 642, 649, 657, 665, 673, 681, 690, 698, 706, 715, 723, 732,
		741, 750, 759, 768, 777, 787, 796, 806, 816, 825, 835, 845, 856, 866, 876, 887, 898, 909, 920, 931, 942,
		953, 965, 976, 988},
}

// granularityRounder returns the rounder named name.
func granularityRounder(name string) (*granularity, error) {
	if name == "POWERSOF2" {
		return &granularity{name: name}, nil
	}
	s, ok := granularitySeries[name]
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40257, "Unknown rounding granularity '%s'", name)
	}
	return &granularity{name: name, series: s}, nil
}

// round rounds v up (to the smallest series value greater than it) or down (to the largest
// smaller than it). Zero stays as it is.
func (g *granularity) round(v bsoncore.Value, up bool, vars *expr.Vars) (bsoncore.Value, error) {
	codes := [3]mongoerr.Code{40262, 40263, 40268}
	if g.series == nil {
		codes = [3]mongoerr.Code{40265, 40266, 40267}
	}
	f, ok := bsonx.NumberAsFloat64(v)
	switch {
	case !ok:
		return bsoncore.Value{}, mongoerr.New(codes[0], "A granularity rounder can only round numeric values, but found type: %s", bsonx.TypeName(v.Type))
	case math.IsNaN(f):
		return bsoncore.Value{}, mongoerr.New(codes[1], "A granularity rounder cannot round NaN")
	case f < 0:
		return bsoncore.Value{}, mongoerr.New(codes[2], "A granularity rounder can only round non-negative numbers")
	case f == 0:
		return v, nil
	}
	if g.series == nil {
		return powerOfTwo(v, f, up, vars)
	}
	r := roundDown(g.series, f)
	if up {
		r = roundUp(g.series, f)
	}
	if v.Type == bsoncore.TypeDecimal128 {
		// NB: MongoDB rounds decimals in decimal arithmetic; the series values are exact
		// either way, only the scaling differs in the last digits.
		return calcToDecimal.eval(vars, bsonx.DoubleValue(r))
	}
	return bsonx.DoubleValue(r), nil
}

// roundUp returns the smallest value of series × 10^k greater than f.
func roundUp(series []float64, f float64) float64 {
	mult := 1.0
	for f >= series[len(series)-1]*mult {
		mult *= 10
	}
	for f < series[0]*mult {
		prevMin := series[0] * mult
		mult /= 10
		if f >= series[len(series)-1]*mult {
			return prevMin
		}
	}
	i := sort.Search(len(series), func(i int) bool { return f < series[i]*mult })
	return series[i] * mult
}

// roundDown returns the largest value of series × 10^k smaller than f.
func roundDown(series []float64, f float64) float64 {
	mult := 1.0
	for f <= series[0]*mult {
		mult /= 10
	}
	for f > series[len(series)-1]*mult {
		prevMax := series[len(series)-1] * mult
		mult *= 10
		if f <= series[0]*mult {
			return prevMax
		}
	}
	i := sort.Search(len(series), func(i int) bool { return series[i]*mult >= f })
	return series[i-1] * mult
}

// powerOfTwo rounds v (f > 0) to the next power of two above or below it, computed with
// $pow as MongoDB does (an int for integer exponents, a decimal for decimals).
func powerOfTwo(v bsoncore.Value, f float64, up bool, vars *expr.Vars) (bsoncore.Value, error) {
	var exp int
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n, _ := bsonx.NumberAsInt64(v)
		exp = bits.Len64(uint64(n)) - 1
		if up {
			exp++
		} else if n&(n-1) == 0 {
			exp--
		}
	default:
		if up {
			exp = int(math.Floor(math.Log2(f)) + 1)
		} else {
			exp = int(math.Ceil(math.Log2(f)) - 1)
		}
	}
	e := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(exp))}
	if v.Type == bsoncore.TypeDecimal128 {
		var err error
		if e, err = calcToDecimal.eval(vars, e); err != nil {
			return bsoncore.Value{}, err
		}
	}
	two := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 2)}
	return calcPow.eval(vars, two, e)
}
