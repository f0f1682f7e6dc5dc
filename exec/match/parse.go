package match

import (
	"slices"
	"strings"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Codes MongoDB uses here that wire/mongoerr does not define.
const (
	// codeQueryFeatureNotAllowed is MongoDB's QueryFeatureNotAllowed (224).
	codeQueryFeatureNotAllowed mongoerr.Code = 224
)

// maxDepth bounds the nesting of logical operators and $elemMatch, so hostile filters
// cannot exhaust the stack.
const maxDepth = 200

// Parse levels (MongoDB's DocumentParseLevel): $expr and $text are refused below the
// top-level document.
const (
	levelTop = iota // the filter itself
	levelDoc        // inside $and/$or/$nor at the top
	levelSub        // inside $elemMatch
)

// parser holds what compilation collects besides the tree.
type parser struct {
	opts    *Options
	coll    bsonx.Collator // Options.Collator
	paths   []string
	seen    map[string]struct{}
	hasExpr bool
	depth   int
	prefix  string // path of the enclosing $elemMatch, while parsing its query
	nears   int    // $near, $nearSphere and $geoNear predicates seen (geo.go)
	// texts counts $text predicates; inOr and inNor how many $or and $nor enclose the
	// predicate being parsed (text.go).
	texts, inOr, inNor int
}

// addPath records a path the filter reads. Most filters read a few paths: those are
// found by a scan of paths, and the set is built only past pathScanMax (a map per compiled
// filter was a tenth of a point read's allocations, issue 13).
func (p *parser) addPath(path string) {
	if p.seen != nil {
		if _, ok := p.seen[path]; ok {
			return
		}
		p.seen[path] = struct{}{}
	} else {
		if slices.Contains(p.paths, path) {
			return
		}
		if len(p.paths) == pathScanMax {
			p.seen = make(map[string]struct{}, 2*pathScanMax)
			for _, q := range p.paths {
				p.seen[q] = struct{}{}
			}
			p.seen[path] = struct{}{}
		}
	}
	p.paths = append(p.paths, path)
}

// pathScanMax is how many paths addPath finds by a scan before it builds a set.
const pathScanMax = 16

// badValue returns a BadValue error.
func badValue(format string, args ...any) error {
	return mongoerr.New(mongoerr.BadValue, format, args...)
}

// parseDoc compiles a query document into its conjuncts. prefix is the path of the
// enclosing $elemMatch, for Paths.
func (p *parser) parseDoc(doc []byte, level int, prefix string) ([]node, error) {
	p.depth++
	saved := p.prefix
	p.prefix = prefix
	defer func() { p.depth--; p.prefix = saved }()
	if p.depth > maxDepth {
		return nil, badValue("exceeded maximum nesting depth of %d in the filter", maxDepth)
	}
	var out []node
	b := body(doc)
	for {
		t, key, val, rest, ok := next(b)
		if !ok {
			return out, nil
		}
		b = rest
		v := bsoncore.Value{Type: t, Data: val}
		name := string(key)
		if len(name) > 0 && name[0] == '$' {
			n, err := p.parseTopOperator(name, v, level, prefix)
			if err != nil {
				return nil, err
			}
			out = appendConjunct(out, n)
			continue
		}
		n, err := p.parseField(name, v, level, prefix)
		if err != nil {
			return nil, err
		}
		out = appendConjunct(out, n)
	}
}

// appendConjunct adds n to a conjunction, flattening nested ANDs.
func appendConjunct(out []node, n node) []node {
	switch x := n.(type) {
	case nil:
		return out
	case *andNode:
		return append(out, x.kids...)
	}
	return append(out, n)
}

// conjunction returns the node for a list of conjuncts.
func conjunction(kids []node) node {
	switch len(kids) {
	case 0:
		return constNode(true)
	case 1:
		return kids[0]
	}
	return &andNode{kids: kids}
}

// parseTopOperator compiles a $-prefixed key of a query document.
func (p *parser) parseTopOperator(name string, v bsoncore.Value, level int, prefix string) (node, error) {
	switch name {
	case "$and", "$or", "$nor":
		return p.parseTree(name, v, level, prefix)
	case "$comment":
		return nil, nil
	case "$expr":
		if level == levelSub {
			return nil, badValue("$expr can only be applied to the top-level document")
		}
		if p.opts == nil || p.opts.Expr == nil {
			return nil, mongoerr.New(codeQueryFeatureNotAllowed, "$expr is not allowed in this context")
		}
		fn, err := p.opts.Expr(v)
		if err != nil {
			return nil, err
		}
		p.hasExpr = true
		return &exprNode{fn: fn}, nil
	case "$where":
		return p.parseWhere(v, level)
	case "$text":
		return p.parseText(v, level)
	case "$jsonSchema":
		d, ok := v.DocumentOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "$jsonSchema must be an object")
		}
		s, err := CompileSchema(d)
		if err != nil {
			return nil, err
		}
		return &schemaNode{s: s}, nil
	case "$sampleRate":
		return nil, mongoerr.New(mongoerr.NotImplemented, "$sampleRate is not supported")
	case "$alwaysTrue", "$alwaysFalse":
		return parseAlways(name, v)
	case "$id", "$ref", "$db":
		// DBRef fields at the top level are plain equalities on those field names.
		p.addPath(joinPath(prefix, name))
		return p.eqNode(name, v), nil
	case "$not":
		return nil, badValue("unknown top level operator: $not. If you are trying to negate an entire expression, use $nor.")
	}
	return nil, badValue("unknown top level operator: %s. If you have a field name that starts with a '$' symbol, consider using $getField or $setField.", name)
}

