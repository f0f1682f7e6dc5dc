package update

import (
	"bytes"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// applyLeaf applies an operator to its target (ModifierNode::apply and its subclasses).
func (a *applier) applyLeaf(dst []byte, lf *leaf, key []byte, tgt target) ([]byte, bool, error) {
	if lf.op == opSetOnInsert && !a.inserting {
		return keep(dst, key, tgt)
	}
	if !tgt.exists {
		return a.createLeaf(dst, lf, key, tgt)
	}
	switch lf.op {
	case opSet, opSetOnInsert:
		if tgt.t == lf.val.Type && bytes.Equal(tgt.v, lf.val.Data) {
			return keep(dst, key, tgt)
		}
		return a.replaceValue(dst, key, lf.val.Type, lf.val.Data, lf.nesting)
	case opUnset, opRenameSource:
		if err := a.checkImmutable(); err != nil {
			return dst, false, err
		}
		a.changes++
		if tgt.inArray {
			// $unset of an array element nulls it rather than shifting the others.
			return appendHeader(dst, bsoncore.TypeNull, key), true, nil
		}
		return dst, false, nil
	case opInc, opMul:
		return a.arith(dst, lf, key, tgt)
	case opMin, opMax:
		c := lf.compare(bsoncore.Value{Type: tgt.t, Data: tgt.v}, lf.val)
		if c == 0 || lf.op == opMax && c > 0 || lf.op == opMin && c < 0 {
			return keep(dst, key, tgt)
		}
		return a.replaceValue(dst, key, lf.val.Type, lf.val.Data, lf.nesting)
	case opCurrentDate:
		t, v := a.currentDate(lf)
		return a.replaceValue(dst, key, t, v, 0)
	case opBit:
		return a.bit(dst, lf, key, tgt)
	case opRename:
		return a.rename(dst, lf, key, tgt)
	}
	return a.arrayOp(dst, lf, key, tgt)
}

// keep writes the target unchanged, or nothing when it does not exist.
func keep(dst, key []byte, tgt target) ([]byte, bool, error) {
	if !tgt.exists {
		return dst, false, nil
	}
	return appendElem(dst, tgt.t, key, tgt.v), true, nil
}

// replaceValue writes a new value for an existing element after the immutability and depth
// checks.
func (a *applier) replaceValue(dst, key []byte, t bsoncore.Type, v []byte, nesting int) ([]byte, bool, error) {
	if err := a.checkImmutable(); err != nil {
		return dst, false, err
	}
	if err := a.checkDepth(nesting); err != nil {
		return dst, false, err
	}
	a.changes++
	return appendElem(dst, t, key, v), true, nil
}

// createLeaf applies an operator to a path that does not exist: the creating operators
// write the new field, the others do nothing (some after checking that the path could
// exist).
func (a *applier) createLeaf(dst []byte, lf *leaf, key []byte, tgt target) ([]byte, bool, error) {
	switch lf.op {
	case opUnset, opRenameSource:
		return dst, false, nil
	case opPop, opPull, opPullAll:
		if !tgt.traversable {
			return dst, false, a.errNotTraversable(tgt)
		}
		return dst, false, nil
	case opRename:
		return a.rename(dst, lf, key, tgt)
	}
	if !tgt.creatable {
		return dst, false, a.errNotCreatable(tgt)
	}
	t, v, nesting := a.newValue(lf)
	if err := a.checkCreateImmutable(t, v); err != nil {
		return dst, false, err
	}
	if err := a.checkDepth(nesting); err != nil {
		return dst, false, err
	}
	a.changes++
	return appendElem(dst, t, key, v), true, nil
}

// newValue returns the value a creating operator gives a field that did not exist.
func (a *applier) newValue(lf *leaf) (bsoncore.Type, []byte, int) {
	switch lf.op {
	case opInc:
		return lf.num.t, lf.num.appendValue(a.numBuf[:0]), 0
	case opMul:
		// The operand times zero keeps the operand's type (and the sign of a double).
		r := mulNumbers(lf.num, number{t: bsoncore.TypeInt32})
		return r.t, r.appendValue(a.numBuf[:0]), 0
	case opCurrentDate:
		t, v := a.currentDate(lf)
		return t, v, 0
	case opBit:
		r := number{t: bsoncore.TypeInt32}
		for _, op := range lf.bits {
			r = bitNumbers(op.kind, r, op.operand)
		}
		return r.t, r.appendValue(a.numBuf[:0]), 0
	case opPush:
		vals, _ := lf.push.apply(a.out[:0], nil)
		a.out = vals[:0]
		return bsoncore.TypeArray, a.buildArray(vals), lf.nesting
	case opAddToSet:
		return bsoncore.TypeArray, a.buildArray(lf.values), lf.nesting
	}
	return lf.val.Type, lf.val.Data, lf.nesting
}

// buildArray writes an array of values into the applier's value buffer.
func (a *applier) buildArray(vals []bsoncore.Value) []byte {
	buf, at := startDoc(a.valBuf[:0], 0, nil, true)
	for i, v := range vals {
		buf = appendElem(buf, v.Type, a.indexKey(i), v.Data)
	}
	a.valBuf = endDoc(buf, at)
	return a.valBuf
}

// currentDate returns the value of $currentDate: now as a date, or a new timestamp.
func (a *applier) currentDate(lf *leaf) (bsoncore.Type, []byte) {
	if lf.tsType {
		t, i := a.u.timestamp()
		return bsoncore.TypeTimestamp, bsoncore.AppendTimestamp(a.numBuf[:0], t, i)
	}
	if !a.haveNow {
		a.now, a.haveNow = a.u.now(), true
	}
	return bsoncore.TypeDateTime, bsoncore.AppendDateTime(a.numBuf[:0], a.now.UnixMilli())
}

// arith applies $inc or $mul to an existing value.
func (a *applier) arith(dst []byte, lf *leaf, key []byte, tgt target) ([]byte, bool, error) {
	name := "$inc"
	if lf.op == opMul {
		name = "$mul"
	}
	cur, ok := numberOf(tgt.t, tgt.v)
	if !ok {
		return dst, false, errf(mongoerr.TypeMismatch, "Cannot apply %s to a value of non-numeric type. "+
			"{%s} has the field '%s' of non-numeric type %s", name, a.idString(), key, bsonx.TypeName(tgt.t))
	}
	var r number
	if lf.op == opInc {
		r = addNumbers(lf.num, cur)
	} else {
		r = mulNumbers(lf.num, cur)
	}
	if identical(r, cur) {
		return keep(dst, key, tgt)
	}
	if !r.valid() {
		return dst, false, errf(mongoerr.BadValue, "Failed to apply %s operations to current value (%s) for document {%s}",
			name, cur.debugString(), a.idString())
	}
	return a.replaceValue(dst, key, r.t, r.appendValue(a.numBuf[:0]), 0)
}

// bit applies $bit to an existing value.
func (a *applier) bit(dst []byte, lf *leaf, key []byte, tgt target) ([]byte, bool, error) {
	if tgt.t != bsoncore.TypeInt32 && tgt.t != bsoncore.TypeInt64 {
		return dst, false, errf(mongoerr.BadValue, "Cannot apply $bit to a value of non-integral type.%s "+
			"has the field %s of non-integer type %s", a.idString(), key, bsonx.TypeName(tgt.t))
	}
	cur, _ := numberOf(tgt.t, tgt.v)
	r := cur
	for _, op := range lf.bits {
		r = bitNumbers(op.kind, r, op.operand)
	}
	if identical(r, cur) {
		return keep(dst, key, tgt)
	}
	return a.replaceValue(dst, key, r.t, r.appendValue(a.numBuf[:0]), 0)
}

// checkImmutable fails when the current path, about to change, is or is under _id.
func (a *applier) checkImmutable() error {
	if len(a.path) > 0 && string(a.path[0]) == "_id" {
		return errf(mongoerr.ImmutableField, "Performing an update on the path '%s' would modify the immutable field '_id'",
			a.pathString())
	}
	return nil
}

// checkCreateImmutable fails when a field is about to be created under an existing _id.
func (a *applier) checkCreateImmutable(t bsoncore.Type, v []byte) error {
	if a.taken == 0 || string(a.path[0]) != "_id" {
		return nil
	}
	return errf(mongoerr.ImmutableField, "Updating the path '%s' to %s would modify the immutable field '_id'",
		joinPath(a.path[:a.taken]), a.renderCreated(t, v))
}

// checkDepth fails when a value of the given nesting at the current path would nest the
// document deeper than storage allows. Upserts check the whole document instead.
func (a *applier) checkDepth(nesting int) error {
	if !a.inserting && len(a.path)+nesting > maxStorageDepth {
		return errDepth()
	}
	return nil
}

// errNotCreatable is createPathAt's error for a path under a value that cannot hold it.
func (a *applier) errNotCreatable(tgt target) error {
	return errf(mongoerr.PathNotViable, "Cannot create field '%s' in element {%s}", a.path[a.taken],
		bsonx.ShellElement(tgt.baseKey, tgt.baseT, tgt.baseV))
}

// errNotTraversable is checkViability's error for a path that could never exist.
func (a *applier) errNotTraversable(tgt target) error {
	return errf(mongoerr.PathNotViable, "Cannot use the part (%s) of (%s.%s) to traverse the element ({%s})",
		a.path[a.taken], joinPath(a.path[:a.taken]), joinPath(a.path[a.taken:]), bsonx.ShellElement(tgt.baseKey, tgt.baseT, tgt.baseV))
}

// idString returns the document's _id as "_id: <value>", or "no id".
func (a *applier) idString() string {
	body, _ := docBody(a.doc)
	if id, ok := findField(body, "_id"); ok {
		return bsonx.ShellElement(id.key, id.t, id.val)
	}
	return "no id"
}

// renderCreated renders the nearest existing element after the fields being created under
// it, for the immutable-field message: the element's document with the new path appended.
func (a *applier) renderCreated(t bsoncore.Type, v []byte) string {
	base := a.path[a.taken-1]
	val := []byte(nil)
	parts := a.path[a.taken:]
	for i := len(parts) - 1; i >= 0; i-- {
		val = wrapElement(nil, string(parts[i]), t, v)
		if i > 0 {
			t, v = bsoncore.TypeEmbeddedDocument, val
		}
	}
	cur := lookupParts(a.doc, a.path[:a.taken])
	body, _ := docBody(cur.val)
	newBody, _ := docBody(val)
	doc, at := startDoc(nil, 0, nil, true)
	doc = append(append(doc, body...), newBody...)
	doc = endDoc(doc, at)
	return bsonx.ShellElement(base, bsoncore.TypeEmbeddedDocument, doc)
}

// lookupParts returns the element at a path of the original document, stepping into
// documents by name and arrays by index; a zero elem when there is none.
func lookupParts(doc []byte, parts [][]byte) elem {
	cur := elem{t: bsoncore.TypeEmbeddedDocument, val: doc}
	for _, p := range parts {
		body, ok := docBody(cur.val)
		if !ok {
			return elem{}
		}
		var e elem
		switch cur.t {
		case bsoncore.TypeEmbeddedDocument:
			e, ok = findField(body, string(p))
		case bsoncore.TypeArray:
			e, ok = nthElem(body, arrayIndex(string(p)))
		default:
			ok = false
		}
		if !ok {
			return elem{}
		}
		cur = e
	}
	return cur
}
