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

// InternalHello returns the wire.ClientOptions.Hello hook that authenticates a new
// internal connection with key.
func InternalHello(key string) func(ctx context.Context, run func(cmd bsoncore.Document) (bsoncore.Document, error)) error {
	return func(_ context.Context, run func(cmd bsoncore.Document) (bsoncore.Document, error)) error {
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
}
