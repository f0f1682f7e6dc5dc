package cmd

import (
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// AuthOptions configures access control.
type AuthOptions struct {
	// Enabled makes every command check the connection's users against what the command
	// needs (mongod's --auth). Users can be created and authenticate either way.
	Enabled bool
	// InternalKey is the cluster's key (mongod's security.keyFile, already read and
	// checked): this node accepts the internal user __system it derives, and authenticates
	// as __system to the other nodes (remote_auth.go). "" turns internal authentication off.
	InternalKey string
}

// Kinds of security records in the catalog (store.SecurityRecord.Kind).
const (
	recordUser byte = 'u'
	recordRole byte = 'r'
)

// authState is the executor's view of users and roles: the current registry, rebuilt after
// every change, and the mutex that serializes changes.
type authState struct {
	reg atomic.Pointer[registryAt]
	mu  sync.Mutex // held by every change of users or roles
	// internal is the cluster's internal user (AuthOptions.InternalKey), nil without a key.
	internal *auth.User
}

// registryAt is a registry and the catalog state it was built from: users and roles other
// nodes change reach this node's catalog through its watch, and the next command that
// needs the registry rebuilds it.
type registryAt struct {
	reg *auth.Registry
	st  *store.CatalogState
}

// connAuth is a connection's authentication: who it is, and the SASL conversation under way.
// A connection runs one command at a time, so it needs no lock.
type connAuth struct {
	users []auth.UserName
	conv  *saslConv
}

// registry returns the current users and roles.
func (e *Executor) registry() *auth.Registry {
	r := e.Authn.reg.Load()
	if r != nil && e.Storage.Catalog != nil && r.st != e.Storage.Catalog.State() {
		if err := e.loadRegistry(); err == nil {
			r = e.Authn.reg.Load()
		}
	}
	if r != nil {
		return r.reg
	}
	return auth.NewRegistry(nil, nil).WithInternal(e.Authn.internal)
}

// loadRegistry decodes the catalog's security records into a registry and publishes it.
func (e *Executor) loadRegistry() error {
	st := e.Storage.Catalog.State()
	var users []*auth.User
	for _, rec := range st.SecurityRecords(recordUser, "") {
		u, err := auth.DecodeUser(rec.Doc)
		if err != nil {
			return err
		}
		users = append(users, u)
	}
	var roles []*auth.Role
	for _, rec := range st.SecurityRecords(recordRole, "") {
		r, err := auth.DecodeRole(rec.Doc)
		if err != nil {
			return err
		}
		roles = append(roles, r)
	}
	e.Authn.reg.Store(&registryAt{reg: auth.NewRegistry(users, roles).WithInternal(e.Authn.internal), st: st})
	return nil
}

// changeSecurity changes users and roles under the auth mutex: plan looks at the current
// registry and returns the records to write and those to delete (only their Kind, DB and
// Name matter), or an error that aborts the change. The registry is then republished.
func (e *Executor) changeSecurity(plan func(*auth.Registry) (puts, dels []store.SecurityRecord, err error)) error {
	e.Authn.mu.Lock()
	defer e.Authn.mu.Unlock()
	puts, dels, err := plan(e.registry())
	if err != nil {
		return err
	}
	if err := e.Storage.Catalog.UpdateSecurity(nil, puts, dels); err != nil {
		return err
	}
	return e.loadRegistry()
}

// userRecord returns the catalog record of u.
func userRecord(u *auth.User) store.SecurityRecord {
	return store.SecurityRecord{Kind: recordUser, DB: u.Name.DB, Name: u.Name.User, Doc: auth.EncodeUser(u)}
}

// roleRecord returns the catalog record of r.
func roleRecord(r *auth.Role) store.SecurityRecord {
	return store.SecurityRecord{Kind: recordRole, DB: r.Name.DB, Name: r.Name.Role, Doc: auth.EncodeRole(r)}
}

// EnsureRootUser creates user on admin with the root role and password when no user exists
// yet (the startup flags' way to the first user); with users it does nothing.
func (e *Executor) EnsureRootUser(user, password string) error {
	if e.Storage.Catalog == nil {
		return errors.New("no storage")
	}
	if user == "" || password == "" {
		return errors.New("the root user needs a name and a password")
	}
	u, err := newUser(auth.UserName{User: user, DB: "admin"}, password, auth.Mechanisms)
	if err != nil {
		return err
	}
	u.Roles = []auth.RoleName{{Role: "root", DB: "admin"}}
	exists := errors.New("users exist")
	err = e.changeSecurity(func(reg *auth.Registry) (puts, dels []store.SecurityRecord, err error) {
		if reg.HasUsers() {
			return nil, nil, exists
		}
		return []store.SecurityRecord{userRecord(u)}, nil, nil
	})
	switch {
	case errors.Is(err, exists):
		e.Log.Info("users exist: the root user of the configuration is not created", zap.String("user", user))
		return nil
	case err != nil:
		return err
	}
	e.Log.Info("created the root user", zap.String("user", user), zap.String("db", "admin"))
	return nil
}

// newUser returns a user with fresh credentials of password for mechs (no roles).
func newUser(name auth.UserName, password string, mechs []auth.Mechanism) (*auth.User, error) {
	u := &auth.User{Name: name, ID: newUUID(), Credentials: map[auth.Mechanism]auth.Credential{}}
	for _, m := range mechs {
		c, err := auth.NewCredential(m, name.User, password)
		if err != nil {
			return nil, mongoerr.Wrap(err, mongoerr.BadValue, "Error preparing password for %s", m)
		}
		u.Credentials[m] = c
	}
	return u, nil
}

// authorize checks that the connection may run cmd (only with access control on). It is the
// one place commands are checked; each command declares its action in the table, and
// commands whose needs depend on their arguments (aggregate with $out, renameCollection,
// user commands granting roles) add a needs function.
func (e *Executor) authorize(r *Request, cmd *Command) error {
	if !e.Opts.Auth.Enabled || cmd.Action == auth.ActionNone {
		return nil
	}
	reg := e.registry()
	users := r.Conn.authn.users
	if len(users) == 0 {
		if e.localhostException(r, reg) {
			return nil
		}
		return mongoerr.New(mongoerr.Unauthorized, "Command %s requires authentication", r.Name)
	}
	needs := []auth.Need{{Action: cmd.Action, DB: r.DB, Coll: commandCollection(r)}}
	if cmd.Needs != nil {
		needs = cmd.Needs(r, needs[0])
	}
	for _, n := range needs {
		if !reg.Allowed(users, n) {
			return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to execute command %s", r.DB, bsonx.ShellDoc(redactSecrets(r.Body)))
		}
	}
	return nil
}

// localhostException reports whether an unauthenticated connection may run r anyway: while
// no user exists, a client on the loopback interface may create the first user on admin.
func (e *Executor) localhostException(r *Request, reg *auth.Registry) bool {
	return r.Name == "createUser" && r.DB == "admin" && !reg.HasUsers() && isLoopback(r.Conn.info.Remote)
}

// isLoopback reports whether addr is a loopback address (or a Unix socket).
func isLoopback(addr net.Addr) bool {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

// commandCollection is the collection a command names in its first field, "" when it names
// none (aggregate: 1, dropDatabase).
func commandCollection(r *Request) string {
	first, ok := bsonx.FirstElement(r.Body)
	if !ok {
		return ""
	}
	s, _ := first.Value().StringValueOK()
	return s
}

// appendUserName appends {user, db} as key.
func appendUserName(dst []byte, key string, u auth.UserName) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendStringElement(dst, "user", u.User)
	dst = bsoncore.AppendStringElement(dst, "db", u.DB)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// aggregateNeeds adds, for a pipeline ending in $out or $merge, write and DDL on the target
// (which may be in another database); $lookup and $unionWith read r.db, which the read
// need covers. A pipeline that does not parse keeps the read need: aggregate reports it.
func aggregateNeeds(r *Request, def auth.Need) []auth.Need {
	needs := []auth.Need{def}
	pipeline, ok := r.Body.Lookup("pipeline").ArrayOK()
	if !ok {
		return needs
	}
	stages, _ := pipeline.Values()
	if len(stages) == 0 {
		return needs
	}
	last, ok := stages[len(stages)-1].DocumentOK()
	if !ok {
		return needs
	}
	el, err := last.IndexErr(0)
	if err != nil {
		return needs
	}
	var target bsoncore.Value
	switch el.Key() {
	case "$out":
		target = el.Value()
	case "$merge":
		target = el.Value()
		if d, ok := target.DocumentOK(); ok {
			target = d.Lookup("into")
		}
	default:
		return needs
	}
	db, coll := r.DB, ""
	if s, ok := target.StringValueOK(); ok {
		coll = s
	} else if d, ok := target.DocumentOK(); ok {
		if s, ok := d.Lookup("db").StringValueOK(); ok {
			db = s
		}
		coll, _ = d.Lookup("coll").StringValueOK()
	}
	return append(needs, auth.Need{Action: auth.ActionWrite, DB: db, Coll: coll},
		auth.Need{Action: auth.ActionDDL, DB: db, Coll: coll})
}

// renameNeeds is renameCollection's: it runs on admin but acts on the namespaces it names,
// DDL on both and, across databases, reading the source and writing the target.
func renameNeeds(r *Request, _ auth.Need) []auth.Need {
	from, _ := r.Body.Lookup("renameCollection").StringValueOK()
	to, _ := r.Body.Lookup("to").StringValueOK()
	fromDB, fromColl, _ := strings.Cut(from, ".")
	toDB, toColl, _ := strings.Cut(to, ".")
	needs := []auth.Need{
		{Action: auth.ActionDDL, DB: fromDB, Coll: fromColl},
		{Action: auth.ActionDDL, DB: toDB, Coll: toColl},
	}
	if fromDB != toDB {
		needs = append(needs, auth.Need{Action: auth.ActionRead, DB: fromDB, Coll: fromColl},
			auth.Need{Action: auth.ActionWrite, DB: toDB, Coll: toColl})
	}
	return needs
}

// redactSecrets returns body with a top-level pwd replaced by "xxx", as MongoDB redacts
// commands in messages and currentOp; body itself when it holds none.
func redactSecrets(body bsoncore.Document) bsoncore.Document {
	if _, err := body.LookupErr("pwd"); err != nil {
		return body
	}
	idx, out := bsoncore.AppendDocumentStart(nil)
	elems, _ := body.Elements()
	for _, el := range elems {
		if el.Key() == "pwd" {
			out = bsoncore.AppendStringElement(out, "pwd", "xxx")
			continue
		}
		out = append(out, el...)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}
