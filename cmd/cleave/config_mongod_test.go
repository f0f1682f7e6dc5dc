package main

import (
	"strings"
	"testing"
)

// TestConfigMongodFlags: mongod's --dbpath, --port, --bind_ip and --bind_ip_all set the data
// directory and the parts of the listening address; both spellings of one setting fail.
func TestConfigMongodFlags(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		listen, dir  string
		errSubstring string
	}{
		{args: []string{"--dbpath", "/data/db"}, listen: "127.0.0.1:27017", dir: "/data/db"},
		{args: []string{"--port", "27018"}, listen: "127.0.0.1:27018", dir: "./cleave-data"},
		{args: []string{"--port", "0"}, listen: "127.0.0.1:0", dir: "./cleave-data"},
		{args: []string{"--bind_ip", "::1", "--port", "1"}, listen: "[::1]:1", dir: "./cleave-data"},
		{args: []string{"--bind_ip_all"}, listen: "0.0.0.0:27017", dir: "./cleave-data"},
		{args: []string{"--dbpath", "a", "--dir", "b"}, errSubstring: "--dbpath and --dir"},
		{args: []string{"--port", "1", "--listen", "127.0.0.1:2"}, errSubstring: "give either"},
		{args: []string{"--bind_ip", "a", "--bind_ip_all"}, errSubstring: "give one"},
		{args: []string{"--bind_ip", "127.0.0.1,10.0.0.1"}, errSubstring: "listens on one address"},
		{args: []string{"--port", "70000"}, errSubstring: "between 0 and 65535"},
	} {
		c, err := parseConfig(tc.args)
		if tc.errSubstring != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errSubstring) {
				t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.errSubstring)
			}
			continue
		}
		if err != nil || c.Listen != tc.listen || c.Dir != tc.dir {
			t.Errorf("%v: listen %q dir %q err %v, want %q %q", tc.args, c.Listen, c.Dir, err, tc.listen, tc.dir)
		}
	}
}
