package auth

import (
	"fmt"
	"slices"
	"strings"
)

// Action is the class of privilege a command needs. Each command of the executor declares
// one; a role grants a set of them on a resource. The classes are coarser than MongoDB's
// ~150 action types but cut where its built-in roles cut.
type Action uint8

// The action classes. The zero value is deliberately not a class: a command that declares
// nothing is refused to everyone but root (fail closed).
const (
	ActionUndeclared    Action = iota
	ActionNone                 // no authentication needed: the handshake, ping, saslStart, logout
	ActionAuthenticated        // any authenticated user: listDatabases, sessions
	ActionListing              // listCollections, listIndexes, collStats, dbStats
	ActionRead                 // find, count, distinct, aggregate, getMore
	ActionWrite                // insert, update, delete, findAndModify
	ActionDDL                  // create and drop collections and indexes, renameCollection
	ActionDBAdmin              // collMod, dropDatabase
	ActionUserAdmin            // users and roles of a database
	ActionClusterAdmin         // the server: parameters, logs, status, partitions
	ActionInternal             // a node's internal commands to another (_cleaveShard*): __system only
	numActions
)

// String returns the class name, for messages and logs.
func (a Action) String() string {
	names := [...]string{"undeclared", "none", "authenticated", "listing", "read", "write", "ddl",
		"dbAdmin", "userAdmin", "clusterAdmin", "internal"}
	if int(a) < len(names) {
		return names[a]
	}
	return fmt.Sprintf("Action(%d)", a)
}

// actionSet is a set of actions, one bit each.
type actionSet uint16

// setOf returns the set of as.
func setOf(as ...Action) actionSet {
	var s actionSet
	for _, a := range as {
		s |= 1 << a
	}
	return s
}

// has reports whether a is in s.
func (s actionSet) has(a Action) bool { return s&(1<<a) != 0 }

// allActions is every action.
const allActions = actionSet(1<<numActions - 1)

// userActions is every action but the internal one, which MongoDB's root (and anyAction)
// do not grant either: only the cluster's own members (__system) run internal commands.
const userActions = allActions &^ (1 << ActionInternal)

// Need is what one command needs: an action on a database (and collection, "" for the
// database as a whole). Cluster actions ignore DB and Coll.
type Need struct {
	Action   Action
	DB, Coll string
}

// RoleName names a role: role read on db test is {"read", "test"}.
type RoleName struct {
	Role string `json:"role"`
	DB   string `json:"db"`
}

// String returns role@db, MongoDB's spelling in messages.
func (r RoleName) String() string { return r.Role + "@" + r.DB }

// grant is a compiled privilege: actions on a database ("" is every one) and collection (""
// is every one), or on the cluster.
type grant struct {
	db, coll string
	cluster  bool
	actions  actionSet
}

// covers reports whether g allows need.
func (g grant) covers(n Need) bool {
	if !g.actions.has(n.Action) {
		return false
	}
	if n.Action == ActionClusterAdmin || n.Action == ActionInternal {
		return g.cluster
	}
	return (g.db == "" || g.db == n.DB) && (g.coll == "" || g.coll == n.Coll)
}

// Per-database built-in roles: they exist in every database and grant on that database.
var dbRoles = map[string]actionSet{
	"read":      setOf(ActionAuthenticated, ActionListing, ActionRead),
	"readWrite": setOf(ActionAuthenticated, ActionListing, ActionRead, ActionWrite, ActionDDL),
	"dbAdmin":   setOf(ActionAuthenticated, ActionListing, ActionDDL, ActionDBAdmin),
	"userAdmin": setOf(ActionAuthenticated, ActionUserAdmin),
	"dbOwner":   setOf(ActionAuthenticated, ActionListing, ActionRead, ActionWrite, ActionDDL, ActionDBAdmin, ActionUserAdmin),
}

// adminRoles are the built-in roles that exist only in admin, with their grants.
var adminRoles = map[string][]grant{
	"readAnyDatabase":      {{actions: dbRoles["read"]}},
	"readWriteAnyDatabase": {{actions: dbRoles["readWrite"]}},
	"dbAdminAnyDatabase":   {{actions: dbRoles["dbAdmin"]}},
	"userAdminAnyDatabase": {{actions: dbRoles["userAdmin"]}},
	"clusterAdmin":         {{cluster: true, actions: setOf(ActionAuthenticated, ActionClusterAdmin, ActionListing)}},
	"root":                 {{cluster: true, actions: userActions}},
	// __system is the role of the cluster's internal user (keyfile.go): everything.
	"__system": {{cluster: true, actions: allActions}},
}

