package session_test

import (
	"crypto/sha256"
	"slices"
	"testing"
	"time"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/session"
	"github.com/cleavedb/cleave/exec/txn"
)

// TestOwnerUID checks lsid.uid: SHA-256 of "user@db" for a user, the empty user's digest
// (SHA-256 of nothing) without one, and UserDigest agrees.
func TestOwnerUID(t *testing.T) {
	alice := auth.UserName{User: "alice", DB: "app"}
	if got := (session.Owner{User: alice, Set: true}).UID(); got != sha256.Sum256([]byte("alice@app")) {
		t.Errorf("alice's uid %x", got)
	}
	if got := session.UserDigest(alice); got != sha256.Sum256([]byte("alice@app")) {
		t.Errorf("UserDigest(alice) %x", got)
	}
	empty := sha256.Sum256(nil)
	if got := (session.Owner{}).UID(); got != empty || got != args.EmptyUserDigest {
		t.Errorf("no user's uid %x, want %x", got, empty)
	}
	if got := (session.Owner{User: alice}).UID(); got != empty {
		t.Errorf("a user not Set counts as one: %x", got)
	}
	if got := (session.Owner{Set: true}).UID(); got != sha256.Sum256([]byte("@")) {
		t.Errorf("the empty user name, Set: %x", got)
	}
}

// TestCacheGetAndNoteLSID checks that Get creates a session once, as no user's, that NoteLSID
// creates one as its owner's (keeping the first owner of a known session) and ignores a
// body without a valid lsid, and that Entries lists them.
func TestCacheGetAndNoteLSID(t *testing.T) {
	e := newEnv(t, 0)
	now := time.Now()
	a := e.c.Get(id(1), now)
	if a == nil || e.c.Get(id(1), now) != a {
		t.Fatal("Get did not return one session for one id")
	}
	alice := session.Owner{User: auth.UserName{User: "alice", DB: "app"}, Set: true}
	bob := session.Owner{User: auth.UserName{User: "bob", DB: "app"}, Set: true}
	e.c.NoteLSID(ext(t, `{"lsid": `+lsidJSON(id(2))+`}`).Lookup("lsid"), alice)
	e.c.NoteLSID(ext(t, `{"lsid": `+lsidJSON(id(2))+`}`).Lookup("lsid"), bob)
	e.c.NoteLSID(ext(t, `{"lsid": `+lsidJSON(id(1))+`}`).Lookup("lsid"), bob)
	for _, bad := range []string{`{"id": 1}`, `{"id": ` + binJSON([]byte{1, 2}, 4) + `}`, `"x"`, `{}`} {
		e.c.NoteLSID(ext(t, `{"lsid": `+bad+`}`).Lookup("lsid"), alice)
	}
	e.c.NoteLSID(ext(t, `{"x": 1}`).Lookup("lsid"), alice)
	got := map[[16]byte][32]byte{}
	for _, en := range e.c.Entries() {
		got[en.ID] = en.UID
		if en.LastUse.Before(now.Add(-time.Second)) || en.LastUse.After(time.Now()) {
			t.Errorf("session %x last used at %v", en.ID[0], en.LastUse)
		}
	}
	want := map[[16]byte][32]byte{id(1): args.EmptyUserDigest, id(2): alice.UID()}
	if len(got) != len(want) || got[id(1)] != want[id(1)] || got[id(2)] != want[id(2)] {
		t.Fatalf("Entries %x, want %x", got, want)
	}
}

// TestCacheLastUse checks how a use marks a session: Get refreshes its last use only once it
// is a second old (the hot path reads), Touch always, and Alive compares it with the
// timeout.
func TestCacheLastUse(t *testing.T) {
	e := newEnv(t, time.Minute)
	t0 := time.Now()
	lastUse := func() time.Time {
		for _, en := range e.c.Entries() {
			if en.ID == id(1) {
				return en.LastUse
			}
		}
		t.Fatal("session 1 is not cached")
		return time.Time{}
	}
	e.c.Get(id(1), t0)
	e.c.Get(id(1), t0.Add(500*time.Millisecond))
	if !lastUse().Equal(t0) {
		t.Fatalf("a use within a second moved the last use to %v", lastUse())
	}
	e.c.Get(id(1), t0.Add(2*time.Second))
	if !lastUse().Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("a use two seconds later left the last use at %v", lastUse())
	}
	e.c.Touch(id(1), t0.Add(2500*time.Millisecond))
	if !lastUse().Equal(t0.Add(2500 * time.Millisecond)) {
		t.Fatalf("Touch left the last use at %v", lastUse())
	}
	base := t0.Add(2500 * time.Millisecond)
	for _, tc := range []struct {
		name  string
		id    [16]byte
		at    time.Time
		alive bool
	}{
		{"JustUsed", id(1), base, true},
		{"AtTheTimeout", id(1), base.Add(time.Minute), true},
		{"PastTheTimeout", id(1), base.Add(time.Minute + time.Nanosecond), false},
		{"Unknown", id(9), base, false},
	} {
		if got := e.c.Alive(tc.id, tc.at); got != tc.alive {
			t.Errorf("%s: Alive = %v", tc.name, got)
		}
	}
	e.c.Touch(id(3), base) // Touch of an unknown session creates it
	if !e.c.Alive(id(3), base) {
		t.Error("Touch did not create the session")
	}
}

