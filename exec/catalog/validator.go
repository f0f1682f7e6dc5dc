package catalog

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Validator is a collection's document validation (create and collMod's validator,
// validationLevel, validationAction), enforced by the write path on every document it
// stores unless the command bypasses it.
type Validator struct {
	Filter *match.Filter
	// Level is "strict" (every write), "moderate" (documents already invalid may be
	// updated) or "off".
	Level string
	// Warn is validationAction "warn": an invalid document is stored and logged.
	Warn bool
	// clauses are the validator's top-level fields, each compiled alone, for errInfo.
	clauses []clause
}

// clause is one top-level field of a validator.
type clause struct {
	el     bsoncore.Element
	filter *match.Filter
	schema *match.Schema // for $jsonSchema
}

// compileValidator returns the validator of collection options opts, nil when there is
// none (or it is empty).
func compileValidator(opts bsoncore.Document) (*Validator, error) {
	if opts == nil {
		return nil, nil
	}
	d, ok := opts.Lookup("validator").DocumentOK()
	if !ok || len(d) <= 5 {
		return nil, nil
	}
	mo := &match.Options{Expr: expr.CompilePredicate}
	f, err := match.Compile(d, mo)
	if err != nil {
		return nil, err
	}
	v := &Validator{Filter: f, Level: "strict"}
	if s, ok := opts.Lookup("validationLevel").StringValueOK(); ok {
		v.Level = s
	}
	if s, ok := opts.Lookup("validationAction").StringValueOK(); ok {
		v.Warn = s == "warn"
	}
	elems, _ := d.Elements()
	for _, el := range elems {
		c := clause{el: el}
		idx, one := bsoncore.AppendDocumentStart(nil)
		one = append(one, el...)
		one, _ = bsoncore.AppendDocumentEnd(one, idx)
		if c.filter, err = match.Compile(one, mo); err != nil {
			return nil, err
		}
		if el.Key() == "$jsonSchema" {
			if c.schema, err = match.CompileSchema(el.Value().Document()); err != nil {
				return nil, err
			}
		}
		v.clauses = append(v.clauses, c)
	}
	return v, nil
}

// Check decides the fate of a write of doc that replaces old (nil for an insert or an
// upsert): nil when doc may be stored as is, warn when it may be but must be logged, or
// the DocumentValidationFailure (121) to answer.
func (v *Validator) Check(doc, old bsoncore.Document) (warn bool, err error) {
	if v == nil || v.Level == "off" || v.Filter.Match(doc) {
		return false, nil
	}
	if v.Level == "moderate" && old != nil && !v.Filter.Match(old) {
		return false, nil // moderate: a document already invalid may be updated
	}
	if v.Warn {
		return true, nil
	}
	return false, v.Failure(doc)
}

// Failure is MongoDB's error for doc failing v, with errInfo {failingDocumentId, details}.
func (v *Validator) Failure(doc bsoncore.Document) *mongoerr.Error {
	idx, info := bsoncore.AppendDocumentStart(nil)
	eidx, info := bsoncore.AppendDocumentElementStart(info, "errInfo")
	if id, err := doc.LookupErr("_id"); err == nil {
		info = bsoncore.AppendValueElement(info, "failingDocumentId", id)
	}
	didx, info := bsoncore.AppendDocumentElementStart(info, "details")
	info = v.appendDetails(info, doc)
	info, _ = bsoncore.AppendDocumentEnd(info, didx)
	info, _ = bsoncore.AppendDocumentEnd(info, eidx)
	info, _ = bsoncore.AppendDocumentEnd(info, idx)
	e := mongoerr.New(mongoerr.DocumentValidationFailure, "Document failed validation")
	e.Info = info
	return e
}

// appendDetails appends the fields of errInfo.details: the failing clause's, or for a
// validator of several fields {operatorName: "$and", clausesNotSatisfied: [{index,
// details}]}, as MongoDB's doc_validation_error does.
func (v *Validator) appendDetails(dst []byte, doc bsoncore.Document) []byte {
	if len(v.clauses) == 1 {
		return v.clauses[0].appendDetails(dst, doc)
	}
	dst = bsoncore.AppendStringElement(dst, "operatorName", "$and")
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "clausesNotSatisfied")
	n := 0
	for i, c := range v.clauses {
		if c.filter.Match(doc) {
			continue
		}
		cidx, d := bsoncore.AppendDocumentElementStart(dst, bsonx.ArrayKey(n))
		d = bsoncore.AppendInt32Element(d, "index", int32(i))
		didx, d := bsoncore.AppendDocumentElementStart(d, "details")
		d = c.appendDetails(d, doc)
		d, _ = bsoncore.AppendDocumentEnd(d, didx)
		dst, _ = bsoncore.AppendDocumentEnd(d, cidx)
		n++
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	return dst
}

// appendDetails appends the details of clause c failing on doc: {operatorName,
// specifiedAs, reason, consideredValue[, consideredType]} for a field, the schema's rules
// for $jsonSchema.
func (c *clause) appendDetails(dst []byte, doc bsoncore.Document) []byte {
	key, val := c.el.Key(), c.el.Value()
	if c.schema != nil {
		return c.schema.AppendDetails(dst, doc)
	}
	if key != "" && key[0] == '$' { // $expr, $and, $or, $nor
		dst = bsoncore.AppendStringElement(dst, "operatorName", key)
		dst = appendSpecified(dst, c.el)
		if key == "$expr" {
			dst = bsoncore.AppendStringElement(dst, "reason", "expression did not match")
			dst = bsoncore.AppendBooleanElement(dst, "expressionResult", false)
		}
		return dst
	}
	op := "$eq"
	if d, ok := val.DocumentOK(); ok {
		if first, ok := bsonx.FirstElement(d); ok && len(first.Key()) > 0 && first.Key()[0] == '$' {
			op = first.Key()
		}
	}
	dst = bsoncore.AppendStringElement(dst, "operatorName", op)
	dst = appendSpecified(dst, c.el)
	considered, err := doc.LookupErr(splitDots(key)...)
	switch {
	case err != nil:
		dst = bsoncore.AppendStringElement(dst, "reason", "field was missing")
	case op == "$type":
		dst = bsoncore.AppendStringElement(dst, "reason", "type did not match")
		dst = bsoncore.AppendValueElement(dst, "consideredValue", considered)
		dst = bsoncore.AppendStringElement(dst, "consideredType", bsonx.TypeName(considered.Type))
	default:
		dst = bsoncore.AppendStringElement(dst, "reason", "comparison failed")
		dst = bsoncore.AppendValueElement(dst, "consideredValue", considered)
	}
	return dst
}

// appendSpecified appends specifiedAs: {<el>}.
func appendSpecified(dst []byte, el bsoncore.Element) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, "specifiedAs")
	dst = append(dst, el...)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// splitDots splits a dotted path into its fields.
func splitDots(path string) []string {
	var out []string
	start := 0
	for i := 0; i < len(path); i++ {
		if path[i] == '.' {
			out = append(out, path[start:i])
			start = i + 1
		}
	}
	return append(out, path[start:])
}
