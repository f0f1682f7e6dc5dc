package auth

import (
	"slices"
	"strings"
)

// UserName names a user: alice defined in database app is {"alice", "app"}.
type UserName struct {
	User string
	DB   string
}

// String returns db.user, MongoDB's spelling of a user's _id.
func (u UserName) String() string { return u.DB + "." + u.User }

// User is a user definition: its credentials per mechanism and its roles.
type User struct {
	Name        UserName
	ID          [16]byte // userId, a UUID
	Credentials map[Mechanism]Credential
	Roles       []RoleName
	CustomData  []byte // a BSON document, or nil
}

// Mechanisms returns the mechanisms the user has credentials for, in Mechanisms' order.
func (u *User) Mechanisms() []Mechanism {
	var out []Mechanism
	for _, m := range Mechanisms {
		if _, ok := u.Credentials[m]; ok {
			out = append(out, m)
		}
	}
	return out
}

// Privilege is one privilege of a custom role: MongoDB action names on a resource (the
// cluster, or a database and collection where "" means any).
type Privilege struct {
	DB, Coll    string
	Cluster     bool // {cluster: true}
	AnyResource bool // {anyResource: true}: the cluster and every database
	Actions     []string
}

// Role is a custom role: its own privileges and the roles it inherits.
type Role struct {
	Name       RoleName
	Privileges []Privilege
	Roles      []RoleName
}

// grants compiles the role's own privileges; unknown action names grant nothing.
func (r *Role) grants() []grant {
	out := make([]grant, 0, len(r.Privileges))
	for _, p := range r.Privileges {
		g := grant{db: p.DB, coll: p.Coll, cluster: p.Cluster || p.AnyResource}
		if p.Cluster {
			g.db = "\x00" // no database is named so: the cluster only
		}
		for _, name := range p.Actions {
			if name == "anyAction" {
				g.actions = userActions
				continue
			}
			if a, ok := actionClasses[name]; ok {
				g.actions |= setOf(a)
			}
		}
		out = append(out, g)
	}
	return out
}

// Registry is an immutable view of every user and custom role: the executor builds a new one
// after each change and checks commands against the current one without locking.
type Registry struct {
	users  map[UserName]*User
	roles  map[RoleName]*Role
	grants map[RoleName][]grant // compiled custom roles
	// internal is the cluster's internal user (InternalUser), nil without a key file: it
	// authenticates and is authorized like a user, but is no record of the catalog, so
	// Users and HasUsers leave it out.
	internal *User
}

// WithInternal returns a copy of r that also knows the internal user u (nil: none).
func (r *Registry) WithInternal(u *User) *Registry {
	out := *r
	out.internal = u
	return &out
}

// NewRegistry returns a registry of users and roles; it keeps the pointers.
func NewRegistry(users []*User, roles []*Role) *Registry {
	r := &Registry{users: map[UserName]*User{}, roles: map[RoleName]*Role{}, grants: map[RoleName][]grant{}}
	for _, u := range users {
		r.users[u.Name] = u
	}
	for _, role := range roles {
		r.roles[role.Name] = role
		r.grants[role.Name] = role.grants()
	}
	return r
}

// HasUsers reports whether any user exists (the localhost exception ends with the first).
func (r *Registry) HasUsers() bool { return len(r.users) > 0 }

// User returns a user (the internal one among them), or nil.
func (r *Registry) User(n UserName) *User {
	if r.internal != nil && n == r.internal.Name {
		return r.internal
	}
	return r.users[n]
}

// Users returns the users of db ("" for all), sorted by database and name.
func (r *Registry) Users(db string) []*User {
	var out []*User
	for _, u := range r.users {
		if db == "" || u.Name.DB == db {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b *User) int {
		return strings.Compare(a.Name.DB+"\x00"+a.Name.User, b.Name.DB+"\x00"+b.Name.User)
	})
	return out
}

// Role returns a custom role, or nil.
func (r *Registry) Role(n RoleName) *Role { return r.roles[n] }

// Roles returns the custom roles of db, sorted by name.
func (r *Registry) Roles(db string) []*Role {
	var out []*Role
	for _, role := range r.roles {
		if role.Name.DB == db {
			out = append(out, role)
		}
	}
	slices.SortFunc(out, func(a, b *Role) int { return strings.Compare(a.Name.Role, b.Name.Role) })
	return out
}

// RoleExists reports whether n is a built-in or custom role.
func (r *Registry) RoleExists(n RoleName) bool { return IsBuiltin(n) || r.roles[n] != nil }

// Inherited returns roles and every role they inherit, transitively, sorted; roles that no
// longer exist are left out.
func (r *Registry) Inherited(roles []RoleName) []RoleName {
	seen := map[RoleName]bool{}
	var walk func(n RoleName)
	walk = func(n RoleName) {
		if seen[n] || !r.RoleExists(n) {
			return
		}
		seen[n] = true
		if c := r.roles[n]; c != nil {
			for _, in := range c.Roles {
				walk(in)
			}
		}
	}
	for _, n := range roles {
		walk(n)
	}
	out := make([]RoleName, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b RoleName) int { return strings.Compare(a.DB+"\x00"+a.Role, b.DB+"\x00"+b.Role) })
	return out
}

// Allowed reports whether the authenticated users together may do need. Users dropped since
// they authenticated count as having no roles, as in MongoDB.
func (r *Registry) Allowed(users []UserName, need Need) bool {
	switch {
	case need.Action == ActionNone:
		return true
	case len(users) == 0:
		return false
	case need.Action == ActionAuthenticated:
		return true
	}
	for _, name := range users {
		u := r.User(name)
		if u == nil {
			continue
		}
		for _, role := range r.Inherited(u.Roles) {
			gs := builtinGrants(role)
			if gs == nil {
				gs = r.grants[role]
			}
			for _, g := range gs {
				if g.covers(need) {
					return true
				}
			}
		}
	}
	return false
}

// AllRoles returns the names of every custom role, sorted by database and name.
func (r *Registry) AllRoles() []RoleName {
	out := make([]RoleName, 0, len(r.roles))
	for n := range r.roles {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b RoleName) int { return strings.Compare(a.DB+"\x00"+a.Role, b.DB+"\x00"+b.Role) })
	return out
}
