package match

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// singleEq is the compiled form of a filter that is one top-level equality to a scalar,
// {name: value} (a find by _id, MongoDB's IDHACK shape), in one allocation: the tree the
// parser builds for it (an eqTopNode over a cmpLeaf, one path) was a third of a point
// read's allocations (issue 13).
type singleEq struct {
	f     Filter
	top   eqTopNode
	cmp   cmpLeaf
	conj  [1]node
	paths [1]string
	parts [1]string
	num   [1]bool
}

// idName is "_id", so that a filter on it needs no string for its name.
const idName = "_id"

// compileSingleEq returns the filter for a valid (validated) filter document that holds
// one field, not an operator nor a dotted path, whose value the parser would compile into
// an eqTopNode (not null, a regex, undefined or a document); nil for any other filter,
// which the parser compiles. The result is the parser's, node for node.
// When sc is not nil the filter is built in it rather than allocated.
func compileSingleEq(filter bsoncore.Document, opts *Options, sc *Scratch) *Filter {
	t, key, val, rest, ok := next(body(filter))
	if !ok || len(rest) != 0 || len(key) == 0 || key[0] == '$' {
		return nil
	}
	switch t {
	case bsoncore.TypeNull, bsoncore.TypeRegex, bsoncore.TypeUndefined, bsoncore.TypeEmbeddedDocument:
		return nil
	}
	for _, c := range key {
		if c == '.' {
			return nil
		}
	}
	name := idName
	if string(key) != idName {
		name = string(key)
	}
	v := bsoncore.Value{Type: t, Data: val}
	var s *singleEq
	if sc != nil {
		s = &sc.eq
		*s = singleEq{}
	} else {
		s = &singleEq{}
	}
	if opts != nil {
		s.f.coll, s.f.vars = opts.Collator, opts.Vars
	}
	// Field by field: s is zero, and a struct assignment would copy every field.
	s.cmp.init(opEQ, v, s.f.coll)
	s.parts[0], s.num[0] = name, isAllDigits(name)
	p := &s.top.path
	p.dotted, p.parts, p.numeric = name, s.parts[:], s.num[:]
	s.top.lf, s.top.name, s.top.cmp = &s.cmp, name, &s.cmp
	s.conj[0] = &s.top
	s.paths[0] = name
	s.f.root, s.f.conj, s.f.paths, s.f.src = &s.top, s.conj[:], s.paths[:], filter
	return &s.f
}

// Scratch is room for a compiled filter that its owner reuses from one compilation to the
// next (a pooled find's state): CompileInto builds a one-equality filter, a find by _id's,
// in it instead of allocating one. The filter it returns lives in the Scratch: it is valid
// until the Scratch is compiled into again or reused otherwise.
type Scratch struct {
	eq singleEq
}
