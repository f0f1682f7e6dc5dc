package update

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cleavedb/cleave/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The randomized test builds updates from a small vocabulary of paths, operators and
// values, so that most of them compile and reach the interesting code (created paths,
// arrays, positional operators), which byte-level fuzzing rarely does. It checks the
// invariants of Apply and a few semantic ones.

var (
	randParts = []string{"a", "b", "c", "0", "1", "3", "$", "$[]", "$[i]", "_id", "$x"}
	randOps   = []string{"$set", "$unset", "$inc", "$mul", "$min", "$max", "$push", "$addToSet", "$pop", "$pull",
		"$pullAll", "$rename", "$bit", "$currentDate", "$setOnInsert"}
)

// randValue returns a random value for operator op.
func randValue(r *rand.Rand, op string) bsoncore.Value {
	switch op {
	case "$pop":
		return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(r.IntN(2)*2-1))}
	case "$rename":
		return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, randPath(r, false))}
	case "$bit":
		d := bsoncore.NewDocumentBuilder().AppendInt32([]string{"and", "or", "xor"}[r.IntN(3)], int32(r.IntN(16))).Build()
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
	case "$currentDate":
		return bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}}
	case "$pullAll":
		return bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.NewArrayBuilder().AppendInt32(1).AppendInt32(2).Build()}
	case "$push":
		if r.IntN(2) == 0 {
			each := bsoncore.NewArrayBuilder().AppendInt32(int32(r.IntN(5))).AppendInt32(int32(r.IntN(5))).Build()
			d := bsoncore.NewDocumentBuilder().AppendArray("$each", each).AppendInt32("$slice", int32(r.IntN(7)-3)).
				AppendInt32("$sort", int32(r.IntN(2)*2-1)).AppendInt32("$position", int32(r.IntN(5)-2)).Build()
			return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
		}
	}
	switch r.IntN(5) {
	case 0:
		return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, float64(r.IntN(9))/2)}
	case 1:
		return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, int64(r.IntN(9)-4))}
	case 2:
		return bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.NewArrayBuilder().AppendInt32(1).AppendString("x").Build()}
	case 3:
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.NewDocumentBuilder().AppendInt32("b", 2).Build()}
	}
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(r.IntN(9)-4))}
}

// randPath returns a dotted path of one to three components.
func randPath(r *rand.Rand, dynamic bool) string {
	n := 1 + r.IntN(3)
	parts := make([]string, n)
	for i := range parts {
		for {
			parts[i] = randParts[r.IntN(len(randParts))]
			if dynamic || !isDynamic(parts[i]) {
				break
			}
		}
	}
	return strings.Join(parts, ".")
}

// randUpdate returns an update of one to three operator fields.
func randUpdate(r *rand.Rand) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	for range 1 + r.IntN(2) {
		op := randOps[r.IntN(len(randOps))]
		fields := bsoncore.NewDocumentBuilder()
		for range 1 + r.IntN(2) {
			fields.AppendValue(randPath(r, op != "$rename"), randValue(r, op))
		}
		b.AppendDocument(op, fields.Build())
	}
	return b.Build()
}

// randDocs are the documents random updates apply to.
var randDocs = []string{
	`{_id: 1}`,
	`{_id: 1, a: 1, b: "x"}`,
	`{_id: 2, a: [1, 2, {b: 3}], b: {c: [5, 6], "0": 7}, c: null}`,
	`{a: {b: {c: 1}}, _id: {a: 1}, c: [[1], [2, 3]]}`,
	`{_id: 3, a: [{a: 1, b: [1]}, {a: 2}], b: 2.5, c: D("1.5")}`,
}

func TestUpdateRandomized(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	docs := docsOf(t, randDocs)
	withFilter, without := testOptions(t, []string{`{i: {$gte: 1}}`}), testOptions(t, nil)
	compiled, applied := 0, 0
	for range 30000 {
		update := randUpdate(r)
		opts := without
		if bytes.Contains(update, []byte("$[i]")) {
			opts = withFilter
		}
		u, err := Compile(update, opts)
		if err != nil {
			checkKnownError(t, update, err)
			continue
		}
		compiled++
		for _, doc := range docs {
			pos := r.IntN(3)
			out, changed, err := u.Apply(nil, doc, pos, r.IntN(4) == 0)
			if err != nil {
				checkKnownError(t, update, err)
				continue
			}
			applied++
			checkRandomResult(t, update, doc, out, changed)
		}
		if _, err := Upsert(nil, docs[r.IntN(len(docs))], u); err != nil {
			checkKnownError(t, update, err)
		}
	}
	t.Logf("%d compiled, %d applied", compiled, applied)
	if compiled < 8000 || applied < 15000 {
		t.Fatalf("only %d updates compiled and %d applied: the generator drifted", compiled, applied)
	}
}

// checkKnownError fails unless err is a *mongoerr.Error with a message.
func checkKnownError(t *testing.T, update []byte, err error) {
	t.Helper()
	if code, msg := codeOf(err); code <= 0 || msg == "" {
		t.Fatalf("update %s: unexpected error %v", show(update), err)
	}
}

// checkRandomResult checks the invariants of a successful Apply and, for a lone $set on a
// path without dynamic or numeric components, that the value is in place.
func checkRandomResult(t *testing.T, update, doc, out []byte, changed bool) {
	t.Helper()
	if err := bsoncore.Document(out).Validate(); err != nil {
		t.Fatalf("update %s on %s: invalid output: %v", show(update), show(doc), err)
	}
	if !changed && !bytes.Equal(out, doc) {
		t.Fatalf("update %s on %s: unchanged but rewritten to %s", show(update), show(doc), show(out))
	}
	if changed {
		if body, _ := docBody(out); len(body) > 0 {
			if _, ok := findField(body, "_id"); ok {
				if first, _, _ := readElem(body); string(first.key) != "_id" {
					t.Fatalf("update %s: _id not first in %s", show(update), show(out))
				}
			}
		}
	}
	set := bsoncore.Document(update).Lookup("$set")
	if len(bsoncore.Document(update).Index(0).Key()) == 0 || set.Type != bsoncore.TypeEmbeddedDocument {
		return
	}
	elems, _ := bsoncore.Document(set.Data).Elements()
	for _, e := range elems {
		path := e.Key()
		if strings.ContainsAny(path, "$0123456789") {
			continue
		}
		got, ok := bsonx.Lookup(out, path)
		if ok && bsonx.Compare(got, e.Value()) != 0 {
			t.Fatalf("update %s on %s: %s = %v, want %v", show(update), show(doc), path, got, e.Value())
		}
	}
}
