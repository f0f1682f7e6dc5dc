package match

import (
	"github.com/cleavedb/cleave/exec/geo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// opKind says how a parsed operator combines.
type opKind uint8

const (
	opLeaf  opKind = iota // a leaf predicate, possibly negated
	opNot                 // $not: the negation of the conjunction of sub
	opAnd                 // the conjunction of sub ($all)
	opConst               // a constant ($all: [])
)

// op is one operator of a field expression before it is bound either to a path (a node:
// each operator traverses the path on its own, so {$gt: 1, $lt: 5} matches [0, 10]) or
// to a single value (a leaf, in $elemMatch's value form).
type op struct {
	kind  opKind
	lf    leaf
	mode  arrayMode
	neg   bool // $ne, $nin, $exists: false: NOT of the path predicate
	sub   []op
	value bool // opConst's value
}

// opsToNodes binds operators to a path.
func opsToNodes(path *fieldPath, ops []op) []node {
	out := make([]node, 0, len(ops))
	for _, o := range ops {
		switch o.kind {
		case opLeaf:
			var n node = &pathNode{path: *path, lf: o.lf, mode: o.mode}
			if o.neg {
				n = &notNode{kid: n}
			}
			out = append(out, n)
		case opNot:
			out = append(out, &notNode{kid: conjunction(opsToNodes(path, o.sub))})
		case opAnd:
			out = append(out, opsToNodes(path, o.sub)...)
		case opConst:
			out = append(out, constNode(o.value))
		}
	}
	return out
}

// opsToLeaf binds operators to a single value.
func opsToLeaf(ops []op) leaf {
	out := make(andLeaf, 0, len(ops))
	for _, o := range ops {
		switch o.kind {
		case opLeaf:
			var l = o.lf
			if o.neg {
				l = notLeaf{l: l}
			}
			out = append(out, l)
		case opNot:
			out = append(out, notLeaf{l: opsToLeaf(o.sub)})
		case opAnd:
			out = append(out, opsToLeaf(o.sub))
		case opConst:
			out = append(out, constLeaf(o.value))
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return out
}

// parseOps compiles an operator document {$op: arg, ...} for the field name.
func (p *parser) parseOps(name string, doc []byte, level int) ([]op, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, badValue("exceeded maximum nesting depth of %d in the filter", maxDepth)
	}
	var ops []op
	b := body(doc)
	for {
		t, key, val, rest, ok := next(b)
		if !ok {
			return ops, nil
		}
		b = rest
		o, skip, err := p.parseOp(name, string(key), bsoncore.Value{Type: t, Data: val}, doc, level)
		if err != nil {
			return nil, err
		}
		if !skip {
			ops = append(ops, o)
		}
	}
}

// parseOp compiles one operator; skip is set for operators that add no predicate
// ($options, read with its $regex).
func (p *parser) parseOp(name, key string, v bsoncore.Value, context []byte, level int) (o op, skip bool, err error) {
	leafOp := func(l leaf, e error) (op, bool, error) { return op{lf: l}, false, e }
	switch key {
	case "$eq":
		if v.Type == bsoncore.TypeUndefined {
			return op{}, false, badValue("cannot compare to undefined")
		}
		return op{lf: newCmp(opEQ, v, p.coll)}, false, nil
	case "$ne":
		if v.Type == bsoncore.TypeRegex {
			return op{}, false, badValue("Can't have regex as arg to $ne.")
		}
		if v.Type == bsoncore.TypeUndefined {
			return op{}, false, badValue("cannot compare to undefined")
		}
		return op{lf: newCmp(opEQ, v, p.coll), neg: true}, false, nil
	case "$lt", "$lte", "$gt", "$gte":
		if v.Type == bsoncore.TypeRegex {
			return op{}, false, badValue("Can't have RegEx as arg to predicate over field '%s'.", name)
		}
		if v.Type == bsoncore.TypeUndefined {
			return op{}, false, badValue("cannot compare to undefined")
		}
		return op{lf: newCmp(cmpOps[key], v, p.coll)}, false, nil
	case "$in", "$nin":
		in, err := p.parseIn(key, v)
		if err != nil {
			return op{}, false, err
		}
		return op{lf: in, neg: key == "$nin"}, false, nil
	case "$not":
		return p.parseNot(name, v, level)
	case "$exists":
		return op{lf: existsLeaf{}, neg: !trueValue(v)}, false, nil
	case "$size":
		l, err := parseSize(v)
		return op{lf: l, mode: wholeLeaf}, false, err
	case "$type":
		return leafOp(parseType(key, v))
	case "$mod":
		return leafOp(parseMod(v))
	case "$regex":
		return leafOp(parseRegexDoc(context))
	case "$options":
		if hasKey(context, "$regex") {
			return op{}, true, nil
		}
		return op{}, false, badValue("$options needs a $regex")
	case "$elemMatch":
		l, err := p.parseElemMatch(name, v)
		return op{lf: l, mode: wholeLeaf}, false, err
	case "$all":
		return p.parseAll(name, v)
	case "$bitsAllSet", "$bitsAllClear", "$bitsAnySet", "$bitsAnyClear":
		return leafOp(parseBits(key, v))
	case "$geoWithin", "$within", "$geoIntersects":
		q, err := geo.ParseQuery(key, v, context)
		if err != nil {
			return op{}, false, err
		}
		return op{lf: geoLeaf{q: q}}, false, nil
	case "$near", "$nearSphere", "$geoNear":
		return p.parseNear(context, level)
	case "$minDistance", "$maxDistance", "$uniqueDocs":
		if hasKey(context, "$near") || hasKey(context, "$nearSphere") || hasKey(context, "$geoNear") {
			return op{}, true, nil // read with the $near
		}
	case "$where":
		return op{}, false, badValue("$where cannot be applied to a field")
	}
	return op{}, false, badValue("unknown operator: %s", key)
}

// cmpOps maps comparison operator names to operators.
var cmpOps = map[string]cmpOp{"$lt": opLT, "$lte": opLTE, "$gt": opGT, "$gte": opGTE}

// hasKey reports whether doc has a field named key.
func hasKey(doc []byte, key string) bool {
	_, ok := lookup(doc, key)
	return ok
}

// trueValue is MongoDB's BSONElement::trueValue: false for false, zero numbers, null,
// undefined and missing; true otherwise.
func trueValue(v bsoncore.Value) bool {
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false
	case bsoncore.TypeBoolean:
		return len(v.Data) > 0 && v.Data[0] != 0
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
		f, _ := numberFloat(v)
		return f != 0
	case bsoncore.TypeDecimal128:
		return !decimalIsZero(v.Data)
	}
	return true
}

// parseNot compiles {$not: /re/} or {$not: {ops}}.
func (p *parser) parseNot(name string, v bsoncore.Value, level int) (op, bool, error) {
	if v.Type == bsoncore.TypeRegex {
		pat, opt := regexParts(v.Data)
		re, err := newRegex(string(pat), string(opt))
		if err != nil {
			return op{}, false, err
		}
		return op{kind: opNot, sub: []op{{lf: re}}}, false, nil
	}
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return op{}, false, badValue("$not needs a regex or a document")
	}
	if countElems(v.Data) == 0 {
		return op{}, false, badValue("$not cannot be empty")
	}
	ops, err := p.parseOps(name, v.Data, level)
	if err != nil {
		return op{}, false, err
	}
	return op{kind: opNot, sub: ops}, false, nil
}

