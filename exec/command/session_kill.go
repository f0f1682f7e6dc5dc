package command

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// killAllSessions and killAllSessionsByPattern, as MongoDB's SessionKiller matches them. A
// pattern with lsid kills that session ({id, uid}), one with uid the sessions of that user
// (SHA-256 of "user@db", the empty string's without authentication), and one with neither
// every session. users and roles are not filters: they are the identity the kill runs as
// (impersonation), which needs the root role when access control is on, and at most one
// user. killAllSessions: [{user, db}, ...] kills those users' sessions, [] every session.
// A killed session leaves the cache: its transaction is aborted and its cursors closed.

// sessionPattern is one pattern of killAllSessionsByPattern.
type sessionPattern struct {
	lsid *[16]byte // with lsidUID: one session
	uid  *[32]byte // lsid's uid, or a uid pattern's
	// users and roles are the impersonation data given.
	users, roles int
}

// matches reports whether session id (of user uid) is one p kills.
func (p *sessionPattern) matches(id [16]byte, uid [32]byte) bool {
	switch {
	case p.lsid != nil:
		return *p.lsid == id && *p.uid == uid
	case p.uid != nil:
		return *p.uid == uid
	}
	return true
}

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
	caller := e.sessionUser(r).uid()
	vals, _ := arr.Values()
	if len(vals) == 0 {
		if !e.Access.Enabled() || len(r.Conn.Authn.Users) == 0 {
			return nil
		}
		return e.killSessionsMatching([]sessionPattern{{uid: &caller}})
	}
	patterns := make([]sessionPattern, 0, len(vals))
	for _, v := range vals {
		d, err := args.Doc(cmd, "killSessions", v)
		if err != nil {
			return err
		}
		id, ok := uuidField(d, "id")
		if !ok {
			return lsidFieldError(cmd+".killSessions", "id", d)
		}
		uid := &caller
		if uv, err := d.LookupErr("uid"); err == nil {
			given, ok := digestField(uv)
			if !ok {
				return args.WrongType(cmd+".killSessions", "uid", uv.Type, "binData")
			}
			if !e.mayImpersonate(r) {
				return mongoerr.New(mongoerr.Unauthorized, "Unauthorized to set user digest in LogicalSessionId")
			}
			uid = &given
		}
		patterns = append(patterns, sessionPattern{lsid: &id, uid: uid})
	}
	return e.killSessionsMatching(patterns)
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
		return e.killSessionsMatching([]sessionPattern{{}})
	}
	patterns := make([]sessionPattern, 0, len(vals))
	for _, v := range vals {
		u, err := parseKillUser(cmd+".killAllSessions", v)
		if err != nil {
			return err
		}
		d := userDigest(u)
		patterns = append(patterns, sessionPattern{uid: &d})
	}
	return e.killSessionsMatching(patterns)
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
		return e.killSessionsMatching([]sessionPattern{{}})
	}
	patterns := make([]sessionPattern, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return args.WrongType("KillAllSessionsByPatternCmd", "killAllSessionsByPattern", v.Type, "object")
		}
		p, err := parseSessionPattern(cmd, d)
		if err != nil {
			return err
		}
		if (p.users > 0 || p.roles > 0) && !e.mayImpersonate(r) {
			return mongoerr.New(mongoerr.Unauthorized, "Not authorized to impersonate in killAllSessionsByPattern")
		}
		patterns = append(patterns, p)
	}
	return e.killSessionsMatching(patterns)
}

// parseSessionPattern parses one KillAllSessionsByPattern document.
func parseSessionPattern(cmd string, d bsoncore.Document) (sessionPattern, error) {
	var p sessionPattern
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "lsid":
			ld, err := args.Doc(cmd, "lsid", v)
			if err != nil {
				return p, err
			}
			id, ok := uuidField(ld, "id")
			if !ok {
				return p, lsidFieldError(cmd+".lsid", "id", ld)
			}
			uid, ok := digestField(ld.Lookup("uid"))
			if !ok {
				return p, lsidFieldError(cmd+".lsid", "uid", ld)
			}
			p.lsid, p.uid = &id, &uid
		case "uid":
			uid, ok := digestField(v)
			if !ok {
				return p, args.WrongType(cmd, "uid", v.Type, "binData")
			}
			if p.lsid == nil {
				p.uid = &uid
			}
		case "users", "roles":
			arr, err := args.Array(cmd, el.Key(), v)
			if err != nil {
				return p, err
			}
			vals, _ := arr.Values()
			for _, u := range vals {
				if _, err := parseKillUser(cmd+"."+el.Key(), u); err != nil && el.Key() == "users" {
					return p, err
				}
			}
			if el.Key() == "users" {
				p.users = len(vals)
			} else {
				p.roles = len(vals)
			}
		default:
			return p, mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", cmd, el.Key())
		}
	}
	return p, nil
}

// uuidField returns field key of d as a 16-byte UUID.
func uuidField(d bsoncore.Document, key string) ([16]byte, bool) {
	_, b, ok := d.Lookup(key).BinaryOK()
	if !ok || len(b) != 16 {
		return [16]byte{}, false
	}
	return [16]byte(b), true
}

// digestField returns v as a SHA-256 digest (BinData of 32 bytes).
func digestField(v bsoncore.Value) ([32]byte, bool) {
	_, b, ok := v.BinaryOK()
	if !ok || len(b) != 32 {
		return [32]byte{}, false
	}
	return [32]byte(b), true
}

// lsidFieldError is the IDL error for a missing or malformed field of a LogicalSessionId.
func lsidFieldError(ctx, field string, d bsoncore.Document) error {
	v, err := d.LookupErr(field)
	if err != nil {
		return args.Missing(ctx, field)
	}
	return args.WrongType(ctx, field, v.Type, "binData")
}

// parseKillUser parses a KillAllSessionsUser, {user: string, db: string}.
func parseKillUser(ctx string, v bsoncore.Value) (auth.UserName, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return auth.UserName{}, args.WrongType(ctx, "", v.Type, "object")
	}
	var u auth.UserName
	for _, f := range []struct {
		key string
		dst *string
	}{{"user", &u.User}, {"db", &u.DB}} {
		fv, err := d.LookupErr(f.key)
		if err != nil {
			return u, args.Missing(ctx, f.key)
		}
		if *f.dst, err = args.String(ctx, f.key, fv); err != nil {
			return u, err
		}
	}
	return u, nil
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

// killSessionsMatching kills the sessions that a pattern of patterns matches: they leave
// the cache, their transactions are aborted and their cursors closed.
func (e *Server) killSessionsMatching(patterns []sessionPattern) error {
	c := &e.Sessions
	killed := map[[16]byte]bool{}
	c.mu.Lock()
	for id, s := range c.m {
		for i := range patterns {
			p := &patterns[i]
			if !p.matches(id, s.uid) {
				continue
			}
			if p.users > 1 {
				c.mu.Unlock()
				return mongoerr.New(mongoerr.BadValue, "Too many users in impersonation data")
			}
			killed[id] = true
			break
		}
	}
	var txns []*txn.Txn
	for id := range killed {
		txns = append(txns, c.m[id].txn.Load())
		delete(c.m, id)
	}
	c.mu.Unlock()
	for _, tx := range txns {
		tx.Abort()
	}
	all := false
	for i := range patterns {
		all = all || patterns[i].lsid == nil && patterns[i].uid == nil
	}
	e.Cursors.RemoveSessions(func(lsid [16]byte) bool { return all || killed[lsid] })
	return nil
}
