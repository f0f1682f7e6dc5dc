package integration

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/collation"
)

// cval is a result value in the form the differential test compares: loose numbers
// collapsed, unordered arrays and result lists sorted.
type cval struct {
	kind  byte    // 'd' document, 'a' array, 'f' double, 'x' decimal, 'n' loose number, 's' any other scalar
	f     float64 // 'f', and 'x' as the nearest double
	s     string  // 'n', 'x' and 's': the value's text, with its type for 's'
	keys  []string
	elems []cval
}

// diffFloatTolerance is the relative difference two doubles, or two decimals, may have. Sums,
// averages and standard deviations add their inputs in another order when each shard folds
// its part, so their last bits may differ (a decimal sum's too: its int and double inputs are
// summed as doubles); mongos has the same property. NB: for simplicity the tolerance applies
// to every double, so a bug that changes only the last bits of a computed value would pass.
const diffFloatTolerance = 1e-9

// canonResults returns a result list as an array, sorted when its order is unspecified.
func canonResults(docs []bsoncore.Document, shape *diffShape) cval {
	out := cval{kind: 'a'}
	for _, d := range docs {
		out.elems = append(out.elems, canonDoc(d, shape))
	}
	if !shape.ordered {
		sortVals(out.elems)
	}
	return out
}

// canonDoc returns a result document, its top-level fields compared as shape says.
func canonDoc(d bsoncore.Document, shape *diffShape) cval {
	c := cval{kind: 'd'}
	elems, _ := d.Elements()
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		var cv cval
		if fs := shape.facets[k]; fs != nil && v.Type == bsoncore.TypeArray {
			vals, _ := v.Array().Values()
			docs := make([]bsoncore.Document, len(vals))
			for i, x := range vals {
				docs[i] = x.Document()
			}
			cv = canonResults(docs, fs)
		} else {
			var fold *collation.Collation
			if shape.loose[k] {
				fold = shape.fold
			}
			cv = canonValue(v, shape.loose[k], fold)
			if shape.sets[k] && cv.kind == 'a' {
				sortVals(cv.elems)
			}
		}
		c.keys = append(c.keys, k)
		c.elems = append(c.elems, cv)
	}
	return c
}

// canonValue returns v; loose collapses the numeric types of equal numbers, at any depth,
// and a fold collation the strings it finds equal (a loose field holds one of them).
func canonValue(v bsoncore.Value, loose bool, fold *collation.Collation) cval {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		c := cval{kind: 'd'}
		elems, _ := v.Document().Elements()
		for _, el := range elems {
			c.keys = append(c.keys, el.Key())
			c.elems = append(c.elems, canonValue(el.Value(), loose, fold))
		}
		return c
	case bsoncore.TypeArray:
		c := cval{kind: 'a'}
		vals, _ := v.Array().Values()
		for _, x := range vals {
			c.elems = append(c.elems, canonValue(x, loose, fold))
		}
		return c
	case bsoncore.TypeDouble:
		f := v.Double()
		if loose && math.IsNaN(f) {
			return cval{kind: 'n', s: "NaN"}
		}
		if loose && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return cval{kind: 'n', s: strconv.FormatInt(int64(f), 10)}
		}
		return cval{kind: 'f', f: f}
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n, _ := v.AsInt64OK()
		if loose {
			return cval{kind: 'n', s: strconv.FormatInt(n, 10)}
		}
		return cval{kind: 's', s: fmt.Sprintf("%s(%d)", diffTypeLabel(v.Type), n)}
	case bsoncore.TypeDecimal128:
		h, l := v.Decimal128()
		d := bson.NewDecimal128(h, l)
		if loose {
			if d.IsNaN() {
				return cval{kind: 'n', s: "NaN"}
			}
			if i, ok := diffDecimalInteger(d); ok {
				return cval{kind: 'n', s: i}
			}
		}
		f, _ := strconv.ParseFloat(d.String(), 64)
		return cval{kind: 'x', f: f, s: d.String()}
	case bsoncore.TypeString:
		if fold != nil {
			return cval{kind: 's', s: "collated(" + hex.EncodeToString(fold.Key(nil, []byte(v.StringValue()))) + ")"}
		}
		return cval{kind: 's', s: strconv.Quote(v.StringValue())}
	}
	return cval{kind: 's', s: diffTypeLabel(v.Type) + "(" + v.String() + ")"}
}