// pathless are the top-level operators; an $elemMatch whose first key is one of them
// takes the object form.
var pathless = map[string]bool{
	"$and": true, "$or": true, "$nor": true, "$where": true, "$expr": true, "$comment": true,
	"$text": true, "$jsonSchema": true, "$alwaysTrue": true, "$alwaysFalse": true,
	"$id": true, "$ref": true, "$db": true, "$sampleRate": true,
}

// parseElemMatch compiles $elemMatch: the value form ({$gte: 80, $lt: 85}) applies the
// operators to each element, the object form ({a: 1, b: {$gt: 2}}) applies a query to
// each element that is a document.
func (p *parser) parseElemMatch(name string, v bsoncore.Value) (leaf, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, badValue("$elemMatch needs an Object")
	}
	if isExpressionDoc(v, true) {
		_, key, _, _, _ := next(body(v.Data))
		if !pathless[string(key)] {
			ops, err := p.parseOps("", v.Data, levelSub)
			if err != nil {
				return nil, err
			}
			return &elemMatchValue{sub: opsToLeaf(ops)}, nil
		}
	}
	conj, err := p.parseDoc(v.Data, levelSub, joinPath(p.prefix, name))
	if err != nil {
		return nil, err
	}
	return &elemMatchObject{sub: conjunction(conj)}, nil
}

