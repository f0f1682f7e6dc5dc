package access_test

import (
	"net"
	"slices"
	"testing"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/access"
	"github.com/cleavedb/cleave/store"
)

// openCatalog opens a store in a temporary directory and returns its catalog, closed when
// the test ends.
func openCatalog(t *testing.T) *store.Catalog {
	t.Helper()
	db, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cat, err := store.OpenCatalog(db)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// rootName is the root user the tests create.
var rootName = auth.UserName{User: "root", DB: "admin"}

// withRoot returns access control over a new catalog holding the root user (password pw).
func withRoot(t *testing.T, opts access.Options) *access.State {
	t.Helper()
	st := access.New(opts, openCatalog(t), zap.NewNop())
	if err := st.EnsureRootUser(rootName.User, "pw"); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestNewWithoutStorage checks access control without storage: no users, no root user to
// create, and only what needs no user is allowed.
func TestNewWithoutStorage(t *testing.T) {
	st := access.New(access.Options{Enabled: true}, nil, zap.NewNop())
	if !st.Enabled() || st.InternalKey() != "" {
		t.Fatalf("Enabled %v, InternalKey %q", st.Enabled(), st.InternalKey())
	}
	if st.Registry() == nil || st.Registry().HasUsers() {
		t.Fatal("a registry without storage has users")
	}
	if err := st.EnsureRootUser("root", "pw"); err == nil {
		t.Fatal("EnsureRootUser without storage succeeded")
	}
	c := &access.Conn{}
	if !st.Allowed(c, []auth.Need{{Action: auth.ActionNone}}) || st.Allowed(c, []auth.Need{{Action: auth.ActionRead, DB: "db"}}) {
		t.Fatal("an unauthenticated connection without storage")
	}
	if access.New(access.Options{}, nil, zap.NewNop()).Enabled() {
		t.Fatal("Enabled without the option")
	}
}

// TestEnsureRootUser checks the first user of the startup flags: refused without a name or
// a password, created on admin with the root role and both SCRAM mechanisms, kept in the
// catalog, and not created (nor replaced) once a user exists.
func TestEnsureRootUser(t *testing.T) {
	cat := openCatalog(t)
	st := access.New(access.Options{}, cat, zap.NewNop())
	for _, bad := range [][2]string{{"", "pw"}, {"root", ""}} {
		if err := st.EnsureRootUser(bad[0], bad[1]); err == nil {
			t.Fatalf("EnsureRootUser(%q, %q) succeeded", bad[0], bad[1])
		}
	}
	if st.Registry().HasUsers() {
		t.Fatal("a refused EnsureRootUser created a user")
	}
	if err := st.EnsureRootUser("root", "pw"); err != nil {
		t.Fatal(err)
	}
	u := st.Registry().User(rootName)
	if u == nil || !slices.Equal(u.Roles, []auth.RoleName{{Role: "root", DB: "admin"}}) {
		t.Fatalf("root user %+v", u)
	}
	if got := st.SupportedMechs("admin.root"); !slices.Equal(got, []string{"SCRAM-SHA-1", "SCRAM-SHA-256"}) {
		t.Fatalf("mechanisms %v", got)
	}
	if err := st.EnsureRootUser("other", "pw2"); err != nil {
		t.Fatal(err)
	}
	if st.Registry().User(auth.UserName{User: "other", DB: "admin"}) != nil || st.Registry().User(rootName) == nil {
		t.Fatal("EnsureRootUser with users present changed them")
	}
	reopened := access.New(access.Options{}, cat, zap.NewNop()) // a restart reads the records
	if reopened.Registry().User(rootName) == nil {
		t.Fatal("the root user is not in the catalog")
	}
}

// TestAllowed checks the check of a command's needs: everything but the internal action
// for root, only what needs no user without one, and every need of a list at once.
func TestAllowed(t *testing.T) {
	st := withRoot(t, access.Options{Enabled: true})
	root, anon := &access.Conn{Users: []auth.UserName{rootName}}, &access.Conn{}
	ghost := &access.Conn{Users: []auth.UserName{{User: "ghost", DB: "admin"}}}
	read := auth.Need{Action: auth.ActionRead, DB: "shop", Coll: "orders"}
	for _, tc := range []struct {
		name  string
		c     *access.Conn
		needs []auth.Need
		want  bool
	}{
		{"RootReads", root, []auth.Need{read}, true},
		{"RootAdministers", root, []auth.Need{{Action: auth.ActionClusterAdmin}, {Action: auth.ActionUserAdmin, DB: "x"}}, true},
		{"RootNotInternal", root, []auth.Need{{Action: auth.ActionInternal}}, false},
		{"RootUndeclared", root, []auth.Need{{Action: auth.ActionUndeclared}}, true},
		{"AnonHandshake", anon, []auth.Need{{Action: auth.ActionNone}}, true},
		{"AnonReads", anon, []auth.Need{read}, false},
		{"AnonAuthenticated", anon, []auth.Need{{Action: auth.ActionAuthenticated}}, false},
		{"AnonOneOfTwo", anon, []auth.Need{{Action: auth.ActionNone}, read}, false},
		{"NoNeeds", anon, nil, true},
		{"DroppedUser", ghost, []auth.Need{read}, false},
		{"DroppedUserAuthenticated", ghost, []auth.Need{{Action: auth.ActionAuthenticated}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.Allowed(tc.c, tc.needs); got != tc.want {
				t.Fatalf("Allowed = %v, want %v", got, tc.want)
			}
		})
	}
	root.Logout()
	if len(root.Users) != 0 || st.Allowed(root, []auth.Need{read}) {
		t.Fatal("a connection logged out still reads")
	}
}

// TestLocalhostException checks the exception: only createUser, only on admin, only from
// the loopback interface (or a Unix socket), only while no user exists.
func TestLocalhostException(t *testing.T) {
	st := access.New(access.Options{Enabled: true}, openCatalog(t), zap.NewNop())
	v4 := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5000}
	v6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 5000}
	other := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5000}
	unix := &net.UnixAddr{Name: "/tmp/cleave.sock", Net: "unix"}
	for _, tc := range []struct {
		name, cmd, db string
		remote        net.Addr
		want          bool
	}{
		{"LoopbackV4", "createUser", "admin", v4, true},
		{"LoopbackV6", "createUser", "admin", v6, true},
		{"UnixSocket", "createUser", "admin", unix, true},
		{"OtherHost", "createUser", "admin", other, false},
		{"NoAddress", "createUser", "admin", nil, false},
		{"OtherDatabase", "createUser", "shop", v4, false},
		{"OtherCommand", "createRole", "admin", v4, false},
		{"Read", "find", "admin", v4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.LocalhostException(tc.cmd, tc.db, tc.remote); got != tc.want {
				t.Fatalf("LocalhostException = %v, want %v", got, tc.want)
			}
		})
	}
	if err := st.EnsureRootUser("root", "pw"); err != nil {
		t.Fatal(err)
	}
	if st.LocalhostException("createUser", "admin", v4) {
		t.Fatal("the exception holds once a user exists")
	}
}

// TestSupportedMechs checks hello's saslSupportedMechs: the mechanisms of "db.user", nil
// for an unknown user or a name without a database.
func TestSupportedMechs(t *testing.T) {
	st := withRoot(t, access.Options{})
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"admin.root", []string{"SCRAM-SHA-1", "SCRAM-SHA-256"}},
		{"admin.nobody", nil},
		{"shop.root", nil},
		{"root", nil},
		{"", nil},
	} {
		if got := st.SupportedMechs(tc.name); !slices.Equal(got, tc.want) {
			t.Errorf("SupportedMechs(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
