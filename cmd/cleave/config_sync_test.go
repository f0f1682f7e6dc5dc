package main

import "testing"

// TestConfigSyncPacing: group commit pacing is on by default, and --sync-pacing=false or
// CLEAVE_SYNC_PACING=false turn it off.
func TestConfigSyncPacing(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want bool
	}{
		{nil, "", true},
		{[]string{"--sync-pacing=false"}, "", false},
		{nil, "false", false},
		{[]string{"--sync-pacing=true"}, "false", true},
	} {
		t.Setenv("CLEAVE_SYNC_PACING", tc.env)
		c, err := parseConfig(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if c.SyncPacing != tc.want {
			t.Errorf("%v with CLEAVE_SYNC_PACING=%q: SyncPacing %v, want %v", tc.args, tc.env, c.SyncPacing, tc.want)
		}
	}
}
