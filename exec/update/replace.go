package update

import (
	"bytes"
	"encoding/binary"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// compileReplacement prepares a replacement document (ObjectReplaceExecutor): top-level
// timestamps of zero, _id aside, get a cluster timestamp, once for the whole statement; the
// storage validity of the document is checked now and reported by Apply.
func (u *Update) compileReplacement() {
	body, _ := docBody(u.src)
	off := 4
	for len(body) > 0 {
		e, rest, ok := readElem(body)
		if !ok {
			break
		}
		switch {
		case string(e.key) == "_id":
			if !u.replHasID {
				u.replID, u.replHasID = e, true
			}
		case e.t == bsoncore.TypeTimestamp && readI64(e.val) == 0 && !u.keepEmptyTs:
			t, i := u.timestamp()
			valOff := off + len(e.raw) - len(e.val)
			binary.LittleEndian.PutUint32(u.src[valOff:], i)
			binary.LittleEndian.PutUint32(u.src[valOff+4:], t)
		}
		off += len(e.raw)
		body = rest
	}
	u.replacement = u.src
	u.replErr = validateStorage(u.src, false)
}

// applyReplacement replaces doc by the replacement document, keeping doc's _id when the
// replacement has none and refusing to change it otherwise. As in MongoDB, the update is a
// no-op only when the replacement is byte-for-byte the document.
func (u *Update) applyReplacement(dst []byte, doc []byte, inserting bool) ([]byte, bool, error) {
	if u.replErr != nil {
		return dst, false, u.replErr
	}
	if bytes.Equal(doc, u.replacement) {
		return append(dst, doc...), false, nil
	}
	body, _ := docBody(doc)
	id, hasID := findField(body, "_id")
	if u.replHasID && hasID && bsonx.Compare(id.value(), u.replID.value()) != 0 {
		return dst, false, errf(mongoerr.ImmutableField,
			"After applying the update, the (immutable) field '_id' was found to have been altered to %s",
			bsonx.ShellElement(u.replID.key, u.replID.t, u.replID.val))
	}
	start := len(dst)
	out, at := startDoc(dst, 0, nil, true)
	switch {
	case u.replHasID:
		out = append(out, u.replID.raw...)
	case hasID:
		out = append(out, id.raw...)
	}
	repl, _ := docBody(u.replacement)
	for len(repl) > 0 {
		e, rest, _ := readElem(repl)
		if !u.replHasID || &e.raw[0] != &u.replID.raw[0] {
			out = append(out, e.raw...)
		}
		repl = rest
	}
	out = endDoc(out, at)
	if !inserting && len(out)-start > maxUserDocSize {
		return dst, false, errf(codeDocTooLargeUpdate, "Resulting document after update is larger than %d", maxUserDocSize)
	}
	return out, true, nil
}

// applyPipeline runs a pipeline update and checks what MongoDB checks after one: _id must
// not change, and comes first.
func (u *Update) applyPipeline(dst []byte, doc []byte) ([]byte, bool, error) {
	start := len(dst)
	out, err := u.pipeline.Apply(dst, doc)
	if err != nil {
		return dst, false, err
	}
	newDoc := out[start:]
	if err := bsoncore.Document(newDoc).Validate(); err != nil {
		return dst, false, errInvalidBSON("pipeline result")
	}
	oldBody, _ := docBody(doc)
	newBody, _ := docBody(newDoc)
	oldID, hadID := findField(oldBody, "_id")
	newID, hasID := findField(newBody, "_id")
	switch {
	case hadID && !hasID:
		return dst, false, errf(mongoerr.ImmutableField, "After applying the update, the '_id' (required and immutable) "+
			"field was found to have been removed --%s", bsonx.ShellDoc(doc))
	case hadID && bsonx.Compare(oldID.value(), newID.value()) != 0:
		return dst, false, errf(mongoerr.ImmutableField,
			"After applying the update, the (immutable) field '_id' was found to have been altered to %s",
			bsonx.ShellElement(newID.key, newID.t, newID.val))
	}
	// Pipelines may produce top-level '$' fields ($replaceWith with $literal).
	if err := validateStorage(newDoc, true); err != nil {
		return dst, false, err
	}
	out = moveIDFirst(out, start)
	if bytes.Equal(out[start:], doc) {
		return out, false, nil
	}
	return out, true, nil
}

// validateStorage checks a whole document as storage_validation::scanDocument does: a valid
// _id, no top-level field starting with '$' (unless allowed; DBRef fields aside) and no
// nesting deeper than storage allows.
func validateStorage(doc []byte, allowTopDollar bool) error {
	body, _ := docBody(doc)
	var top []elem
	for len(body) > 0 {
		e, rest, ok := readElem(body)
		if !ok {
			return errInvalidBSON("document")
		}
		body = rest
		top = append(top, e)
	}
	for i, e := range top {
		if string(e.key) == "_id" {
			if err := validateID(e); err != nil {
				return err
			}
		}
		if !allowTopDollar && len(e.key) > 0 && e.key[0] == '$' {
			if err := validateDBRefField(top, i); err != nil {
				return err
			}
		}
		if 1+nestingDepth(e.t, e.val) > maxStorageDepth {
			return errDepth()
		}
	}
	return nil
}

// validateID checks an _id value (storageValidIdField).
func validateID(e elem) error {
	switch e.t {
	case bsoncore.TypeRegex, bsoncore.TypeArray, bsoncore.TypeUndefined:
		return errf(mongoerr.InvalidIDField, "The '_id' value cannot be of type %s", bsonx.TypeName(e.t))
	case bsoncore.TypeEmbeddedDocument:
		if name := dollarFieldIn(e.val); name != "" {
			return errf(mongoerr.DollarPrefixedFieldName,
				"_id fields may not contain '$'-prefixed fields: %s is not valid for storage.", name)
		}
	}
	return nil
}

// dollarFieldIn returns the first field name starting with '$' in a document or its
// embedded documents and arrays, DBRefs ({$ref, $id[, $db]}) aside (storageValidEmbedded).
func dollarFieldIn(doc []byte) string {
	body, _ := docBody(doc)
	first := true
	for len(body) > 0 {
		e, rest, ok := readElem(body)
		if !ok {
			return ""
		}
		body = rest
		if len(e.key) > 0 && e.key[0] == '$' {
			next, after, _ := readElem(body)
			if !first || string(e.key) != "$ref" || e.t != bsoncore.TypeString || string(next.key) != "$id" {
				return string(e.key)
			}
			body = after
			if db, rest, ok := readElem(body); ok && len(db.key) > 0 && db.key[0] == '$' {
				if string(db.key) != "$db" || db.t != bsoncore.TypeString {
					return string(db.key)
				}
				body = rest
			}
		}
		first = false
		if isContainer(e.t) {
			if name := dollarFieldIn(e.val); name != "" {
				return name
			}
		}
	}
	return ""
}

// validateDBRefField accepts a top-level '$' field only as part of a DBRef: $ref (a string,
// followed by $id), $id (after $ref), $db (a string, after $id); validateDollarPrefixElement.
func validateDBRefField(top []elem, i int) error {
	e := top[i]
	name := string(e.key)
	if name == "$db" {
		if e.t != bsoncore.TypeString {
			return errf(mongoerr.InvalidDBRef, "The DBRef $db field must be a String, not a %s", bsonx.TypeName(e.t))
		}
		if i == 0 || string(top[i-1].key) != "$id" {
			return errf(mongoerr.InvalidDBRef, "Found $db field without a $id before it, which is invalid.")
		}
		i--
		name = "$id"
	}
	if name == "$id" {
		if i == 0 || string(top[i-1].key) != "$ref" {
			return errf(mongoerr.InvalidDBRef, "Found $id field without a $ref before it, which is invalid.")
		}
		i--
		name = "$ref"
	}
	if name != "$ref" {
		return errDollarField(string(e.key), string(e.key))
	}
	if top[i].t != bsoncore.TypeString {
		return errf(mongoerr.InvalidDBRef, "The DBRef $ref field must be a String, not a %s", bsonx.TypeName(top[i].t))
	}
	if i+1 >= len(top) || string(top[i+1].key) != "$id" {
		return errf(mongoerr.InvalidDBRef, "The DBRef $ref field must be followed by a $id field")
	}
	return nil
}
