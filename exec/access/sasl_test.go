package access_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/access"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// wantCode fails unless err is MongoDB's error code with message msg.
func wantCode(t testing.TB, err error, code mongoerr.Code, msg string) {
	t.Helper()
	me := mongoerr.As(err)
	if me == nil || me.Code != code || me.Message != msg {
		t.Fatalf("error %v, want %s (%d) %q", err, code, int32(code), msg)
	}
}

// TestParseStart checks saslStart's arguments as MongoDB's IDL refuses them.
func TestParseStart(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		code       mongoerr.Code
		msg        string
	}{
		{"Valid", `{"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": {"$binary": {"base64": "", "subType": "00"}},
			"autoAuthorize": 1, "options": {"skipEmptyExchange": true}, "$db": "admin"}`, 0, ""},
		{"PayloadString", `{"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": "n,,n=root"}`, 0, ""},
		{"NoMechanism", `{"saslStart": 1, "payload": ""}`, mongoerr.Location40414,
			"BSON field 'saslStart.mechanism' is missing but a required field"},
		{"MechanismNumber", `{"saslStart": 1, "mechanism": 1}`, mongoerr.TypeMismatch,
			"BSON field 'saslStart.mechanism' is the wrong type 'int', expected type 'string'"},
		{"PayloadNumber", `{"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": 1}`, mongoerr.TypeMismatch,
			"BSON field 'saslStart.payload' is the wrong type 'int', expected types '[string, binData']"},
		{"DBNumber", `{"saslStart": 1, "mechanism": "SCRAM-SHA-256", "db": 1}`, mongoerr.TypeMismatch,
			"BSON field 'saslStart.db' is the wrong type 'int', expected type 'string'"},
		{"OptionsNotADocument", `{"saslStart": 1, "mechanism": "SCRAM-SHA-256", "options": true}`, mongoerr.TypeMismatch,
			"BSON field 'saslStart.options' is the wrong type 'bool', expected type 'object'"},
		{"UnknownField", `{"saslStart": 1, "mechanism": "SCRAM-SHA-256", "user": "root"}`, mongoerr.Location40415,
			"BSON field 'saslStart.user' is an unknown field."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := access.ParseStart("saslStart", streamtest.ExtDoc(t, tc.body), "admin")
			if tc.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantCode(t, err, tc.code, tc.msg)
		})
	}
}

// server runs saslStart and saslContinue bodies on one connection of st, as the commands do,
// and returns each reply's fields as a document.
func server(st *access.State, c *access.Conn) func(cmd bsoncore.Document) (bsoncore.Document, error) {
	return func(cmd bsoncore.Document) (bsoncore.Document, error) {
		var out []byte
		var err error
		if _, start := cmd.Lookup("saslStart").AsInt64OK(); start {
			var a access.StartArgs
			db, _ := cmd.Lookup("$db").StringValueOK()
			if a, err = access.ParseStart("saslStart", cmd, db); err == nil {
				out, err = st.Start(c, a, zap.NewNop())
			}
		} else {
			out, err = access.Continue(c, "saslContinue", cmd, nil, zap.NewNop())
		}
		if err != nil {
			return nil, err
		}
		idx, doc := bsoncore.AppendDocumentStart(nil)
		doc = append(bsoncore.AppendDoubleElement(doc, "ok", 1), out...)
		doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
		return doc, nil
	}
}

// pipelining answers the internal hello's access.PipelineCommand with answer, the rest with
// next.
func pipelining(next func(cmd bsoncore.Document) (bsoncore.Document, error), answer func() (bsoncore.Document, error)) func(cmd bsoncore.Document) (bsoncore.Document, error) {
	return func(cmd bsoncore.Document) (bsoncore.Document, error) {
		if cmd.Index(0).Key() == access.PipelineCommand {
			return answer()
		}
		return next(cmd)
	}
}