// diffDecimalInteger returns the integer value of d, if it is one.
func diffDecimalInteger(d bson.Decimal128) (string, bool) {
	bi, exp, err := d.BigInt()
	if err != nil || d.IsInf() != 0 {
		return "", false
	}
	ten := big.NewInt(10)
	for ; exp > 0; exp-- {
		bi.Mul(bi, ten)
	}
	for ; exp < 0; exp++ {
		q, m := new(big.Int).QuoRem(bi, ten, new(big.Int))
		if m.Sign() != 0 {
			return "", false
		}
		bi = q
	}
	return bi.String(), true
}

// diffTypeLabel names a BSON type in rendered values.
func diffTypeLabel(t bsoncore.Type) string {
	switch t {
	case bsoncore.TypeInt32:
		return "int"
	case bsoncore.TypeInt64:
		return "long"
	}
	return strings.ToLower(t.String())
}

// renderVal returns c as text: the sort key of unordered lists and the text of diffs. Doubles
// show nine digits, so that values within diffFloatTolerance almost always sort alike.
func renderVal(c cval) string {
	var b strings.Builder
	renderValTo(&b, c)
	return b.String()
}

// renderValTo appends the text of c to b.
func renderValTo(b *strings.Builder, c cval) {
	switch c.kind {
	case 'd':
		b.WriteByte('{')
		for i, k := range c.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k)
			b.WriteString(": ")
			renderValTo(b, c.elems[i])
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range c.elems {
			if i > 0 {
				b.WriteString(", ")
			}
			renderValTo(b, e)
		}
		b.WriteByte(']')
	case 'f':
		b.WriteString("double(" + strconv.FormatFloat(c.f, 'g', 9, 64) + ")")
	case 'x':
		b.WriteString("dec(" + strconv.FormatFloat(c.f, 'g', 9, 64) + ")")
	case 'n':
		b.WriteString("num(" + c.s + ")")
	default:
		b.WriteString(c.s)
	}
}

// sortVals sorts values by their text.
func sortVals(vs []cval) {
	keys := make([]string, len(vs))
	for i, v := range vs {
		keys[i] = renderVal(v)
	}
	sort.Sort(cvalsByKey{keys, vs})
}

// cvalsByKey sorts values by precomputed keys.
type cvalsByKey struct {
	keys []string
	vals []cval
}

func (s cvalsByKey) Len() int           { return len(s.keys) }
func (s cvalsByKey) Less(i, j int) bool { return s.keys[i] < s.keys[j] }
func (s cvalsByKey) Swap(i, j int) {
	s.keys[i], s.keys[j] = s.keys[j], s.keys[i]
	s.vals[i], s.vals[j] = s.vals[j], s.vals[i]
}

// closeFloats compares doubles within diffFloatTolerance; NaN equals NaN.
func closeFloats(a, b float64) bool {
	switch {
	case a == b, math.IsNaN(a) && math.IsNaN(b):
		return true
	case math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsNaN(a) || math.IsNaN(b):
		return false
	}
	return math.Abs(a-b) <= diffFloatTolerance*math.Max(math.Abs(a), math.Abs(b))
}

// equalCvals reports whether a and b are equal (diffVals without its text).
func equalCvals(a, b cval) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case 'f':
		return closeFloats(a.f, b.f)
	case 'x':
		return a.s == b.s || closeFloats(a.f, b.f)
	case 'n', 's':
		return a.s == b.s
	case 'd':
		if !slices.Equal(a.keys, b.keys) {
			return false
		}
	}
	if len(a.elems) != len(b.elems) {
		return false
	}
	for i := range a.elems {
		if !equalCvals(a.elems[i], b.elems[i]) {
			return false
		}
	}
	return true
}

