package expr

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// constNode is a literal, or a folded constant subexpression.
type constNode struct{ v bsoncore.Value }

func (n *constNode) eval(*Vars) (bsoncore.Value, error) { return n.v, nil }

// slotNode reads a variable bound at evaluation ($$CURRENT, $let, $map's as, ...).
type slotNode struct{ slot int }

func (n *slotNode) eval(v *Vars) (bsoncore.Value, error) { return v.slots[n.slot], nil }

// pathNode reads a dotted path below $$ROOT, a slot variable or a constant base.
type pathNode struct {
	root bool
	slot int
	base node
	path []string
}

func (n *pathNode) eval(v *Vars) (bsoncore.Value, error) {
	var cur bsoncore.Value
	switch {
	case n.base != nil:
		var err error
		if cur, err = n.base.eval(v); err != nil {
			return missing, err
		}
	case n.root:
		cur = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: v.root}
	default:
		cur = v.slots[n.slot]
	}
	return v.walk(cur, n.path), nil
}

// walk follows path from cur as MongoDB's ExpressionFieldPath does: documents by field
// name, arrays by mapping the rest of the path over their document elements (others
// are skipped, as are elements where the rest is missing); anything else is missing.
func (v *Vars) walk(cur bsoncore.Value, path []string) bsoncore.Value {
	for i, name := range path {
		switch cur.Type {
		case bsoncore.TypeEmbeddedDocument:
			doc, _ := cur.DocumentOK()
			f, err := doc.LookupErr(name)
			if err != nil {
				return missing
			}
			cur = f
		case bsoncore.TypeArray:
			return v.walkArray(cur, path[i:])
		default:
			return missing
		}
	}
	return cur
}

// walkArray maps path over the document elements of an array.
func (v *Vars) walkArray(arr bsoncore.Value, path []string) bsoncore.Value {
	var out []bsoncore.Value
	for _, e := range arrayValues(arr) {
		if e.Type != bsoncore.TypeEmbeddedDocument {
			continue
		}
		if r := v.walk(e, path); !isMissing(r) {
			out = append(out, r)
		}
	}
	return v.arrayVal(out)
}

// arrayNode builds an array; missing elements become null.
type arrayNode struct{ elems []node }

func (n *arrayNode) eval(v *Vars) (bsoncore.Value, error) {
	vals := make([]bsoncore.Value, len(n.elems))
	for i, e := range n.elems {
		x, err := e.eval(v)
		if err != nil {
			return missing, err
		}
		vals[i] = x
	}
	return v.arrayVal(vals), nil
}

// objectNode builds a document; fields whose value is missing are left out.
type objectNode struct {
	names []string
	vals  []node
}

func (n *objectNode) eval(v *Vars) (bsoncore.Value, error) {
	fields := make([]field, len(n.vals))
	for i, e := range n.vals {
		x, err := e.eval(v)
		if err != nil {
			return missing, err
		}
		fields[i] = field{n.names[i], x}
	}
	return v.docVal(fields), nil
}

// evalFn computes an operator from its evaluated arguments.
type evalFn func(v *Vars, args []bsoncore.Value) (bsoncore.Value, error)

// opNode is an operator whose arguments are all evaluated first.
type opNode struct {
	name string
	args []node
	fn   evalFn
}

func (n *opNode) eval(v *Vars) (bsoncore.Value, error) {
	var stack [4]bsoncore.Value
	vals := stack[:0]
	for _, a := range n.args {
		x, err := a.eval(v)
		if err != nil {
			return missing, err
		}
		vals = append(vals, x)
	}
	return n.fn(v, vals)
}

// parseFn compiles the argument of one operator.
type parseFn func(p *parser, name string, arg bsoncore.Value) (node, error)

// operandList returns the operands of an operator: the elements of an array argument,
// or the argument itself.
func operandList(arg bsoncore.Value) []bsoncore.Value {
	if arg.Type == bsoncore.TypeArray {
		return arrayValues(arg)
	}
	return []bsoncore.Value{arg}
}

