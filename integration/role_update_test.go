package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestRoleUpdateErrmsg: updateRole, grantRolesToRole, revokeRolesFromRole,
// grantPrivilegesToRole and revokePrivilegesFromRole refuse what MongoDB refuses, with its
// codes and words and in its order (user_management_commands.cpp: the IDL's fields, the
// empty arrays, the built-in role, checkOkayToGrantRolesToRole and
// checkOkayToGrantPrivilegesToRole, rolesExist, updateRoleDocument's RoleNotFound).
func TestRoleUpdateErrmsg(t *testing.T) {
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
	find := `{"resource": {"db": "` + n + `", "collection": ""}, "actions": ["find"]}`
	privs := "Roles on the '" + n + "' database cannot be granted privileges that target other databases or the cluster"
	runErrmsgCases(t, db, []errmsgCase{
		{"UpdateRoleNothing", `{"updateRole": "base"}`, 2, "BadValue", "Must specify at least one field to update in updateRole"},
		{"UpdateRoleMissing", `{"updateRole": "nope", "roles": []}`, 31, "RoleNotFound", "Could not find role: nope@" + n},
		{"UpdateRoleBuiltin", `{"updateRole": "read", "roles": ["readWrite"]}`, 31, "RoleNotFound", "Role read@" + n + " not found"},
		{"UpdateRoleCycle", `{"updateRole": "base", "roles": ["child"]}`, 49, "InvalidRoleModification",
			"Granting roles to base@" + n + " would introduce a cycle in the role graph"},
		{"UpdateRoleUnknownRole", `{"updateRole": "base", "roles": ["nope"]}`, 31, "RoleNotFound",
			"Cannot grant roles to 'base@" + n + "': Could not find role: nope@" + n},
		{"UpdateRoleUnknownAction", `{"updateRole": "base", "privileges": [{"resource": {"db": "` + n + `", "collection": ""}, "actions": ["fly"]}]}`,
			2, "BadValue", "Unrecognized action privilege string: fly"},
		{"UpdateRoleClusterPrivilege", `{"updateRole": "base", "privileges": [{"resource": {"cluster": true}, "actions": ["inprog"]}]}`,
			49, "InvalidRoleModification", privs},
		{"GrantRolesMissingField", `{"grantRolesToRole": "base"}`, 40414, "Location40414",
			"BSON field 'grantRolesToRole.roles' is missing but a required field"},
		{"GrantRolesEmpty", `{"grantRolesToRole": "base", "roles": []}`, 2, "BadValue", `grantRolesToRole command requires a non-empty "roles" array`},
		{"GrantRolesBuiltin", `{"grantRolesToRole": "read", "roles": ["base"]}`, 2, "BadValue", "read@" + n + " is a built-in role and cannot be modified"},
		{"GrantRolesItself", `{"grantRolesToRole": "base", "roles": ["base"]}`, 49, "InvalidRoleModification", "Cannot grant role base@" + n + " to itself."},
		{"GrantRolesOtherDB", `{"grantRolesToRole": "base", "roles": [{"role": "read", "db": "other"}]}`, 49, "InvalidRoleModification",
			"Roles on the '" + n + "' database cannot be granted roles from other databases"},
		{"GrantRolesCycle", `{"grantRolesToRole": "base", "roles": ["child"]}`, 49, "InvalidRoleModification",
			"Granting roles to base@" + n + " would introduce a cycle in the role graph"},
		{"GrantRolesToMissing", `{"grantRolesToRole": "nope", "roles": ["base"]}`, 31, "RoleNotFound", "Role nope@" + n + " not found"},
		{"GrantRolesWrongName", `{"grantRolesToRole": ["base"], "roles": ["read"]}`, 14, "TypeMismatch",
			"BSON field 'grantRolesToRole.grantRolesToRole' is the wrong type 'array', expected type 'string'"},
		{"RevokeRolesEmpty", `{"revokeRolesFromRole": "base", "roles": []}`, 2, "BadValue", `revokeRolesFromRole command requires a non-empty "roles" array`},
		{"RevokeRolesBuiltin", `{"revokeRolesFromRole": "readWrite", "roles": ["read"]}`, 2, "BadValue", "readWrite@" + n + " is a built-in role and cannot be modified"},
		{"RevokeRolesMissing", `{"revokeRolesFromRole": "nope", "roles": ["read"]}`, 31, "RoleNotFound", "Role nope@" + n + " not found"},
		{"GrantPrivilegesMissingField", `{"grantPrivilegesToRole": "base"}`, 40414, "Location40414",
			"BSON field 'grantPrivilegesToRole.privileges' is missing but a required field"},
		{"GrantPrivilegesEmpty", `{"grantPrivilegesToRole": "base", "privileges": []}`, 2, "BadValue",
			`grantPrivilegesToRole command requires a non-empty "privileges" array`},
		{"GrantPrivilegesBuiltin", `{"grantPrivilegesToRole": "read", "privileges": [` + find + `]}`, 2, "BadValue",
			"read@" + n + " is a built-in role and cannot be modified"},
		{"GrantPrivilegesOtherDB", `{"grantPrivilegesToRole": "base", "privileges": [{"resource": {"db": "other", "collection": ""}, "actions": ["find"]}]}`,
			49, "InvalidRoleModification", privs},
		{"GrantPrivilegesToMissing", `{"grantPrivilegesToRole": "nope", "privileges": [` + find + `]}`, 31, "RoleNotFound", "Role nope@" + n + " not found"},
		{"RevokePrivilegesEmpty", `{"revokePrivilegesFromRole": "base", "privileges": []}`, 2, "BadValue",
			`revokePrivilegesFromRole command requires a non-empty "privileges" array`},
		{"RevokePrivilegesBuiltin", `{"revokePrivilegesFromRole": "readWrite", "privileges": [` + find + `]}`, 2, "BadValue",
			"readWrite@" + n + " is a built-in role and cannot be modified"},
		{"RevokePrivilegesFromMissing", `{"revokePrivilegesFromRole": "nope", "privileges": [` + find + `]}`, 31, "RoleNotFound", "Role nope@" + n + " not found"},
	})
	// A failed check changed nothing: base still holds no role.
	var info struct {
		Roles []struct {
			Roles []bson.M `bson:"roles"`
		} `bson:"roles"`
	}
	if err := db.RunCommand(context.Background(), bson.D{{Key: "rolesInfo", Value: "base"}}).Decode(&info); err != nil {
		t.Fatal(err)
	}
	if len(info.Roles) != 1 || len(info.Roles[0].Roles) != 0 {
		t.Fatalf("base after the refused changes: %+v", info.Roles)
	}
}

