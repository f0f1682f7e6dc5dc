package match

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// AppendDetails appends, for a document that fails s, MongoDB's errInfo details of a
// $jsonSchema validator: {operatorName: "$jsonSchema", schemaRulesNotSatisfied: [...]}.
func (s *Schema) AppendDetails(dst []byte, doc bsoncore.Document) []byte {
	dst = bsoncore.AppendStringElement(dst, "operatorName", "$jsonSchema")
	return s.appendRules(dst, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
}

// appendDetails appends the details of a subschema's failure as an array "details".
func (s *Schema) appendDetails(dst []byte, v bsoncore.Value) []byte {
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "details")
	i := 0
	for _, r := range s.rules {
		if !r.ok(v) {
			dst = appendRule(dst, bsonx.ArrayKey(i), &r, v)
			i++
		}
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	return dst
}

// appendRules appends schemaRulesNotSatisfied: each rule v fails.
func (s *Schema) appendRules(dst []byte, v bsoncore.Value) []byte {
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "schemaRulesNotSatisfied")
	i := 0
	for _, r := range s.rules {
		if !r.ok(v) {
			dst = appendRule(dst, bsonx.ArrayKey(i), &r, v)
			i++
		}
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	return dst
}

// appendRule appends one failed rule: {operatorName, specifiedAs, reason, consideredValue}
// for a keyword on the value itself, or its own explanation (missingProperties,
// propertiesNotSatisfied).
func appendRule(dst []byte, key string, r *rule, v bsoncore.Value) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendStringElement(dst, "operatorName", r.name)
	if r.name != "properties" { // MongoDB lists the properties that failed instead
		sidx, d := bsoncore.AppendDocumentElementStart(dst, "specifiedAs")
		d = bsoncore.AppendValueElement(d, r.name, r.spec)
		dst, _ = bsoncore.AppendDocumentEnd(d, sidx)
	}
	if r.sub != nil {
		dst = r.sub(dst, v)
	} else if v.Type != bsoncore.TypeEmbeddedDocument {
		dst = bsoncore.AppendStringElement(dst, "reason", schemaReason(r.name))
		dst = bsoncore.AppendValueElement(dst, "consideredValue", v)
		if r.name == "type" || r.name == "bsonType" {
			dst = bsoncore.AppendStringElement(dst, "consideredType", bsonx.TypeName(v.Type))
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// schemaReason is MongoDB's reason for a failed keyword.
func schemaReason(name string) string {
	switch name {
	case "type", "bsonType":
		return "type did not match"
	case "enum":
		return "value was not found in enum"
	case "pattern":
		return "regular expression did not match"
	case "minimum", "maximum":
		return "comparison failed"
	}
	return "specified value did not satisfy the rule"
}
