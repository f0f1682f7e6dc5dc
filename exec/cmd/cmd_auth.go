package cmd

import (
	"context"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addAuthCommands registers authentication and the user and role commands.
func (e *Executor) addAuthCommands(add func(*Command)) {
	none := auth.ActionNone
	add(&Command{Name: "saslStart", Run: e.saslStart, Action: none, Help: "first step of a SASL authentication", Props: Legacy | APIV1})
	add(&Command{Name: "saslContinue", Run: e.saslContinue, Action: none, Help: "next step of a SASL authentication", Props: Legacy | APIV1})
	add(&Command{Name: "authenticate", Run: e.authenticate, Action: none, Help: "authenticate with MONGODB-X509 (not supported)", Props: Legacy | APIV1})
	add(&Command{Name: "logout", Run: e.logout, Action: none, Help: "de-authenticate"})
	e.addUserCommands(add)
	e.addRoleCommands(add)
}

// conversationID is the only SASL conversation id, as in MongoDB: one per connection.
const conversationID = 1

// saslConv is a SASL conversation under way on a connection.
type saslConv struct {
	conv *auth.Conversation
	db   string // the authentication database (authSource)
	// skipEmptyExchange is the client's options.skipEmptyExchange: the server's final
	// message then ends the conversation, without an empty round trip.
	skipEmptyExchange bool
	// awaitingEmpty is set after the server's final message when the client still has to
	// send the empty message that ends the exchange.
	awaitingEmpty bool
}

// saslStartArgs are saslStart's arguments (or those of hello's speculativeAuthenticate).
type saslStartArgs struct {
	mechanism         string
	payload           []byte
	db                string
	skipEmptyExchange bool
}

// parseSASLStart parses a saslStart body; db is the authentication database unless the body
// names one (speculative authentication does).
func parseSASLStart(cmd string, body bsoncore.Document, db string) (saslStartArgs, error) {
	a := saslStartArgs{db: db}
	err := args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "mechanism":
			a.mechanism, err = args.String(cmd, key, v)
		case "payload":
			a.payload, err = saslPayload(cmd, v)
		case "db":
			a.db, err = args.String(cmd, key, v)
		case "autoAuthorize":
		case "options":
			var o bsoncore.Document
			if o, err = args.Doc(cmd, key, v); err == nil {
				a.skipEmptyExchange, _ = o.Lookup("skipEmptyExchange").BooleanOK()
			}
		default:
			return false, nil
		}
		return true, err
	})
	if err == nil && a.mechanism == "" {
		err = args.Missing(cmd, "mechanism")
	}
	return a, err
}

// saslPayload reads a payload: BinData, or a string as older shells send it.
func saslPayload(cmd string, v bsoncore.Value) ([]byte, error) {
	if _, b, ok := v.BinaryOK(); ok {
		return b, nil
	}
	if s, ok := v.StringValueOK(); ok {
		return []byte(s), nil
	}
	return nil, args.WrongType(cmd, "payload", v.Type, "string", "binData")
}

// errAuthFailed is MongoDB's one answer to every failed authentication.
func errAuthFailed() error {
	return mongoerr.New(mongoerr.AuthenticationFailed, "Authentication failed.")
}

// saslStart begins a SCRAM conversation.
func (e *Executor) saslStart(_ context.Context, r *Request) error {
	a, err := parseSASLStart(r.Name, r.Body, r.DB)
	if err != nil {
		return err
	}
	out, err := e.startConversation(r.Conn, a)
	if err != nil {
		return err
	}
	r.Out = append(r.Out, out...)
	return nil
}

// startConversation starts a conversation on c and returns the reply's fields
// {conversationId, done, payload}.
func (e *Executor) startConversation(c *Conn, a saslStartArgs) ([]byte, error) {
	c.authn.conv = nil
	m, err := auth.ParseMechanism(a.mechanism)
	if err != nil {
		return nil, mongoerr.New(mongoerr.MechanismUnavailable, "Received authentication for mechanism %s which is not enabled", a.mechanism)
	}
	reg := e.registry()
	conv, err := auth.NewConversation(m, func(user string) (auth.Credential, bool) {
		u := reg.User(auth.UserName{User: user, DB: a.db})
		if u == nil {
			return auth.Credential{}, false
		}
		cred, ok := u.Credentials[m]
		return cred, ok
	})
	if err != nil {
		return nil, err
	}
	sc := &saslConv{conv: conv, db: a.db, skipEmptyExchange: a.skipEmptyExchange}
	reply, err := conv.Step(a.payload)
	if err != nil {
		c.log.Info("authentication failed", zap.String("mechanism", string(m)), zap.String("user", conv.User()),
			zap.String("db", a.db), zap.Error(err))
		return nil, errAuthFailed()
	}
	c.authn.conv = sc
	return appendSASLReply(nil, false, reply), nil
}

// appendSASLReply appends {conversationId, done, payload}.
func appendSASLReply(dst []byte, done bool, payload []byte) []byte {
	dst = bsoncore.AppendInt32Element(dst, "conversationId", conversationID)
	dst = bsoncore.AppendBooleanElement(dst, "done", done)
	return bsoncore.AppendBinaryElement(dst, "payload", 0, payload)
}

