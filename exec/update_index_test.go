package exec

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
)

// TestUpdateIndexEntries checks that updates keep every kind of index in step, those whose
// fields they touch and those they leave alone (which the write path skips, write.untouched):
// after each update, validate finds no missing or extra entry, and a hinted find through each
// index finds what a collection scan finds.
func TestUpdateIndexEntries(t *testing.T) {
	for _, shards := range []int{1, 2} {
		e := testExecutor(t, shards, Options{})
		c := e.Connect(wire.ConnInfo{ID: 1})
		bg := context.Background()
		if shards > 1 {
			checkOK(t, handleJSONOn(bg, t, c, "admin", `{"shardCollection": "t.c", "key": {"k": "hashed"}}`))
		}
		checkOK(t, handleJSON(bg, t, c, `{"createIndexes": "c", "indexes": [
			{"key": {"a": 1}, "name": "a_1"},
			{"key": {"a.b": 1}, "name": "a.b_1"},
			{"key": {"x": 1, "y": -1}, "name": "x_1_y_-1"},
			{"key": {"p": 1}, "name": "p_1", "partialFilterExpression": {"q": {"$gt": 5}}},
			{"key": {"s": 1}, "name": "s_1", "sparse": true},
			{"key": {"h": "hashed"}, "name": "h_hashed"},
			{"key": {"w.$**": 1}, "name": "w_wildcard"},
			{"key": {"u": 1}, "name": "u_1", "unique": true},
			{"key": {"n": 1}, "name": "n_1", "collation": {"locale": "en", "strength": 2}}]}`))
		checkOK(t, handleJSON(bg, t, c, `{"insert": "c", "documents": [
			{"_id": 1, "k": 1, "a": [{"b": 1}, {"b": 2}], "x": 1, "y": 2, "p": 3, "q": 1, "h": 4, "w": {"v": 1}, "u": 1, "n": "A", "m": 0},
			{"_id": 2, "k": 2, "a": [{"b": 5}], "x": 2, "p": 4, "q": 9, "s": 1, "u": 2, "n": "b", "m": 0}]}`))
		updates := []string{
			`{"$set": {"m": 1}}`,                     // no indexed field
			`{"$inc": {"m": 1}, "$set": {"z.t": 2}}`, // nor here
			`{"$set": {"a.0": {"b": 7}}}`,            // an element of a: a and a.b
			`{"$set": {"a.1.b": 8}}`,
			`{"$push": {"a": {"b": 9}}}`,
			`{"$set": {"y": 5}}`,             // the second field of a compound index
			`{"$set": {"q": 10}}`,            // the partial filter's field: p_1 gains an entry
			`{"$set": {"p": 11}}`,            // the partial index's own field
			`{"$rename": {"m": "s"}}`,        // into the sparse index's field
			`{"$unset": {"s": ""}}`,          // out of it
			`{"$set": {"h": 12}}`,            // hashed
			`{"$set": {"w.v": 2, "w.r": 3}}`, // wildcard
			`{"$set": {"u": 13}}`,            // unique
			`{"$set": {"n": "c"}}`,           // collated
			`{"$currentDate": {"x": true}}`,
			`{"$set": {"k": 30}}`, // the shard key: the document moves
			`{"$set": {"m": 2}}`,
		}
		for i, u := range updates {
			for _, id := range []string{"1", "2"} {
				if id == "2" {
					u = strings.ReplaceAll(u, `"u": 13`, `"u": 14`) // unique values
				}
				reply := handleJSON(bg, t, c, `{"update": "c", "updates": [{"q": {"_id": `+id+`}, "u": `+u+`}]}`)
				checkOK(t, reply)
				if n, _ := reply.Lookup("nModified").AsInt64OK(); n != 1 {
					t.Fatalf("shards %d, update %d %s of %s: %v", shards, i, u, id, reply)
				}
			}
			reply := handleJSON(bg, t, c, `{"validate": "c", "full": true}`)
			if valid, _ := reply.Lookup("valid").BooleanOK(); !valid {
				t.Fatalf("shards %d, after update %d %s: %v", shards, i, u, reply)
			}
		}
		// Every index answers as a scan does (validate checked the partial and hashed ones too,
		// which the planner takes no hint of here).
		for _, q := range []string{
			`{"a.b": 7}, "hint": "a.b_1"`, `{"a": {"b": 9}}, "hint": "a_1"`, `{"x": {"$type": "date"}}, "hint": "x_1_y_-1"`,
			`{"w.r": 3}, "hint": "w_wildcard"`,
			`{"u": 13}, "hint": "u_1"`, `{"n": "c"}, "collation": {"locale": "en", "strength": 2}, "hint": "n_1"`,
		} {
			hinted := handleJSON(bg, t, c, `{"find": "c", "filter": `+q+`}`)
			scan := handleJSON(bg, t, c, `{"find": "c", "filter": `+strings.Split(q, `, "hint"`)[0]+`, "hint": {"$natural": 1}}`)
			for _, r := range []bsoncore.Document{hinted, scan} {
				if ok, _ := r.Lookup("ok").AsFloat64OK(); ok != 1 {
					t.Fatalf("shards %d, %s: %v", shards, q, r)
				}
			}
			got, want := hinted.Lookup("cursor", "firstBatch").String(), scan.Lookup("cursor", "firstBatch").String()
			if got != want || got == "[]" {
				t.Fatalf("shards %d, %s: through the index %s, by a scan %s", shards, q, got, want)
			}
		}
	}
}
