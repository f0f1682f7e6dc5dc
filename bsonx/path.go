package bsonx

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// arrayKeys holds the decimal strings of the first array indexes.
var arrayKeys = func() (k [1000]string) {
	for i := range k {
		k[i] = strconv.Itoa(i)
	}
	return k
}()

// ArrayKey returns the field name of array index i ("0", "1", …), without allocating for
// i < 1000.
func ArrayKey(i int) string {
	if i >= 0 && i < len(arrayKeys) {
		return arrayKeys[i]
	}
	return strconv.Itoa(i)
}

// TopField returns the first component of dotted path p: the top-level field it starts at.
func TopField(p string) string {
	top, _, _ := strings.Cut(p, ".")
	return top
}

// Lookup returns the value at a dotted path: each component names a field of a document, or,
// when the value reached so far is an array, an index into it ("a.0.b"). Arrays do not fan out:
// {a: [{b: 1}]} has no value at "a.b". This is the lookup for projections of plain fields;
// shard-key extraction, which must see the arrays on the path, uses LookupOrArray.
func Lookup(doc bsoncore.Document, path string) (bsoncore.Value, bool) {
	t, data := bsoncore.TypeEmbeddedDocument, []byte(doc)
	for {
		part, rest, more := strings.Cut(path, ".")
		if t != bsoncore.TypeEmbeddedDocument && t != bsoncore.TypeArray {
			return bsoncore.Value{}, false
		}
		var ok bool
		t, data, ok = field(DocBody(data), part)
		if !ok {
			return bsoncore.Value{}, false
		}
		if !more {
			return bsoncore.Value{Type: t, Data: data}, true
		}
		path = rest
	}
}

// LookupOrArray returns the value at a dotted path through documents, as MongoDB extracts a
// shard-key value (getFieldDottedOrArray): the first array met along the path is returned
// in place of the value, whether the path ends at it or continues past it ({a: [{b: 1}]}
// at "a.b" gives the array [{b: 1}]), so that the caller can refuse an array or an array
// descendant; arrays are never indexed into ("a.0" on {a: [1]} gives [1] too). A missing
// field, or a value other than a document or an array where the path continues, is not
// found.
func LookupOrArray(doc bsoncore.Document, path string) (bsoncore.Value, bool) {
	body := DocBody(doc)
	for {
		part, rest, more := strings.Cut(path, ".")
		t, v, ok := field(body, part)
		switch {
		case !ok:
			return bsoncore.Value{}, false
		case !more || t == bsoncore.TypeArray:
			return bsoncore.Value{Type: t, Data: v}, true
		case t != bsoncore.TypeEmbeddedDocument:
			return bsoncore.Value{}, false
		}
		body, path = DocBody(v), rest
	}
}

// field finds the element named name in a document body.
func field(body []byte, name string) (bsoncore.Type, []byte, bool) {
	for {
		t, k, v, rest, ok := NextElement(body)
		if !ok {
			return 0, nil, false
		}
		if string(k) == name {
			return t, v, true
		}
		body = rest
	}
}

// PathMatch is one value that a dotted path reaches in a document, as the query matcher sees
// it.
type PathMatch struct {
	// Value is the value reached; zero when Missing.
	Value bsoncore.Value
	// Missing reports that the path ends without a value there: the field is absent, or a
	// non-document value sits where the path continues. {field: null} and $exists match it.
	Missing bool
	// ArrayIndex is the index, in the outermost array the traversal went through implicitly,
	// of the element this match came from; -1 if none. The positional $ operator uses it.
	ArrayIndex int
	// InLeafArray reports that Value is an element of an array the path ends at (reached
	// by traversing that array), not the array itself.
	InLeafArray bool
}

