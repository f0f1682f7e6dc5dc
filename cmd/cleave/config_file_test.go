package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeConfigFile writes text to a file in a temporary directory and returns its path.
func writeConfigFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cleave.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigFile: a mongod-shaped YAML file sets the listener, the data directory, access
// control, slowms and (in its cleave: section) any flag; the command line wins over it; what
// cleave cannot honour is refused by name.
func TestConfigFile(t *testing.T) {
	p := writeConfigFile(t, `
net:
  port: 27999
  bindIp: 127.0.0.2
  maxIncomingConnections: 500
storage:
  dbPath: /srv/cleave
security:
  authorization: disabled
  javascriptEnabled: false
operationProfiling:
  slowOpThresholdMs: 250
cleave:
  shards: 3
  merge-after: 2h
`)
	c, err := parseConfig([]string{"--config", p, "--shards", "2"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.2:27999" || c.Dir != "/srv/cleave" || c.MaxConns != 500 || c.Auth || c.JavaScript ||
		c.SlowOp != 250*time.Millisecond || c.Shards != 2 || c.MergeAfter != 2*time.Hour {
		t.Fatalf("config from the file: %+v", c)
	}
	if got := c.parsed().Lookup("config").StringValue(); got != p {
		t.Fatalf("getCmdLineOpts parsed.config %q, want %q", got, p)
	}
	c, err = parseConfig([]string{"-f", p, "--dir", "/elsewhere", "--listen", "127.0.0.1:1"})
	if err != nil || c.Dir != "/elsewhere" || c.Listen != "127.0.0.1:1" || c.Shards != 3 {
		t.Fatalf("flags over the file: dir %q listen %q shards %d err %v", c.Dir, c.Listen, c.Shards, err)
	}
	for text, want := range map[string]string{
		"replication:\n  replSetName: rs0\n":  "replication.replSetName: not an option cleave reads",
		"security:\n  authorization: maybe\n": "must be enabled or disabled",
		"net:\n  tls:\n    mode: allowTLS\n":  "cleave serves requireTLS",
		"cleave:\n  no-such-flag: 1\n":        "cleave.no-such-flag: no such flag",
		"cleave:\n  shards: many\n":           "shards",
		"net: [1, 2\n":                        "configuration file",
	} {
		if _, err := parseConfig([]string{"--config", writeConfigFile(t, text)}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("file %q: error %v, want one containing %q", text, err, want)
		}
	}
	if _, err := parseConfig([]string{"--config", filepath.Join(t.TempDir(), "missing.yaml")}); err == nil {
		t.Error("a missing configuration file was accepted")
	}
}
