package args

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"

	"github.com/cleavedb/cleave/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Sessions: the lsid every command of a logical session carries ({id: UUID, uid: digest})
// and how MongoDB prints one in messages.

// LSID returns the session UUID of a command body, if it names one.
func LSID(body bsoncore.Document) ([16]byte, bool) {
	v, err := body.LookupErr("lsid")
	if err != nil {
		return [16]byte{}, false
	}
	return LSIDIn(v)
}

// LSIDIn is LSID for the body's lsid field v.
func LSIDIn(v bsoncore.Value) ([16]byte, bool) {
	_, id, ok := bsonx.SubField(v, "id").BinaryOK()
	if !ok || len(id) != 16 {
		return [16]byte{}, false
	}
	return [16]byte(id), true
}

// EmptyUserDigest is the uid of sessions without an authenticated user: SHA-256 of "".
var EmptyUserDigest = sha256.Sum256(nil)

// SessionString is how MongoDB prints a session id in messages: its UUID, then the digest
// of its user (the empty user's without authentication).
func SessionString(lsid [16]byte) string {
	h := hex.EncodeToString(lsid[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:] + " - " +
		base64.StdEncoding.EncodeToString(EmptyUserDigest[:]) + " -  - "
}
