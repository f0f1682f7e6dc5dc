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

// TestUserErrmsgSASLprep: a SCRAM-SHA-256 password that SASLprep (RFC 4013, Unicode 3.2)
// refuses is answered as MongoDB's ICU profile words it, 50692 with ICU's error name; a
// SCRAM-SHA-1-only user has no SASLprep and keeps such a password.
func TestUserErrmsgSASLprep(t *testing.T) {
	t.Parallel()
	db := sharedServer(t).client(t).Database(dbName(t))
	if err := db.RunCommand(context.Background(), wrJSON(t, `{"createUser": "have", "pwd": "pw", "roles": []}`)).Err(); err != nil {
		t.Fatal(err)
	}
	const (
		prohibited = "Error preflighting normalization: U_STRINGPREP_PROHIBITED_ERROR"
		unassigned = "Error preflighting normalization: U_STRINGPREP_UNASSIGNED_ERROR"
		bidi       = "Error preflighting normalization: U_STRINGPREP_CHECK_BIDI_ERROR"
	)
	runErrmsgCases(t, db, []errmsgCase{
		{"CreateUserControlChar", `{"createUser": "u1", "pwd": "a\u0007b", "roles": []}`, 50692, "Location50692", prohibited},
		{"CreateUserPrivateUse", `{"createUser": "u1", "pwd": "\uE000", "roles": []}`, 50692, "Location50692", prohibited},
		{"CreateUserNonCharacter", `{"createUser": "u1", "pwd": "x\uFFFF", "roles": [], "mechanisms": ["SCRAM-SHA-256"]}`,
			50692, "Location50692", prohibited},
		{"CreateUserUnassigned", `{"createUser": "u1", "pwd": "\u0221", "roles": []}`, 50692, "Location50692", unassigned},
		{"CreateUserUnassignedBeforeProhibited", `{"createUser": "u1", "pwd": "\u0007\u0221", "roles": []}`,
			50692, "Location50692", unassigned},
		{"CreateUserMixedDirection", `{"createUser": "u1", "pwd": "\u05D0a", "roles": []}`, 50692, "Location50692", bidi},
		{"CreateUserRTLNotAtEnd", `{"createUser": "u1", "pwd": "\u05D01", "roles": []}`, 50692, "Location50692", bidi},
		{"UpdateUserControlChar", `{"updateUser": "have", "pwd": "\u0000x"}`, 50692, "Location50692", prohibited},
	})
	for _, ok := range []string{
		`{"createUser": "sha1only", "pwd": "a\u0007b", "roles": [], "mechanisms": ["SCRAM-SHA-1"]}`,
		`{"createUser": "mapped", "pwd": "a\u00A0b\u00ADc", "roles": []}`, // mapped to a space, and to nothing
		`{"createUser": "rtl", "pwd": "\u05D0\u05D1", "roles": []}`,
	} {
		if err := db.RunCommand(context.Background(), wrJSON(t, ok)).Err(); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
