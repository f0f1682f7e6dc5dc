package route

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/validate"
)

// wrap makes the fields appended by f a document.
func wrap(f func(dst []byte) []byte) bsoncore.Document {
	idx, d := bsoncore.AppendDocumentStart(nil)
	d = f(d)
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}

// TestValidateRoundTrip checks that what a node sends of its validation (AppendEntries,
// AppendStrings) merges into the router's result as it was.
func TestValidateRoundTrip(t *testing.T) {
	id := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 7)}
	extra := []validate.Entry{
		{Index: "a_1", Shard: 2, Hash: 1 << 63, ID: id, Key: wrap(func(d []byte) []byte { return bsoncore.AppendInt32Element(d, "a", 1) })},
		{Index: "h_hashed", Shard: 0, Hash: 5, RawKey: []byte{1, 2, 3}},
	}
	reply := wrap(func(d []byte) []byte {
		d = bsoncore.AppendInt64Element(d, "records", 10)
		d = bsoncore.AppendInt64Element(d, "invalid", 1)
		d = AppendEntries(d, "extraIndexEntries", extra)
		d = AppendEntries(d, "missingIndexEntries", nil)
		d = AppendStrings(d, "warnings", []string{"w1", "w2"})
		d = AppendStrings(d, "errors", nil)
		idx, d := bsoncore.AppendArrayElementStart(d, "indexes")
		d = bsoncore.AppendDocumentElement(d, "0", wrap(func(x []byte) []byte {
			x = bsoncore.AppendStringElement(x, "name", "a_1")
			x = bsoncore.AppendInt64Element(x, "keys", 9)
			x = bsoncore.AppendInt64Element(x, "missing", 1)
			return bsoncore.AppendInt64Element(x, "extra", 2)
		}))
		d, _ = bsoncore.AppendArrayEnd(d, idx)
		return d
	})
	res := &validate.Result{Records: 5, Indexes: []validate.IndexResult{{Name: "a_1", Keys: 5}, {Name: "_id_", Keys: 5}},
		Warnings: []string{"w0"}}
	mergeValidate(res, reply)
	if res.Records != 15 || res.InvalidDocuments != 1 || res.Indexes[0].Keys != 14 || res.Indexes[0].Missing != 1 ||
		res.Indexes[0].Extra != 2 || res.Indexes[1].Keys != 5 {
		t.Fatalf("merged counts: %+v", res)
	}
	if !slices.Equal(res.Warnings, []string{"w0", "w1", "w2"}) || len(res.Errors) != 0 || len(res.MissingEntries) != 0 {
		t.Fatalf("merged messages: %+v", res)
	}
	if len(res.ExtraEntries) != 2 {
		t.Fatalf("extra entries %+v", res.ExtraEntries)
	}
	for i, e := range res.ExtraEntries {
		w := extra[i]
		if e.Index != w.Index || e.Shard != w.Shard || e.Hash != w.Hash || e.ID.Type != w.ID.Type ||
			string(e.ID.Data) != string(w.ID.Data) || string(e.Key) != string(w.Key) || string(e.RawKey) != string(w.RawKey) {
			t.Errorf("entry %d: %+v, want %+v", i, e, w)
		}
	}
}
