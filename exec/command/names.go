package command

import (
	"encoding/binary"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// nameCache keeps the last database name and namespace a connection's requests named: a
// client sends the same ones request after request, which then need no string made for
// them each time (two of a point read's allocations, issue 13). A connection's requests
// run one at a time (wire.ConnHandler), so it needs no lock; the strings it hands out are
// immutable, whoever keeps them.
type nameCache struct {
	db, ns string
}

// DbName returns the string value of $db, as v.StringValueOK does.
func (n *nameCache) DbName(v bsoncore.Value) (string, bool) {
	if v.Type != bsoncore.TypeString || len(v.Data) < 4 {
		return "", false
	}
	l := int(int32(binary.LittleEndian.Uint32(v.Data)))
	if l <= 0 || len(v.Data)-4 < l {
		return "", false
	}
	b := v.Data[4 : 4+l-1]
	if string(b) != n.db {
		n.db = string(b)
	}
	return n.db, true
}

// Namespace returns db + "." + coll.
func (n *nameCache) Namespace(db, coll string) string {
	ns := n.ns
	if len(ns) != len(db)+1+len(coll) || !strings.HasPrefix(ns, db) || ns[len(db)] != '.' || ns[len(db)+1:] != coll {
		n.ns = db + "." + coll
	}
	return n.ns
}