// diffVals returns where a and b first differ, or "".
func diffVals(path string, a, b cval) string {
	if equalCvals(a, b) {
		return ""
	}
	if a.kind != b.kind {
		return fmt.Sprintf("%s: %s vs %s", path, clipText(renderVal(a)), clipText(renderVal(b)))
	}
	switch a.kind {
	case 'f':
		return fmt.Sprintf("%s: %v vs %v", path, a.f, b.f)
	case 'x':
		return fmt.Sprintf("%s: dec(%s) vs dec(%s)", path, a.s, b.s)
	case 'n', 's':
		return fmt.Sprintf("%s: %s vs %s", path, clipText(renderVal(a)), clipText(renderVal(b)))
	case 'd':
		if !slices.Equal(a.keys, b.keys) {
			return fmt.Sprintf("%s: fields %v vs %v", path, a.keys, b.keys)
		}
		for i, k := range a.keys {
			if d := diffVals(path+"."+k, a.elems[i], b.elems[i]); d != "" {
				return d
			}
		}
	case 'a':
		for i := range min(len(a.elems), len(b.elems)) {
			if d := diffVals(fmt.Sprintf("%s[%d]", path, i), a.elems[i], b.elems[i]); d != "" {
				return d
			}
		}
		if len(a.elems) != len(b.elems) {
			return fmt.Sprintf("%s: %d elements vs %d", path, len(a.elems), len(b.elems))
		}
	}
	return ""
}

// diffResults compares the unsharded result a with the sharded result b and returns a
// minimal description of the first difference, or "".
func diffResults(a, b []bsoncore.Document, shape *diffShape) string {
	ca, cb := canonResults(a, shape), canonResults(b, shape)
	d := diffVals("result", ca, cb)
	if d == "" || shape.ordered {
		return describeDiff(d, ca, cb)
	}
	// Sorting by text can pair documents differently when a double within the tolerance
	// rounds to other digits: match them one by one before calling it a difference.
	if onlyA, onlyB := unmatchedVals(ca.elems, cb.elems); len(onlyA) > 0 || len(onlyB) > 0 {
		return fmt.Sprintf("%d vs %d documents; only unsharded: %s; only sharded: %s",
			len(a), len(b), firstOfVals(onlyA), firstOfVals(onlyB))
	}
	return ""
}

// describeDiff adds the documents around difference d.
func describeDiff(d string, a, b cval) string {
	if d == "" {
		return ""
	}
	i := 0
	if _, err := fmt.Sscanf(d, "result[%d]", &i); err != nil || i >= len(a.elems) || i >= len(b.elems) {
		return fmt.Sprintf("%s (%d vs %d documents)", d, len(a.elems), len(b.elems))
	}
	return fmt.Sprintf("%s (%d vs %d documents)\n  unsharded: %s\n  sharded:   %s", d, len(a.elems), len(b.elems),
		clipText(renderVal(a.elems[i])), clipText(renderVal(b.elems[i])))
}

// unmatchedVals pairs equal values of a and b and returns those left over on each side.
func unmatchedVals(a, b []cval) (onlyA, onlyB []cval) {
	used := make([]bool, len(b))
	for _, x := range a {
		found := false
		for j, y := range b {
			if !used[j] && equalCvals(x, y) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			onlyA = append(onlyA, x)
		}
	}
	for j, y := range b {
		if !used[j] {
			onlyB = append(onlyB, y)
		}
	}
	return onlyA, onlyB
}

// firstOfVals renders the first value of vs and counts the others.
func firstOfVals(vs []cval) string {
	switch len(vs) {
	case 0:
		return "none"
	case 1:
		return clipText(renderVal(vs[0]))
	}
	return fmt.Sprintf("%s and %d more", clipText(renderVal(vs[0])), len(vs)-1)
}

// clipText shortens long text for failure messages.
func clipText(s string) string {
	if len(s) > 700 {
		return s[:700] + "…"
	}
	return s
}