// IsBuiltin reports whether r is a built-in role (read@any, root@admin, ...).
func IsBuiltin(r RoleName) bool {
	if _, ok := dbRoles[r.Role]; ok {
		return true
	}
	_, ok := adminRoles[r.Role]
	return ok && r.DB == "admin"
}

// BuiltinRoles returns the built-in roles of db, sorted by name.
func BuiltinRoles(db string) []RoleName {
	var out []RoleName
	for name := range dbRoles {
		out = append(out, RoleName{name, db})
	}
	if db == "admin" {
		for name := range adminRoles {
			out = append(out, RoleName{name, db})
		}
	}
	slices.SortFunc(out, func(a, b RoleName) int { return strings.Compare(a.Role, b.Role) })
	return out
}

// builtinGrants returns the grants of a built-in role, nil if r is not one.
func builtinGrants(r RoleName) []grant {
	if s, ok := dbRoles[r.Role]; ok {
		return []grant{{db: r.DB, actions: s}}
	}
	if r.DB == "admin" {
		return adminRoles[r.Role]
	}
	return nil
}

// actionClasses maps MongoDB's action type names, as createRole's privileges spell them, to
// the class that covers them. An action of a class grants the whole class.
var actionClasses = map[string]Action{
	"find": ActionRead, "killCursors": ActionRead, "changeStream": ActionRead, "listSearchIndexes": ActionRead,
	"insert": ActionWrite, "update": ActionWrite, "remove": ActionWrite, "bypassDocumentValidation": ActionWrite,
	"createCollection": ActionDDL, "dropCollection": ActionDDL, "createIndex": ActionDDL, "dropIndex": ActionDDL,
	"renameCollectionSameDB": ActionDDL, "createSearchIndexes": ActionDDL, "dropSearchIndex": ActionDDL,
	"updateSearchIndex": ActionDDL, "convertToCapped": ActionDDL,
	"listCollections": ActionListing, "listIndexes": ActionListing, "collStats": ActionListing,
	"dbStats": ActionListing, "dbHash": ActionListing,
	"collMod": ActionDBAdmin, "dropDatabase": ActionDBAdmin, "enableProfiler": ActionDBAdmin,
	"validate": ActionDBAdmin, "compact": ActionDBAdmin, "reIndex": ActionDBAdmin,
	"createUser": ActionUserAdmin, "dropUser": ActionUserAdmin, "viewUser": ActionUserAdmin,
	"createRole": ActionUserAdmin, "dropRole": ActionUserAdmin, "viewRole": ActionUserAdmin,
	"grantRole": ActionUserAdmin, "revokeRole": ActionUserAdmin, "changePassword": ActionUserAdmin,
	"changeCustomData": ActionUserAdmin,
	"listDatabases":    ActionAuthenticated,
	"serverStatus":     ActionClusterAdmin, "hostInfo": ActionClusterAdmin, "getCmdLineOpts": ActionClusterAdmin,
	"getParameter": ActionClusterAdmin, "setParameter": ActionClusterAdmin, "getLog": ActionClusterAdmin,
	"inprog": ActionClusterAdmin, "killop": ActionClusterAdmin, "listShards": ActionClusterAdmin,
	"enableSharding": ActionClusterAdmin, "moveChunk": ActionClusterAdmin, "shutdown": ActionClusterAdmin,
	"getDefaultRWConcern": ActionClusterAdmin, "setDefaultRWConcern": ActionClusterAdmin, "configureCollectionBalancing": ActionClusterAdmin, "connPoolStats": ActionClusterAdmin, "dropConnections": ActionClusterAdmin,
	"logRotate": ActionClusterAdmin, "getClusterParameter": ActionClusterAdmin, "setClusterParameter": ActionClusterAdmin, "killAnySession": ActionClusterAdmin,
	"internal":  ActionInternal,
	"anyAction": ActionUndeclared, // expanded below to every class
}

// ActionClass returns the class of a MongoDB action name; ok is false for unknown names.
func ActionClass(name string) (Action, bool) {
	a, ok := actionClasses[name]
	return a, ok
}

// BuiltinPrivileges returns the privileges of a built-in role in MongoDB's vocabulary: for
// each class it grants, the MongoDB action names of that class, sorted (nil if r is not
// built in).
func BuiltinPrivileges(r RoleName) []Privilege {
	var out []Privilege
	for _, g := range builtinGrants(r) {
		p := Privilege{DB: g.db, Cluster: g.cluster && g.db != ""}
		if g.cluster && g.db == "" {
			p.AnyResource = true
		}
		for name, a := range actionClasses {
			if a != ActionUndeclared && g.actions.has(a) {
				p.Actions = append(p.Actions, name)
			}
		}
		slices.Sort(p.Actions)
		out = append(out, p)
	}
	return out
}