// login runs the client side of SCRAM-SHA-256 for user (on admin) with password against run,
// with or without skipEmptyExchange, and returns the first error.
func login(user, password string, skipEmpty bool, run func(bsoncore.Document) (bsoncore.Document, error)) error {
	conv, err := auth.NewClientConversation(user, password)
	if err != nil {
		return err
	}
	out, err := conv.Step(nil)
	if err != nil {
		return err
	}
	reply, err := run(bsoncore.NewDocumentBuilder().AppendInt32("saslStart", 1).AppendString("mechanism", "SCRAM-SHA-256").
		AppendBinary("payload", 0, out).
		AppendDocument("options", bsoncore.NewDocumentBuilder().AppendBoolean("skipEmptyExchange", skipEmpty).Build()).
		AppendString("$db", "admin").Build())
	for err == nil {
		if !conv.Done() { // the empty exchange's last reply has nothing to check
			_, in, _ := reply.Lookup("payload").BinaryOK()
			if out, err = conv.Step(in); err != nil {
				return err
			}
		}
		if done, _ := reply.Lookup("done").BooleanOK(); done {
			if !conv.Done() {
				return errors.New("done before the server's signature")
			}
			return nil
		}
		reply, err = run(bsoncore.NewDocumentBuilder().AppendInt32("saslContinue", 1).
			AppendInt64("conversationId", reply.Lookup("conversationId").AsInt64()).AppendBinary("payload", 0, out).Build())
	}
	return err
}

