package exec

import (
	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// authorize checks that the connection may run cmd (only with access control on). It is the
// one place commands are checked; each command declares its action in the table, and
// commands whose needs depend on their arguments (aggregate with $out, renameCollection,
// user commands granting roles) add a needs function.
func (e *Executor) authorize(r *command.Request, cmd *command.Command) error {
	if !e.Access.Enabled() || cmd.Action == auth.ActionNone {
		return nil
	}
	if len(r.Conn.Authn.Users) == 0 {
		if e.Access.LocalhostException(r.Name, r.DB, r.Conn.Info.Remote) {
			return nil
		}
		return mongoerr.New(mongoerr.Unauthorized, "Command %s requires authentication", r.Name)
	}
	needs := []auth.Need{{Action: cmd.Action, DB: r.DB, Coll: commandCollection(r)}}
	if cmd.Needs != nil {
		needs = cmd.Needs(r, needs[0])
	}
	if !e.Access.Allowed(&r.Conn.Authn, needs) {
		return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to execute command %s", r.DB, bsonx.ShellDoc(command.RedactSecrets(r.Body)))
	}
	return nil
}

// commandCollection is the collection a command names in its first field, "" when it names
// none (aggregate: 1, dropDatabase).
func commandCollection(r *command.Request) string {
	first, ok := bsonx.FirstElement(r.Body)
	if !ok {
		return ""
	}
	s, _ := first.Value().StringValueOK()
	return s
}

// EnsureRootUser creates user on admin with the root role and password when no user exists
// yet (the startup flags' way to the first user); with users it does nothing.
func (e *Executor) EnsureRootUser(user, password string) error {
	return e.Access.EnsureRootUser(user, password)
}