// parseWhere compiles $where through Options.Where. Without the hook the context allows no
// JavaScript (an aggregation's $match, a validator, a partial index): MongoDB's
// AllowedFeatures without kJavascript.
func (p *parser) parseWhere(v bsoncore.Value, level int) (node, error) {
	if p.opts == nil || p.opts.Where == nil {
		return nil, badValue("$where is not allowed in this context")
	}
	if level == levelSub {
		return nil, badValue("$where can only be applied to the top-level document")
	}
	fn, err := p.opts.Where(v)
	if err != nil {
		return nil, err
	}
	p.hasExpr = true // like $expr, it may read any field
	return &exprNode{fn: fn}, nil
}

// parseTree compiles $and, $or and $nor.
func (p *parser) parseTree(name string, v bsoncore.Value, level int, prefix string) (node, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, badValue("%s must be an array", name)
	}
	if countElems(v.Data) == 0 {
		return nil, badValue("$and/$or/$nor must be a nonempty array")
	}
	sub := level
	if sub == levelTop {
		sub = levelDoc
	}
	var kids []node
	switch name {
	case "$or":
		p.inOr++
		defer func() { p.inOr-- }()
	case "$nor":
		p.inNor++
		defer func() { p.inNor-- }()
	}
	b := body(v.Data)
	for {
		t, _, val, rest, ok := next(b)
		if !ok {
			break
		}
		b = rest
		if t != bsoncore.TypeEmbeddedDocument {
			return nil, badValue("$or/$and/$nor entries need to be full objects")
		}
		conj, err := p.parseDoc(val, sub, prefix)
		if err != nil {
			return nil, err
		}
		kids = append(kids, conjunction(conj))
	}
	switch name {
	case "$and":
		return &andNode{kids: kids}, nil
	case "$or":
		if len(kids) == 1 {
			return kids[0], nil
		}
		return &orNode{kids: kids}, nil
	}
	return &norNode{kids: kids}, nil
}

// parseAlways compiles $alwaysTrue: 1 and $alwaysFalse: 1.
func parseAlways(name string, v bsoncore.Value) (node, error) {
	n, ok := bsonx.NumberAsInt64(v)
	if !bsonx.IsNumber(v.Type) {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Expected a number in: %s: %s", name, v.String())
	}
	if !ok || n != 1 {
		return nil, mongoerr.New(mongoerr.FailedToParse, "%s must be an integer value of 1", name)
	}
	return constNode(name == "$alwaysTrue"), nil
}

// joinPath joins an $elemMatch prefix and a path.
func joinPath(prefix, path string) string {
	if prefix == "" {
		return path
	}
	return prefix + "." + path
}

// parseField compiles {path: value}: an operator document, a regex, or an equality.
func (p *parser) parseField(name string, v bsoncore.Value, level int, prefix string) (node, error) {
	p.addPath(joinPath(prefix, name))
	if isExpressionDoc(v, false) {
		ops, err := p.parseOps(name, v.Data, level)
		if err != nil {
			return nil, err
		}
		path := newPath(name)
		return conjunction(opsToNodes(&path, ops)), nil
	}
	if v.Type == bsoncore.TypeRegex {
		pat, opt := regexParts(v.Data)
		re, err := newRegex(string(pat), string(opt))
		if err != nil {
			return nil, err
		}
		return &pathNode{path: newPath(name), lf: re}, nil
	}
	if v.Type == bsoncore.TypeUndefined {
		return nil, badValue("cannot compare to undefined")
	}
	return p.eqNode(name, v), nil
}

// eqNode compiles {path: v}, using the top-level fast path where it applies.
func (p *parser) eqNode(name string, v bsoncore.Value) node {
	c := newCmp(opEQ, v, p.coll)
	pn := pathNode{path: newPath(name), lf: c}
	if !strings.Contains(name, ".") && v.Type != bsoncore.TypeNull {
		return &eqTopNode{pathNode: pn, name: name, cmp: c}
	}
	return &pn
}

// isExpressionDoc reports whether v is a document of operators ({$gt: 1}): non-empty,
// first key starting with '$', and not a DBRef ({$ref, $id}, or any of $ref/$id/$db when
// allowIncompleteDBRef).
func isExpressionDoc(v bsoncore.Value, allowIncompleteDBRef bool) bool {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return false
	}
	_, key, _, _, ok := next(body(v.Data))
	if !ok || len(key) == 0 || key[0] != '$' {
		return false
	}
	return !isDBRef(v.Data, allowIncompleteDBRef)
}

// isDBRef reports whether doc has DBRef fields (MongoDB's isDBRefDocument).
func isDBRef(doc []byte, allowIncomplete bool) bool {
	var ref, id, db bool
	b := body(doc)
	for {
		_, key, _, rest, ok := next(b)
		if !ok {
			break
		}
		b = rest
		switch string(key) {
		case "$ref":
			ref = true
		case "$id":
			id = true
		case "$db":
			db = true
		}
	}
	if allowIncomplete {
		return ref || id || db
	}
	return ref && id
}
