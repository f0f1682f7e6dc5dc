package auth

import (
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// testRegistry has one user per built-in role shape and a custom role chain.
func testRegistry() *Registry {
	user := func(name string, roles ...RoleName) *User {
		return &User{Name: UserName{name, "admin"}, Roles: roles}
	}
	return NewRegistry([]*User{
		user("reader", RoleName{"read", "app"}),
		user("writer", RoleName{"readWrite", "app"}),
		user("dba", RoleName{"dbAdmin", "app"}),
		user("useradmin", RoleName{"userAdmin", "app"}),
		user("cluster", RoleName{"clusterAdmin", "admin"}),
		user("anyreader", RoleName{"readAnyDatabase", "admin"}),
		user("root", RoleName{"root", "admin"}),
		user("custom", RoleName{"ordersWriter", "app"}),
		user("fake", RoleName{"root", "app"}), // root exists only in admin
	}, []*Role{
		{Name: RoleName{"ordersWriter", "app"}, Roles: []RoleName{{"ordersReader", "app"}},
			Privileges: []Privilege{{DB: "app", Coll: "orders", Actions: []string{"insert"}}}},
		{Name: RoleName{"ordersReader", "app"},
			Privileges: []Privilege{{DB: "app", Coll: "orders", Actions: []string{"find"}}}},
	})
}

func TestRegistryAllowed(t *testing.T) {
	cases := []struct {
		name string
		user string // "" for no authenticated user
		need Need
		want bool
	}{
		{"NoneNeedsNobody", "", Need{Action: ActionNone}, true},
		{"ReadNeedsAUser", "", Need{Action: ActionRead, DB: "app"}, false},
		{"AuthenticatedAnyUser", "useradmin", Need{Action: ActionAuthenticated}, true},
		{"ReaderReads", "reader", Need{Action: ActionRead, DB: "app", Coll: "c"}, true},
		{"ReaderCannotWrite", "reader", Need{Action: ActionWrite, DB: "app", Coll: "c"}, false},
		{"ReaderOtherDB", "reader", Need{Action: ActionRead, DB: "other"}, false},
		{"WriterWrites", "writer", Need{Action: ActionWrite, DB: "app"}, true},
		{"WriterCreatesIndexes", "writer", Need{Action: ActionDDL, DB: "app"}, true},
		{"WriterCannotCollMod", "writer", Need{Action: ActionDBAdmin, DB: "app"}, false},
		{"DBAdminCannotFind", "dba", Need{Action: ActionRead, DB: "app"}, false},
		{"DBAdminLists", "dba", Need{Action: ActionListing, DB: "app"}, true},
		{"UserAdminUsers", "useradmin", Need{Action: ActionUserAdmin, DB: "app"}, true},
		{"UserAdminCannotRead", "useradmin", Need{Action: ActionRead, DB: "app"}, false},
		{"ClusterAdminServer", "cluster", Need{Action: ActionClusterAdmin, DB: "admin"}, true},
		{"ClusterAdminCannotRead", "cluster", Need{Action: ActionRead, DB: "app"}, false},
		{"AnyReaderEverywhere", "anyreader", Need{Action: ActionRead, DB: "zzz"}, true},
		{"AnyReaderCannotWrite", "anyreader", Need{Action: ActionWrite, DB: "zzz"}, false},
		{"RootUndeclared", "root", Need{Action: ActionUndeclared, DB: "x"}, true},
		{"WriterUndeclared", "writer", Need{Action: ActionUndeclared, DB: "app"}, false},
		{"RootOnAppIsNoRole", "fake", Need{Action: ActionRead, DB: "app"}, false},
		{"CustomOwnPrivilege", "custom", Need{Action: ActionWrite, DB: "app", Coll: "orders"}, true},
		{"CustomInheritedPrivilege", "custom", Need{Action: ActionRead, DB: "app", Coll: "orders"}, true},
		{"CustomOtherCollection", "custom", Need{Action: ActionRead, DB: "app", Coll: "users"}, false},
		{"DroppedUser", "ghost", Need{Action: ActionRead, DB: "app"}, false},
	}
	reg := testRegistry()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var users []UserName
			if tc.user != "" {
				users = []UserName{{tc.user, "admin"}}
			}
			if got := reg.Allowed(users, tc.need); got != tc.want {
				t.Fatalf("Allowed(%s, %+v) = %v, want %v", tc.user, tc.need, got, tc.want)
			}
		})
	}
}

func TestRegistryInherited(t *testing.T) {
	got := testRegistry().Inherited([]RoleName{{"ordersWriter", "app"}, {"nosuch", "app"}})
	want := []RoleName{{"ordersReader", "app"}, {"ordersWriter", "app"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestUserRoleCodecRoundTrip(t *testing.T) {
	c, err := NewCredential(SCRAMSHA256, "alice", "pw")
	if err != nil {
		t.Fatal(err)
	}
	u := &User{Name: UserName{"alice", "app"}, ID: [16]byte{1, 2}, Credentials: map[Mechanism]Credential{SCRAMSHA256: c},
		Roles: []RoleName{{"read", "app"}}, CustomData: bsoncore.NewDocumentBuilder().AppendInt32("x", 1).Build()}
	got, err := DecodeUser(EncodeUser(u))
	if err != nil || !reflect.DeepEqual(got, u) {
		t.Fatalf("user round trip: %+v, %v", got, err)
	}
	r := &Role{Name: RoleName{"r", "app"}, Roles: []RoleName{{"read", "app"}},
		Privileges: []Privilege{{DB: "app", Coll: "", Actions: []string{"find", "insert"}}, {Cluster: true, Actions: []string{"serverStatus"}}}}
	gotR, err := DecodeRole(EncodeRole(r))
	if err != nil || !reflect.DeepEqual(gotR, r) {
		t.Fatalf("role round trip: %+v, %v", gotR, err)
	}
}
