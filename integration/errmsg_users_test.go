package integration

import (
	"context"
	"testing"
)

// TestUserErrmsg: the user management commands word a missing user as MongoDB does at each
// place it finds out, and refuse an empty password as SCRAM-SHA-256's SASLprep does.
func TestUserErrmsg(t *testing.T) {
	t.Parallel()
	db := sharedServer(t).client(t).Database(dbName(t))
	n := dbName(t)
	if err := db.RunCommand(context.Background(), wrJSON(t, `{"createUser": "have", "pwd": "pw", "roles": []}`)).Err(); err != nil {
		t.Fatal(err)
	}
	const emptyPwd = "Error preflighting UTF-8 conversion: U_STRING_NOT_TERMINATED_WARNING"
	runErrmsgCases(t, db, []errmsgCase{
		{"DropUserMissing", `{"dropUser": "nobody"}`, 11, "UserNotFound", "User 'nobody@" + n + "' not found"},
		{"UpdateUserMissing", `{"updateUser": "nobody", "pwd": "x"}`, 11, "UserNotFound", "User nobody@" + n + " not found"},
		{"UpdateUserEmptyName", `{"updateUser": "", "pwd": "x"}`, 11, "UserNotFound", "User @" + n + " not found"},
		{"UpdateUserMissingRoleFirst", `{"updateUser": "nobody", "roles": ["nope"]}`, 31, "RoleNotFound", "Could not find role: nope@" + n},
		{"GrantRolesMissing", `{"grantRolesToUser": "nobody", "roles": ["read"]}`, 11, "UserNotFound",
			`Could not find user "nobody" for db "` + n + `"`},
		{"CreateUserEmptyPassword", `{"createUser": "u1", "pwd": "", "roles": []}`, 50687, "Location50687", emptyPwd},
		{"CreateUserEmptyPasswordSHA256", `{"createUser": "u1", "pwd": "", "roles": [], "mechanisms": ["SCRAM-SHA-256"]}`,
			50687, "Location50687", emptyPwd},
		{"CreateUserExistingEmptyPassword", `{"createUser": "have", "pwd": "", "roles": []}`, 50687, "Location50687", emptyPwd},
		{"UpdateUserEmptyPassword", `{"updateUser": "have", "pwd": ""}`, 50687, "Location50687", emptyPwd},
		{"CreateUserEmptyName", `{"createUser": "", "pwd": "pw", "roles": []}`, 2, "BadValue",
			"User document needs 'user' field to be non-empty"},
		{"CreateUserMissingRoles", `{"createUser": "u2"}`, 40414, "Location40414", "BSON field 'createUser.roles' is missing but a required field"},
		{"CreateUserExists", `{"createUser": "have", "pwd": "pw", "roles": []}`, 51003, "Location51003", `User "have@` + n + `" already exists`},
	})
	// Without SCRAM-SHA-256 there is no SASLprep, and MongoDB takes the empty password.
	if err := db.RunCommand(context.Background(), wrJSON(t,
		`{"createUser": "sha1only", "pwd": "", "roles": [], "mechanisms": ["SCRAM-SHA-1"]}`)).Err(); err != nil {
		t.Errorf("createUser with an empty SCRAM-SHA-1 password: %v", err)
	}
}