// saslContinue runs the next step of the connection's conversation.
func (e *Executor) saslContinue(_ context.Context, r *Request) error {
	var payload []byte
	var id int64 = -1
	err := args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "payload":
			payload, err = saslPayload(r.Name, v)
		case "conversationId":
			id, err = args.Int64(r.Name, key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	c := r.Conn
	sc := c.authn.conv
	if sc == nil || id != conversationID {
		return mongoerr.New(mongoerr.ProtocolError, "No SASL session state found")
	}
	if sc.awaitingEmpty {
		c.authn.conv = nil
		e.authenticated(c, sc)
		r.Out = appendSASLReply(r.Out, true, nil)
		return nil
	}
	reply, err := sc.conv.Step(payload)
	if err != nil || !sc.conv.Valid() {
		c.authn.conv = nil
		c.log.Info("authentication failed", zap.String("mechanism", string(sc.conv.Mechanism)),
			zap.String("user", sc.conv.User()), zap.String("db", sc.db), zap.Error(err))
		return errAuthFailed()
	}
	if sc.skipEmptyExchange {
		c.authn.conv = nil
		e.authenticated(c, sc)
		r.Out = appendSASLReply(r.Out, true, reply)
		return nil
	}
	sc.awaitingEmpty = true
	r.Out = appendSASLReply(r.Out, false, reply)
	return nil
}

// authenticated records a successful conversation: the connection is now that user (a
// second authentication replaces the first).
func (e *Executor) authenticated(c *Conn, sc *saslConv) {
	u := auth.UserName{User: sc.conv.User(), DB: sc.db}
	c.authn.users = []auth.UserName{u}
	c.log.Info("authenticated", zap.String("mechanism", string(sc.conv.Mechanism)),
		zap.String("user", u.User), zap.String("db", u.DB))
}

// speculativeAuth runs hello's speculativeAuthenticate: the first step of a conversation,
// answered inside hello's reply. It returns the reply's document, or nil when the attempt
// failed (the client then authenticates the ordinary way and gets the error there).
func (e *Executor) speculativeAuth(c *Conn, body bsoncore.Document) bsoncore.Document {
	if _, ok := body.Lookup("saslStart").AsInt64OK(); !ok {
		return nil // MONGODB-X509's {authenticate: 1}: not supported
	}
	a, err := parseSASLStart("saslStart", body, "")
	if err != nil || a.db == "" {
		return nil
	}
	out, err := e.startConversation(c, a)
	if err != nil {
		return nil
	}
	idx, doc := bsoncore.AppendDocumentStart(nil)
	doc = append(doc, out...)
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return doc
}

// saslSupportedMechs answers hello's saslSupportedMechs: "db.user" with the mechanisms that
// user has credentials for, nil when there is no such user.
func (e *Executor) saslSupportedMechs(name string) []string {
	db, user, ok := strings.Cut(name, ".")
	if !ok {
		return nil
	}
	u := e.registry().User(auth.UserName{User: user, DB: db})
	if u == nil {
		return nil
	}
	var out []string
	for _, m := range u.Mechanisms() {
		out = append(out, string(m))
	}
	return out
}

// authenticate answers the legacy authenticate command: cleave has no MONGODB-X509 (nor
// MONGODB-CR, which MongoDB removed).
func (e *Executor) authenticate(_ context.Context, r *Request) error {
	mech, _ := r.Body.Lookup("mechanism").StringValueOK()
	if mech == "" {
		mech = "MONGODB-CR"
	}
	return mongoerr.New(mongoerr.MechanismUnavailable, "Received authentication for mechanism %s which is not enabled", mech)
}

// logout forgets the connection's users (and any conversation under way).
func (e *Executor) logout(_ context.Context, r *Request) error {
	r.Conn.authn = connAuth{}
	return nil
}

// connectionStatus reports the connection's authenticated users and their roles, inherited
// ones included.
func (e *Executor) connectionStatus(_ context.Context, r *Request) error {
	showPrivileges := false
	if v, err := r.Body.LookupErr("showPrivileges"); err == nil {
		showPrivileges, _ = args.Bool(r.Name, "showPrivileges", v)
	}
	reg := e.registry()
	var roles []auth.RoleName
	idx, out := bsoncore.AppendDocumentElementStart(r.Out, "authInfo")
	aidx, out := bsoncore.AppendArrayElementStart(out, "authenticatedUsers")
	for i, name := range r.Conn.authn.users {
		out = appendUserName(out, bsonx.ArrayKey(i), name)
		if u := reg.User(name); u != nil {
			roles = append(roles, reg.Inherited(u.Roles)...)
		}
	}
	out, _ = bsoncore.AppendArrayEnd(out, aidx)
	slices.SortFunc(roles, func(a, b auth.RoleName) int { return strings.Compare(a.String(), b.String()) })
	out = auth.AppendRoleNames(out, "authenticatedUserRoles", slices.Compact(roles))
	if showPrivileges {
		out = appendStringArray(out, "authenticatedUserPrivileges", nil)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	r.Out = out
	return nil
}
