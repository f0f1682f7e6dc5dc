package write

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// maxStorageDepth is the deepest nesting of documents and arrays MongoDB stores
// (BSONDepth::getMaxDepthForUserStorage).
const maxStorageDepth = 100

// PrepareInsert checks a document a client wants to store and returns it with an _id in
// first position: the given one moved to the front if needed, or a new ObjectId. The
// returned document may alias doc when it is already in that shape.
func PrepareInsert(doc bsoncore.Document) (bsoncore.Document, error) {
	if len(doc) > wire.MaxBSONSize {
		return nil, mongoerr.New(mongoerr.BSONObjectTooLarge,
			"object to insert too large. size in bytes: %d, max size: %d", len(doc), wire.MaxBSONSize)
	}
	if err := wellFormed(doc); err != nil {
		return nil, err
	}
	idPos := -1
	var idEl bsoncore.Element
	i := 0
	for it := bsonx.Elements(doc); ; i++ {
		el, ok := it.Next()
		if !ok {
			break
		}
		key := el.Key()
		if key == "_id" {
			if idPos >= 0 {
				return nil, mongoerr.New(mongoerr.BadValue, "can't have multiple _id fields in one document")
			}
			idPos, idEl = i, el
			if err := validateID(el.Value()); err != nil {
				return nil, err
			}
			continue
		}
		if err := validateStoredField(key, el.Value(), 1); err != nil {
			return nil, err
		}
	}
	if idPos == 0 {
		return doc, nil
	}
	idx, out := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)+17))
	if idPos < 0 {
		out = bsoncore.AppendObjectIDElement(out, "_id", bsonx.NewObjectID())
	} else {
		out = append(out, idEl...)
	}
	i = 0
	for it := bsonx.Elements(doc); ; i++ {
		el, ok := it.Next()
		if !ok {
			break
		}
		if i != idPos {
			out = append(out, el...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	if len(out) > wire.MaxBSONSize {
		return nil, mongoerr.New(mongoerr.BSONObjectTooLarge,
			"object to insert too large. size in bytes: %d, max size: %d", len(out), wire.MaxBSONSize)
	}
	return out, nil
}

// wellFormed fails as doc.Elements does when doc's top level is not well-formed BSON, without
// allocating the list of elements when it is.
func wellFormed(doc bsoncore.Document) error {
	if length, _, ok := bsoncore.ReadLength(doc); ok && int(length) == len(doc) && len(doc) >= 5 && doc[len(doc)-1] == 0 {
		rest := doc[4 : len(doc)-1]
		for len(rest) > 0 {
			var ok bool
			if _, rest, ok = bsoncore.ReadElement(rest); !ok {
				break
			}
		}
		if len(rest) == 0 {
			return nil
		}
	}
	if _, err := doc.Elements(); err != nil { // for its error
		return mongoerr.New(mongoerr.InvalidBSON, "invalid BSON document: %v", err)
	}
	return nil
}

// validateID refuses _id values MongoDB cannot store.
func validateID(v bsoncore.Value) error {
	switch v.Type {
	case bsoncore.TypeArray:
		return mongoerr.New(mongoerr.InvalidIDField, "The '_id' value cannot be of type array")
	case bsoncore.TypeRegex:
		return mongoerr.New(mongoerr.InvalidIDField, "The '_id' value cannot be of type regex")
	case bsoncore.TypeUndefined:
		return mongoerr.New(mongoerr.InvalidIDField, "The '_id' value cannot be of type undefined")
	case bsoncore.TypeEmbeddedDocument:
		if err := checkDepth(v, 2); err != nil {
			return err
		}
		elems, _ := v.Document().Elements()
		for _, el := range elems {
			if strings.HasPrefix(el.Key(), "$") {
				return mongoerr.New(mongoerr.DollarPrefixedFieldName,
					"_id fields may not contain '$'-prefixed fields: %s is not valid for storage.", el.Key())
			}
		}
	}
	return nil
}

// validateStoredField checks one top-level field of a document to be stored. Since MongoDB
// 5.0 an inserted document may have '$'-prefixed field names, top-level ones included.
func validateStoredField(_ string, v bsoncore.Value, depth int) error {
	return checkDepth(v, depth+1)
}

// checkDepth fails when v nests documents or arrays deeper than MongoDB stores.
func checkDepth(v bsoncore.Value, depth int) error {
	var body bsoncore.Document
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		body = v.Document()
	case bsoncore.TypeArray:
		body = bsoncore.Document(v.Array())
	default:
		return nil
	}
	if depth > maxStorageDepth {
		return mongoerr.New(mongoerr.Overflow, "Document exceeds maximum nesting depth of %d", maxStorageDepth)
	}
	elems, err := body.Elements()
	if err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "invalid BSON document: %v", err)
	}
	for _, el := range elems {
		if err := checkDepth(el.Value(), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// validateReplacement checks a document that replaces a stored one (replacement update or
// the result of operators): the same rules as an insert, with _id required to be unchanged
// by the caller.
func validateReplacement(doc bsoncore.Document) error {
	if len(doc) > wire.MaxBSONSize {
		return mongoerr.New(mongoerr.BSONObjectTooLarge,
			"Resulting document after update is larger than %d", wire.MaxBSONSize)
	}
	var buf [16]bsoncore.Element // most documents' fields, without an allocation
	elems, err := bsonx.AppendElements(buf[:0], doc)
	if err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "invalid BSON document: %v", err)
	}
	for _, el := range elems {
		if string(el.KeyBytes()) == "_id" {
			if err := validateID(el.Value()); err != nil {
				return err
			}
			continue
		}
		if err := checkDepth(el.Value(), 2); err != nil {
			return err
		}
	}
	return nil
}

// validate applies the collection's validator to the new version of w (validationLevel
// and validationAction decide): an invalid document fails with 121 and its errInfo, or,
// with action "warn", is stored and logged as MongoDB logs it.
func (wr *Writer) validate(w *DocWrite) error {
	warn, err := wr.ci.Validator.Check(w.New, w.Old)
	if err != nil || !warn {
		return err
	}
	if ce := wr.p.log.Check(zap.WarnLevel, "Document would fail validation"); ce != nil {
		fields := []zap.Field{zap.String("ns", wr.ci.NS())}
		if id, err := w.New.LookupErr("_id"); err == nil {
			fields = append(fields, zap.String("document_id", id.String()))
		}
		ce.Write(fields...)
	}
	return nil
}
