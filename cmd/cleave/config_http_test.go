package main

import (
	"strings"
	"testing"
)

// TestConfigPprof: --pprof serves on the HTTP listener, so it needs one.
func TestConfigPprof(t *testing.T) {
	c, err := parseConfig([]string{"--pprof"})
	if err != nil || !c.Pprof {
		t.Fatalf("--pprof: %+v, %v", c.Pprof, err)
	}
	if _, err := parseConfig([]string{"--pprof", "--http-addr", ""}); err == nil || !strings.Contains(err.Error(), "--pprof needs an --http-addr") {
		t.Fatalf("--pprof without a listener: %v", err)
	}
}
