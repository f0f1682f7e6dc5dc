package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, content string
		mode          os.FileMode
		wantErr       string // "" for a valid key file
	}{
		{"Valid", "abc def\nghi+/=\n", 0o600, ""},
		{"OwnerReadOnly", "abcdefgh", 0o400, ""},
		{"GroupReadable", "abcdefgh", 0o640, "are too open"},
		{"WorldReadable", "abcdefgh", 0o604, "are too open"},
		{"TooShort", "abc  de\n", 0o600, "has length 5, must be between 6 and 1024 chars"},
		{"TooLong", strings.Repeat("a", 1025), 0o600, "has length 1025"},
		{"NotBase64", "abcdef!", 0o600, "invalid char in key file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := write(tc.name, tc.content, tc.mode)
			c, err := parseConfig([]string{"--keyFile", p})
			if tc.wantErr == "" {
				if err != nil || !c.Auth || c.Cluster.key == "" || strings.ContainsAny(c.Cluster.key, " \n") {
					t.Fatalf("config %+v, %v", c, err)
				}
				if got := c.parsed().Lookup("security", "keyFile").StringValue(); got != p {
					t.Fatalf("security.keyFile %q, want %q", got, p)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
	if _, err := parseConfig([]string{"--keyFile", filepath.Join(dir, "missing")}); err == nil {
		t.Fatal("a missing key file accepted")
	}
	_, err := parseConfig([]string{"--auth", "--etcd", "127.0.0.1:2379", "--node-name", "a"})
	if err == nil || !strings.Contains(err.Error(), "needs --keyFile") {
		t.Fatalf("--auth in a cluster without --keyFile: %v", err)
	}
}
