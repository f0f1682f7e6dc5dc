package match

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// leaf is a predicate over one value reached by a path (MongoDB's matchesSingleElement).
// A missing value has Type 0. pos is the index of the array element that made the value
// match, for predicates that look inside arrays ($elemMatch); -1 otherwise.
type leaf interface {
	match(v bsoncore.Value) (ok bool, pos int)
}

// arrayMode says how a path treats an array it ends on (MongoDB's LeafArrayBehavior).
type arrayMode uint8

const (
	// traverseLeaf yields each element of a leaf array, then the array itself (most
	// operators: {a: 1} matches {a: [1, 2]} and {a: [1, 2]} matches it too).
	traverseLeaf arrayMode = iota
	// wholeLeaf yields a leaf array only as itself ($size, $elemMatch).
	wholeLeaf
)

// fieldPath is a dotted path split into components once, at compile time.
type fieldPath struct {
	dotted  string
	parts   []string
	numeric []bool // parts[i] is all digits: it may index an array
}

// newPath splits a dotted path.
func newPath(dotted string) fieldPath {
	parts := strings.Split(dotted, ".")
	num := make([]bool, len(parts))
	for i, p := range parts {
		num[i] = isAllDigits(p)
	}
	return fieldPath{dotted: dotted, parts: parts, numeric: num}
}

// walk applies lf to every value path p reaches in doc, with MongoDB's matcher semantics
// (src/mongo/db/matcher/path.cpp), and stops at the first value lf accepts. It returns
// whether one did and the position the positional operator refers to: the index in the
// outermost array traversed implicitly, else the leaf's own element index, else -1.
//
// Semantics, for path "a.b":
//   - a scalar, or nothing, where the path continues yields a missing value;
//   - an array at a non-leaf position fans out: each element that is a document is
//     walked with the rest of the path (missing "b" yields missing); if the next
//     component is a number i, element i is also walked with the components after it,
//     or yielded itself when none are left; other elements yield nothing, and the
//     array itself yields nothing;
//   - an array at the leaf yields its elements then itself (traverseLeaf), or only
//     itself (wholeLeaf). Nested arrays are never expanded twice.
func walk(doc []byte, p *fieldPath, lf leaf, mode arrayMode) (bool, int) {
	return walkDoc(doc, p, 0, lf, mode, -1)
}

// walkDoc walks p.parts[from:] starting in document doc; off is the offset an enclosing
// implicit array traversal imposes (-1 for none).
func walkDoc(doc []byte, p *fieldPath, from int, lf leaf, mode arrayMode, off int) (bool, int) {
	last := len(p.parts) - 1
	cur := doc
	for i := from; i <= last; i++ {
		v, found := lookup(cur, p.parts[i])
		if !found {
			return yield(lf, missing, off)
		}
		switch v.Type {
		case bsoncore.TypeArray:
			return walkArray(v, p, i+1, lf, mode, off)
		case bsoncore.TypeEmbeddedDocument:
			if i == last {
				return yield(lf, v, off)
			}
			cur = v.Data
		default:
			if i == last {
				return yield(lf, v, off)
			}
			return yield(lf, missing, off)
		}
	}
	return yield(lf, missing, off) // empty path: not produced by newPath
}

// yield tests one value; the position is the imposed offset or, failing that, the leaf's.
func yield(lf leaf, v bsoncore.Value, off int) (bool, int) {
	ok, pos := lf.match(v)
	if !ok {
		return false, -1
	}
	if off >= 0 {
		return true, off
	}
	return true, pos
}

// walkArray walks the array arr reached by p.parts[:from]; from == len(parts) means
// arr is a leaf array.
func walkArray(arr bsoncore.Value, p *fieldPath, from int, lf leaf, mode arrayMode, off int) (bool, int) {
	if from == len(p.parts) {
		if mode == traverseLeaf {
			b := body(arr.Data)
			for idx := 0; ; idx++ {
				t, _, val, rest, ok := next(b)
				if !ok {
					break
				}
				if m, _ := yield(lf, bsoncore.Value{Type: t, Data: val}, off); m {
					return true, pick(off, idx)
				}
				b = rest
			}
		}
		return yield(lf, arr, off)
	}
	nextPart, numeric := p.parts[from], p.numeric[from]
	b := body(arr.Data)
	for idx := 0; ; idx++ {
		t, key, val, rest, ok := next(b)
		if !ok {
			return false, -1
		}
		b = rest
		isIndex := numeric && string(key) == nextPart
		if t == bsoncore.TypeEmbeddedDocument {
			if m, pos := walkDoc(val, p, from, lf, mode, pick(off, idx)); m {
				return true, pos
			}
		}
		if !isIndex {
			continue
		}
		// An explicit index is not an implicit traversal: it imposes no offset.
		elem := bsoncore.Value{Type: t, Data: val}
		switch {
		case from+1 == len(p.parts):
			if m, pos := yield(lf, elem, off); m {
				return true, pos
			}
		case t == bsoncore.TypeEmbeddedDocument:
			if m, pos := walkDoc(val, p, from+1, lf, mode, off); m {
				return true, pos
			}
		case t == bsoncore.TypeArray:
			if m, pos := walkArray(elem, p, from+1, lf, mode, off); m {
				return true, pos
			}
		}
	}
}

// pick returns the imposed offset if there is one, else idx.
func pick(off, idx int) int {
	if off >= 0 {
		return off
	}
	return idx
}
