package command

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/access"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// AuthOptions configures access control.
type AuthOptions = access.Options

// authorize checks that the connection may run cmd (only with access control on). It is the
// one place commands are checked; each command declares its action in the table, and
// commands whose needs depend on their arguments (aggregate with $out, renameCollection,
// user commands granting roles) add a needs function.
func (e *Server) authorize(r *Request, cmd *Command) error {
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
		return mongoerr.New(mongoerr.Unauthorized, "not authorized on %s to execute command %s", r.DB, bsonx.ShellDoc(redactSecrets(r.Body)))
	}
	return nil
}

// commandCollection is the collection a command names in its first field, "" when it names
// none (aggregate: 1, dropDatabase).
func commandCollection(r *Request) string {
	first, ok := bsonx.FirstElement(r.Body)
	if !ok {
		return ""
	}
	s, _ := first.Value().StringValueOK()
	return s
}

// aggregateNeeds adds, for a pipeline ending in $out or $merge, write and DDL on the target
// (which may be in another database); $lookup and $unionWith read r.db, which the read
// need covers. A pipeline that does not parse keeps the read need: aggregate reports it.
func AggregateNeeds(r *Request, def auth.Need) []auth.Need {
	needs := []auth.Need{def}
	pipeline, ok := r.Body.Lookup("pipeline").ArrayOK()
	if !ok {
		return needs
	}
	stages, _ := pipeline.Values()
	if len(stages) == 0 {
		return needs
	}
	last, ok := stages[len(stages)-1].DocumentOK()
	if !ok {
		return needs
	}
	el, err := last.IndexErr(0)
	if err != nil {
		return needs
	}
	var target bsoncore.Value
	switch el.Key() {
	case "$out":
		target = el.Value()
	case "$merge":
		target = el.Value()
		if d, ok := target.DocumentOK(); ok {
			target = d.Lookup("into")
		}
	default:
		return needs
	}
	db, coll := r.DB, ""
	if s, ok := target.StringValueOK(); ok {
		coll = s
	} else if d, ok := target.DocumentOK(); ok {
		if s, ok := d.Lookup("db").StringValueOK(); ok {
			db = s
		}
		coll, _ = d.Lookup("coll").StringValueOK()
	}
	return append(needs, auth.Need{Action: auth.ActionWrite, DB: db, Coll: coll},
		auth.Need{Action: auth.ActionDDL, DB: db, Coll: coll})
}

// renameNeeds is renameCollection's: it runs on admin but acts on the namespaces it names,
// DDL on both and, across databases, reading the source and writing the target.
func RenameNeeds(r *Request, _ auth.Need) []auth.Need {
	from, _ := r.Body.Lookup("renameCollection").StringValueOK()
	to, _ := r.Body.Lookup("to").StringValueOK()
	fromDB, fromColl, _ := strings.Cut(from, ".")
	toDB, toColl, _ := strings.Cut(to, ".")
	needs := []auth.Need{
		{Action: auth.ActionDDL, DB: fromDB, Coll: fromColl},
		{Action: auth.ActionDDL, DB: toDB, Coll: toColl},
	}
	if fromDB != toDB {
		needs = append(needs, auth.Need{Action: auth.ActionRead, DB: fromDB, Coll: fromColl},
			auth.Need{Action: auth.ActionWrite, DB: toDB, Coll: toColl})
	}
	return needs
}

// redactSecrets returns body with a top-level pwd replaced by "xxx", as MongoDB redacts
// commands in messages and currentOp; body itself when it holds none.
func redactSecrets(body bsoncore.Document) bsoncore.Document {
	if _, err := body.LookupErr("pwd"); err != nil {
		return body
	}
	idx, out := bsoncore.AppendDocumentStart(nil)
	elems, _ := body.Elements()
	for _, el := range elems {
		if el.Key() == "pwd" {
			out = bsoncore.AppendStringElement(out, "pwd", "xxx")
			continue
		}
		out = append(out, el...)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// EnsureRootUser creates user on admin with the root role and password when no user exists
// yet (the startup flags' way to the first user); with users it does nothing.
func (e *Server) EnsureRootUser(user, password string) error {
	return e.Access.EnsureRootUser(user, password)
}
