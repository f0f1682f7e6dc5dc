package exec

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
)

// TestRequestEndedAfterHandle: a connection reuses one command.Request for each of its
// commands, so a handler that kept its *Request (here a test command) finds it ended once
// Handle returned: cleared, or, in a race-enabled build, poisoned with command.PoisonedName,
// and the next command on the connection fills the same Request again. Then a mix of
// commands (writes, a find and its getMores, an aggregate, count, distinct, findAndModify)
// runs on one connection one after another and on the forks of a pipelined connection at
// once: under the race detector (go test -race) a command that kept its Request in a
// goroutine would race with the poisoning.
func TestRequestEndedAfterHandle(t *testing.T) {
	e := testExecutor(t, 2, Options{})
	var kept *command.Request
	e.Commands.Add(&command.Command{Name: "_testKeepRequest", Action: auth.ActionNone, Help: "test: keeps its Request",
		Run: func(_ context.Context, r *command.Request) error { kept = r; return nil }})
	c := e.Connect(wire.ConnInfo{ID: 1})
	defer c.Close()
	keep := bsoncore.NewDocumentBuilder().AppendInt32("_testKeepRequest", 1).AppendString("$db", "admin").Build()
	run(t, c, keep)
	first := kept
	want := ""
	if raceEnabled { // command.Request.End poisons a finished Request
		want = command.PoisonedName
	}
	if first.Name != want || first.DB != want || first.Conn != nil || first.Out != nil {
		t.Fatalf("a kept Request after Handle: name %q, db %q, conn %v; want it ended (name %q)", first.Name, first.DB, first.Conn, want)
	}
	run(t, c, keep)
	if kept != first {
		t.Fatal("the connection did not reuse its Request: this test no longer shows the hazard")
	}

	runMix := func(c wire.ConnHandler, coll string) {
		for i := range 3 {
			for _, cmd := range requestMix(t, coll, i) {
				run(t, c, cmd)
			}
			reply := run(t, c, streamtest.ExtDoc(t, `{"find": "`+coll+`", "filter": {"a": {"$gte": 3}}, "batchSize": 2, "$db": "mix"}`))
			id := reply.Lookup("cursor", "id").Int64()
			more := bsoncore.NewDocumentBuilder().AppendInt64("getMore", id).AppendString("collection", coll).
				AppendInt32("batchSize", 3).AppendString("$db", "mix").Build()
			run(t, c, more)
			run(t, c, bsoncore.NewDocumentBuilder().AppendString("killCursors", coll).
				AppendArray("cursors", bsoncore.NewArrayBuilder().AppendInt64(id).Build()).AppendString("$db", "mix").Build())
		}
	}
	runMix(c, "seq")
	pc := e.Connect(wire.ConnInfo{ID: 2})
	defer pc.Close()
	var wg sync.WaitGroup
	for i := range 4 {
		f := pc.(wire.Forker).Fork()
		wg.Go(func() {
			defer f.Close()
			runMix(f, fmt.Sprint("pipe", i))
		})
	}
	wg.Wait()
}

// requestMix is a round of commands on mix.coll: writes, an index build, a find of one
// batch, an aggregate, count, distinct and findAndModify (runMix adds a find, a getMore of its
// cursor and killCursors).
func requestMix(t *testing.T, coll string, round int) []bsoncore.Document {
	t.Helper()
	cmd := func(s string) bsoncore.Document {
		return streamtest.ExtDoc(t, fmt.Sprintf(s, coll))
	}
	docs := ""
	for i := range 20 {
		if i > 0 {
			docs += ", "
		}
		docs += fmt.Sprintf(`{"_id": %d, "a": %d, "g": %d}`, round*100+i, i, i%3)
	}
	return []bsoncore.Document{
		cmd(`{"insert": "%s", "documents": [` + docs + `], "$db": "mix"}`),
		cmd(`{"createIndexes": "%s", "indexes": [{"key": {"a": 1}, "name": "a_1"}], "$db": "mix"}`),
		cmd(`{"find": "%s", "filter": {"a": {"$gte": 3}}, "batchSize": 2, "singleBatch": true, "$db": "mix"}`),
		cmd(`{"aggregate": "%s", "pipeline": [{"$match": {"a": {"$gte": 0}}}, {"$group": {"_id": "$g", "n": {"$sum": 1}}}], "cursor": {}, "$db": "mix"}`),
		cmd(`{"count": "%s", "query": {"a": {"$lt": 10}}, "$db": "mix"}`),
		cmd(`{"distinct": "%s", "key": "g", "$db": "mix"}`),
		cmd(`{"update": "%s", "updates": [{"q": {"a": 1}, "u": {"$inc": {"n": 1}}, "multi": true}], "$db": "mix"}`),
		cmd(`{"findAndModify": "%s", "query": {"a": 2}, "update": {"$set": {"m": 1}}, "$db": "mix"}`),
		cmd(`{"delete": "%s", "deletes": [{"q": {"a": 19}, "limit": 0}], "$db": "mix"}`),
	}
}