// WalkPath calls fn for every value the dotted path reaches in doc, with the array semantics of
// MongoDB's query matcher (ElementPath/BSONElementIterator in src/mongo/db/matcher/path.cpp),
// until fn returns false:
//
//   - documents are descended into by field name;
//   - an array at the end of the path yields each of its elements (InLeafArray) and then
//     the array itself; nested arrays are not traversed further;
//   - an array before the end of the path yields, for each element that is a document, the
//     values of the rest of the path in it (Missing where it has none); elements that are not
//     documents yield nothing;
//   - when the next component is a number, an array element with that index is also used
//     directly: it is yielded if the path ends there, descended into if it is a document, and
//     traversed if it is an array;
//   - a missing field, or a scalar where the path continues, yields Missing.
//
// Examples: {a: [{b: 1}, {c: 2}]} at "a.b" yields 1 (index 0) and Missing (index 1);
// {a: [[1, 2], 3]} at "a" yields [1, 2], 3 and [[1, 2], 3]; {a: [1, 2]} at "a.b" yields nothing;
// {a: [5, 6]} at "a.1" yields 6.
//
// This is the legacy null semantics of MongoDB 8 and earlier; 9.0 (SERVER-36681) also matches
// null for scalars inside arrays on a dotted path.
func WalkPath(doc bsoncore.Document, path string, fn func(m PathMatch) bool) {
	walkDoc(DocBody(doc), path, -1, fn)
}

// walkDoc follows path from a document body, descending through documents until it reaches
// an array, the end of the path or a dead end (getFieldDottedOrArray in MongoDB). It returns
// false when fn asked to stop.
func walkDoc(body []byte, path string, idx int, fn func(PathMatch) bool) bool {
	for {
		part, rest, more := strings.Cut(path, ".")
		t, v, ok := field(body, part)
		switch {
		case !ok:
			return fn(PathMatch{Missing: true, ArrayIndex: idx})
		case t == bsoncore.TypeArray:
			if !more {
				return walkLeafArray(v, idx, fn)
			}
			return walkArray(DocBody(v), rest, idx, fn)
		case !more:
			return fn(PathMatch{Value: bsoncore.Value{Type: t, Data: v}, ArrayIndex: idx})
		case t != bsoncore.TypeEmbeddedDocument:
			return fn(PathMatch{Missing: true, ArrayIndex: idx})
		}
		body, path = DocBody(v), rest
	}
}

// walkLeafArray yields the elements of an array the path ends at, then the array itself.
func walkLeafArray(arr []byte, idx int, fn func(PathMatch) bool) bool {
	body := DocBody(arr)
	for i := 0; ; i++ {
		t, _, v, rest, ok := NextElement(body)
		if !ok {
			break
		}
		m := PathMatch{Value: bsoncore.Value{Type: t, Data: v}, ArrayIndex: outer(idx, i), InLeafArray: true}
		if !fn(m) {
			return false
		}
		body = rest
	}
	return fn(PathMatch{Value: bsoncore.Value{Type: bsoncore.TypeArray, Data: arr}, ArrayIndex: idx})
}

// walkArray fans the rest of the path out over the elements of an array that the path goes
// through.
func walkArray(body []byte, path string, idx int, fn func(PathMatch) bool) bool {
	part, rest, more := strings.Cut(path, ".")
	numeric := isDigits(part)
	for i := 0; ; i++ {
		t, k, v, next, ok := NextElement(body)
		if !ok {
			return true
		}
		body = next
		if t == bsoncore.TypeEmbeddedDocument && !walkDoc(DocBody(v), path, outer(idx, i), fn) {
			return false
		}
		if !numeric || string(k) != part {
			continue
		}
		// The component indexes this element: no implicit traversal, so the element keeps the
		// array index of the arrays around this one only.
		switch {
		case !more:
			if !fn(PathMatch{Value: bsoncore.Value{Type: t, Data: v}, ArrayIndex: idx}) {
				return false
			}
		case t == bsoncore.TypeEmbeddedDocument:
			if !walkDoc(DocBody(v), rest, idx, fn) {
				return false
			}
		case t == bsoncore.TypeArray:
			if !walkArray(DocBody(v), rest, idx, fn) {
				return false
			}
		}
	}
}

// outer returns the array index to report: the outermost one already chosen, else i.
func outer(idx, i int) int {
	if idx >= 0 {
		return idx
	}
	return i
}

// isDigits reports whether s is non-empty and all ASCII digits (MongoDB's isAllDigits on a
// path component).
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
