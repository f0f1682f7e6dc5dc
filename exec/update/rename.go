package update

import (
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $rename is two leaves: a placeholder at the source path, which removes the source field
// when the walk reaches it, and this leaf at the destination, which reads the source from
// the original document and writes it (RenameNode::apply: a $set of the destination, then an
// $unset of the source). Reading the original is exact because no other operator may touch
// the source path or its ancestors: they would conflict with the placeholder.

// rename applies a $rename at its destination.
func (a *applier) rename(dst []byte, lf *leaf, key []byte, tgt target) ([]byte, bool, error) {
	src, arrayName, found, err := lookupSource(a.doc, lf)
	if err != nil {
		return dst, false, err
	}
	if !found {
		return keep(dst, key, tgt)
	}
	if arrayName != nil {
		return dst, false, errf(mongoerr.BadValue, "The source field cannot be an array element, '%s' in doc with %s "+
			"has an array field called '%s'", lf.fromPath, a.idString(), arrayName)
	}
	if len(a.arrays) > 0 {
		return dst, false, errf(mongoerr.BadValue, "The destination field cannot be an array element, '%s' in doc with %s "+
			"has an array field called '%s'", lf.path, a.idString(), a.arrays[len(a.arrays)-1])
	}
	switch {
	case tgt.exists:
		err = a.checkImmutable()
	case !tgt.creatable:
		err = a.errNotCreatable(tgt)
	default:
		err = a.checkCreateImmutable(src.t, src.val)
	}
	if err == nil {
		err = a.checkDepth(nestingDepth(src.t, src.val))
	}
	if err == nil && lf.from[0] == "_id" {
		err = errf(mongoerr.ImmutableField, "Performing an update on the path '%s' would modify the immutable field '_id'",
			lf.fromPath)
	}
	if err != nil {
		return dst, false, err
	}
	a.changes++
	return appendElem(dst, src.t, key, src.val), true, nil
}

// lookupSource finds $rename's source in the document as pathsupport::findLongestPrefix
// does: documents by field name, arrays by numeric component. It reports the name of the
// nearest array the source sits in, and fails with PathNotViable when the path runs into a
// value it cannot step into.
func lookupSource(doc []byte, lf *leaf) (src elem, arrayName []byte, found bool, err error) {
	cur := elem{t: bsoncore.TypeEmbeddedDocument, val: doc}
	for i, part := range lf.from {
		inArray := cur.t == bsoncore.TypeArray && allDigits(part)
		if cur.t != bsoncore.TypeEmbeddedDocument && !inArray {
			return elem{}, nil, false, errf(mongoerr.PathNotViable,
				"cannot use the part (%s of %s) to traverse the element ({%s})", lf.from[i-1], lf.fromPath,
				bsonx.ShellElement(cur.key, cur.t, cur.val))
		}
		body, ok := docBody(cur.val)
		if !ok {
			return elem{}, nil, false, errInvalidBSON("document")
		}
		var next elem
		if inArray {
			next, ok = nthElem(body, arrayIndex(part))
			arrayName = cur.key
		} else {
			next, ok = findField(body, part)
		}
		if !ok {
			return elem{}, nil, false, nil
		}
		cur = next
	}
	return cur, arrayName, true, nil
}
