package auth

import (
	"errors"
	"testing"

	"github.com/xdg-go/scram"
)

// clientFor returns the driver-side SCRAM client for m, built as the mongo driver builds it.
func clientFor(t *testing.T, m Mechanism, user, password string) *scram.Client {
	t.Helper()
	var c *scram.Client
	var err error
	if m == SCRAMSHA1 {
		c, err = scram.SHA1.NewClientUnprepped(user, PasswordDigest(user, password), "")
	} else {
		c, err = scram.SHA256.NewClient(user, password, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// converse runs a whole exchange between a driver client and a server conversation and
// returns the server's first error.
func converse(t *testing.T, m Mechanism, cred Credential, storedUser, user, password string) error {
	t.Helper()
	conv, err := NewConversation(m, func(name string) (Credential, bool) { return cred, name == storedUser })
	if err != nil {
		t.Fatal(err)
	}
	cc := clientFor(t, m, user, password).NewConversation()
	msg, err := cc.Step("")
	if err != nil {
		t.Fatal(err)
	}
	for !conv.Done() {
		reply, err := conv.Step([]byte(msg))
		if err != nil {
			return err
		}
		if msg, err = cc.Step(string(reply)); err != nil {
			t.Fatalf("client rejected the server's message %q: %v", reply, err)
		}
	}
	if !conv.Valid() || !cc.Valid() {
		t.Fatalf("server valid %v, client valid %v", conv.Valid(), cc.Valid())
	}
	if conv.User() != user {
		t.Fatalf("user %q, want %q", conv.User(), user)
	}
	return nil
}

func TestSCRAMAgainstDriverClient(t *testing.T) {
	cases := []struct {
		name           string
		mech           Mechanism
		user, password string // what the client sends
		ok             bool
	}{
		{"SHA256", SCRAMSHA256, "alice", "s3cret", true},
		{"SHA1", SCRAMSHA1, "alice", "s3cret", true},
		{"SHA256WrongPassword", SCRAMSHA256, "alice", "wrong", false},
		{"SHA1WrongPassword", SCRAMSHA1, "alice", "wrong", false},
		{"SHA256UnknownUser", SCRAMSHA256, "bob", "s3cret", false},
		{"SHA256SASLprep", SCRAMSHA256, "alice", "s3cret\u00A0", false}, // NBSP maps to a space, not nothing
	}
	creds := map[Mechanism]Credential{}
	for _, m := range Mechanisms {
		c, err := NewCredential(m, "alice", "s3cret")
		if err != nil {
			t.Fatal(err)
		}
		creds[m] = c
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := converse(t, tc.mech, creds[tc.mech], "alice", tc.user, tc.password)
			if tc.ok && err != nil {
				t.Fatalf("want success, got %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrAuthenticationFailed) {
				t.Fatalf("want ErrAuthenticationFailed, got %v", err)
			}
		})
	}
}

// TestSCRAMSASLprepEquivalentPasswords checks that SCRAM-SHA-256 credentials are computed on
// the SASLprepped password: "I\u00ADX" (a soft hyphen, mapped to nothing) proves "IX".
func TestSCRAMSASLprepEquivalentPasswords(t *testing.T) {
	c, err := NewCredential(SCRAMSHA256, "u", "IX")
	if err != nil {
		t.Fatal(err)
	}
	if err := converse(t, SCRAMSHA256, c, "u", "u", "I\u00ADX"); err != nil {
		t.Fatal(err)
	}
}

func TestSCRAMSHA1Digest(t *testing.T) {
	// The digest the mongo shell and drivers compute for user "user", password "pencil"
	// (the auth spec's SCRAM-SHA-1 example).
	if got, want := PasswordDigest("user", "pencil"), "1c33006ec1ffd90f9cadcbcc0e118200"; got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
}

func TestSCRAMCredentialNeverHoldsPassword(t *testing.T) {
	c, err := NewCredential(SCRAMSHA256, "u", "password")
	if err != nil {
		t.Fatal(err)
	}
	if c.Iterations != 15000 || len(c.Salt) != 28 || len(c.StoredKey) != 32 || len(c.ServerKey) != 32 {
		t.Fatalf("credential %+v", c)
	}
	c1, _ := NewCredential(SCRAMSHA1, "u", "password")
	if c1.Iterations != 10000 || len(c1.Salt) != 16 || len(c1.StoredKey) != 20 {
		t.Fatalf("SHA-1 credential %+v", c1)
	}
	if _, err := ParseMechanism("PLAIN"); !errors.Is(err, ErrUnknownMechanism) {
		t.Fatalf("PLAIN: %v", err)
	}
}

// TestCheckPassword checks a password against each mechanism's stored keys: the right one
// passes, a wrong one and a user without credentials fail.
func TestCheckPassword(t *testing.T) {
	for _, m := range Mechanisms {
		c, err := NewCredential(m, "ada", "s3cret")
		if err != nil {
			t.Fatal(err)
		}
		u := &User{Name: UserName{User: "ada", DB: "admin"}, Credentials: map[Mechanism]Credential{m: c}}
		if !CheckPassword(u, "s3cret") {
			t.Errorf("%s: the right password was refused", m)
		}
		if CheckPassword(u, "s3cret!") {
			t.Errorf("%s: a wrong password was accepted", m)
		}
	}
	if CheckPassword(&User{Name: UserName{User: "bob", DB: "admin"}}, "") {
		t.Error("a user without credentials was accepted")
	}
}
