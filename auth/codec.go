package auth

import (
	"encoding/base64"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ErrCorrupt reports a stored user or role that does not decode.
var ErrCorrupt = errors.New("auth: corrupt record")

// Records use the shape of MongoDB's admin.system.users and admin.system.roles documents:
//
//	{_id: "app.alice", userId: UUID, user: "alice", db: "app",
//	 credentials: {"SCRAM-SHA-256": {iterationCount, salt, storedKey, serverKey}},
//	 roles: [{role: "readWrite", db: "app"}], customData: {...}}
//	{_id: "app.reader", role: "reader", db: "app",
//	 privileges: [{resource: {db: "app", collection: ""}, actions: ["find"]}], roles: [...]}
//
// with salt and keys in base64, as MongoDB keeps them.

// EncodeUser returns u as a BSON document.
func EncodeUser(u *User) bsoncore.Document {
	idx, doc := bsoncore.AppendDocumentStart(nil)
	doc = bsoncore.AppendStringElement(doc, "_id", u.Name.String())
	doc = bsoncore.AppendBinaryElement(doc, "userId", 4, u.ID[:])
	doc = bsoncore.AppendStringElement(doc, "user", u.Name.User)
	doc = bsoncore.AppendStringElement(doc, "db", u.Name.DB)
	cidx, doc := bsoncore.AppendDocumentElementStart(doc, "credentials")
	for _, m := range u.Mechanisms() {
		doc = appendCredential(doc, string(m), u.Credentials[m])
	}
	doc, _ = bsoncore.AppendDocumentEnd(doc, cidx)
	doc = AppendRoleNames(doc, "roles", u.Roles)
	if u.CustomData != nil {
		doc = bsoncore.AppendDocumentElement(doc, "customData", u.CustomData)
	}
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return doc
}

// appendCredential appends one mechanism's credential as key.
func appendCredential(dst []byte, key string, c Credential) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendInt32Element(dst, "iterationCount", int32(c.Iterations))
	dst = bsoncore.AppendStringElement(dst, "salt", base64.StdEncoding.EncodeToString(c.Salt))
	dst = bsoncore.AppendStringElement(dst, "storedKey", base64.StdEncoding.EncodeToString(c.StoredKey))
	dst = bsoncore.AppendStringElement(dst, "serverKey", base64.StdEncoding.EncodeToString(c.ServerKey))
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// AppendRoleNames appends roles as an array of {role, db} documents under key.
func AppendRoleNames(dst []byte, key string, roles []RoleName) []byte {
	idx, dst := bsoncore.AppendArrayElementStart(dst, key)
	for i, r := range roles {
		var ridx int32
		ridx, dst = bsoncore.AppendDocumentElementStart(dst, fmt.Sprint(i))
		dst = bsoncore.AppendStringElement(dst, "role", r.Role)
		dst = bsoncore.AppendStringElement(dst, "db", r.DB)
		dst, _ = bsoncore.AppendDocumentEnd(dst, ridx)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}

// DecodeUser decodes a stored user.
func DecodeUser(doc bsoncore.Document) (*User, error) {
	u := &User{Credentials: map[Mechanism]Credential{}}
	if _, id, ok := doc.Lookup("userId").BinaryOK(); ok && len(id) == 16 {
		copy(u.ID[:], id)
	}
	u.Name.User, _ = doc.Lookup("user").StringValueOK()
	u.Name.DB, _ = doc.Lookup("db").StringValueOK()
	if u.Name.User == "" || u.Name.DB == "" {
		return nil, fmt.Errorf("%w: user without name or db", ErrCorrupt)
	}
	creds, _ := doc.Lookup("credentials").DocumentOK()
	elems, _ := creds.Elements()
	for _, e := range elems {
		c, err := decodeCredential(e.Value())
		if err != nil {
			return nil, fmt.Errorf("%w: user %s: %w", ErrCorrupt, u.Name, err)
		}
		u.Credentials[Mechanism(e.Key())] = c
	}
	roles, err := decodeRoleNames(doc.Lookup("roles"))
	if err != nil {
		return nil, fmt.Errorf("%w: user %s: %w", ErrCorrupt, u.Name, err)
	}
	u.Roles = roles
	if cd, ok := doc.Lookup("customData").DocumentOK(); ok {
		u.CustomData = append([]byte(nil), cd...)
	}
	return u, nil
}

// decodeCredential decodes {iterationCount, salt, storedKey, serverKey}.
func decodeCredential(v bsoncore.Value) (Credential, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return Credential{}, errors.New("credential is not a document")
	}
	var c Credential
	iters, ok := d.Lookup("iterationCount").AsInt64OK()
	if !ok || iters < 1 {
		return c, errors.New("bad iterationCount")
	}
	c.Iterations = int(iters)
	for _, f := range []struct {
		key string
		dst *[]byte
	}{{"salt", &c.Salt}, {"storedKey", &c.StoredKey}, {"serverKey", &c.ServerKey}} {
		s, _ := d.Lookup(f.key).StringValueOK()
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) == 0 {
			return c, fmt.Errorf("bad %s", f.key)
		}
		*f.dst = b
	}
	return c, nil
}

