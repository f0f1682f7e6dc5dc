package expr

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// maxDepth bounds the nesting of expressions, so that hostile input cannot exhaust the
// stack (BSON itself allows 100 levels of documents).
const maxDepth = 200

// Slots with a fixed meaning; user variables take the following ones.
const slotCurrent = 0

// binding is a variable in scope: a slot filled at evaluation, or a constant (let).
type binding struct {
	name  string
	slot  int
	value bsoncore.Value
	konst bool
}

// parser compiles one expression tree, tracking variable scopes and slot numbers.
type parser struct {
	scope  []binding
	nslots int
	depth  int
	now    time.Time
	coll   bsonx.Collator // Options.Collator: comparisons of constants are not folded
	fn     FunctionHook   // Options.Function
}

// newParser returns a parser whose $$CURRENT is the evaluated document.
func newParser(now time.Time) *parser {
	return &parser{scope: []binding{{name: "CURRENT", slot: slotCurrent}}, nslots: 1, now: now}
}

// define binds name to a new slot in the innermost scope and returns the slot.
func (p *parser) define(name string) int {
	slot := p.nslots
	p.nslots++
	p.scope = append(p.scope, binding{name: name, slot: slot})
	return slot
}

// defineLet evaluates the query-level let variables once, in order, and binds them as
// constants.
func (p *parser) defineLet(let bsoncore.Document) error {
	for _, f := range documentFields(let) {
		if err := validateUserWrite(f.name); err != nil {
			return err
		}
		n, err := p.parse(f.val)
		if err != nil {
			return err
		}
		vars := &Vars{now: p.now, slots: make([]bsoncore.Value, p.nslots)}
		val, err := n.eval(vars)
		if err != nil {
			return err
		}
		p.scope = append(p.scope, binding{name: f.name, value: val, konst: true})
	}
	return nil
}

// lookup finds the innermost binding of name.
func (p *parser) lookup(name string) (binding, bool) {
	for i := len(p.scope) - 1; i >= 0; i-- {
		if p.scope[i].name == name {
			return p.scope[i], true
		}
	}
	return binding{}, false
}

// parse compiles one expression value.
func (p *parser) parse(v bsoncore.Value) (node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, mongoerr.New(mongoerr.Overflow, "expression is nested too deeply (more than %d levels)", maxDepth)
	}
	switch v.Type {
	case bsoncore.TypeString:
		s, _ := v.StringValueOK()
		if strings.HasPrefix(s, "$") {
			return p.parsePath(s)
		}
	case bsoncore.TypeEmbeddedDocument:
		return p.parseObject(v)
	case bsoncore.TypeArray:
		return p.parseArray(v)
	}
	return &constNode{v}, nil
}

// parseArray compiles an array of expressions; constant arrays stay constants.
func (p *parser) parseArray(v bsoncore.Value) (node, error) {
	elems := arrayValues(v)
	n := &arrayNode{elems: make([]node, len(elems))}
	allConst := true
	for i, e := range elems {
		c, err := p.parse(e)
		if err != nil {
			return nil, err
		}
		n.elems[i] = c
		if _, ok := c.(*constNode); !ok {
			allConst = false
		}
	}
	if allConst {
		return fold(n), nil
	}
	return n, nil
}

// parseObject compiles {$op: args} or an expression object {field: expr, ...}.
func (p *parser) parseObject(v bsoncore.Value) (node, error) {
	fields := docFields(v)
	if len(fields) > 0 && strings.HasPrefix(fields[0].name, "$") {
		if len(fields) != 1 {
			return nil, mongoerr.New(mongoerr.Location15983, "an expression specification must contain exactly one field, "+
				"the name of the expression. Found %d fields in %s", len(fields), v.String())
		}
		return p.parseOperator(fields[0].name, fields[0].val)
	}
	n := &objectNode{names: make([]string, len(fields)), vals: make([]node, len(fields))}
	seen := make(map[string]bool, len(fields))
	allConst := true
	for i, f := range fields {
		if err := validateObjectField(f.name); err != nil {
			return nil, err
		}
		if seen[f.name] {
			return nil, mongoerr.New(mongoerr.Location16406, "duplicate field name specified in object literal: %s", v.String())
		}
		seen[f.name] = true
		c, err := p.parse(f.val)
		if err != nil {
			return nil, err
		}
		n.names[i], n.vals[i] = f.name, c
		if _, ok := c.(*constNode); !ok {
			allConst = false
		}
	}
	if allConst {
		return fold(n), nil
	}
	return n, nil
}

// validateObjectField checks a field name of an expression object as FieldPath does.
func validateObjectField(name string) error {
	const hint = "Consider using $getField or $setField for a field path with '.' or '$'."
	switch {
	case name == "":
		return mongoerr.New(mongoerr.Location15998, "%s :: caused by :: FieldPath field names may not be empty strings.", hint)
	case name[0] == '$':
		return mongoerr.New(mongoerr.Location16410, "%s :: caused by :: FieldPath field names may not start with '$'.", hint)
	case strings.IndexByte(name, '.') >= 0:
		return mongoerr.New(mongoerr.Location16412, "%s :: caused by :: FieldPath field names may not contain '.'.", hint)
	}
	return nil
}

