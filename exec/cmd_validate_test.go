package exec

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/wire"
)

// TestValidateCorruptions checks validate on a clean collection, then after each kind of
// damage done behind the write path: a missing index entry, an extra one, statistics off,
// and a document in a partition its shard does not own.
func TestValidateCorruptions(t *testing.T) {
	e := testExecutor(t, 2, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	bg := context.Background()
	if reply := handleJSONOn(bg, t, c, "admin", `{"shardCollection": "t.c", "key": {"k": "hashed"}}`); reply.Lookup("ok").Double() != 1 {
		t.Fatalf("shardCollection: %v", reply)
	}
	handleJSON(bg, t, c, `{"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]}`)
	handleJSON(bg, t, c, `{"insert": "c", "documents": [{"_id": 1, "k": 1, "a": [1, 2]}, {"_id": 2, "k": 2, "a": 3}, {"_id": 3, "k": 3}]}`)
	check := func(name string, wantValid bool, wantErr string) bsoncore.Document {
		t.Helper()
		reply := handleJSON(bg, t, c, `{"validate": "c", "full": true}`)
		if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 {
			t.Fatalf("%s: %v", name, reply)
		}
		if valid := reply.Lookup("valid").Boolean(); valid != wantValid || !strings.Contains(reply.Lookup("errors").String(), wantErr) {
			t.Fatalf("%s: valid %v, want %v with error %q: %v", name, valid, wantValid, wantErr, reply)
		}
		return reply
	}
	reply := check("Clean", true, "")
	if n := reply.Lookup("nrecords").AsInt64(); n != 3 {
		t.Fatalf("nrecords = %d", n)
	}
	if k := reply.Lookup("keysPerIndex", "a_1").AsInt64(); k != 4 {
		t.Fatalf("keysPerIndex.a_1 = %d, want 4 (multikey)", k)
	}
	ci, err := e.Cat.Lookup("t", "c")
	if err != nil {
		t.Fatal(err)
	}
	xi := ci.Indexes[len(ci.Indexes)-1]
	h, _ := ci.ShardHash(bsoncore.NewDocumentBuilder().AppendInt32("k", 2).Build())
	s := ci.Map.Partition(ci.Map.Locate(h)).Shard
	_, id := catalog.DocID(bsoncore.NewDocumentBuilder().AppendInt32("_id", 2).Build(), nil)
	key := bsonx.AppendKey(nil, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 3)})
	b := e.Cat.Shards()[s].NewBatch()
	b.DeleteIndex(ci.Meta.ID, xi.Meta.ID, key, h, id)
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	reply = check("MissingEntry", false, "a_1")
	wantEntry(t, reply, "missingIndexEntries", `{"indexName": "a_1","recordId": {"$numberInt":"2"},"indexKey": {"a": {"$numberInt":"3"}}`)
	b = e.Cat.Shards()[s].NewBatch()
	b.SetIndex(ci.Meta.ID, xi.Meta.ID, key, h, id)
	b.SetIndex(ci.Meta.ID, xi.Meta.ID, bsonx.AppendKey(nil, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 9)}), h, id)
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	reply = check("ExtraEntry", false, "a_1")
	wantEntry(t, reply, "extraIndexEntries", `{"indexName": "a_1","recordId": {"$numberInt":"2"},"indexKey": {"a": {"$numberInt":"9"}}`)
	if got := reply.Lookup("missingIndexEntries").String(); got != "[]" {
		t.Fatalf("missingIndexEntries = %s, want none", got)
	}
	b = e.Cat.Shards()[s].NewBatch()
	b.DeleteIndex(ci.Meta.ID, xi.Meta.ID, bsonx.AppendKey(nil, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 9)}), h, id)
	b.AddStats(ci.Meta.ID, h, 1, 10)
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	check("StatsOff", false, "statistics")
	b = e.Cat.Shards()[s].NewBatch()
	b.AddStats(ci.Meta.ID, h, -1, -10)
	other := 1 - s
	doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 2).AppendInt32("k", 2).AppendInt32("a", 3).Build()
	b2 := e.Cat.Shards()[other].NewBatch()
	b2.SetDoc(ci.Meta.ID, h, id, doc)
	b2.AddStats(ci.Meta.ID, h, 1, int64(len(doc)))
	b2.SetIndex(ci.Meta.ID, xi.Meta.ID, key, h, id)
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	if err := b2.Commit(true); err != nil {
		t.Fatal(err)
	}
	reply = check("Unowned", false, "owned by shard")
	if n := reply.Lookup("nInvalidDocuments").AsInt64(); n != 1 {
		t.Fatalf("nInvalidDocuments = %d, want 1: %v", n, reply)
	}
	reply = handleJSON(bg, t, c, `{"validate": "nope"}`)
	if code, _ := reply.Lookup("code").Int32OK(); code != 26 {
		t.Fatalf("validate of a missing collection: %v", reply)
	}
}

// wantEntry checks that validate's reply lists exactly one entry in field, starting with want.
func wantEntry(t *testing.T, reply bsoncore.Document, field, want string) {
	t.Helper()
	vals, _ := reply.Lookup(field).Array().Values()
	if len(vals) != 1 || !strings.HasPrefix(vals[0].String(), want) {
		t.Fatalf("%s = %v, want one entry starting %s", field, reply.Lookup(field), want)
	}
}
