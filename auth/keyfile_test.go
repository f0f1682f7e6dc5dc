package auth

import "testing"

// TestInternalActionOnlySystem: the internal action is __system's alone; root, clusterAdmin
// and a custom role with anyAction do not have it.
func TestInternalActionOnlySystem(t *testing.T) {
	sys, err := InternalUser("abcdefgh")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string, roles ...RoleName) *User {
		return &User{Name: UserName{User: name, DB: "admin"}, Roles: roles}
	}
	root := mk("root", RoleName{"root", "admin"})
	ca := mk("ca", RoleName{"clusterAdmin", "admin"})
	anyAct := mk("any", RoleName{"anything", "admin"})
	reg := NewRegistry([]*User{root, ca, anyAct}, []*Role{{Name: RoleName{"anything", "admin"},
		Privileges: []Privilege{{AnyResource: true, Actions: []string{"anyAction"}}}}}).WithInternal(sys)
	internal := Need{Action: ActionInternal, DB: "app"}
	for _, u := range []*User{root, ca, anyAct} {
		if reg.Allowed([]UserName{u.Name}, internal) {
			t.Errorf("%s may run internal commands", u.Name)
		}
	}
	if !reg.Allowed([]UserName{InternalUserName}, internal) || !reg.Allowed([]UserName{InternalUserName}, Need{Action: ActionWrite, DB: "app"}) {
		t.Error("__system may not run internal commands or write")
	}
	if !reg.Allowed([]UserName{root.Name}, Need{Action: ActionClusterAdmin}) {
		t.Error("root lost clusterAdmin")
	}
	if reg.HasUsers() != true || len(reg.Users("local")) != 0 || reg.User(InternalUserName) != sys {
		t.Error("the internal user must be found by name and listed nowhere")
	}
	if NewRegistry(nil, nil).WithInternal(sys).HasUsers() {
		t.Error("the internal user ends the localhost exception")
	}
}