// roleInfo returns rolesInfo's entry for role of db, with its privileges.
func roleInfo(t *testing.T, db *mongo.Database, role string) bson.M {
	t.Helper()
	var res struct {
		Roles []bson.M `bson:"roles"`
	}
	if err := db.RunCommand(context.Background(), bson.D{{Key: "rolesInfo", Value: role}, {Key: "showPrivileges", Value: true}}).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if len(res.Roles) != 1 {
		t.Fatalf("rolesInfo %s: %v", role, res.Roles)
	}
	return res.Roles[0]
}

// TestRoleUpdateAppliesAtOnce: a user authenticated on its own connection gains and loses
// what grantPrivilegesToRole, revokePrivilegesFromRole, grantRolesToRole,
// revokeRolesFromRole, updateRole and dropAllRolesFromDatabase change in its custom role,
// from its very next command, without authenticating again.
func TestRoleUpdateAppliesAtOnce(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t, "root", "rootpw")
	ctx := context.Background()
	root := asUser(t, srv, "root", "rootpw", "", "")
	app := root.Database("app")
	mustRun := func(cmd bson.D) bson.M {
		t.Helper()
		res, err := runCmd(t, app, cmd)
		if err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
		return res
	}
	mustRun(bson.D{{Key: "createRole", Value: "clerk"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}})
	mustRun(bson.D{{Key: "createRole", Value: "other"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}})
	mustRun(bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"clerk", "read"}}})
	mustRun(bson.D{{Key: "grantRolesToRole", Value: "other"}, {Key: "roles", Value: bson.A{"clerk"}}})
	if _, err := app.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	user := asUser(t, srv, "u", "pw", "app", "").Database("app").Collection("c")
	insert := func(id int) error {
		_, err := user.InsertOne(ctx, bson.D{{Key: "_id", Value: id}})
		return err
	}
	wantServerCode(t, "insert before any grant", insert(2), 13)

	orders := bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "app"}, {Key: "collection", Value: "c"}}}, {Key: "actions", Value: bson.A{"insert"}}}
	mustRun(bson.D{{Key: "grantPrivilegesToRole", Value: "clerk"}, {Key: "privileges", Value: bson.A{orders, orders}}})
	if err := insert(3); err != nil {
		t.Fatalf("insert right after grantPrivilegesToRole: %v", err)
	}
	if p := roleInfo(t, app, "clerk")["privileges"].(bson.A); len(p) != 1 {
		t.Fatalf("clerk's privileges after granting one twice: %v", p)
	}
	mustRun(bson.D{{Key: "revokePrivilegesFromRole", Value: "clerk"}, {Key: "privileges", Value: bson.A{orders}}})
	wantServerCode(t, "insert after revokePrivilegesFromRole", insert(4), 13)

	mustRun(bson.D{{Key: "grantRolesToRole", Value: "clerk"}, {Key: "roles", Value: bson.A{"readWrite", "readWrite"}}})
	if err := insert(5); err != nil {
		t.Fatalf("insert right after grantRolesToRole readWrite: %v", err)
	}
	if r := roleInfo(t, app, "clerk")["roles"].(bson.A); len(r) != 1 {
		t.Fatalf("clerk's roles after granting readWrite twice: %v", r)
	}
	mustRun(bson.D{{Key: "revokeRolesFromRole", Value: "clerk"}, {Key: "roles", Value: bson.A{"readWrite", "dbAdmin"}}})
	wantServerCode(t, "insert after revokeRolesFromRole", insert(6), 13)

	mustRun(bson.D{{Key: "updateRole", Value: "clerk"}, {Key: "roles", Value: bson.A{"readWrite"}}, {Key: "privileges", Value: bson.A{}}})
	if err := insert(7); err != nil {
		t.Fatalf("insert right after updateRole: %v", err)
	}

	res := mustRun(bson.D{{Key: "dropAllRolesFromDatabase", Value: 1}})
	if res["n"] != int32(2) {
		t.Fatalf("dropAllRolesFromDatabase: %v, want n: 2", res)
	}
	wantServerCode(t, "insert after dropAllRolesFromDatabase", insert(8), 13)
	if n, err := user.CountDocuments(ctx, bson.D{}); err != nil || n != 4 {
		t.Fatalf("the user still reads through read@app: %d, %v", n, err)
	}
	var users struct {
		Users []struct {
			Roles []bson.M `bson:"roles"`
		} `bson:"users"`
	}
	if err := app.RunCommand(ctx, bson.D{{Key: "usersInfo", Value: "u"}}).Decode(&users); err != nil {
		t.Fatal(err)
	}
	if len(users.Users) != 1 || len(users.Users[0].Roles) != 1 || users.Users[0].Roles[0]["role"] != "read" {
		t.Fatalf("u's roles after dropAllRolesFromDatabase: %+v", users.Users)
	}
}

