package expr

import (
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// compareOp returns $eq, $ne, $gt, $gte, $lt, $lte (ok reports whether the sign of
// Compare satisfies the operator) over MongoDB's total order; missing sorts below null.
func compareOp(ok func(c int) bool) evalFn {
	return func(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
		return boolVal(ok(v.compare(args[0], args[1]))), nil
	}
}

// cmpOp is $cmp: -1, 0 or 1 as an int.
func cmpOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	return v.int32Val(int32(v.compare(args[0], args[1]))), nil
}

// notOp is $not.
func notOp(_ *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	return boolVal(!truthy(args[0])), nil
}

// logicNode is $and (and true) or $or, evaluating operands left to right and stopping
// at the first that decides the result.
type logicNode struct {
	args []node
	and  bool
}

func (n *logicNode) eval(v *Vars) (bsoncore.Value, error) {
	for _, a := range n.args {
		x, err := a.eval(v)
		if err != nil {
			return missing, err
		}
		if truthy(x) != n.and {
			return boolVal(!n.and), nil
		}
	}
	return boolVal(n.and), nil
}

// parseLogic compiles $and and $or.
func parseLogic(and bool) parseFn {
	return func(p *parser, _ string, arg bsoncore.Value) (node, error) {
		args, allConst, err := p.parseAll(operandList(arg))
		if err != nil {
			return nil, err
		}
		n := &logicNode{args: args, and: and}
		if allConst {
			return fold(n), nil
		}
		return n, nil
	}
}

// condNode is $cond.
type condNode struct{ cond, then, els node }

func (n *condNode) eval(v *Vars) (bsoncore.Value, error) {
	c, err := n.cond.eval(v)
	if err != nil {
		return missing, err
	}
	if truthy(c) {
		return n.then.eval(v)
	}
	return n.els.eval(v)
}

// parseCond compiles $cond: [if, then, else] or {if, then, else}.
func parseCond(p *parser, name string, arg bsoncore.Value) (node, error) {
	var ops []bsoncore.Value
	if arg.Type == bsoncore.TypeEmbeddedDocument {
		ops = make([]bsoncore.Value, 3)
		for _, f := range docFields(arg) {
			switch f.name {
			case "if":
				ops[0] = f.val
			case "then":
				ops[1] = f.val
			case "else":
				ops[2] = f.val
			default:
				return nil, mongoerr.New(mongoerr.Location17083, "Unrecognized parameter to $cond: %s", f.name)
			}
		}
		for i, k := range []string{"if", "then", "else"} {
			if ops[i].Type == 0 {
				return nil, mongoerr.New(mongoerr.Code(17080+i), "Missing '%s' parameter to $cond", k)
			}
		}
	} else {
		ops = operandList(arg)
		if err := checkArity(name, len(ops), 3, 3); err != nil {
			return nil, err
		}
	}
	args, allConst, err := p.parseAll(ops)
	if err != nil {
		return nil, err
	}
	n := &condNode{args[0], args[1], args[2]}
	if allConst {
		return fold(n), nil
	}
	return n, nil
}

// ifNullNode is $ifNull: the first operand that is not null, undefined or missing, or
// the last operand's value.
type ifNullNode struct{ args []node }

func (n *ifNullNode) eval(v *Vars) (bsoncore.Value, error) {
	var x bsoncore.Value
	for i, a := range n.args {
		var err error
		if x, err = a.eval(v); err != nil {
			return missing, err
		}
		if !nullish(x) || i == len(n.args)-1 {
			return x, nil
		}
	}
	return x, nil
}

// parseIfNull compiles $ifNull: [expr, ..., replacement].
func parseIfNull(p *parser, _ string, arg bsoncore.Value) (node, error) {
	ops := operandList(arg)
	if len(ops) < 2 {
		return nil, mongoerr.New(mongoerr.Location1257300, "$ifNull needs at least two arguments, had: %d", len(ops))
	}
	args, allConst, err := p.parseAll(ops)
	if err != nil {
		return nil, err
	}
	n := &ifNullNode{args}
	if allConst {
		return fold(n), nil
	}
	return n, nil
}

// switchNode is $switch.
type switchNode struct {
	cases, thens []node
	def          node
}

func (n *switchNode) eval(v *Vars) (bsoncore.Value, error) {
	for i, c := range n.cases {
		x, err := c.eval(v)
		if err != nil {
			return missing, err
		}
		if truthy(x) {
			return n.thens[i].eval(v)
		}
	}
	if n.def == nil {
		return missing, mongoerr.New(mongoerr.Location40066, "$switch could not find a matching branch for an input, and no default was specified.")
	}
	return n.def.eval(v)
}

