package integration

import (
	"context"
	"testing"
)

// TestRoleErrmsg: createRole and dropRole refuse what MongoDB refuses with its codes and
// words (user_management_commands.cpp: createRole's name checks, checkOkayToGrantRolesToRole,
// checkOkayToGrantPrivilegesToRole, insertRoleDocument, dropRole's built-in check and
// rolesExist), in its order.
func TestRoleErrmsg(t *testing.T) {
	t.Parallel()
	cl := sharedServer(t).client(t)
	n := dbName(t)
	db := cl.Database(n)
	for _, cmd := range []string{
		`{"createRole": "base", "privileges": [], "roles": []}`,
		`{"createRole": "child", "privileges": [], "roles": ["base"]}`,
	} {
		if err := db.RunCommand(context.Background(), wrJSON(t, cmd)).Err(); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
	}
	privs := "Roles on the '" + n + "' database cannot be granted privileges that target other databases or the cluster"
	runErrmsgCases(t, db, []errmsgCase{
		{"CreateRoleEmptyName", `{"createRole": "", "privileges": [], "roles": []}`, 2, "BadValue", "Role name must be non-empty"},
		{"CreateRoleBuiltin", `{"createRole": "readWrite", "privileges": [], "roles": []}`, 2, "BadValue",
			"Cannot create roles with the same name as a built-in role"},
		{"CreateRoleExists", `{"createRole": "base", "privileges": [], "roles": []}`, 51002, "Location51002", `Role "base@` + n + `" already exists`},
		{"CreateRoleItself", `{"createRole": "me", "privileges": [], "roles": ["me"]}`, 49, "InvalidRoleModification",
			"Cannot grant role me@" + n + " to itself."},
		{"CreateRoleOtherDBRole", `{"createRole": "r1", "privileges": [], "roles": [{"role": "read", "db": "other"}]}`, 49, "InvalidRoleModification",
			"Roles on the '" + n + "' database cannot be granted roles from other databases"},
		{"CreateRoleMissingRole", `{"createRole": "r1", "privileges": [], "roles": ["nope"]}`, 31, "RoleNotFound",
			"Cannot grant roles to 'r1@" + n + "': Could not find role: nope@" + n},
		{"CreateRoleMissingRoleBeforePrivileges", `{"createRole": "r1", "privileges": [{"resource": {"cluster": true}, "actions": ["inprog"]}], "roles": ["nope"]}`,
			31, "RoleNotFound", "Cannot grant roles to 'r1@" + n + "': Could not find role: nope@" + n},
		{"CreateRoleExistsAfterGrantChecks", `{"createRole": "base", "privileges": [], "roles": ["nope"]}`, 31, "RoleNotFound",
			"Cannot grant roles to 'base@" + n + "': Could not find role: nope@" + n},
		{"CreateRoleClusterPrivilege", `{"createRole": "r1", "privileges": [{"resource": {"cluster": true}, "actions": ["inprog"]}], "roles": []}`,
			49, "InvalidRoleModification", privs},
		{"CreateRoleAnyResource", `{"createRole": "r1", "privileges": [{"resource": {"anyResource": true}, "actions": ["find"]}], "roles": []}`,
			49, "InvalidRoleModification", privs},
		{"CreateRoleOtherDBPrivilege", `{"createRole": "r1", "privileges": [{"resource": {"db": "other", "collection": ""}, "actions": ["find"]}], "roles": []}`,
			49, "InvalidRoleModification", privs},
		{"CreateRoleEveryDBPrivilege", `{"createRole": "r1", "privileges": [{"resource": {"db": "", "collection": "c"}, "actions": ["find"]}], "roles": []}`,
			49, "InvalidRoleModification", privs},
		{"DropRoleMissing", `{"dropRole": "nope"}`, 31, "RoleNotFound", "Could not find role: nope@" + n},
		{"DropRoleBuiltin", `{"dropRole": "read"}`, 2, "BadValue", "read@" + n + " is a built-in role and cannot be modified"},
	})
	runErrmsgCases(t, cl.Database("local"), []errmsgCase{
		{"CreateRoleLocal", `{"createRole": "r1", "privileges": [], "roles": []}`, 2, "BadValue", "Cannot create roles in the local database"},
	})
	// NB: createRole on $external is not tested: cleave refuses the database name itself (73).
	// An admin role may hold any privilege and roles of any database.
	if err := cl.Database("admin").RunCommand(context.Background(), wrJSON(t, `{"createRole": "`+n+`Ops", "roles": [{"role": "base", "db": "`+n+`"}],
		"privileges": [{"resource": {"cluster": true}, "actions": ["inprog"]}, {"resource": {"db": "other", "collection": ""}, "actions": ["find"]}]}`)).Err(); err != nil {
		t.Errorf("an admin role with cluster and other databases' privileges: %v", err)
	}
}
