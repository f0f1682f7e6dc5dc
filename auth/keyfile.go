package auth

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/xdg-go/scram"
)

// Internal (membership) authentication, as MongoDB's security.keyFile: every node of a
// cluster reads the same key file, and a node authenticates to another as the internal
// user __system (on the local database) with SCRAM-SHA-256, whose password is the key. The
// internal user is no record of the catalog: each node derives it from its own key file, so
// a process without the key cannot become it, and no user a client creates can either.

// InternalUserName is the internal user: MongoDB's __system@local.
var InternalUserName = UserName{User: "__system", DB: "local"}

// Key file bounds (MongoDB's): 6 to 1024 base64 characters once whitespace is removed.
const (
	minKeyLen = 6
	maxKeyLen = 1024
)

// ReadKeyFile reads and checks a key file as mongod does: not readable by group or others
// (on Unix), whitespace ignored, the rest 6 to 1024 characters of the base64 alphabet
// (with '='). It returns the key.
func ReadKeyFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("error getting file %s: %w", path, err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("permissions on %s are too open", path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("error reading file %s: %w", path, err)
	}
	return parseKey(path, string(raw))
}

// parseKey returns the key of a key file's contents: whitespace removed, the rest checked.
func parseKey(path, raw string) (string, error) {
	var b strings.Builder
	for _, c := range raw {
		switch {
		case c == ' ' || c >= '\t' && c <= '\r':
			continue
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/', c == '=':
			b.WriteRune(c)
		default:
			return "", fmt.Errorf("invalid char in key file %s: %q", path, c)
		}
	}
	key := b.String()
	if len(key) < minKeyLen || len(key) > maxKeyLen {
		return "", fmt.Errorf("security key in %s has length %d, must be between %d and %d chars", path, len(key), minKeyLen, maxKeyLen)
	}
	return key, nil
}

// InternalUser returns the internal user of key: __system@local with SCRAM-SHA-256 (and
// SCRAM-SHA-1) credentials of the key and the __system role.
func InternalUser(key string) (*User, error) {
	u := &User{Name: InternalUserName, Credentials: map[Mechanism]Credential{},
		Roles: []RoleName{{Role: "__system", DB: "admin"}}}
	for _, m := range Mechanisms {
		c, err := NewCredential(m, u.Name.User, key)
		if err != nil {
			return nil, err
		}
		u.Credentials[m] = c
	}
	return u, nil
}

// ClientConversation is the client side of a SCRAM-SHA-256 conversation: a node proving to
// another that it holds the cluster's key (xdg-go/scram, the driver's own client).
type ClientConversation struct {
	conv *scram.ClientConversation
}

// NewClientConversation starts the conversation of user with password.
func NewClientConversation(user, password string) (*ClientConversation, error) {
	c, err := scram.SHA256.NewClient(user, password, "")
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return &ClientConversation{conv: c.NewConversation()}, nil
}

// Step answers the server's last message (empty for the first step) with the next one.
func (c *ClientConversation) Step(in []byte) ([]byte, error) {
	out, err := c.conv.Step(string(in))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAuthenticationFailed, err)
	}
	return []byte(out), nil
}

// Done reports whether the conversation is over (the server's signature checked).
func (c *ClientConversation) Done() bool { return c.conv.Done() }
