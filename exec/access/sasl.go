package access

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// conversationID is the only SASL conversation id, as in MongoDB: one per connection.
const conversationID = 1

// conversation is a SASL conversation under way on a connection.
type conversation struct {
	conv *auth.Conversation
	db   string // the authentication database (authSource)
	// skipEmptyExchange is the client's options.skipEmptyExchange: the server's final
	// message then ends the conversation, without an empty round trip.
	skipEmptyExchange bool
	// awaitingEmpty is set after the server's final message when the client still has to
	// send the empty message that ends the exchange.
	awaitingEmpty bool
}

// StartArgs are saslStart's arguments (or those of hello's speculativeAuthenticate).
type StartArgs struct {
	mechanism         string
	payload           []byte
	db                string
	skipEmptyExchange bool
}

// ParseStart parses a saslStart body; db is the authentication database unless the body
// names one (speculative authentication does).
func ParseStart(cmd string, body bsoncore.Document, db string) (StartArgs, error) {
	a := StartArgs{db: db}
	err := args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "mechanism":
			a.mechanism, err = args.String(cmd, key, v)
		case "payload":
			a.payload, err = payload(cmd, v)
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

// payload reads a payload: BinData, or a string as older shells send it.
func payload(cmd string, v bsoncore.Value) ([]byte, error) {
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

// Start starts a conversation on c and returns the reply's fields {conversationId, done,
// payload}; log is the connection's.
func (s *State) Start(c *Conn, a StartArgs, log *zap.Logger) ([]byte, error) {
	c.conv = nil
	m, err := auth.ParseMechanism(a.mechanism)
	if err != nil {
		return nil, mongoerr.New(mongoerr.MechanismUnavailable, "Received authentication for mechanism %s which is not enabled", a.mechanism)
	}
	reg := s.Registry()
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
	sc := &conversation{conv: conv, db: a.db, skipEmptyExchange: a.skipEmptyExchange}
	reply, err := conv.Step(a.payload)
	if err != nil {
		log.Info("authentication failed", zap.String("mechanism", string(m)), zap.String("user", conv.User()),
			zap.String("db", a.db), zap.Error(err))
		return nil, errAuthFailed()
	}
	c.conv = sc
	return appendReply(nil, false, reply), nil
}

// appendReply appends {conversationId, done, payload}.
func appendReply(dst []byte, done bool, payload []byte) []byte {
	dst = bsoncore.AppendInt32Element(dst, "conversationId", conversationID)
	dst = bsoncore.AppendBooleanElement(dst, "done", done)
	return bsoncore.AppendBinaryElement(dst, "payload", 0, payload)
}

// Continue runs saslContinue (body, spelled cmd) on c's conversation and appends the
// reply's fields to dst.
func Continue(c *Conn, cmd string, body bsoncore.Document, dst []byte, log *zap.Logger) ([]byte, error) {
	var data []byte
	var id int64 = -1
	err := args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "payload":
			data, err = payload(cmd, v)
		case "conversationId":
			id, err = args.Int64(cmd, key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return dst, err
	}
	sc := c.conv
	if sc == nil || id != conversationID {
		return dst, mongoerr.New(mongoerr.ProtocolError, "No SASL session state found")
	}
	if sc.awaitingEmpty {
		c.conv = nil
		c.authenticated(sc, log)
		return appendReply(dst, true, nil), nil
	}
	reply, err := sc.conv.Step(data)
	if err != nil || !sc.conv.Valid() {
		c.conv = nil
		log.Info("authentication failed", zap.String("mechanism", string(sc.conv.Mechanism)),
			zap.String("user", sc.conv.User()), zap.String("db", sc.db), zap.Error(err))
		return dst, errAuthFailed()
	}
	if sc.skipEmptyExchange {
		c.conv = nil
		c.authenticated(sc, log)
		return appendReply(dst, true, reply), nil
	}
	sc.awaitingEmpty = true
	return appendReply(dst, false, reply), nil
}

// authenticated records a successful conversation: the connection is now that user (a
// second authentication replaces the first).
func (c *Conn) authenticated(sc *conversation, log *zap.Logger) {
	u := auth.UserName{User: sc.conv.User(), DB: sc.db}
	c.Users = []auth.UserName{u}
	log.Info("authenticated", zap.String("mechanism", string(sc.conv.Mechanism)),
		zap.String("user", u.User), zap.String("db", u.DB))
}

// Speculative runs hello's speculativeAuthenticate: the first step of a conversation,
// answered inside hello's reply. It returns the reply's document, or nil when the attempt
// failed (the client then authenticates the ordinary way and gets the error there).
func (s *State) Speculative(c *Conn, body bsoncore.Document, log *zap.Logger) bsoncore.Document {
	if _, ok := body.Lookup("saslStart").AsInt64OK(); !ok {
		return nil // MONGODB-X509's {authenticate: 1}: not supported
	}
	a, err := ParseStart("saslStart", body, "")
	if err != nil || a.db == "" {
		return nil
	}
	out, err := s.Start(c, a, log)
	if err != nil {
		return nil
	}
	idx, doc := bsoncore.AppendDocumentStart(nil)
	doc = append(doc, out...)
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return doc
}

// SupportedMechs answers hello's saslSupportedMechs: "db.user" with the mechanisms that
// user has credentials for, nil when there is no such user.
func (s *State) SupportedMechs(name string) []string {
	db, user, ok := strings.Cut(name, ".")
	if !ok {
		return nil
	}
	u := s.Registry().User(auth.UserName{User: user, DB: db})
	if u == nil {
		return nil
	}
	var out []string
	for _, m := range u.Mechanisms() {
		out = append(out, string(m))
	}
	return out
}
