package access

import (
	"net"

	"github.com/cleavedb/cleave/auth"
)

// Conn is a connection's authentication: who it is, and the SASL conversation under way.
// A connection runs one command at a time, so it needs no lock.
type Conn struct {
	// Users are those the connection authenticated as (one at most: a second
	// authentication replaces the first).
	Users []auth.UserName
	conv  *conversation
}

// Logout forgets the connection's users and any conversation under way.
func (c *Conn) Logout() { *c = Conn{} }

// Allowed reports whether the connection's users may do everything needs names (with
// access control on; a caller checks Enabled first).
func (s *State) Allowed(c *Conn, needs []auth.Need) bool {
	reg := s.Registry()
	for _, n := range needs {
		if !reg.Allowed(c.Users, n) {
			return false
		}
	}
	return true
}

// LocalhostException reports whether an unauthenticated connection from remote may run
// command name on db anyway: while no user exists, a client on the loopback interface may
// create the first user on admin.
func (s *State) LocalhostException(name, db string, remote net.Addr) bool {
	return name == "createUser" && db == "admin" && !s.Registry().HasUsers() && isLoopback(remote)
}

// isLoopback reports whether addr is a loopback address (or a Unix socket).
func isLoopback(addr net.Addr) bool {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}
