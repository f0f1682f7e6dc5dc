package bsonx

import (
	"bytes"
	"slices"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// IndexField is one component of an index key pattern.
type IndexField struct {
	Path   string // dotted path
	Desc   bool   // -1 in the key pattern: the component is encoded with AppendKeyDesc
	Hashed bool   // "hashed": the component is Hash(value) encoded as an int64
}

// The values that stand for a missing field and for an empty array in index keys.
var (
	nullValue      = bsoncore.Value{Type: bsoncore.TypeNull}
	undefinedValue = bsoncore.Value{Type: bsoncore.TypeUndefined}
)

// AppendIndexKeys generates the index keys of doc for the key pattern fields, as MongoDB's
// BtreeKeyGenerator does, and calls fn once per distinct key, in ascending byte order. A key is
// the concatenation of one AppendKey/AppendKeyDesc component per field. The key slice is only
// valid during the call.
//
//   - A missing field (or a scalar where the path continues) indexes as null.
//   - A field that reaches an array generates one key per element; nested arrays are indexed
//     as whole values; an empty array indexes as undefined. multikey reports that an array was
//     expanded (conservatively: one-element and empty arrays count too).
//   - A numeric path component indexes that array position ("a.0"), without making the
//     index multikey.
//   - Fields that go through the same array pair up element by element ({"a.b": 1, "a.c": 1});
//     fields that reach two different arrays fail with a *ParallelArraysError.
//   - If any field is hashed, no array may appear on any field's path (*HashedArrayError), and
//     exactly one key is generated.
//
// An error from fn stops the generation and is returned.
func AppendIndexKeys(doc bsoncore.Document, fields []IndexField, fn func(key []byte) error) (multikey bool, err error) {
	multikey, _, err = AppendIndexKeysArrays(doc, fields, fn)
	return multikey, err
}

// AppendIndexKeysArrays is AppendIndexKeys that also reports whether some field's path
// reached an array of doc (expanded or not, positional components included): when arrays is
// false, no field's path passes through or ends at an array, and the index needs no multikey
// path for doc. An index with a hashed component reports true (it does not tell).
func AppendIndexKeysArrays(doc bsoncore.Document, fields []IndexField, fn func(key []byte) error) (multikey, arrays bool, err error) {
	for _, f := range fields {
		if f.Hashed {
			return false, true, appendHashedKey(doc, fields, fn)
		}
	}
	g := getKeyGen(fields)
	defer putKeyGen(g)
	if err := g.run(DocBody(doc)); err != nil {
		return false, false, err
	}
	return g.multikey, g.arrays, g.each(fn)
}

// appendHashedKey generates the single key of an index with a hashed component (MongoDB's
// ExpressionKeysPrivate::getHashKeys).
func appendHashedKey(doc bsoncore.Document, fields []IndexField, fn func(key []byte) error) error {
	g := getKeyGen(fields)
	defer putKeyGen(g)
	key := g.keys[:0]
	for _, f := range fields {
		t, v, _, rem, found := extractAlong(DocBody(doc), f.Path)
		if found && t == bsoncore.TypeArray {
			n := len(f.Path) - len(rem)
			if rem != "" {
				n--
			}
			return &HashedArrayError{Path: f.Path[:n]}
		}
		val := nullValue
		if found {
			val = bsoncore.Value{Type: t, Data: v}
		}
		if f.Hashed {
			key = appendHashComponent(key, val, f.Desc)
		} else {
			key = appendComponent(key, val, f.Desc)
		}
	}
	g.keys = key
	return fn(key)
}

// appendHashComponent appends Hash(v) as an int64 key component.
func appendHashComponent(dst []byte, v bsoncore.Value, desc bool) []byte {
	n := len(dst)
	dst = appendInt(dst, int64(Hash(v))) // the hash is reinterpreted as an int64, as MongoDB does
	if desc {
		complement(dst[n:])
	}
	return dst
}

// appendComponent appends v ascending or descending.
func appendComponent(dst []byte, v bsoncore.Value, desc bool) []byte {
	if desc {
		return AppendKeyDesc(dst, v)
	}
	return AppendKey(dst, v)
}

// extractAlong follows path from a document body through documents only (MongoDB's
// extractElementAtPathOrArrayAlongPath). It stops at the first array and returns it with the
// path after it (rem is "" if the array ends the path); otherwise it returns the value at the
// end of the path, or found=false. name is the field name of the element returned.
func extractAlong(body []byte, path string) (t bsoncore.Type, v []byte, name, rem string, found bool) {
	part, rest, more := strings.Cut(path, ".")
	t, v, ok := field(body, part)
	if !ok {
		return 0, nil, "", "", false
	}
	return extractFrom(t, v, part, rest, more)
}

// extractFrom continues extractAlong from the value v (of type t, field name) found for one
// path component, with rest the path after it.
func extractFrom(t bsoncore.Type, v []byte, name, rest string, more bool) (bsoncore.Type, []byte, string, string, bool) {
	for {
		switch {
		case t == bsoncore.TypeArray || !more:
			return t, v, name, rest, true
		case t != bsoncore.TypeEmbeddedDocument:
			return 0, nil, "", "", false
		}
		var ok bool
		name, rest, more = strings.Cut(rest, ".")
		if t, v, ok = field(DocBody(v), name); !ok {
			return 0, nil, "", "", false
		}
	}
}

// posInfo is a field's positionally indexed element of the array being expanded ("a.1.b"
// looks up element 1 once, not once per element).
type posInfo struct {
	has      bool          // the next path component names an element of the array
	elemName string        // that component
	nested   bool          // the indexed element is itself an array
	t        bsoncore.Type // what the rest of the path reaches from the array; 0 if nothing
	v        []byte
	name     string
	rem      string
}

// fieldState is one field's progress through the recursion of keyGen.level.
type fieldState struct {
	rem   string         // path still to follow; "" once val is set (or the array ends it)
	val   bsoncore.Value // the component value once resolved
	inArr bool           // the field reached the array expanded at this level
	pos   posInfo        // positional lookup passed down from the enclosing array
	next  posInfo        // positional lookup computed for the array expanded at this level
}

// keyGen generates index keys; it is pooled, and its buffers are reused.
type keyGen struct {
	fields   []IndexField
	own      []IndexField // backing store for fields built from a sort spec
	multikey bool
	arrays   bool // some field reached an array (AppendIndexKeysArrays)
	minOnly  bool // keep only the smallest key (sort keys)
	haveMin  bool // in minOnly mode, keys holds the smallest key so far
	stack    []fieldState
	top      int
	keys     []byte   // generated keys, concatenated
	spans    [][2]int // [start, end) of each key in keys
}

// keyGenPool recycles generators.
var keyGenPool = sync.Pool{New: func() any { return new(keyGen) }}

// getKeyGen returns a reset generator for fields.
func getKeyGen(fields []IndexField) *keyGen {
	g := keyGenPool.Get().(*keyGen) // the pool only holds *keyGen
	g.fields, g.multikey, g.arrays, g.minOnly, g.haveMin, g.top = fields, false, false, false, false, 0
	g.keys, g.spans = g.keys[:0], g.spans[:0]
	return g
}

// putKeyGen returns g to the pool, dropping references into the caller's document; a generator
// grown by a huge document is left to the garbage collector instead.
func putKeyGen(g *keyGen) {
	if cap(g.keys) > maxPooledKeys || cap(g.spans) > maxPooledKeys/16 || cap(g.stack) > maxPooledKeys/64 {
		return
	}
	clear(g.stack)
	g.fields = nil
	keyGenPool.Put(g)
}

// maxPooledKeys bounds the key bytes a pooled generator keeps.
const maxPooledKeys = 1 << 20

// run generates the keys of a document body.
func (g *keyGen) run(body []byte) error {
	st := g.push(len(g.fields))
	for i := range st {
		st[i] = fieldState{rem: g.fields[i].Path}
	}
	return g.level(body, st)
}

// push returns a frame of n field states from the stack.
func (g *keyGen) push(n int) []fieldState {
	if g.top+n > len(g.stack) {
		g.stack = append(g.stack, make([]fieldState, g.top+n-len(g.stack))...)
	}
	st := g.stack[g.top : g.top+n : g.top+n]
	g.top += n
	return st
}

// level is one step of BtreeKeyGenerator::_getKeysWithArray: it advances every unresolved field
// through obj (a document body, nil for a non-document array element) until each is resolved
// or reaches an array; then it expands the one array they reach, recursing once per element.
func (g *keyGen) level(obj []byte, st []fieldState) error {
	arr, mayExpand, err := advance(obj, st)
	if err != nil || arr == nil {
		if err == nil {
			g.emit(st)
		}
		return err
	}
	g.arrays = true
	body := DocBody(arr)
	n := len(st)
	if _, _, _, _, ok := NextElement(body); !ok {
		// An empty array: fields that end at it index undefined, the others go on (to null).
		g.multikey = g.multikey || mayExpand
		child := g.push(n)
		defer func() { g.top -= n }()
		for i := range st {
			child[i] = fieldState{rem: st[i].rem, val: st[i].val, inArr: st[i].inArr}
			if child[i].inArr && child[i].rem == "" {
				child[i].val = undefinedValue
			}
		}
		return g.level(nil, child)
	}
	g.positional(body, st, mayExpand)
	child := g.push(n)
	defer func() { g.top -= n }()
	for {
		t, _, v, rest, ok := NextElement(body)
		if !ok {
			return nil
		}
		body = rest
		for i := range st {
			child[i] = fieldState{rem: st[i].rem, val: st[i].val, pos: st[i].next}
			if st[i].inArr && st[i].rem == "" {
				child[i].val = bsoncore.Value{Type: bsoncore.TypeArray, Data: arr}
				if mayExpand {
					child[i].val = bsoncore.Value{Type: t, Data: v}
				}
			}
		}
		var sub []byte
		if t == bsoncore.TypeEmbeddedDocument {
			sub = DocBody(v)
		}
		if err := g.level(sub, child); err != nil {
			return err
		}
	}
}

// advance moves every unresolved field of st through obj and returns the array they reach, if
// any; it fails if they reach different arrays.
func advance(obj []byte, st []fieldState) (arr []byte, mayExpand bool, err error) {
	var arrName string
	mayExpand = true
	for i := range st {
		s := &st[i]
		s.inArr = false
		if s.rem == "" {
			continue
		}
		first, rest, more := strings.Cut(s.rem, ".")
		t, v, haveObj := field(obj, first)
		var (
			name   string
			found  bool
			nested bool
		)
		switch {
		case haveObj && s.pos.has:
			return nil, false, &AmbiguousFieldError{Field: s.pos.elemName}
		case haveObj:
			t, v, name, s.rem, found = extractFrom(t, v, first, rest, more)
		case s.pos.has:
			t, v, name, s.rem, found = s.pos.t, s.pos.v, s.pos.name, s.pos.rem, s.pos.t != 0
			nested = s.pos.nested
		}
		switch {
		case !found:
			s.val, s.rem = nullValue, ""
		case t == bsoncore.TypeArray:
			s.inArr = true
			if arr == nil {
				arr, arrName = v, name
			} else if !sameBytes(arr, v) {
				return nil, false, &ParallelArraysError{First: name, Second: arrName}
			}
			mayExpand = mayExpand && !nested
		default:
			s.val, s.rem = bsoncore.Value{Type: t, Data: v}, ""
		}
	}
	return arr, mayExpand, nil
}

// positional computes, for each field that continues past the array being expanded, the element
// its next component indexes, if any; it also records whether the array makes the index
// multikey.
func (g *keyGen) positional(body []byte, st []fieldState, mayExpand bool) {
	for i := range st {
		s := &st[i]
		s.next = posInfo{}
		if s.rem == "" {
			g.multikey = g.multikey || s.inArr && mayExpand
			continue
		}
		part, _, _ := strings.Cut(s.rem, ".")
		et, _, ok := field(body, part)
		if !ok {
			g.multikey = true
			continue
		}
		s.next = posInfo{has: true, elemName: part, nested: et == bsoncore.TypeArray}
		var found bool
		s.next.t, s.next.v, s.next.name, s.next.rem, found = extractAlong(body, s.rem)
		if !found {
			s.next.t = 0
		}
	}
}

// sameBytes reports whether a and b are the same bytes of the document (not merely equal).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// emit builds the key of the resolved field values and records it; in minOnly mode it keeps
// only the smallest key seen.
func (g *keyGen) emit(st []fieldState) {
	switch {
	case !g.minOnly:
		start := len(g.keys)
		g.keys = g.appendKey(g.keys, st)
		g.spans = append(g.spans, [2]int{start, len(g.keys)})
	case !g.haveMin:
		g.keys = g.appendKey(g.keys[:0], st)
		g.haveMin = true
	default:
		start := len(g.keys)
		k := g.appendKey(g.keys, st)
		if bytes.Compare(k[start:], k[:start]) < 0 {
			g.keys = k[:copy(k, k[start:])]
		} else {
			g.keys = k[:start]
		}
	}
}

// appendKey appends the key made of the fields' values.
func (g *keyGen) appendKey(dst []byte, st []fieldState) []byte {
	for i, f := range g.fields {
		dst = appendComponent(dst, st[i].val, f.Desc)
	}
	return dst
}

// each calls fn for every distinct key in ascending order.
func (g *keyGen) each(fn func(key []byte) error) error {
	if len(g.spans) > 1 {
		keys := g.keys
		slices.SortFunc(g.spans, func(a, b [2]int) int {
			return bytes.Compare(keys[a[0]:a[1]], keys[b[0]:b[1]])
		})
	}
	var prev []byte
	for i, s := range g.spans {
		k := g.keys[s[0]:s[1]]
		if i > 0 && bytes.Equal(k, prev) {
			continue
		}
		if err := fn(k); err != nil {
			return err
		}
		prev = k
	}
	return nil
}
