package command

import (
	"context"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/session"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// killAllSessions and killAllSessionsByPattern, as MongoDB's SessionKiller matches them. A
// pattern with lsid kills that session ({id, uid}), one with uid the sessions of that user
// (SHA-256 of "user@db", the empty string's without authentication), and one with neither
// every session. users and roles are not filters: they are the identity the kill runs as
// (impersonation), which needs the root role when access control is on, and at most one
// user. killAllSessions: [{user, db}, ...] kills those users' sessions, [] every session.
// A killed session leaves the cache: its transaction is aborted and its cursors closed.

// killSessions runs {killSessions: [{id, uid?}, ...]}: each names a session of the caller
// (lsid.uid is the caller's digest unless given, which takes impersonation); [] names every
// session of the authenticated user, and none without one, as in MongoDB.
func (e *Server) killSessions(_ context.Context, r *Request) error {
	const cmd = "KillSessionsCmd"
	first, _ := bsonx.FirstElement(r.Body)
	arr, err := args.Array(cmd, "killSessions", first.Value())
	if err != nil {
		return err
	}
	caller := e.sessionUser(r).UID()
	vals, _ := arr.Values()
	if len(vals) == 0 {
		if !e.Access.Enabled() || len(r.Conn.Authn.Users) == 0 {
			return nil
		}
		return e.Sessions.Kill([]session.Pattern{{UID: &caller}})
	}
	patterns := make([]session.Pattern, 0, len(vals))
	for _, v := range vals {
		d, err := args.Doc(cmd, "killSessions", v)
		if err != nil {
			return err
		}
		id, ok := session.UUIDField(d, "id")
		if !ok {
			return session.LSIDFieldError(cmd+".killSessions", "id", d)
		}
		uid := &caller
		if uv, err := d.LookupErr("uid"); err == nil {
			given, ok := session.DigestField(uv)
			if !ok {
				return args.WrongType(cmd+".killSessions", "uid", uv.Type, "binData")
			}
			if !e.mayImpersonate(r) {
				return mongoerr.New(mongoerr.Unauthorized, "Unauthorized to set user digest in LogicalSessionId")
			}
			uid = &given
		}
		patterns = append(patterns, session.Pattern{LSID: &id, UID: uid})
	}
	return e.Sessions.Kill(patterns)
}

// killAllSessions runs {killAllSessions: [{user, db}, ...]}.
func (e *Server) killAllSessions(_ context.Context, r *Request) error {
	const cmd = "KillAllSessionsCmd"
	first, _ := bsonx.FirstElement(r.Body)
	arr, err := args.Array(cmd, "killAllSessions", first.Value())
	if err != nil {
		return err
	}
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return e.Sessions.Kill([]session.Pattern{{}})
	}
	patterns := make([]session.Pattern, 0, len(vals))
	for _, v := range vals {
		u, err := session.ParseKillUser(cmd+".killAllSessions", v)
		if err != nil {
			return err
		}
		d := session.UserDigest(u)
		patterns = append(patterns, session.Pattern{UID: &d})
	}
	return e.Sessions.Kill(patterns)
}

// killAllSessionsByPattern runs {killAllSessionsByPattern: [pattern, ...]}.
func (e *Server) killAllSessionsByPattern(_ context.Context, r *Request) error {
	const cmd = "KillAllSessionsByPatternCmd.killAllSessionsByPattern"
	first, _ := bsonx.FirstElement(r.Body)
	arr, err := args.Array("KillAllSessionsByPatternCmd", "killAllSessionsByPattern", first.Value())
	if err != nil {
		return err
	}
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return e.Sessions.Kill([]session.Pattern{{}})
	}
	patterns := make([]session.Pattern, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return args.WrongType("KillAllSessionsByPatternCmd", "killAllSessionsByPattern", v.Type, "object")
		}
		p, err := session.ParsePattern(cmd, d)
		if err != nil {
			return err
		}
		if (p.Users > 0 || p.Roles > 0) && !e.mayImpersonate(r) {
			return mongoerr.New(mongoerr.Unauthorized, "Not authorized to impersonate in killAllSessionsByPattern")
		}
		patterns = append(patterns, p)
	}
	return e.Sessions.Kill(patterns)
}

// mayImpersonate reports whether r's users may pass impersonation data (MongoDB's
// impersonate privilege, which only root and __system hold); anyone may without access
// control.
func (e *Server) mayImpersonate(r *Request) bool {
	if !e.Access.Enabled() {
		return true
	}
	reg := e.Access.Registry()
	var roles []auth.RoleName
	for _, n := range r.Conn.Authn.Users {
		if u := reg.User(n); u != nil {
			roles = append(roles, u.Roles...)
		}
	}
	for _, rn := range reg.Inherited(roles) {
		if rn.DB == "admin" && (rn.Role == "root" || rn.Role == "__system") {
			return true
		}
	}
	return false
}
