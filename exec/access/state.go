package access

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Options configures access control.
type Options struct {
	// Enabled makes every command check the connection's users against what the command
	// needs (mongod's --auth). Users can be created and authenticate either way.
	Enabled bool
	// InternalKey is the cluster's key (mongod's security.keyFile, already read and
	// checked): this node accepts the internal user __system it derives, and authenticates
	// as __system to the other nodes (InternalHello). "" turns internal authentication off.
	InternalKey string
}

// Kinds of security records in the catalog (store.SecurityRecord.Kind).
const (
	RecordUser byte = 'u'
	RecordRole byte = 'r'
)

// State is the server's view of users and roles: the current registry, rebuilt after every
// change, and the mutex that serializes changes.
type State struct {
	opts Options
	cat  *store.Catalog // nil: no storage, no users
	log  *zap.Logger
	reg  atomic.Pointer[registryAt]
	mu   sync.Mutex // held by every change of users or roles
	// internal is the cluster's internal user (Options.InternalKey), nil without a key.
	internal *auth.User
}

// registryAt is a registry and the catalog state it was built from: users and roles other
// nodes change reach this node's catalog through its watch, and the next command that
// needs the registry rebuilds it.
type registryAt struct {
	reg *auth.Registry
	st  *store.CatalogState
}

// New returns the access control of the users and roles in cat (nil: none). A key that
// derives no internal user, or records that do not decode, are logged: nobody can
// authenticate then, so access control fails closed.
func New(opts Options, cat *store.Catalog, log *zap.Logger) *State {
	s := &State{opts: opts, cat: cat, log: log}
	if cat == nil {
		return s
	}
	if opts.InternalKey != "" {
		u, err := auth.InternalUser(opts.InternalKey)
		if err != nil {
			log.Error("cannot derive the internal user from the key file", zap.Error(err))
		}
		s.internal = u
	}
	if err := s.load(); err != nil {
		log.Error("cannot load users and roles", zap.Error(err))
	}
	return s
}

// Enabled reports whether commands are checked (Options.Enabled).
func (s *State) Enabled() bool { return s.opts.Enabled }

// InternalKey is the cluster's key, "" without one.
func (s *State) InternalKey() string { return s.opts.InternalKey }

// Registry returns the current users and roles.
func (s *State) Registry() *auth.Registry {
	r := s.reg.Load()
	if r != nil && s.cat != nil && r.st != s.cat.State() {
		if err := s.load(); err == nil {
			r = s.reg.Load()
		}
	}
	if r != nil {
		return r.reg
	}
	return auth.NewRegistry(nil, nil).WithInternal(s.internal)
}

// load decodes the catalog's security records into a registry and publishes it.
func (s *State) load() error {
	st := s.cat.State()
	var users []*auth.User
	for _, rec := range st.SecurityRecords(RecordUser, "") {
		u, err := auth.DecodeUser(rec.Doc)
		if err != nil {
			return err
		}
		users = append(users, u)
	}
	var roles []*auth.Role
	for _, rec := range st.SecurityRecords(RecordRole, "") {
		r, err := auth.DecodeRole(rec.Doc)
		if err != nil {
			return err
		}
		roles = append(roles, r)
	}
	s.reg.Store(&registryAt{reg: auth.NewRegistry(users, roles).WithInternal(s.internal), st: st})
	return nil
}

// Change changes users and roles under the state's mutex: plan looks at the current
// registry and returns the records to write and those to delete (only their Kind, DB and
// Name matter), or an error that aborts the change. The registry is then republished.
func (s *State) Change(plan func(*auth.Registry) (puts, dels []store.SecurityRecord, err error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	puts, dels, err := plan(s.Registry())
	if err != nil {
		return err
	}
	if err := s.cat.UpdateSecurity(nil, puts, dels); err != nil {
		return err
	}
	return s.load()
}

// UserRecord returns the catalog record of u.
func UserRecord(u *auth.User) store.SecurityRecord {
	return store.SecurityRecord{Kind: RecordUser, DB: u.Name.DB, Name: u.Name.User, Doc: auth.EncodeUser(u)}
}

// RoleRecord returns the catalog record of r.
func RoleRecord(r *auth.Role) store.SecurityRecord {
	return store.SecurityRecord{Kind: RecordRole, DB: r.Name.DB, Name: r.Name.Role, Doc: auth.EncodeRole(r)}
}

// EnsureRootUser creates user on admin with the root role and password when no user exists
// yet (the startup flags' way to the first user); with users it does nothing.
func (s *State) EnsureRootUser(user, password string) error {
	if s.cat == nil {
		return errors.New("no storage")
	}
	if user == "" || password == "" {
		return errors.New("the root user needs a name and a password")
	}
	u, err := NewUser(auth.UserName{User: user, DB: "admin"}, password, auth.Mechanisms)
	if err != nil {
		return err
	}
	u.Roles = []auth.RoleName{{Role: "root", DB: "admin"}}
	exists := errors.New("users exist")
	err = s.Change(func(reg *auth.Registry) (puts, dels []store.SecurityRecord, err error) {
		if reg.HasUsers() {
			return nil, nil, exists
		}
		return []store.SecurityRecord{UserRecord(u)}, nil, nil
	})
	switch {
	case errors.Is(err, exists):
		s.log.Info("users exist: the root user of the configuration is not created", zap.String("user", user))
		return nil
	case err != nil:
		return err
	}
	s.log.Info("created the root user", zap.String("user", user), zap.String("db", "admin"))
	return nil
}

// NewUser returns a user with fresh credentials of password for mechs (no roles).
func NewUser(name auth.UserName, password string, mechs []auth.Mechanism) (*auth.User, error) {
	u := &auth.User{Name: name, ID: uuid.New(), Credentials: map[auth.Mechanism]auth.Credential{}}
	for _, m := range mechs {
		c, err := auth.NewCredential(m, name.User, password)
		if pe := (*auth.PrepError)(nil); errors.As(err, &pe) {
			return nil, mongoerr.Wrap(err, mongoerr.Location50692, "Error preflighting normalization: %s", pe.Reason)
		}
		if err != nil {
			return nil, mongoerr.Wrap(err, mongoerr.BadValue, "Error preparing password for %s", m)
		}
		u.Credentials[m] = c
	}
	return u, nil
}
