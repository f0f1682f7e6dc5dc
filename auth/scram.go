package auth

import (
	"crypto/md5" // NB: MongoDB defines the SCRAM-SHA-1 password digest with MD5
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/xdg-go/scram"
)

// Mechanism is a SASL mechanism name as clients spell it.
type Mechanism string

// The mechanisms cleave answers.
const (
	SCRAMSHA1   Mechanism = "SCRAM-SHA-1"
	SCRAMSHA256 Mechanism = "SCRAM-SHA-256"
)

// Mechanisms lists the supported mechanisms, in the order MongoDB reports them.
var Mechanisms = []Mechanism{SCRAMSHA1, SCRAMSHA256}

// ErrUnknownMechanism reports a mechanism other than SCRAM-SHA-1 and SCRAM-SHA-256.
var ErrUnknownMechanism = errors.New("auth: unsupported mechanism")

// ErrAuthenticationFailed is every failed conversation: a bad proof, an unknown user, a
// malformed message. Clients see one message for all of them, as MongoDB answers.
var ErrAuthenticationFailed = errors.New("auth: authentication failed")

// Default iteration counts and salt lengths: MongoDB's scramIterationCount (10000),
// scramSHA256IterationCount (15000), and salts of the hash size minus 4 bytes.
const (
	sha1Iterations   = 10000
	sha256Iterations = 15000
)

// Credential is what the server keeps for one user and one mechanism: never the password,
// only the salted keys RFC 5802 names.
type Credential struct {
	Iterations int
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

// hash returns the scram hash function of m.
func (m Mechanism) hash() (scram.HashGeneratorFcn, error) {
	switch m {
	case SCRAMSHA1:
		return scram.SHA1, nil
	case SCRAMSHA256:
		return scram.SHA256, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownMechanism, string(m))
}

// ParseMechanism returns the mechanism named s.
func ParseMechanism(s string) (Mechanism, error) {
	m := Mechanism(s)
	_, err := m.hash()
	return m, err
}

// PasswordDigest is MongoDB's SCRAM-SHA-1 password: hex(md5(user + ":mongo:" + password)).
// SCRAM-SHA-256 uses the password itself, SASLprepped.
func PasswordDigest(user, password string) string {
	sum := md5.Sum([]byte(user + ":mongo:" + password))
	return hex.EncodeToString(sum[:])
}

// NewCredential salts and derives the keys of user's password for m, with a fresh random
// salt and MongoDB's default iteration count. The derivation is xdg-go/scram's (the mongo
// driver's client), so that what the server stores is exactly what the client proves.
func NewCredential(m Mechanism, user, password string) (Credential, error) {
	iters, saltLen := sha256Iterations, 28
	if m == SCRAMSHA1 {
		iters, saltLen = sha1Iterations, 16
	}
	salt := make([]byte, saltLen)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails (Go 1.24+)
	return deriveCredential(m, user, password, salt, iters)
}

// deriveCredential derives the keys of password with a given salt and iteration count.
func deriveCredential(m Mechanism, user, password string, salt []byte, iters int) (Credential, error) {
	h, err := m.hash()
	if err != nil {
		return Credential{}, err
	}
	var c *scram.Client
	if m == SCRAMSHA256 {
		if _, err := SASLprep(password); err != nil {
			return Credential{}, err
		}
	}
	if m == SCRAMSHA1 {
		// The driver sends the digest unprepped (its SCRAM-SHA-1 authenticator does the same).
		c, err = h.NewClientUnprepped(user, PasswordDigest(user, password), "")
	} else {
		c, err = h.NewClient(user, password, "")
	}
	if err != nil {
		return Credential{}, fmt.Errorf("auth: %w", err) // SASLprep refused the password
	}
	sc, err := c.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iters})
	if err != nil {
		return Credential{}, fmt.Errorf("auth: %w", err)
	}
	return Credential{Iterations: iters, Salt: salt, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}, nil
}

// Lookup returns the credential of user for a mechanism; ok is false when the user does not
// exist or has no credential of that mechanism.
type Lookup func(user string) (c Credential, ok bool)

// Conversation is the server side of one SCRAM exchange (saslStart, then saslContinue):
//
//	conv, _ := auth.NewConversation(auth.SCRAMSHA256, lookup)
//	s1, err := conv.Step(clientFirst)  // "r=…,s=…,i=15000"
//	s2, err := conv.Step(clientFinal)  // "v=…"; conv.Valid() is now true
//
// Any error is ErrAuthenticationFailed (its cause wrapped, for logs only).
type Conversation struct {
	Mechanism Mechanism
	sc        *scram.ServerConversation
}

// NewConversation starts a conversation for m, finding credentials with lookup.
func NewConversation(m Mechanism, lookup Lookup) (*Conversation, error) {
	h, err := m.hash()
	if err != nil {
		return nil, err
	}
	srv, err := h.NewServer(func(user string) (scram.StoredCredentials, error) {
		c, ok := lookup(user)
		if !ok {
			return scram.StoredCredentials{}, errors.New("no such user")
		}
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
			StoredKey:  c.StoredKey,
			ServerKey:  c.ServerKey,
		}, nil
	})
	if err != nil {
		return nil, err
	}
	return &Conversation{Mechanism: m, sc: srv.NewConversation()}, nil
}

// Step answers one client message.
func (c *Conversation) Step(payload []byte) ([]byte, error) {
	out, err := c.sc.Step(string(payload))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuthenticationFailed, err)
	}
	return []byte(out), nil
}

// Done reports whether the server has sent its last message.
func (c *Conversation) Done() bool { return c.sc.Done() }

// Valid reports whether the client proved it knows the password.
func (c *Conversation) Valid() bool { return c.sc.Valid() }

// User is the user name the client sent in its first message.
func (c *Conversation) User() string { return c.sc.Username() }

// CheckPassword reports whether password is u's, by deriving the keys of one of its
// credentials (SCRAM-SHA-256 first) with that credential's salt and iteration count and
// comparing them in constant time. It is what a login outside the wire protocol (the
// console's HTTP basic authentication) checks: the server never keeps the password.
func CheckPassword(u *User, password string) bool {
	for _, m := range []Mechanism{SCRAMSHA256, SCRAMSHA1} {
		c, ok := u.Credentials[m]
		if !ok {
			continue
		}
		got, err := deriveCredential(m, u.Name.User, password, c.Salt, c.Iterations)
		if err != nil {
			return false
		}
		return subtle.ConstantTimeCompare(got.StoredKey, c.StoredKey) == 1
	}
	return false
}
