package cursor

import (
	"errors"
	"testing"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestCursorCheckUsers checks who may continue a cursor under access control (mongos's
// isCoauthorizedWith at checkout): one of the users who opened it, or anyone
// unauthenticated when nobody was.
func TestCursorCheckUsers(t *testing.T) {
	alice, bob := auth.UserName{User: "alice", DB: "app"}, auth.UserName{User: "bob", DB: "app"}
	aliceAdmin := auth.UserName{User: "alice", DB: "admin"}
	cases := []struct {
		name         string
		opened, cont []auth.UserName
		ok           bool
	}{
		{"SameUser", []auth.UserName{alice}, []auth.UserName{alice}, true},
		{"OtherUser", []auth.UserName{alice}, []auth.UserName{bob}, false},
		{"SameNameOtherDB", []auth.UserName{alice}, []auth.UserName{aliceAdmin}, false},
		{"Unauthenticated", []auth.UserName{alice}, nil, false},
		{"OpenedUnauthenticated", nil, []auth.UserName{alice}, false},
		{"BothUnauthenticated", nil, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cursor{ID: 42, Users: tc.opened}
			err := c.CheckUsers(tc.cont)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var me *mongoerr.Error
			if !errors.As(err, &me) || me.Code != mongoerr.Unauthorized ||
				me.Message != "cursor id 42 was not created by the authenticated user :: caused by :: User not authorized to access cursor" {
				t.Fatalf("got %v, want Unauthorized", err)
			}
		})
	}
}
