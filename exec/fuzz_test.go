package exec

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
)

// commandSeeds are commands of every family, the fuzzer's starting points.
var commandSeeds = []string{
	`{"insert": "c", "documents": [{"_id": 1, "a": [1, 2], "b": {"c": "x"}}, {"_id": 2, "a": 5}]}`,
	`{"find": "c", "filter": {"a": {"$gt": 1, "$lt": 9}}, "sort": {"a": -1}, "projection": {"b": 1}, "limit": 3}`,
	`{"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"b.d": 1}, "$push": {"a": 3}}, "upsert": true}]}`,
	`{"update": "c", "updates": [{"q": {}, "u": [{"$set": {"n": {"$add": ["$a", 1]}}}], "multi": true}]}`,
	`{"delete": "c", "deletes": [{"q": {"a": 5}, "limit": 1}]}`,
	`{"findAndModify": "c", "query": {"_id": 2}, "update": {"$inc": {"a": 1}}, "new": true}`,
	`{"aggregate": "c", "pipeline": [{"$match": {"a": {"$gte": 1}}}, {"$group": {"_id": "$b.c", "n": {"$sum": 1}}}, {"$sort": {"n": -1}}], "cursor": {}}`,
	`{"aggregate": "c", "pipeline": [{"$unwind": "$a"}, {"$setWindowFields": {"sortBy": {"a": 1}, "output": {"r": {"$rank": {}}}}}], "cursor": {}}`,
	`{"count": "c", "query": {"a": 1}}`,
	`{"distinct": "c", "key": "a"}`,
	`{"createIndexes": "c", "indexes": [{"key": {"a": 1, "b.c": -1}, "name": "ab"}]}`,
	`{"create": "t", "timeseries": {"timeField": "ts", "metaField": "m"}}`,
	`{"collMod": "c", "index": {"name": "ab", "hidden": true}}`,
	`{"explain": {"find": "c", "filter": {"a": 2}}, "verbosity": "executionStats"}`,
	`{"listIndexes": "c"}`,
	`{"dropIndexes": "c", "index": "ab"}`,
}

// FuzzCommand runs arbitrary command documents, as the wire hands them over, through one
// executor on a real store: every reply is a document with ok, and no command panics (a
// recovered panic answers "internal error while running").
func FuzzCommand(f *testing.F) {
	for _, s := range commandSeeds {
		f.Add([]byte(streamtest.ExtDoc(f, s)))
	}
	e := testExecutor(f, 1, Options{PartitionCheckInterval: time.Hour})
	c := e.Connect(wire.ConnInfo{ID: 1})
	f.Fuzz(func(t *testing.T, body []byte) {
		if wire.ValidateDocument(body) != nil {
			return // the wire answers InvalidBSON first
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		reply, err := c.Handle(ctx, &wire.Request{Body: withDB(body, "fuzz")})
		if err != nil {
			return // the connection closes (the failCommand closeConnection mode)
		}
		if err := bsoncore.Document(reply).Validate(); err != nil {
			t.Fatalf("reply is not a document: %v", err)
		}
		if _, ok := reply.Lookup("ok").AsFloat64OK(); !ok {
			t.Fatalf("reply without ok: %s", reply)
		}
		if msg, _ := reply.Lookup("errmsg").StringValueOK(); strings.HasPrefix(msg, "internal error while running") {
			t.Fatalf("%s panicked: %s", bsoncore.Document(body), reply)
		}
	})
}
