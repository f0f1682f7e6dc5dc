package exec

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// writeError returns the first write error of a reply, nil when none.
func writeError(reply bsoncore.Document) bsoncore.Document {
	we, err := reply.LookupErr("writeErrors")
	if err != nil {
		return nil
	}
	vals, _ := we.Array().Values()
	if len(vals) == 0 {
		return nil
	}
	return vals[0].Document()
}

func TestValidationJSONSchemaInsert(t *testing.T) {
	h := newViewHarness(t, 1)
	h.ok(`{"create": "s", "validator": {"$jsonSchema": {"bsonType": "object", "required": ["name"],
		"properties": {"name": {"bsonType": "string"}, "gpa": {"bsonType": "double", "minimum": 0}}}}}`)
	h.ok(`{"insert": "s", "documents": [{"_id": 1, "name": "a", "gpa": 3.5}]}`)
	r := h.ok(`{"insert": "s", "documents": [{"_id": 2, "name": "b", "gpa": 3}]}`)
	we := writeError(r)
	if we == nil || we.Lookup("code").Int32() != int32(mongoerr.DocumentValidationFailure) {
		t.Fatalf("insert of an invalid document: %v", r)
	}
	if msg := we.Lookup("errmsg").StringValue(); msg != "Document failed validation" {
		t.Errorf("errmsg %q", msg)
	}
	if id, _ := we.Lookup("errInfo", "failingDocumentId").AsInt64OK(); id != 2 {
		t.Errorf("failingDocumentId: %v", we)
	}
	if op := we.Lookup("errInfo", "details", "operatorName").StringValue(); op != "$jsonSchema" {
		t.Errorf("details: %v", we)
	}
	r = h.ok(`{"insert": "s", "documents": [{"_id": 3, "gpa": 3.0}], "bypassDocumentValidation": true}`)
	if writeError(r) != nil {
		t.Errorf("bypass: %v", r)
	}
	// Updates, replacements and upserts are validated too.
	r = h.ok(`{"update": "s", "updates": [{"q": {"_id": 1}, "u": {"$unset": {"name": 1}}}]}`)
	if we := writeError(r); we == nil || we.Lookup("code").Int32() != 121 {
		t.Errorf("update: %v", r)
	}
	r = h.ok(`{"update": "s", "updates": [{"q": {"_id": 9}, "u": {"gpa": 1.0}, "upsert": true}]}`)
	if we := writeError(r); we == nil || we.Lookup("code").Int32() != 121 {
		t.Errorf("upsert: %v", r)
	}
	r = h.fails(`{"findAndModify": "s", "query": {"_id": 1}, "update": {"$set": {"name": 1}}}`, mongoerr.DocumentValidationFailure)
	if id, _ := r.Lookup("errInfo", "failingDocumentId").AsInt64OK(); id != 1 {
		t.Errorf("findAndModify errInfo: %v", r)
	}
	if n := len(h.docs("s")); n != 2 {
		t.Errorf("documents stored: %d", n)
	}
	// The same schema in a query.
	r = h.ok(`{"find": "s", "filter": {"$jsonSchema": {"required": ["name"]}}}`)
	if got := ids(batch(r)); got != "1" {
		t.Errorf("find with $jsonSchema: %s", got)
	}
}

func TestValidationLevelsAndActions(t *testing.T) {
	h := newViewHarness(t, 2)
	h.insert("c", `{"_id": 1, "x": "bad"}`, `{"_id": 2, "x": 1}`)
	h.ok(`{"collMod": "c", "validator": {"x": {"$type": "int"}, "y": {"$exists": false}}, "validationLevel": "moderate"}`)
	// Moderate: a document already invalid may be updated, a valid one must stay valid.
	if r := h.ok(`{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"z": 1}}}]}`); writeError(r) != nil {
		t.Errorf("moderate update of an invalid document: %v", r)
	}
	r := h.ok(`{"update": "c", "updates": [{"q": {"_id": 2}, "u": {"$set": {"x": "s", "y": 1}}}]}`)
	we := writeError(r)
	if we == nil || we.Lookup("errInfo", "details", "operatorName").StringValue() != "$and" {
		t.Fatalf("moderate update of a valid document: %v", r)
	}
	if n := len(we.Lookup("errInfo", "details", "clausesNotSatisfied").Array().DebugString()); n == 0 {
		t.Errorf("clausesNotSatisfied: %v", we)
	}
	h.ok(`{"collMod": "c", "validationLevel": "strict"}`)
	if r := h.ok(`{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"z": 2}}}]}`); writeError(r) == nil {
		t.Errorf("strict update of an invalid document: %v", r)
	}
	h.ok(`{"collMod": "c", "validationAction": "warn"}`)
	if r := h.ok(`{"insert": "c", "documents": [{"_id": 3, "x": "warned"}]}`); writeError(r) != nil {
		t.Errorf("warn: %v", r)
	}
	h.ok(`{"collMod": "c", "validationAction": "error", "validationLevel": "off"}`)
	if r := h.ok(`{"insert": "c", "documents": [{"_id": 4, "x": "off"}]}`); writeError(r) != nil {
		t.Errorf("off: %v", r)
	}
	h.ok(`{"collMod": "c", "validator": {}}`)
	h.ok(`{"collMod": "c", "validationLevel": "strict"}`)
	if r := h.ok(`{"insert": "c", "documents": [{"_id": 5, "x": "none"}]}`); writeError(r) != nil {
		t.Errorf("no validator: %v", r)
	}
}