// TestRoleUpdateMongosh drives mongosh's role helpers (db.updateRole, db.grantRolesToRole,
// db.revokeRolesFromRole, db.grantPrivilegesToRole, db.revokePrivilegesFromRole,
// db.dropAllRoles) and reads the roles back with db.getRole.
func TestRoleUpdateMongosh(t *testing.T) {
	t.Parallel()
	srv := sharedServer(t)
	n := dbName(t)
	script := `
const assert = require("assert");
db.createRole({role: "r1", privileges: [], roles: []});
db.createRole({role: "r2", privileges: [], roles: ["read", "read", "r1", "r1"]});
assert.strictEqual(db.getRole("r2").roles.length, 2);
db.grantRolesToRole("r1", ["readWrite"]);
assert.strictEqual(JSON.stringify(db.getRole("r1").roles.map(r => r.role)), '["readWrite"]');
db.revokeRolesFromRole("r1", ["readWrite", "nope"]);
assert.strictEqual(db.getRole("r1").roles.length, 0);
const priv = {resource: {db: db.getName(), collection: "c"}, actions: ["find"]};
db.grantPrivilegesToRole("r1", [priv, {resource: {db: db.getName(), collection: "c"}, actions: ["insert"]}]);
let p = db.getRole("r1", {showPrivileges: true}).privileges;
assert.strictEqual(p.length, 1);
assert.strictEqual(JSON.stringify(p[0].actions), '["find","insert"]');
db.revokePrivilegesFromRole("r1", [priv]);
p = db.getRole("r1", {showPrivileges: true}).privileges;
assert.strictEqual(JSON.stringify(p[0].actions), '["insert"]');
db.updateRole("r1", {privileges: [], roles: ["dbAdmin"]});
const r1 = db.getRole("r1", {showPrivileges: true});
assert.strictEqual(r1.privileges.length, 0);
assert.strictEqual(JSON.stringify(r1.roles.map(r => r.role)), '["dbAdmin"]');
let code = 0;
try { db.grantRolesToRole("r1", ["r2"]); db.grantRolesToRole("r2", ["r1"]); } catch (e) { code = e.code; }
assert.strictEqual(code, 49);
try { db.updateRole("nope", {roles: []}); } catch (e) { code = e.code; }
assert.strictEqual(code, 31);
const res = db.dropAllRoles();
assert.strictEqual(res.n, 2);
assert.strictEqual(db.getRoles().roles.length, 0);
print("role helpers ok");
`
	out := srv.mongosh(t, n, "--eval", script)
	if !strings.Contains(out, "role helpers ok") {
		t.Fatalf("mongosh:\n%s", out)
	}
}

