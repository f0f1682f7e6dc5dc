package main

import (
	"strings"
	"testing"
	"time"
)

// TestConfigChangeRetentionInterval: the change logs are trimmed every minute by default;
// --change-retention-interval and CLEAVE_CHANGE_RETENTION_INTERVAL set it, and a zero or
// negative interval is refused.
func TestConfigChangeRetentionInterval(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want time.Duration
	}{
		{nil, "", time.Minute},
		{[]string{"--change-retention-interval", "200ms"}, "", 200 * time.Millisecond},
		{nil, "5s", 5 * time.Second},
	} {
		t.Setenv("CLEAVE_CHANGE_RETENTION_INTERVAL", tc.env)
		c, err := parseConfig(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if c.ChangeRetentionInterval != tc.want {
			t.Errorf("%v with CLEAVE_CHANGE_RETENTION_INTERVAL=%q: %v, want %v", tc.args, tc.env, c.ChangeRetentionInterval, tc.want)
		}
	}
	t.Setenv("CLEAVE_CHANGE_RETENTION_INTERVAL", "")
	for _, v := range []string{"0s", "-1s"} {
		_, err := parseConfig([]string{"--change-retention-interval", v})
		if err == nil || !strings.Contains(err.Error(), "--change-retention-interval "+v+": must be positive") {
			t.Errorf("--change-retention-interval %s: %v, want it refused", v, err)
		}
	}
}
