package session

import (
	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Pattern is one pattern of killAllSessionsByPattern.
type Pattern struct {
	LSID *[16]byte // with lsidUID: one Session
	UID  *[32]byte // lsid's uid, or a uid pattern's
	// Users and roles are the impersonation data given.
	Users, Roles int
}

// matches reports whether session id (of user uid) is one p kills.
func (p *Pattern) matches(id [16]byte, uid [32]byte) bool {
	switch {
	case p.LSID != nil:
		return *p.LSID == id && *p.UID == uid
	case p.UID != nil:
		return *p.UID == uid
	}
	return true
}

// MatchesAny reports whether a pattern of patterns kills session id of user uid.
func MatchesAny(patterns []Pattern, id [16]byte, uid [32]byte) bool {
	for i := range patterns {
		if patterns[i].matches(id, uid) {
			return true
		}
	}
	return false
}

// ParsePattern parses one KillAllSessionsByPattern document.
func ParsePattern(cmd string, d bsoncore.Document) (Pattern, error) {
	var p Pattern
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "lsid":
			ld, err := args.Doc(cmd, "lsid", v)
			if err != nil {
				return p, err
			}
			id, ok := UUIDField(ld, "id")
			if !ok {
				return p, LSIDFieldError(cmd+".lsid", "id", ld)
			}
			uid, ok := DigestField(ld.Lookup("uid"))
			if !ok {
				return p, UIDError(cmd+".lsid", ld.Lookup("uid"))
			}
			p.LSID, p.UID = &id, &uid
		case "uid":
			uid, ok := DigestField(v)
			if !ok {
				return p, UIDError(cmd, v)
			}
			if p.LSID == nil {
				p.UID = &uid
			}
		case "users", "roles":
			arr, err := args.Array(cmd, el.Key(), v)
			if err != nil {
				return p, err
			}
			vals, _ := arr.Values()
			for _, u := range vals {
				if _, err := ParseKillUser(cmd+"."+el.Key(), u); err != nil && el.Key() == "users" {
					return p, err
				}
			}
			if el.Key() == "users" {
				p.Users = len(vals)
			} else {
				p.Roles = len(vals)
			}
		default:
			return p, mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", cmd, el.Key())
		}
	}
	return p, nil
}

// UUIDField returns field key of d as a 16-byte UUID.
func UUIDField(d bsoncore.Document, key string) ([16]byte, bool) {
	_, b, ok := d.Lookup(key).BinaryOK()
	if !ok || len(b) != 16 {
		return [16]byte{}, false
	}
	return [16]byte(b), true
}

// DigestField returns v as a SHA-256 digest (BinData of 32 bytes).
func DigestField(v bsoncore.Value) ([32]byte, bool) {
	_, b, ok := v.BinaryOK()
	if !ok || len(b) != 32 {
		return [32]byte{}, false
	}
	return [32]byte(b), true
}

// UIDError is the error of a uid (field uid of ctx) that is no SHA-256 digest: a missing
// one or another type is the IDL's, BinData of another length SHA256Block::fromBinData's.
func UIDError(ctx string, v bsoncore.Value) error {
	if _, b, ok := v.BinaryOK(); ok {
		return mongoerr.New(mongoerr.UnsupportedFormat, "Unsupported SHA256Block hash length: %d", len(b))
	}
	if v.Type == 0 {
		return args.Missing(ctx, "uid")
	}
	return args.WrongType(ctx, "uid", v.Type, "binData")
}

// LSIDFieldError is the IDL error for a missing or malformed field of a LogicalSessionId.
func LSIDFieldError(ctx, field string, d bsoncore.Document) error {
	v, err := d.LookupErr(field)
	if err != nil {
		return args.Missing(ctx, field)
	}
	return args.WrongType(ctx, field, v.Type, "binData")
}

// ParseKillUser parses a KillAllSessionsUser, {user: string, db: string}.
func ParseKillUser(ctx string, v bsoncore.Value) (auth.UserName, error) {
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

// Kill kills the sessions that a pattern of patterns matches: they leave
// the cache, their transactions are aborted and their cursors closed.
func (c *Cache) Kill(patterns []Pattern) error {
	killed := map[[16]byte]bool{}
	c.mu.Lock()
	for id, s := range c.m {
		for i := range patterns {
			p := &patterns[i]
			if !p.matches(id, s.uid) {
				continue
			}
			if p.Users > 1 {
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
		all = all || patterns[i].LSID == nil && patterns[i].UID == nil
	}
	c.opts.Cursors.RemoveSessions(func(lsid [16]byte) bool { return all || killed[lsid] })
	return nil
}
