package exec

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Write concerns a single copy cannot satisfy. cleave keeps one copy of every document: each
// shard is, in MongoDB's terms, a replica set of one data-bearing member. As a mongod of such
// a set does, a write whose writeConcern asks for more acknowledgements (w: 2 and up) is
// applied, then answered with a writeConcernError UnsatisfiableWriteConcern 100 ("Not enough
// data-bearing nodes"), and one naming a tag other than "majority" with
// UnknownReplWriteConcern 79; w: 0, w: 1 and w: "majority" (a majority of one) are
// satisfied. abortTransaction waits for nothing and is answered as is.

// unsatisfiableConcern returns the error the writeConcern of body cannot be satisfied with,
// nil when one copy satisfies it.
func unsatisfiableConcern(body bsoncore.Document) *mongoerr.Error {
	w, err := body.LookupErr("writeConcern", "w")
	if err != nil {
		return nil
	}
	if n, ok := w.AsInt64OK(); ok {
		if n > 1 {
			return mongoerr.New(mongoerr.UnsatisfiableWriteConcern, "Not enough data-bearing nodes")
		}
		return nil
	}
	if tag, ok := w.StringValueOK(); ok && tag != "majority" {
		return mongoerr.New(mongoerr.UnknownReplWriteConcern, "No write concern mode named '%s' found in replica set configuration", tag)
	}
	return nil
}

// appendConcernError adds to the reply of a write that succeeded the writeConcernError of
// a write concern one copy cannot satisfy, unless the reply has one (a failpoint's).
func appendConcernError(r *command.Request) {
	if !r.Cmd.Has(command.WriteConcern) || r.Name == "abortTransaction" {
		return
	}
	wce := unsatisfiableConcern(r.Body)
	if wce == nil || replyHasField(r.Out, "writeConcernError") {
		return
	}
	idx, out := bsoncore.AppendDocumentElementStart(r.Out, "writeConcernError")
	out = bsoncore.AppendInt32Element(out, "code", int32(wce.Code))
	out = bsoncore.AppendStringElement(out, "codeName", wce.Code.String())
	out = bsoncore.AppendStringElement(out, "errmsg", wce.Message)
	r.Out, _ = bsoncore.AppendDocumentEnd(out, idx)
	if labels := errorLabels(r, 0, wce.Code); len(labels) > 0 {
		r.Out = bsonx.AppendStringArray(r.Out, "errorLabels", labels)
	}
}

// replyHasField reports whether the reply being built (an open document) has field key.
func replyHasField(out []byte, key string) bool {
	if len(out) < 4 {
		return false
	}
	doc := make([]byte, len(out)+1)
	copy(doc, out)
	bsoncore.UpdateLength(doc, 0, int32(len(doc)))
	_, err := bsoncore.Document(doc).LookupErr(key)
	return err == nil
}