// parseOperator compiles {name: arg}.
func (p *parser) parseOperator(name string, arg bsoncore.Value) (node, error) {
	spec, ok := operators[name]
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Unrecognized expression '%s'", name)
	}
	n, err := spec(p, name, arg)
	if err != nil {
		return nil, err
	}
	return n, nil
}

// parsePath compiles "$a.b" (a path in $$CURRENT) or "$$var.a.b".
func (p *parser) parsePath(raw string) (node, error) {
	if len(raw) < 2 {
		return nil, mongoerr.New(mongoerr.Location16872, "'$' by itself is not a valid FieldPath")
	}
	if raw[1] != '$' {
		path, err := SplitPath(raw[1:])
		if err != nil {
			return nil, err
		}
		b, _ := p.lookup("CURRENT")
		return p.varPath(b, path), nil
	}
	name, rest, dotted := strings.Cut(raw[2:], ".")
	if err := validateUserRead(name); err != nil {
		return nil, err
	}
	var path []string
	if dotted {
		var err error
		if path, err = SplitPath(rest); err != nil {
			return nil, err
		}
	}
	if b, ok := p.lookup(name); ok {
		return p.varPath(b, path), nil
	}
	switch name {
	case "ROOT":
		return &pathNode{root: true, path: path}, nil
	case "REMOVE":
		return &constNode{missing}, nil
	case "NOW":
		return fold(&pathNode{base: &constNode{(&Vars{}).dateVal(p.now.UnixMilli())}, path: path}), nil
	case "CLUSTER_TIME":
		ts := bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, uint32(p.now.Unix()), 1)}
		return fold(&pathNode{base: &constNode{ts}, path: path}), nil
	}
	return nil, mongoerr.New(mongoerr.Location17276, "Use of undefined variable: %s", name)
}

// varPath returns the node reading path under the binding b.
func (p *parser) varPath(b binding, path []string) node {
	if b.konst {
		return fold(&pathNode{base: &constNode{b.value}, path: path})
	}
	if len(path) == 0 {
		return &slotNode{b.slot}
	}
	return &pathNode{slot: b.slot, path: path}
}

// SplitPath validates a dotted field path as MongoDB's FieldPath does and returns its
// components.
func SplitPath(s string) ([]string, error) {
	if s == "" {
		return nil, mongoerr.New(mongoerr.Location40352, "FieldPath cannot be constructed with empty string")
	}
	if s[len(s)-1] == '.' {
		return nil, mongoerr.New(mongoerr.Location40353, "FieldPath must not end with a '.'.")
	}
	parts := strings.Split(s, ".")
	for _, c := range parts {
		switch {
		case c == "":
			return nil, mongoerr.New(mongoerr.Location15998, "FieldPath field names may not be empty strings.")
		case c[0] == '$':
			return nil, mongoerr.New(mongoerr.Location16410,
				"FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		case strings.IndexByte(c, 0) >= 0:
			return nil, mongoerr.New(mongoerr.Location16411, "FieldPath field names may not contain '\\0'.")
		}
	}
	return parts, nil
}

// validateUserRead checks a variable name in a reference, as
// variableValidation::validateNameForUserRead does.
func validateUserRead(name string) error {
	if name == "" {
		return mongoerr.New(mongoerr.FailedToParse, "empty variable names are not allowed")
	}
	if !readVarStart(name[0]) {
		return mongoerr.New(mongoerr.FailedToParse, "'%s' starts with an invalid character for a user variable name", name)
	}
	return validateVarTail(name)
}

// validateUserWrite checks a variable name being defined ($let, as, let options):
// it must start with a lowercase letter or a non-ASCII byte.
func validateUserWrite(name string) error {
	if name == "CURRENT" {
		return nil
	}
	if name == "" {
		return mongoerr.New(mongoerr.FailedToParse, "empty variable names are not allowed")
	}
	if !writeVarStart(name[0]) {
		return mongoerr.New(mongoerr.FailedToParse, "'%s' starts with an invalid character for a user variable name", name)
	}
	return validateVarTail(name)
}

// readVarStart reports whether c may start a variable name being read: a letter, or a
// non-ASCII byte (uppercase names are system variables such as $$ROOT).
func readVarStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// writeVarStart reports whether c may start a variable name being defined: a lowercase
// letter or a non-ASCII byte.
func writeVarStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 0x80
}

// varByte reports whether c may follow the first byte of a variable name.
func varByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

// validateVarTail checks the characters after the first of a variable name.
func validateVarTail(name string) error {
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !varByte(c) {
			return mongoerr.New(mongoerr.FailedToParse, "'%s' contains an invalid character for a variable name: '%c'", name, c)
		}
	}
	return nil
}

// fold evaluates a node whose inputs are all constant and returns it as a constant,
// as MongoDB's optimize() does. If the evaluation fails, the node is kept, so the
// error surfaces when (and only if) a document is evaluated.
func fold(n node) node {
	vars := &Vars{slots: make([]bsoncore.Value, 1)}
	v, err := n.eval(vars)
	if err != nil {
		return n
	}
	return &constNode{v}
}
