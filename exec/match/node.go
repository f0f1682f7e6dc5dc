package match

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// node is a compiled predicate over a whole document (or an array element treated as
// one, under $elemMatch). eval reports whether doc matches, the position the positional
// operator refers to (-1 if none) and, for $expr only, a runtime error.
type node interface {
	eval(doc []byte) (ok bool, pos int, err error)
}

// andNode requires every child; the position is the last one a child reported, as
// MongoDB's MatchDetails keeps the last elemMatchKey set.
type andNode struct{ kids []node }

func (a *andNode) eval(doc []byte) (bool, int, error) {
	pos := -1
	for _, k := range a.kids {
		ok, p, err := k.eval(doc)
		if err != nil || !ok {
			return false, -1, err
		}
		if p >= 0 {
			pos = p
		}
	}
	return true, pos, nil
}

// orNode requires one child; like MongoDB it records no position.
type orNode struct{ kids []node }

func (o *orNode) eval(doc []byte) (bool, int, error) {
	for _, k := range o.kids {
		ok, _, err := k.eval(doc)
		if err != nil {
			return false, -1, err
		}
		if ok {
			return true, -1, nil
		}
	}
	return false, -1, nil
}

// norNode requires that no child match.
type norNode struct{ kids []node }

func (n *norNode) eval(doc []byte) (bool, int, error) {
	for _, k := range n.kids {
		ok, _, err := k.eval(doc)
		if err != nil {
			return false, -1, err
		}
		if ok {
			return false, -1, nil
		}
	}
	return true, -1, nil
}

// notNode negates its child ($not, $ne, $nin, $exists: false).
type notNode struct{ kid node }

func (n *notNode) eval(doc []byte) (bool, int, error) {
	ok, _, err := n.kid.eval(doc)
	if err != nil {
		return false, -1, err
	}
	return !ok, -1, nil
}

// constNode is $alwaysTrue, $alwaysFalse, or an empty $all.
type constNode bool

func (c constNode) eval([]byte) (bool, int, error) { return bool(c), -1, nil }

// pathNode applies a leaf predicate to the values a path reaches.
type pathNode struct {
	path fieldPath
	lf   leaf
	mode arrayMode
}

func (p *pathNode) eval(doc []byte) (bool, int, error) {
	ok, pos := walk(doc, &p.path, p.lf, p.mode)
	return ok, pos, nil
}

// eqTopNode is {field: value} on a top-level field whose value is neither null, an
// array, a document nor NaN: the field is looked up once and compared, with a fallback
// to the general walk when the stored value is an array. It is the fast path for
// {_id: v}.
type eqTopNode struct {
	pathNode
	name string
	cmp  *cmpLeaf
}

func (e *eqTopNode) eval(doc []byte) (bool, int, error) {
	v, found := lookup(doc, e.name)
	if !found {
		return false, -1, nil
	}
	if v.Type == bsoncore.TypeArray {
		return e.pathNode.eval(doc)
	}
	ok, _ := e.cmp.match(v)
	return ok, -1, nil
}

// exprNode is $expr, compiled by Options.Expr.
type exprNode struct {
	fn func(doc bsoncore.Document) (bool, error)
}

func (e *exprNode) eval(doc []byte) (bool, int, error) {
	ok, err := e.fn(doc)
	if err != nil {
		return false, -1, err
	}
	return ok, -1, nil
}