// parseSwitch compiles $switch: {branches: [{case, then}, ...], default}.
func parseSwitch(p *parser, _ string, arg bsoncore.Value) (node, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location40060, "$switch requires an object as an argument, found: %s", bsonx.TypeName(arg.Type))
	}
	n := &switchNode{}
	for _, f := range docFields(arg) {
		switch f.name {
		case "branches":
			if f.val.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.Location40061, "$switch expected an array for 'branches', found: %s", bsonx.TypeName(f.val.Type))
			}
			for _, b := range arrayValues(f.val) {
				if err := n.parseBranch(p, b); err != nil {
					return nil, err
				}
			}
		case "default":
			d, err := p.parse(f.val)
			if err != nil {
				return nil, err
			}
			n.def = d
		default:
			return nil, mongoerr.New(mongoerr.Location40067, "$switch found an unknown argument: %s", f.name)
		}
	}
	if len(n.cases) == 0 {
		return nil, mongoerr.New(mongoerr.Location40068, "$switch requires at least one branch.")
	}
	return n, nil
}

// parseBranch compiles one {case, then} branch of $switch.
func (n *switchNode) parseBranch(p *parser, b bsoncore.Value) error {
	if b.Type != bsoncore.TypeEmbeddedDocument {
		return mongoerr.New(mongoerr.Location40062, "$switch expected each branch to be an object, found: %s", bsonx.TypeName(b.Type))
	}
	var c, t node
	for _, f := range docFields(b) {
		x, err := p.parse(f.val)
		if err != nil {
			return err
		}
		switch f.name {
		case "case":
			c = x
		case "then":
			t = x
		default:
			return mongoerr.New(mongoerr.Location40063, "$switch found an unknown argument to a branch: %s", f.name)
		}
	}
	if c == nil {
		return mongoerr.New(mongoerr.Location40064, "$switch requires each branch have a 'case' expression")
	}
	if t == nil {
		return mongoerr.New(mongoerr.Location40065, "$switch requires each branch have a 'then' expression.")
	}
	n.cases, n.thens = append(n.cases, c), append(n.thens, t)
	return nil
}

// parseLiteral compiles $literal: its argument, unevaluated.
func parseLiteral(_ *parser, _ string, arg bsoncore.Value) (node, error) {
	return &constNode{arg}, nil
}

// letNode is $let: evaluates vars in the outer scope, binds them, evaluates in.
type letNode struct {
	slots []int
	vals  []node
	in    node
}

func (n *letNode) eval(v *Vars) (bsoncore.Value, error) {
	var stack [4]bsoncore.Value
	vals := stack[:0]
	for _, e := range n.vals {
		x, err := e.eval(v)
		if err != nil {
			return missing, err
		}
		vals = append(vals, x)
	}
	for i, s := range n.slots {
		v.slots[s] = vals[i]
	}
	return n.in.eval(v)
}

// parseLet compiles $let: {vars: {name: expr, ...}, in: expr}.
func parseLet(p *parser, _ string, arg bsoncore.Value) (node, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location16874, "$let only supports an object as its argument")
	}
	var varsVal, inVal bsoncore.Value
	for _, f := range docFields(arg) {
		switch f.name {
		case "vars":
			varsVal = f.val
		case "in":
			inVal = f.val
		default:
			return nil, mongoerr.New(mongoerr.Location16875, "Unrecognized parameter to $let: %s", f.name)
		}
	}
	if varsVal.Type == 0 {
		return nil, mongoerr.New(mongoerr.Location16876, "Missing 'vars' parameter to $let")
	}
	if inVal.Type == 0 {
		return nil, mongoerr.New(mongoerr.Location16877, "Missing 'in' parameter to $let")
	}
	if varsVal.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location10065, "invalid parameter: expected an object (vars)")
	}
	n := &letNode{}
	defs := docFields(varsVal)
	for _, f := range defs {
		if err := validateUserWrite(f.name); err != nil {
			return nil, err
		}
		x, err := p.parse(f.val)
		if err != nil {
			return nil, err
		}
		n.vals = append(n.vals, x)
	}
	mark := len(p.scope)
	for _, f := range defs {
		n.slots = append(n.slots, p.define(f.name))
	}
	in, err := p.parse(inVal)
	p.scope = p.scope[:mark]
	if err != nil {
		return nil, err
	}
	n.in = in
	return n, nil
}

// randNode is $rand: a double in [0, 1), never folded.
type randNode struct{}

func (randNode) eval(v *Vars) (bsoncore.Value, error) { return v.doubleVal(rand.Float64()), nil }

// parseRand compiles $rand: {}.
func parseRand(_ *parser, _ string, arg bsoncore.Value) (node, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument || len(docFields(arg)) != 0 {
		return nil, mongoerr.New(mongoerr.Location10065, "invalid parameter: expected an object ($rand)")
	}
	return randNode{}, nil
}