// TestConversation checks SCRAM-SHA-256 end to end: the right password authenticates the
// connection as the user (with and without the empty exchange), a wrong one or an unknown
// user answers MongoDB's one AuthenticationFailed, and the errors of a bad conversation.
func TestConversation(t *testing.T) {
	st := withRoot(t, access.Options{Enabled: true})
	for skip, trips := range map[bool]int{true: 2, false: 3} {
		c := &access.Conn{}
		n := 0
		run := server(st, c)
		counted := func(cmd bsoncore.Document) (bsoncore.Document, error) { n++; return run(cmd) }
		if err := login("root", "pw", skip, counted); err != nil {
			t.Fatalf("skipEmptyExchange %v: %v", skip, err)
		}
		if n != trips || !slices.Equal(c.Users, []auth.UserName{rootName}) {
			t.Fatalf("skipEmptyExchange %v: %d round trips, users %v", skip, n, c.Users)
		}
		if err := login("root", "pw", skip, run); err != nil || len(c.Users) != 1 { // a second one replaces the first
			t.Fatalf("authenticating again: %v, users %v", err, c.Users)
		}
	}
	for _, tc := range []struct{ user, password string }{{"root", "wrong"}, {"nobody", "pw"}} {
		c := &access.Conn{}
		err := login(tc.user, tc.password, true, server(st, c))
		wantCode(t, err, mongoerr.AuthenticationFailed, "Authentication failed.")
		if len(c.Users) != 0 {
			t.Fatalf("%s/%s authenticated as %v", tc.user, tc.password, c.Users)
		}
	}
	c := &access.Conn{}
	_, err := access.Continue(c, "saslContinue", streamtest.ExtDoc(t, `{"saslContinue": 1, "conversationId": 1, "payload": ""}`), nil, zap.NewNop())
	wantCode(t, err, mongoerr.ProtocolError, "No SASL session state found")
	conv, _ := auth.NewClientConversation("root", "pw")
	first, _ := conv.Step(nil)
	a, err := access.ParseStart("saslStart", bsoncore.NewDocumentBuilder().AppendInt32("saslStart", 1).
		AppendString("mechanism", "SCRAM-SHA-256").AppendBinary("payload", 0, first).Build(), "admin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Start(c, a, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	_, err = access.Continue(c, "saslContinue", streamtest.ExtDoc(t, `{"saslContinue": 1, "conversationId": 2, "payload": ""}`), nil, zap.NewNop())
	wantCode(t, err, mongoerr.ProtocolError, "No SASL session state found")
	a, err = access.ParseStart("saslStart", streamtest.ExtDoc(t, `{"saslStart": 1, "mechanism": "PLAIN", "payload": ""}`), "admin")
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Start(c, a, zap.NewNop())
	wantCode(t, err, mongoerr.MechanismUnavailable, "Received authentication for mechanism PLAIN which is not enabled")
}

// TestSpeculative checks hello's speculativeAuthenticate: the first step answered inside
// hello for a saslStart naming its database, nothing for anything else.
func TestSpeculative(t *testing.T) {
	st := withRoot(t, access.Options{})
	conv, err := auth.NewClientConversation("root", "pw")
	if err != nil {
		t.Fatal(err)
	}
	first, _ := conv.Step(nil)
	body := bsoncore.NewDocumentBuilder().AppendInt32("saslStart", 1).AppendString("mechanism", "SCRAM-SHA-256").
		AppendBinary("payload", 0, first).AppendString("db", "admin").Build()
	c := &access.Conn{}
	reply := st.Speculative(c, body, zap.NewNop())
	if id, _ := reply.Lookup("conversationId").AsInt64OK(); id != 1 || reply.Lookup("done").Boolean() {
		t.Fatalf("speculative reply %v", reply)
	}
	_, payload, _ := reply.Lookup("payload").BinaryOK()
	if !strings.HasPrefix(string(payload), "r=") {
		t.Fatalf("server-first message %q", payload)
	}
	for name, other := range map[string]bsoncore.Document{
		"X509":       streamtest.ExtDoc(t, `{"authenticate": 1, "mechanism": "MONGODB-X509", "db": "$external"}`),
		"NoDatabase": streamtest.ExtDoc(t, `{"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": ""}`),
		"BadMech":    streamtest.ExtDoc(t, `{"saslStart": 1, "mechanism": "PLAIN", "payload": "", "db": "admin"}`),
	} {
		if got := st.Speculative(&access.Conn{}, other, zap.NewNop()); got != nil {
			t.Errorf("%s: speculative reply %v", name, got)
		}
	}
}

// TestInternalHello checks internal authentication: a node holding the cluster's key
// authenticates as __system to another holding it, and not with another key.
func TestInternalHello(t *testing.T) {
	const key = "0123456789abcdef-cluster-key"
	st := access.New(access.Options{Enabled: true, InternalKey: key}, openCatalog(t), zap.NewNop())
	if st.InternalKey() != key || st.Registry().User(auth.InternalUserName) == nil {
		t.Fatal("the internal user was not derived from the key")
	}
	c := &access.Conn{}
	asked := false
	if err := access.InternalHello(key)(context.Background(), pipelining(server(st, c), func() (bsoncore.Document, error) {
		asked = len(c.Users) == 1 // after the authentication
		return streamtest.ExtDoc(t, `{"ok": 1}`), nil
	})); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Users, []auth.UserName{auth.InternalUserName}) ||
		!st.Allowed(c, []auth.Need{{Action: auth.ActionInternal}}) {
		t.Fatalf("internal connection: users %v", c.Users)
	}
	if !asked {
		t.Fatalf("the hello did not ask for a pipelined connection once authenticated")
	}
	// A node that does not know the command (an older one) serves the connection in order:
	// the hello succeeds; any other refusal fails it.
	for code, ok := range map[int]bool{59: true, 13: false} {
		err := access.InternalHello(key)(context.Background(), pipelining(server(st, &access.Conn{}), func() (bsoncore.Document, error) {
			return streamtest.ExtDoc(t, fmt.Sprintf(`{"ok": 0, "code": %d, "errmsg": "no"}`, code)), nil
		}))
		if (err == nil) != ok {
			t.Errorf("_cleavePipeline answered with code %d: hello %v", code, err)
		}
	}
	other := &access.Conn{}
	err := access.InternalHello("another-key-of-the-right-size")(context.Background(), pipelining(server(st, other), nil))
	wantCode(t, err, mongoerr.AuthenticationFailed, "Authentication failed.")
	if len(other.Users) != 0 {
		t.Fatalf("a wrong key authenticated as %v", other.Users)
	}
}
