package access

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Internal authentication (docs/security.md): with a key file, every connection a
// node opens to another authenticates first as the internal user __system@local with
// SCRAM-SHA-256 and the key as its password, as mongod's internal connections do; the
// other node derives the same user from its own copy of the key (auth.InternalUser). The
// internal commands need the internal action, which only __system's role grants.

// PipelineCommand asks the node at the other end of an internal connection to run the
// connection's requests at once, answering each as it finishes (wire.Request.Concurrent);
// exec/command/node answers it.
const PipelineCommand = "_cleavePipeline"

// InternalHello returns the wire.ClientOptions.Hello hook of a new internal connection: it
// authenticates with key (not without one), then asks for the connection to be pipelined
// (PipelineCommand). A node that does not know the command answers the connection's
// requests one at a time, in order, which the pipelined client works with as well.
func InternalHello(key string) func(ctx context.Context, run func(cmd bsoncore.Document) (bsoncore.Document, error)) error {
	return func(_ context.Context, run func(cmd bsoncore.Document) (bsoncore.Document, error)) error {
		if key != "" {
			if err := authenticate(key, run); err != nil {
				return err
			}
		}
		reply, err := run(bsoncore.NewDocumentBuilder().AppendInt32(PipelineCommand, 1).AppendString("$db", "admin").Build())
		if err != nil {
			return err
		}
		if ok, _ := bsonx.NumberAsFloat64(reply.Lookup("ok")); ok != 1 {
			if e := mongoerr.FromReply(reply); e.Code != mongoerr.CommandNotFound {
				return e
			}
		}
		return nil
	}
}

// authenticate runs the SCRAM-SHA-256 conversation of the internal user with key.
func authenticate(key string, run func(cmd bsoncore.Document) (bsoncore.Document, error)) error {
	conv, err := auth.NewClientConversation(auth.InternalUserName.User, key)
	if err != nil {
		return err
	}
	payload, err := conv.Step(nil)
	if err != nil {
		return err
	}
	reply, err := run(bsoncore.NewDocumentBuilder().
		AppendInt32("saslStart", 1).
		AppendString("mechanism", string(auth.SCRAMSHA256)).
		AppendBinary("payload", 0, payload).
		AppendDocument("options", bsoncore.NewDocumentBuilder().AppendBoolean("skipEmptyExchange", true).Build()).
		AppendString("$db", auth.InternalUserName.DB).Build())
	for {
		if err != nil {
			return err
		}
		if ok, _ := bsonx.NumberAsFloat64(reply.Lookup("ok")); ok != 1 {
			return mongoerr.FromReply(reply)
		}
		_, in, _ := reply.Lookup("payload").BinaryOK()
		out, serr := conv.Step(in)
		if serr != nil {
			return mongoerr.Wrap(serr, mongoerr.AuthenticationFailed, "the other node did not prove it holds the cluster's key")
		}
		if done, _ := reply.Lookup("done").BooleanOK(); done {
			if !conv.Done() {
				return mongoerr.New(mongoerr.AuthenticationFailed, "the other node ended the authentication early")
			}
			return nil
		}
		id, _ := reply.Lookup("conversationId").AsInt64OK()
		reply, err = run(bsoncore.NewDocumentBuilder().
			AppendInt32("saslContinue", 1).
			AppendInt64("conversationId", id).
			AppendBinary("payload", 0, out).
			AppendString("$db", auth.InternalUserName.DB).Build())
	}
}
