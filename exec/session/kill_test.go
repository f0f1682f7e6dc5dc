package session_test

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/session"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// patternCmd is the context killAllSessionsByPattern parses its patterns in.
const patternCmd = "KillAllSessionsByPatternCmd.killAllSessionsByPattern"

// digestJSON is the Extended JSON of the uid of user@db.
func digestJSON(user string) string {
	d := sha256.Sum256([]byte(user))
	return binJSON(d[:], 0)
}

// TestParsePattern checks each field of a pattern (lsid with its uid, uid, users and roles
// counted) and each error, with MongoDB's IDL codes and messages.
func TestParsePattern(t *testing.T) {
	aliceUID := sha256.Sum256([]byte("alice@app"))
	lsid := `{"id": ` + binJSON(bytesOf(id(1)), 4) + `, "uid": ` + digestJSON("alice@app") + `}`
	for _, tc := range []struct {
		name, pattern string
		lsid, uid     bool // LSID and UID set
		users, roles  int
		code          mongoerr.Code
		msg           string
	}{
		{"All", `{}`, false, false, 0, 0, 0, ""},
		{"LSID", `{"lsid": ` + lsid + `}`, true, true, 0, 0, 0, ""},
		{"UID", `{"uid": ` + digestJSON("alice@app") + `}`, false, true, 0, 0, 0, ""},
		{"UIDAfterLSIDKeepsLSIDs", `{"lsid": ` + lsid + `, "uid": ` + digestJSON("bob@app") + `}`, true, true, 0, 0, 0, ""},
		{"LSIDAfterUIDWins", `{"uid": ` + digestJSON("bob@app") + `, "lsid": ` + lsid + `}`, true, true, 0, 0, 0, ""},
		{"Users", `{"users": [{"user": "a", "db": "x"}, {"user": "b", "db": "y"}]}`, false, false, 2, 0, 0, ""},
		{"Roles", `{"roles": [{"role": "root", "db": "admin"}, 5]}`, false, false, 0, 2, 0, ""},
		{"Unknown", `{"session": 1}`, false, false, 0, 0, mongoerr.Location40415,
			"BSON field '" + patternCmd + ".session' is an unknown field."},
		{"LSIDNotADocument", `{"lsid": 1}`, false, false, 0, 0, mongoerr.TypeMismatch,
			"BSON field '" + patternCmd + ".lsid' is the wrong type 'int', expected type 'object'"},
		{"LSIDWithoutID", `{"lsid": {"uid": ` + digestJSON("alice@app") + `}}`, false, false, 0, 0, mongoerr.Location40414,
			"BSON field '" + patternCmd + ".lsid.id' is missing but a required field"},
		{"LSIDWithoutUID", `{"lsid": {"id": ` + binJSON(bytesOf(id(1)), 4) + `}}`, false, false, 0, 0, mongoerr.Location40414,
			"BSON field '" + patternCmd + ".lsid.uid' is missing but a required field"},
		{"LSIDIDString", `{"lsid": {"id": "x", "uid": ` + digestJSON("a") + `}}`, false, false, 0, 0, mongoerr.TypeMismatch,
			"BSON field '" + patternCmd + ".lsid.id' is the wrong type 'string', expected type 'binData'"},
		{"LSIDUIDString", `{"lsid": {"id": ` + binJSON(bytesOf(id(1)), 4) + `, "uid": "x"}}`, false, false, 0, 0, mongoerr.TypeMismatch,
			"BSON field '" + patternCmd + ".lsid.uid' is the wrong type 'string', expected type 'binData'"},
		{"UIDString", `{"uid": "alice"}`, false, false, 0, 0, mongoerr.TypeMismatch,
			"BSON field '" + patternCmd + ".uid' is the wrong type 'string', expected type 'binData'"},
		{"UsersNotAnArray", `{"users": {"user": "a", "db": "x"}}`, false, false, 0, 0, mongoerr.TypeMismatch,
			"BSON field '" + patternCmd + ".users' is the wrong type 'object', expected type 'array'"},
		{"UserWithoutDB", `{"users": [{"user": "a"}]}`, false, false, 0, 0, mongoerr.Location40414,
			"BSON field '" + patternCmd + ".users.db' is missing but a required field"},
		{"UserNameNumber", `{"users": [{"user": 1, "db": "x"}]}`, false, false, 0, 0, mongoerr.TypeMismatch,
			"BSON field '" + patternCmd + ".users.user' is the wrong type 'int', expected type 'string'"},
		{"RolesNotAnArray", `{"roles": 1}`, false, false, 0, 0, mongoerr.TypeMismatch,
			"BSON field '" + patternCmd + ".roles' is the wrong type 'int', expected type 'array'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := session.ParsePattern(patternCmd, ext(t, tc.pattern))
			if tc.code != 0 {
				me := mongoerr.As(err)
				if me == nil || me.Code != tc.code || me.Message != tc.msg {
					t.Fatalf("ParsePattern = %v, want %s %q", err, tc.code, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (p.LSID != nil) != tc.lsid || (p.UID != nil) != tc.uid || p.Users != tc.users || p.Roles != tc.roles {
				t.Fatalf("pattern %+v", p)
			}
			if p.LSID != nil && (*p.LSID != id(1) || *p.UID != aliceUID) {
				t.Fatalf("lsid %x, uid %x", *p.LSID, *p.UID)
			}
			if tc.name == "UID" && *p.UID != aliceUID {
				t.Fatalf("uid %x", *p.UID)
			}
		})
	}
}

// TestParsePatternShortUID checks a uid of the wrong length, which MongoDB's IDL refuses
// in SHA256Block::fromBinData: UnsupportedFormat (12) "Unsupported SHA256Block hash length: 16".
func TestParsePatternShortUID(t *testing.T) {
	_, err := session.ParsePattern(patternCmd, ext(t, `{"uid": `+binJSON(bytesOf(id(1)), 0)+`}`))
	wantCode(t, err, mongoerr.Code(12), "Unsupported SHA256Block hash length: 16")
}

// TestKill checks what each pattern kills: the sessions it matches leave the cache, their
// transactions abort and their cursors close, while the others stay; the pattern of
// everything also closes the cursors of sessions the cache no longer holds; two users of
// impersonation data on a matching pattern are refused, killing nothing.
func TestKill(t *testing.T) {
	alice := session.UserDigest(auth.UserName{User: "alice", DB: "app"})
	bob := session.UserDigest(auth.UserName{User: "bob", DB: "app"})
	owners := map[[16]byte][32]byte{id(1): alice, id(2): alice, id(3): bob}
	lsidOf := func(k [16]byte, uid [32]byte) session.Pattern { return session.Pattern{LSID: &k, UID: &uid} }
	for _, tc := range []struct {
		name     string
		patterns []session.Pattern
		killed   [][16]byte
		code     mongoerr.Code
	}{
		{"None", nil, nil, 0},
		{"ByUID", []session.Pattern{{UID: &alice}}, [][16]byte{id(1), id(2)}, 0},
		{"ByLSID", []session.Pattern{lsidOf(id(3), bob)}, [][16]byte{id(3)}, 0},
		{"ByLSIDOtherUser", []session.Pattern{lsidOf(id(3), alice)}, nil, 0},
		{"Several", []session.Pattern{lsidOf(id(1), alice), {UID: &bob}}, [][16]byte{id(1), id(3)}, 0},
		{"All", []session.Pattern{{}}, [][16]byte{id(1), id(2), id(3), id(4)}, 0},
		{"TwoUsersNoMatch", []session.Pattern{{UID: &[32]byte{9}, Users: 2}}, nil, 0},
		{"TwoUsers", []session.Pattern{{UID: &bob, Users: 2}}, nil, mongoerr.BadValue},
		{"OneUser", []session.Pattern{{UID: &bob, Users: 1, Roles: 3}}, [][16]byte{id(3)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 0)
			txns := map[[16]byte]*txn.Txn{}
			curs := map[[16]byte]int64{}
			for k, uid := range owners {
				e.c.NoteLSID(ext(t, `{"lsid": `+lsidJSON(k)+`}`).Lookup("lsid"), ownerOf(uid, alice, bob))
				txns[k] = e.begin(t, k, 1)
				curs[k] = e.openCursor(&k)
			}
			stale := id(4) // a cursor whose session the cache no longer holds
			curs[stale] = e.openCursor(&stale)
			plain := e.openCursor(nil)
			err := e.c.Kill(tc.patterns)
			if tc.code != 0 {
				wantCode(t, err, tc.code, "Too many users in impersonation data")
			} else if err != nil {
				t.Fatal(err)
			}
			killed := map[[16]byte]bool{}
			for _, k := range tc.killed {
				killed[k] = true
			}
			for k := range owners {
				gone := !e.cached(k) && txns[k].Phase.Load() == txn.Aborted && !e.cursorOpen(curs[k])
				kept := e.cached(k) && txns[k].Phase.Load() == txn.InProgress && e.cursorOpen(curs[k])
				if killed[k] && !gone || !killed[k] && !kept {
					t.Errorf("session %d: cached %v, phase %d, cursor open %v; killed %v", k[0], e.cached(k),
						txns[k].Phase.Load(), e.cursorOpen(curs[k]), killed[k])
				}
			}
			if e.cursorOpen(curs[stale]) == killed[stale] {
				t.Errorf("the cursor of an uncached session: open %v", e.cursorOpen(curs[stale]))
			}
			if !e.cursorOpen(plain) {
				t.Error("a cursor outside any session was closed")
			}
		})
	}
}

// ownerOf returns the owner whose digest is uid among alice's and bob's.
func ownerOf(uid, alice, bob [32]byte) session.Owner {
	switch uid {
	case alice:
		return session.Owner{User: auth.UserName{User: "alice", DB: "app"}, Set: true}
	case bob:
		return session.Owner{User: auth.UserName{User: "bob", DB: "app"}, Set: true}
	}
	return session.Owner{}
}

// TestKillThenUse checks that a killed session's id starts afresh: the next command creates
// a new session with no transaction.
func TestKillThenUse(t *testing.T) {
	e := newEnv(t, 0)
	old := e.begin(t, id(1), 5)
	if err := e.c.Kill([]session.Pattern{{}}); err != nil {
		t.Fatal(err)
	}
	tx, release, err := e.enter(t, id(1), 5, false, "find", "")
	wantCode(t, err, mongoerr.NoSuchTransaction, "Given transaction number 5 does not match any in-progress transactions.")
	if tx != nil || release != nil || old.Phase.Load() != txn.Aborted || !e.c.Alive(id(1), time.Now()) {
		t.Fatalf("after the kill: tx %v, old phase %d", tx, old.Phase.Load())
	}
}
