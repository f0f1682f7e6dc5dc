package exec

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
)

// TestStatsDuringMove: while a moved partition's source range awaits its deletion (the move's
// grace period), collStats, dataSize, dbStats and count's fast path count each document once:
// on each shard only the partitions it owns. dataSize and dbStats summed the shards' counters,
// the moved copy included (TestClusterRemoteStats saw 96 objects of 90 while the balancer moved).
func TestStatsDuringMove(t *testing.T) {
	e := testExecutor(t, 2, Options{PartitionCheckInterval: time.Hour})
	c := e.Connect(wire.ConnInfo{ID: 1})
	bg := context.Background()
	handleJSONOn(bg, t, c, "admin", `{"shardCollection": "t.c", "key": {"k": "hashed"}, "numInitialChunks": 2}`)
	docs := make([]string, 100)
	for i := range docs {
		docs[i] = fmt.Sprintf(`{"_id": %d, "k": %d, "pad": "0123456789"}`, i, i)
	}
	handleJSON(bg, t, c, `{"insert": "c", "documents": [`+strings.Join(docs, ",")+`]}`)
	ci, err := e.Cat.Lookup("t", "c")
	if err != nil {
		t.Fatal(err)
	}
	from := ci.Map.Partition(0).Shard
	reply := handleJSONOn(bg, t, c, "admin", fmt.Sprintf(`{"moveChunk": "t.c", "bounds": [{"k": {"$minKey": 1}}, {"k": {"$numberLong": "%d"}}], "to": "shard-%d"}`,
		int64(ci.Map.Partition(1).Lo), 1-from)) // hashed bounds are the hash as a signed int64
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 {
		t.Fatalf("moveChunk: %v", reply)
	}
	var counted int64
	for _, sh := range e.Cat.Shards() {
		n, _ := sh.CollStats(ci.Meta.ID)
		counted += n
	}
	if counted <= 100 {
		t.Fatalf("the shards' counters hold %d documents: the moved range's source is already deleted, nothing to test", counted)
	}
	want := func(what string, reply bsoncore.Document, field string) {
		t.Helper()
		if n, _ := reply.Lookup(field).AsInt64OK(); n != 100 {
			t.Fatalf("%s: %s = %d, want 100: %v", what, field, n, reply)
		}
	}
	want("collStats", handleJSON(bg, t, c, `{"collStats": "c"}`), "count")
	want("dataSize", handleJSONOn(bg, t, c, "admin", `{"dataSize": "t.c"}`), "numObjects")
	want("dbStats", handleJSON(bg, t, c, `{"dbStats": 1}`), "objects")
	want("count", handleJSON(bg, t, c, `{"count": "c"}`), "n")
}