// decodeRoleNames decodes an array of {role, db} documents (a missing value is no roles).
func decodeRoleNames(v bsoncore.Value) ([]RoleName, error) {
	if v.Type == 0 {
		return nil, nil
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, errors.New("roles is not an array")
	}
	vals, _ := arr.Values()
	out := make([]RoleName, 0, len(vals))
	for _, rv := range vals {
		d, ok := rv.DocumentOK()
		if !ok {
			return nil, errors.New("role is not a document")
		}
		var r RoleName
		r.Role, _ = d.Lookup("role").StringValueOK()
		r.DB, _ = d.Lookup("db").StringValueOK()
		out = append(out, r)
	}
	return out, nil
}

// EncodeRole returns r as a BSON document.
func EncodeRole(r *Role) bsoncore.Document {
	idx, doc := bsoncore.AppendDocumentStart(nil)
	doc = bsoncore.AppendStringElement(doc, "_id", r.Name.DB+"."+r.Name.Role)
	doc = bsoncore.AppendStringElement(doc, "role", r.Name.Role)
	doc = bsoncore.AppendStringElement(doc, "db", r.Name.DB)
	doc = AppendPrivileges(doc, "privileges", r.Privileges)
	doc = AppendRoleNames(doc, "roles", r.Roles)
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return doc
}

// AppendPrivileges appends privileges in MongoDB's shape under key:
// [{resource: {db, collection} or {cluster: true}, actions: [...]}].
func AppendPrivileges(dst []byte, key string, ps []Privilege) []byte {
	idx, dst := bsoncore.AppendArrayElementStart(dst, key)
	for i, p := range ps {
		var pidx, ridx, aidx int32
		pidx, dst = bsoncore.AppendDocumentElementStart(dst, fmt.Sprint(i))
		ridx, dst = bsoncore.AppendDocumentElementStart(dst, "resource")
		switch {
		case p.Cluster:
			dst = bsoncore.AppendBooleanElement(dst, "cluster", true)
		case p.AnyResource:
			dst = bsoncore.AppendBooleanElement(dst, "anyResource", true)
		default:
			dst = bsoncore.AppendStringElement(dst, "db", p.DB)
			dst = bsoncore.AppendStringElement(dst, "collection", p.Coll)
		}
		dst, _ = bsoncore.AppendDocumentEnd(dst, ridx)
		aidx, dst = bsoncore.AppendArrayElementStart(dst, "actions")
		for j, a := range p.Actions {
			dst = bsoncore.AppendStringElement(dst, fmt.Sprint(j), a)
		}
		dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
		dst, _ = bsoncore.AppendDocumentEnd(dst, pidx)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}

// DecodeRole decodes a stored role.
func DecodeRole(doc bsoncore.Document) (*Role, error) {
	r := &Role{}
	r.Name.Role, _ = doc.Lookup("role").StringValueOK()
	r.Name.DB, _ = doc.Lookup("db").StringValueOK()
	if r.Name.Role == "" || r.Name.DB == "" {
		return nil, fmt.Errorf("%w: role without name or db", ErrCorrupt)
	}
	ps, err := DecodePrivileges(doc.Lookup("privileges"))
	if err != nil {
		return nil, fmt.Errorf("%w: role %s: %w", ErrCorrupt, r.Name, err)
	}
	r.Privileges = ps
	if r.Roles, err = decodeRoleNames(doc.Lookup("roles")); err != nil {
		return nil, fmt.Errorf("%w: role %s: %w", ErrCorrupt, r.Name, err)
	}
	return r, nil
}

// DecodePrivileges decodes privileges in MongoDB's shape; unknown action names are an error.
// A missing value is no privileges.
func DecodePrivileges(v bsoncore.Value) ([]Privilege, error) {
	if v.Type == 0 {
		return nil, nil
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, errors.New("privileges must be an array")
	}
	vals, _ := arr.Values()
	out := make([]Privilege, 0, len(vals))
	for _, pv := range vals {
		d, ok := pv.DocumentOK()
		if !ok {
			return nil, errors.New("each privilege must be a document")
		}
		res, ok := d.Lookup("resource").DocumentOK()
		if !ok {
			return nil, errors.New("a privilege must have a resource document")
		}
		var p Privilege
		if c, ok := res.Lookup("cluster").BooleanOK(); ok && c {
			p.Cluster = true
		} else if anyRes, ok := res.Lookup("anyResource").BooleanOK(); ok && anyRes {
			p.AnyResource = true
		} else {
			var okDB, okColl bool
			p.DB, okDB = res.Lookup("db").StringValueOK()
			p.Coll, okColl = res.Lookup("collection").StringValueOK()
			if !okDB || !okColl {
				return nil, errors.New("a resource must have string db and collection fields, or cluster: true")
			}
		}
		acts, ok := d.Lookup("actions").ArrayOK()
		if !ok {
			return nil, errors.New("a privilege must have an actions array")
		}
		avals, _ := acts.Values()
		for _, av := range avals {
			name, ok := av.StringValueOK()
			if _, known := actionClasses[name]; !ok || !known {
				return nil, fmt.Errorf("Unrecognized action privilege string: %s", name) //nolint:staticcheck // MongoDB's wording: createRole sends it to the client
			}
			p.Actions = append(p.Actions, name)
		}
		out = append(out, p)
	}
	return out, nil
}

// AppendUserName appends {user, db} as key.
func AppendUserName(dst []byte, key string, u UserName) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendStringElement(dst, "user", u.User)
	dst = bsoncore.AppendStringElement(dst, "db", u.DB)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}