// TestCacheEndForgetDrop checks the three ways a session leaves the cache: End aborts its
// transaction, Drop and Forget (a restart) leave it be; ids not cached are no matter.
func TestCacheEndForgetDrop(t *testing.T) {
	e := newEnv(t, 0)
	ended, dropped, forgotten := e.begin(t, id(1), 1), e.begin(t, id(2), 1), e.begin(t, id(3), 1)
	e.c.Get(id(4), time.Now())
	e.c.End([][16]byte{id(1), id(8)})
	if e.cached(id(1)) || ended.Phase.Load() != txn.Aborted {
		t.Fatalf("End: cached %v, phase %d", e.cached(id(1)), ended.Phase.Load())
	}
	e.c.Drop(id(2))
	e.c.Drop(id(8))
	if e.cached(id(2)) || dropped.Phase.Load() != txn.InProgress || !e.cached(id(3)) {
		t.Fatalf("Drop: cached %v, phase %d", e.cached(id(2)), dropped.Phase.Load())
	}
	e.c.Forget()
	if len(e.c.Entries()) != 0 || forgotten.Phase.Load() != txn.InProgress {
		t.Fatalf("Forget: %d cached, phase %d", len(e.c.Entries()), forgotten.Phase.Load())
	}
	e.c.Get(id(1), time.Now()) // a new session under an ended id starts afresh
	if !e.cached(id(1)) {
		t.Fatal("the cache took no session after Forget")
	}
}

// TestListed checks the ids of an endSessions, killSessions or refreshSessions body: the
// 16-byte ids of its first field's documents, the rest skipped.
func TestListed(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       [][16]byte
	}{
		{"Two", `{"endSessions": [` + lsidJSON(id(1)) + `, ` + lsidJSON(id(2)) + `], "$db": "admin"}`, [][16]byte{id(1), id(2)}},
		{"SkipsMalformed", `{"endSessions": [5, {"id": "x"}, {"id": ` + binJSON([]byte{1}, 4) + `}, {"x": 1}, ` +
			lsidJSON(id(3)) + `]}`, [][16]byte{id(3)}},
		{"AnySubtype", `{"refreshSessions": [{"id": ` + binJSON(bytesOf(id(4)), 0) + `}]}`, [][16]byte{id(4)}},
		{"Empty", `{"endSessions": []}`, nil},
		{"NotAnArray", `{"endSessions": ` + lsidJSON(id(1)) + `}`, nil},
		{"OnlyTheFirstField", `{"endSessions": 1, "other": [` + lsidJSON(id(1)) + `]}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := session.Listed(ext(t, tc.body)); !slices.Equal(got, tc.want) {
				t.Fatalf("Listed = %x, want %x", got, tc.want)
			}
		})
	}
}

// TestTimeoutMinutes checks logicalSessionTimeoutMinutes as hello reports it: whole minutes
// rounded up, and the default of 30 for a cache made without a timeout.
func TestTimeoutMinutes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		want    int32
	}{
		{"Default", 0, 30},
		{"Seconds", 10 * time.Second, 1},
		{"OneMinute", time.Minute, 1},
		{"RoundsUp", 90 * time.Second, 2},
		{"Hour", time.Hour, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := session.New(session.Options{Timeout: tc.timeout})
			if got := c.TimeoutMinutes(); got != tc.want {
				t.Fatalf("TimeoutMinutes() = %d, want %d", got, tc.want)
			}
		})
	}
	if session.DefaultTimeout != 30*time.Minute {
		t.Errorf("DefaultTimeout = %v", session.DefaultTimeout)
	}
}
