package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBackupURIAddr: --uri takes a mongodb:// URI's first host or a bare host:port, and
// refuses what cleave backup cannot honour.
func TestBackupURIAddr(t *testing.T) {
	cases := []struct{ uri, want, err string }{
		{"mongodb://127.0.0.1:27018/", "127.0.0.1:27018", ""},
		{"mongodb://h1:1,h2:2/admin?retryWrites=false", "h1:1", ""},
		{"localhost", "localhost:27017", ""},
		{"10.0.0.1:9", "10.0.0.1:9", ""},
		{"mongodb+srv://x.example.com", "", "only mongodb://"},
		{"mongodb://u:p@h:1/", "", "credentials"},
		{"mongodb://h:1/?tls=true", "", "TLS"},
		{"mongodb:///", "", "names no host"},
	}
	for _, tc := range cases {
		got, err := uriAddr(tc.uri)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("uriAddr(%q) = %q, %v; want an error with %q", tc.uri, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("uriAddr(%q) = %q, %v; want %q", tc.uri, got, err, tc.want)
		}
	}
}

// TestBackupToolUsage: the subcommands want their directories, and the server's flags are
// not a subcommand.
func TestBackupToolUsage(t *testing.T) {
	for _, args := range [][]string{{"backup"}, {"restore", "--from", "x"}, {"restore", "--dir", "y"}} {
		var out, errOut bytes.Buffer
		code, ok := runTool(args, &out, &errOut)
		if !ok || code != 2 || !strings.Contains(errOut.String(), "required") {
			t.Errorf("cleave %v: code %d, ok %v, stderr %q", args, code, ok, errOut.String())
		}
	}
	if _, ok := runTool([]string{"--dir", "x"}, nil, nil); ok {
		t.Error("server flags were taken for a subcommand")
	}
}

// TestRestoreClusterUsage: a cluster's restore wants --from, --etcd and --node NAME=DATADIR,
// not --dir, and each node once.
func TestRestoreClusterUsage(t *testing.T) {
	for _, args := range [][]string{
		{"restore", "--from", "x", "--etcd", "127.0.0.1:2379"},
		{"restore", "--from", "x", "--node", "a=/d"},
		{"restore", "--from", "x", "--etcd", "127.0.0.1:2379", "--node", "a=/d", "--dir", "/e"},
		{"restore", "--from", "x", "--etcd", "127.0.0.1:2379", "--node", "a"},
		{"restore", "--from", "x", "--etcd", "127.0.0.1:2379", "--node", "a=/d", "--node", "a=/e"},
	} {
		var out, errOut bytes.Buffer
		if code, ok := runTool(args, &out, &errOut); !ok || code != 2 {
			t.Errorf("cleave %v: code %d, ok %v, stderr %q", args, code, ok, errOut.String())
		}
	}
}
