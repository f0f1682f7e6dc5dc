package exec

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
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

// applyRWDefaults puts the cluster-wide default read and write concerns
// (setDefaultRWConcern, exec/command/rwdefaults.go) into the body of r, run as cmd, where it
// carries none of its own, as MongoDB applies them: the default read concern to a command
// that takes one (a readConcern without a level, afterClusterTime alone, gets the default's
// level), the default write concern to one that takes a write concern; neither to a
// statement of a transaction, whose concerns are its start's and its commit's, nor to an
// internal command. Nothing is applied while no default was set (the implicit ones are
// what cleave does anyway).
func (e *Executor) applyRWDefaults(r *command.Request, cmd *command.Command) {
	wantRC, wantWC := cmd.Has(command.ReadConcern), cmd.Has(command.WriteConcern)
	if (!wantRC && !wantWC) || cmd.Action == auth.ActionInternal {
		return
	}
	d := e.CurrentRWDefaults()
	if d.ReadConcern == nil && d.WriteConcern == nil {
		return
	}
	// NB: commitTransaction and abortTransaction carry autocommit too, and take the default
	// write concern (MongoDB's); a statement of a transaction may not have a write concern.
	if r.Generic(command.GenAutocommit).Type != 0 && r.Name != "commitTransaction" && r.Name != "abortTransaction" {
		return
	}
	var rc, wc bsoncore.Document
	if wantRC && d.ReadConcern != nil {
		switch v := r.Generic(command.GenReadConcern); v.Type {
		case 0:
			rc = d.ReadConcern
		case bsoncore.TypeEmbeddedDocument:
			if have := v.Document(); have.Lookup("level").Type == 0 {
				rc = withLevel(have, d.ReadConcern)
			}
		}
	}
	if wantWC && d.WriteConcern != nil && r.Body.Lookup("writeConcern").Type == 0 {
		wc = d.WriteConcern
	}
	if rc == nil && wc == nil {
		return
	}
	body := r.Body
	if r.Generic(command.GenReadConcern).Type != 0 && rc != nil {
		body = withoutField(body, "readConcern") // rare: a readConcern without a level
	}
	// One allocation: the body's elements, then the concerns (a rebuild element by element
	// made a find by _id under default concerns cost 12% more of the server's CPU).
	out := make([]byte, 0, len(body)+len(rc)+len(wc)+32)
	out = append(out, body[:len(body)-1]...)
	if rc != nil {
		out = bsoncore.AppendDocumentElement(out, "readConcern", rc)
		r.DefaultRC = true
	}
	if wc != nil {
		out = bsoncore.AppendDocumentElement(out, "writeConcern", wc)
		r.DefaultWC = true
	}
	out = append(out, 0)
	bsoncore.UpdateLength(out, 0, int32(len(out)))
	r.SetBody(out)
}

// withoutField returns a copy of body without its fields named key.
func withoutField(body bsoncore.Document, key string) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	elems, _ := body.Elements()
	for _, el := range elems {
		if el.Key() != key {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build()
}

// withLevel returns the read concern have with the level of def added.
func withLevel(have, def bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendValue("level", def.Lookup("level"))
	elems, _ := have.Elements()
	for _, el := range elems {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.Build()
}

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
// a write concern the shards' copies cannot satisfy, unless the reply has one (a failpoint's).
// With replicated shards (replication.md), w: n up to a majority of the copies is what every
// acknowledged write has; above it, the write waits until n copies of the shards hold it.
func (e *Executor) appendConcernError(ctx context.Context, r *command.Request) {
	if !r.Cmd.Has(command.WriteConcern) || r.Name == "abortTransaction" {
		return
	}
	var wce *mongoerr.Error
	if reps := e.Storage.Replicas; reps != nil {
		wce = e.replicatedConcern(ctx, r.Body, reps)
	} else {
		wce = unsatisfiableConcern(r.Body)
	}
	if wce == nil || replyHasField(r.Out, "writeConcernError") {
		return
	}
	idx, out := bsoncore.AppendDocumentElementStart(r.Out, "writeConcernError")
	out = bsoncore.AppendInt32Element(out, "code", int32(wce.Code))
	out = bsoncore.AppendStringElement(out, "codeName", wce.Code.String())
	out = bsoncore.AppendStringElement(out, "errmsg", wce.Message)
	if wce.Info != nil {
		out = bsoncore.AppendDocumentElement(out, "errInfo", wce.Info)
	}
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

// replicatedConcern waits for the copies body's writeConcern asks for, and returns what
// stops it: more copies than the cluster keeps (100), a tag (79), wtimeout (64, errInfo
// {wtimeout: true}), or the leader stepping down meanwhile.
func (e *Executor) replicatedConcern(ctx context.Context, body bsoncore.Document, reps command.Replicas) *mongoerr.Error {
	wc, ok := body.Lookup("writeConcern").DocumentOK()
	if !ok {
		return nil
	}
	w, err := wc.LookupErr("w")
	if err != nil {
		return nil
	}
	n, isNum := w.AsInt64OK()
	if !isNum {
		return unsatisfiableConcern(body) // "majority", or a tag
	}
	copies := int64(reps.Copies())
	switch {
	case n > copies:
		return mongoerr.New(mongoerr.UnsatisfiableWriteConcern, "Not enough data-bearing nodes")
	case n <= copies/2+1:
		return nil // committed on a majority: every acknowledged write
	}
	if ms, ok := wc.Lookup("wtimeout").AsInt64OK(); ok && ms > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
		defer cancel()
	}
	err = reps.WaitCopies(ctx, int(n), true)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		wce := mongoerr.New(mongoerr.WriteConcernTimeout, "waiting for replication timed out")
		wce.Info = bsoncore.NewDocumentBuilder().AppendBoolean("wtimeout", true).Build()
		return wce
	case mongoerr.As(err) != nil:
		return mongoerr.As(err)
	}
	return mongoerr.New(mongoerr.WriteConcernTimeout, "waiting for replication failed: %v", err)
}