// TestClusterRoleUpdateAcrossNodes: a privilege granted to a role on one node of a cluster
// reaches a user connected to another node (roles live in the shared catalog), and so does
// its revocation.
func TestClusterRoleUpdateAcrossNodes(t *testing.T) {
	t.Parallel()
	key := writeKeyFile(t, "cm9sZXMtYWNyb3NzLW5vZGVzLWtleS1mb3ItY2xlYXZl")
	_, nodes := startClusterNodes(t, 2, "--keyFile", key, "--auth-user", "root", "--auth-password", "rootpw")
	ctx := context.Background()
	rootA, rootB := authClient(t, nodes[0], "root", "rootpw", "admin"), authClient(t, nodes[1], "root", "rootpw", "admin")
	waitClusterShards(t, []*mongo.Client{rootA, rootB}, 2)
	dbn := dbName(t)
	if _, err := rootA.Database(dbn).Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []bson.D{
		{{Key: "createRole", Value: "viewer"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}},
		{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"viewer"}}},
	} {
		if _, err := runCmd(t, rootA.Database(dbn), cmd); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	var userB *mongo.Collection
	waitFor(t, 20*time.Second, "the user to authenticate on node-b", func() bool {
		c := authClient(t, nodes[1], "u", "pw", dbn)
		if c.Ping(ctx, nil) != nil {
			return false
		}
		userB = c.Database(dbn).Collection("c")
		return true
	})
	err := userB.FindOne(ctx, bson.D{}).Err()
	wantServerCode(t, "find on node-b before the grant", err, 13)
	find := bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: dbn}, {Key: "collection", Value: ""}}}, {Key: "actions", Value: bson.A{"find"}}}
	if _, err := runCmd(t, rootA.Database(dbn), bson.D{{Key: "grantPrivilegesToRole", Value: "viewer"}, {Key: "privileges", Value: bson.A{find}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "node-b to apply the grant made on node-a", func() bool {
		return userB.FindOne(ctx, bson.D{}).Err() == nil
	})
	if _, err := runCmd(t, rootB.Database(dbn), bson.D{{Key: "revokePrivilegesFromRole", Value: "viewer"}, {Key: "privileges", Value: bson.A{find}}}); err != nil {
		t.Fatal(err)
	}
	// node-b made the change: its own next command sees it at once.
	wantServerCode(t, "find on node-b right after its revocation", userB.FindOne(ctx, bson.D{}).Err(), 13)
	userA := authClient(t, nodes[0], "u", "pw", dbn).Database(dbn).Collection("c")
	waitFor(t, 20*time.Second, "node-a to apply the revocation made on node-b", func() bool {
		err := userA.FindOne(ctx, bson.D{}).Err()
		return err != nil && strings.Contains(err.Error(), "not authorized")
	})
}
