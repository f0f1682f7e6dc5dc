package exec

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
)

// handle sends one command through the connection handler and returns its reply, ok or not.
func handle(tb testing.TB, c wire.ConnHandler, body bsoncore.Document) bsoncore.Document {
	tb.Helper()
	reply, err := c.Handle(context.Background(), &wire.Request{Body: body})
	if err != nil {
		tb.Fatal(err)
	}
	return reply
}

// replyCode is the code of an {ok: 0} reply, 0 for {ok: 1}.
func replyCode(reply bsoncore.Document) int32 {
	c, _ := reply.Lookup("code").Int32OK()
	return c
}

// TestTxnRefused checks that a transaction is refused rather than applied outside itself:
// the insert of startTransaction writes nothing, and commit and abort answer the same error.
func TestTxnRefused(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	lsid := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, make([]byte, 16)).Build()
	doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()
	ins := bsoncore.NewDocumentBuilder().AppendString("insert", "c").
		AppendArray("documents", bsoncore.NewArrayBuilder().AppendDocument(doc).Build()).
		AppendDocument("lsid", lsid).AppendInt64("txnNumber", 1).
		AppendBoolean("startTransaction", true).AppendBoolean("autocommit", false).
		AppendString("$db", "test").Build()
	if got := replyCode(handle(t, c, ins)); got != 20 {
		t.Fatalf("insert with startTransaction: code %d, want 20 IllegalOperation", got)
	}
	for _, name := range []string{"commitTransaction", "abortTransaction"} {
		body := bsoncore.NewDocumentBuilder().AppendInt32(name, 1).AppendDocument("lsid", lsid).
			AppendInt64("txnNumber", 1).AppendBoolean("autocommit", false).AppendString("$db", "admin").Build()
		if got := replyCode(handle(t, c, body)); got != 20 {
			t.Fatalf("%s: code %d, want 20 IllegalOperation", name, got)
		}
	}
	count := run(t, c, bsoncore.NewDocumentBuilder().AppendString("count", "c").AppendString("$db", "test").Build())
	if n, _ := count.Lookup("n").AsInt64OK(); n != 0 {
		t.Fatalf("count after the refused transaction: %d, want 0", n)
	}
}