// parseAll compiles each value and reports whether all are constants.
func (p *parser) parseAll(vals []bsoncore.Value) ([]node, bool, error) {
	out := make([]node, len(vals))
	allConst := true
	for i, a := range vals {
		n, err := p.parse(a)
		if err != nil {
			return nil, false, err
		}
		if _, ok := n.(*constNode); !ok {
			allConst = false
		}
		out[i] = n
	}
	return out, allConst, nil
}

// ranged returns the parser of an operator taking between lo and hi operands
// (hi < 0: no limit), evaluated eagerly, with MongoDB's arity errors.
func ranged(lo, hi int, fn evalFn) parseFn {
	return func(p *parser, name string, arg bsoncore.Value) (node, error) {
		ops := operandList(arg)
		if err := checkArity(name, len(ops), lo, hi); err != nil {
			return nil, err
		}
		args, allConst, err := p.parseAll(ops)
		if err != nil {
			return nil, err
		}
		n := &opNode{name: name, args: args, fn: fn}
		if allConst && p.coll == nil { // a collation is applied per evaluation (Vars)
			return fold(n), nil
		}
		return n, nil
	}
}

// fixed is ranged with exactly n operands.
func fixed(n int, fn evalFn) parseFn { return ranged(n, n, fn) }

// variadic is ranged with any number of operands.
func variadic(fn evalFn) parseFn { return ranged(0, -1, fn) }

// checkArity reports MongoDB's errors for a wrong number of operands.
func checkArity(name string, n, lo, hi int) error {
	switch {
	case lo == hi && n != lo:
		return mongoerr.New(mongoerr.Location16020, "Expression %s takes exactly %d arguments. %d were passed in.", name, lo, n)
	case hi >= 0 && (n < lo || n > hi):
		return mongoerr.New(mongoerr.Location28667, "Expression %s takes at least %d arguments, and at most %d. %d were passed in.", name, lo, hi, n)
	case n < lo:
		return mongoerr.New(mongoerr.Location16020, "Expression %s takes at least %d arguments. %d were passed in.", name, lo, n)
	}
	return nil
}

// object returns the fields of an operator's object argument, or MongoDB's error when
// the argument is not an object.
func objectArg(name string, arg bsoncore.Value, code mongoerr.Code) ([]field, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(code, "%s only supports an object as its argument", name)
	}
	return docFields(arg), nil
}

// namedArgs parses an object argument whose fields are named sub-expressions: known
// lists the allowed names; required the mandatory ones. Unknown names fail with
// unknownCode, absent required ones with missingCode.
func (p *parser) namedArgs(name string, arg bsoncore.Value, known []string, required []string,
	objCode, unknownCode, missingCode mongoerr.Code) (map[string]node, error) {
	fields, err := objectArg(name, arg, objCode)
	if err != nil {
		return nil, err
	}
	out := make(map[string]node, len(fields))
	for _, f := range fields {
		ok := false
		for _, k := range known {
			if k == f.name {
				ok = true
			}
		}
		if !ok {
			return nil, mongoerr.New(unknownCode, "%s found an unknown argument: %s", name, f.name)
		}
		n, err := p.parse(f.val)
		if err != nil {
			return nil, err
		}
		out[f.name] = n
	}
	for _, r := range required {
		if out[r] == nil {
			return nil, mongoerr.New(missingCode, "Missing '%s' parameter to %s", r, name)
		}
	}
	return out, nil
}

// evalOpt evaluates an optional sub-expression; nil gives missing.
func evalOpt(n node, v *Vars) (bsoncore.Value, error) {
	if n == nil {
		return missing, nil
	}
	return n.eval(v)
}

// isConst reports whether all nodes are constants (nil counts as constant).
func isConst(ns ...node) bool {
	for _, n := range ns {
		if n == nil {
			continue
		}
		if _, ok := n.(*constNode); !ok {
			return false
		}
	}
	return true
}
