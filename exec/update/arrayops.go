package update

import (
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// arrayOp applies $push, $addToSet, $pop, $pull or $pullAll to an existing value.
func (a *applier) arrayOp(dst []byte, lf *leaf, key []byte, tgt target) ([]byte, bool, error) {
	if tgt.t != bsoncore.TypeArray {
		return dst, false, a.errNotArray(lf, key, tgt)
	}
	elems, err := a.arrayElems(tgt.v)
	if err != nil {
		return dst, false, err
	}
	out := a.out[:0]
	modified := false
	switch lf.op {
	case opPush:
		out, modified = lf.push.apply(out, elems)
	case opAddToSet:
		out = append(out, elems...)
		for _, v := range lf.values {
			if !lf.contains(elems, v) {
				out, modified = append(out, v), true
			}
		}
	case opPop:
		if len(elems) > 0 {
			if lf.popFront {
				out = append(out, elems[1:]...)
			} else {
				out = append(out, elems[:len(elems)-1]...)
			}
			modified = true
		}
	case opPull, opPullAll:
		for _, v := range elems {
			if a.pulls(lf, v) {
				modified = true
			} else {
				out = append(out, v)
			}
		}
	}
	a.out = out[:0]
	if !modified {
		return keep(dst, key, tgt)
	}
	if err := a.checkImmutable(); err != nil {
		return dst, false, err
	}
	if lf.op == opPush || lf.op == opAddToSet {
		if err := a.checkDepth(lf.nesting); err != nil {
			return dst, false, err
		}
	}
	a.changes++
	dst, at := startDoc(dst, bsoncore.TypeArray, key, false)
	for i, v := range out {
		dst = appendElem(dst, v.Type, a.indexKey(i), v.Data)
	}
	return endDoc(dst, at), true, nil
}

// errNotArray is each array operator's error for a field that is not an array.
func (a *applier) errNotArray(lf *leaf, key []byte, tgt target) error {
	switch lf.op {
	case opPush:
		return errf(mongoerr.BadValue, "The field '%s' must be an array but is of type %s in document {%s}",
			a.pathString(), bsonx.TypeName(tgt.t), a.idString())
	case opAddToSet:
		return errf(mongoerr.BadValue, "Cannot apply $addToSet to non-array field. Field named '%s' has non-array type %s",
			key, bsonx.TypeName(tgt.t))
	case opPop:
		return errf(mongoerr.TypeMismatch, "Path '%s' contains an element of non-array type '%s'",
			a.pathString(), bsonx.TypeName(tgt.t))
	}
	// $pullAll reports itself as $pull, as MongoDB's shared ArrayCullingNode does.
	return errf(mongoerr.BadValue, "Cannot apply $pull to a non-array value")
}

// arrayElems reads the elements of an array into the applier's scratch slice.
func (a *applier) arrayElems(arr []byte) ([]bsoncore.Value, error) {
	body, ok := docBody(arr)
	if !ok {
		return nil, errInvalidBSON("document")
	}
	vals := a.vals[:0]
	for len(body) > 0 {
		e, rest, ok := readElem(body)
		if !ok {
			return nil, errInvalidBSON("document")
		}
		vals = append(vals, e.value())
		body = rest
	}
	a.vals = vals[:0]
	return vals, nil
}

// pulls reports whether $pull or $pullAll removes an element.
func (a *applier) pulls(lf *leaf, v bsoncore.Value) bool {
	if lf.op == opPull {
		return lf.pull.MatchValue(v)
	}
	return lf.contains(lf.values, v)
}

// contains reports whether vals holds a value equal to v in MongoDB's comparison, strings
// under the leaf's collation.
func (lf *leaf) contains(vals []bsoncore.Value, v bsoncore.Value) bool {
	for _, w := range vals {
		if lf.compare(w, v) == 0 {
			return true
		}
	}
	return false
}
