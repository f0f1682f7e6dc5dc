package update

import (
	"sort"
	"strings"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/bsonx/decimal128"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// pushSpec is a parsed $push argument: the values and the optional $slice, $sort and
// $position clauses.
type pushSpec struct {
	values   []bsoncore.Value
	hasSlice bool
	slice    int64
	hasPos   bool
	position int64
	sort     *pushSort
}

// pushSort is $push's $sort: whole values (1/-1) or fields of document elements.
type pushSort struct {
	whole  bool
	desc   bool // whole-value direction
	fields []pushSortField
	coll   bsonx.Collator // the update's collation (nil: simple)
}

// pushSortField is one field of a $sort pattern.
type pushSortField struct {
	parts []string
	path  string
	desc  bool
}

// parsePush validates $push's argument (PushNode::init): a plain value, or a document holding
// $each and the optional $slice, $sort and $position.
func (lf *leaf) parsePush(e elem) error {
	spec := &pushSpec{}
	lf.push = spec
	if e.t == bsoncore.TypeEmbeddedDocument {
		body, _ := docBody(e.val)
		if _, ok := findField(body, "$each"); ok {
			if err := spec.parseClauses(body); err != nil {
				return err
			}
			if spec.sort != nil {
				spec.sort.coll = lf.coll
			}
			for _, v := range spec.values {
				lf.nesting = max(lf.nesting, 1+nestingDepth(v.Type, v.Data))
			}
			return nil
		}
	}
	spec.values = []bsoncore.Value{e.value()}
	lf.nesting = 1 + nestingDepth(e.t, e.val)
	return nil
}

// parseClauses parses the clauses of {$each: ..., $slice: ..., $sort: ..., $position: ...}.
func (spec *pushSpec) parseClauses(body []byte) error {
	var clauses [4]*elem // $each, $slice, $sort, $position
	names := [4]string{"$each", "$slice", "$sort", "$position"}
	for len(body) > 0 {
		f, rest, ok := readElem(body)
		if !ok {
			return errInvalidBSON("update")
		}
		body = rest
		i := 0
		for i < len(names) && names[i] != string(f.key) {
			i++
		}
		if i == len(names) {
			return errf(mongoerr.BadValue, "Unrecognized clause in $push: %s", f.key)
		}
		if clauses[i] != nil {
			return errf(mongoerr.BadValue, "Only one %s is supported.", f.key)
		}
		clauses[i] = &f
	}
	each := clauses[0]
	if each.t != bsoncore.TypeArray {
		return errf(mongoerr.BadValue, "The argument to $each in $push must be an array but it was of type: %s",
			bsonx.TypeName(each.t))
	}
	var err error
	if spec.values, err = arrayValues(each.val); err != nil {
		return err
	}
	if s := clauses[1]; s != nil {
		n, _, ok := integerArg(s.t, s.val)
		if !ok {
			return errf(mongoerr.BadValue, "The value for $slice must be an integer value but was given type: %s",
				bsonx.TypeName(s.t))
		}
		spec.hasSlice, spec.slice = true, n
	}
	if s := clauses[2]; s != nil {
		if spec.sort, err = parsePushSort(*s); err != nil {
			return err
		}
	}
	if p := clauses[3]; p != nil {
		n, _, ok := integerArg(p.t, p.val)
		if !ok {
			return errf(mongoerr.BadValue, "The value for $position must be an integer value, not of type: %s",
				bsonx.TypeName(p.t))
		}
		spec.hasPos, spec.position = true, n
	}
	return nil
}

// parsePushSort validates a $sort clause (pattern_cmp::checkSortClause).
func parsePushSort(s elem) (*pushSort, error) {
	if n, ok := numberOf(s.t, s.val); ok {
		f := n.float()
		if n.t == bsoncore.TypeDecimal128 {
			f = decimalAsFloat(n.d())
		}
		if f != 1 && f != -1 {
			return nil, errf(mongoerr.BadValue, "The $sort element value must be either 1 or -1")
		}
		return &pushSort{whole: true, desc: f < 0}, nil
	}
	if s.t != bsoncore.TypeEmbeddedDocument {
		return nil, errf(mongoerr.BadValue,
			"The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields")
	}
	body, _ := docBody(s.val)
	if len(body) == 0 {
		return nil, errf(mongoerr.BadValue, "The $sort pattern is empty when it should be a set of fields.")
	}
	ps := &pushSort{}
	for len(body) > 0 {
		f, rest, ok := readElem(body)
		if !ok {
			return nil, errInvalidBSON("update")
		}
		body = rest
		dir := 0.0
		if n, ok := numberOf(f.t, f.val); ok {
			dir = n.float()
			if n.t == bsoncore.TypeDecimal128 {
				dir = decimalAsFloat(n.d())
			}
		}
		if dir != 1 && dir != -1 {
			return nil, errf(mongoerr.BadValue, "The $sort element value must be either 1 or -1")
		}
		path := string(f.key)
		if path == "" {
			return nil, errf(mongoerr.BadValue, "The $sort field cannot be empty")
		}
		parts := strings.Split(path, ".")
		for _, p := range parts {
			if p == "" {
				return nil, errf(mongoerr.BadValue, "The $sort field is a dotted field but has an empty part: %s", path)
			}
		}
		ps.fields = append(ps.fields, pushSortField{parts: parts, path: path, desc: dir < 0})
	}
	return ps, nil
}

// decimalAsFloat returns a decimal's value when it is an exact small integer, NaN otherwise;
// enough for checking a sort direction.
func decimalAsFloat(d decimal128.Value) float64 {
	if i, ok := d.Int64(); ok {
		return float64(i)
	}
	return 0.5
}

// apply computes, in buf, the array a $push produces from the elements of an existing array
// (nil when the field is created): insertion at $position, then $sort, then $slice
// (PushNode::performPush). modified is false when nothing changed.
func (spec *pushSpec) apply(buf, elems []bsoncore.Value) (out []bsoncore.Value, modified bool) {
	n := int64(len(elems))
	at := n
	if spec.hasPos && len(spec.values) > 0 && n > 0 {
		p := spec.position
		if p == -1<<63 {
			p++
		}
		switch {
		case p > n:
			at = n
		case p >= 0:
			at = p
		case -p < n:
			at = n + p
		default:
			at = 0
		}
	}
	out = buf[:0]
	out = append(out, elems[:at]...)
	out = append(out, spec.values...)
	out = append(out, elems[at:]...)
	modified = len(spec.values) > 0
	if spec.sort != nil {
		modified = true
		spec.sort.sortValues(out)
	}
	if spec.hasSlice {
		limit := spec.slice
		if limit == -1<<63 {
			limit++
		}
		if limit < 0 {
			if -limit < int64(len(out)) {
				out, modified = out[int64(len(out))+limit:], true
			}
		} else if limit < int64(len(out)) {
			out, modified = out[:limit], true
		}
	}
	return out, modified
}

// sortValues sorts an array's values by the pattern (PatternElementCmp), stably.
func (ps *pushSort) sortValues(vals []bsoncore.Value) {
	if ps.whole {
		sort.SliceStable(vals, func(i, j int) bool {
			c := bsonx.Compare(bsonx.Collate(ps.coll, vals[i]), bsonx.Collate(ps.coll, vals[j]))
			if ps.desc {
				c = -c
			}
			return c < 0
		})
		return
	}
	sort.SliceStable(vals, func(i, j int) bool { return ps.compareFields(vals[i], vals[j]) < 0 })
}

// compareFields compares two elements by the pattern's fields: each is extracted with
// dotted_path_support::extractElementAtPath (no array fan-out, missing is null) from the
// element, or from {"": element} when the element is not a document.
func (ps *pushSort) compareFields(a, b bsoncore.Value) int {
	for _, f := range ps.fields {
		c := bsonx.Compare(bsonx.Collate(ps.coll, sortKeyAt(a, f)), bsonx.Collate(ps.coll, sortKeyAt(b, f)))
		if f.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// nullValue is BSON null.
var nullValue = bsoncore.Value{Type: bsoncore.TypeNull}

// sortKeyAt extracts a sort field from an element.
func sortKeyAt(v bsoncore.Value, f pushSortField) bsoncore.Value {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nullValue
	}
	if r, ok := extractAtPath(v.Data, f.path); ok {
		return r
	}
	return nullValue
}

// extractAtPath is dotted_path_support::extractElementAtPath: the whole path as a field name
// first, then the first component and the rest within it (documents and arrays alike).
func extractAtPath(doc []byte, path string) (bsoncore.Value, bool) {
	body, ok := docBody(doc)
	if !ok {
		return bsoncore.Value{}, false
	}
	if e, ok := findField(body, path); ok {
		return e.value(), true
	}
	left, right, dotted := strings.Cut(path, ".")
	if !dotted {
		return bsoncore.Value{}, false
	}
	e, ok := findField(body, left)
	if !ok || !isContainer(e.t) {
		return bsoncore.Value{}, false
	}
	if sub, _ := docBody(e.val); len(sub) == 0 {
		return bsoncore.Value{}, false
	}
	return extractAtPath(e.val, right)
}