// parseAll compiles $all: a conjunction of equalities (regexes match), or of $elemMatch.
func (p *parser) parseAll(name string, v bsoncore.Value) (op, bool, error) {
	if v.Type != bsoncore.TypeArray {
		return op{}, false, badValue("$all needs an array")
	}
	var subs []op
	b := body(v.Data)
	first := true
	elemMatchForm := false
	for {
		t, _, val, rest, ok := next(b)
		if !ok {
			break
		}
		b = rest
		e := bsoncore.Value{Type: t, Data: val}
		isEM := t == bsoncore.TypeEmbeddedDocument && firstKey(val) == "$elemMatch"
		if first {
			elemMatchForm, first = isEM, false
		}
		switch {
		case elemMatchForm:
			if !isEM {
				return op{}, false, badValue("$all/$elemMatch has to be consistent")
			}
			em, _ := lookup(val, "$elemMatch")
			l, err := p.parseElemMatch(name, em)
			if err != nil {
				return op{}, false, err
			}
			subs = append(subs, op{lf: l, mode: wholeLeaf})
		case t == bsoncore.TypeRegex:
			pat, opt := regexParts(val)
			re, err := newRegex(string(pat), string(opt))
			if err != nil {
				return op{}, false, err
			}
			subs = append(subs, op{lf: re})
		case t == bsoncore.TypeEmbeddedDocument && isOperatorKey(firstKey(val)):
			return op{}, false, badValue("no $ expressions in $all")
		default:
			subs = append(subs, op{lf: newCmp(opEQ, e, p.coll)})
		}
	}
	if len(subs) == 0 {
		return op{kind: opConst, value: false}, false, nil
	}
	return op{kind: opAnd, sub: subs}, false, nil
}

// firstKey returns the name of a document's first field, or "".
func firstKey(doc []byte) string {
	_, key, _, _, ok := next(body(doc))
	if !ok {
		return ""
	}
	return string(key)
}

// pathAccepting are the field-level operators MongoDB knows (parsePathAcceptingKeyword).
var pathAccepting = map[string]bool{
	"$eq": true, "$ne": true, "$gt": true, "$gte": true, "$lt": true, "$lte": true,
	"$in": true, "$nin": true, "$all": true, "$exists": true, "$mod": true, "$type": true,
	"$regex": true, "$options": true, "$elemMatch": true, "$size": true, "$not": true,
	"$geoWithin": true, "$within": true, "$geoIntersects": true, "$near": true,
	"$nearSphere": true, "$geoNear": true, "$bitsAllSet": true, "$bitsAllClear": true,
	"$bitsAnySet": true, "$bitsAnyClear": true,
}

// isOperatorKey reports whether key names a field-level operator.
func isOperatorKey(key string) bool { return pathAccepting[key] }

// parseIn compiles the array of $in or $nin.
func (p *parser) parseIn(key string, v bsoncore.Value) (*inLeaf, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, badValue("%s needs an array", key)
	}
	var eqs []bsoncore.Value
	var res []*regexLeaf
	b := body(v.Data)
	for {
		t, _, val, rest, ok := next(b)
		if !ok {
			break
		}
		b = rest
		e := bsoncore.Value{Type: t, Data: val}
		switch {
		case isExpressionDoc(e, false):
			return nil, badValue("cannot nest $ under $in")
		case t == bsoncore.TypeRegex:
			pat, opt := regexParts(val)
			re, err := newRegex(string(pat), string(opt))
			if err != nil {
				return nil, err
			}
			res = append(res, re)
		case t == bsoncore.TypeUndefined:
			return nil, badValue("InMatchExpression equality cannot be undefined")
		default:
			eqs = append(eqs, e)
		}
	}
	return newIn(eqs, res, p.coll), nil
}
