package main

import (
	"reflect"
	"testing"
)

func TestConfigAuthFlags(t *testing.T) {
	c, err := parseConfig([]string{"--auth", "--auth-user", "admin", "--auth-password", "pw"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Auth || c.AuthUser != "admin" || c.AuthPassword != "pw" {
		t.Fatalf("config %+v", c)
	}
	if got := c.parsed().Lookup("security", "authorization").StringValue(); got != "enabled" {
		t.Fatalf("security.authorization %q", got)
	}
	if _, err := parseConfig([]string{"--auth-user", "admin"}); err == nil {
		t.Fatal("--auth-user without --auth-password accepted")
	}
	t.Setenv("CLEAVE_AUTH", "true")
	if c, err := parseConfig(nil); err != nil || !c.Auth {
		t.Fatalf("CLEAVE_AUTH=true: %+v, %v", c, err)
	}
}

func TestConfigRedactArgv(t *testing.T) {
	cases := []struct {
		name string
		argv []string
		want []string
	}{
		{"Separate", []string{"--auth-password", "pw", "--auth"}, []string{"--auth-password", "<password>", "--auth"}},
		{"Equals", []string{"-auth-password=pw"}, []string{"-auth-password=<password>"}},
		{"Untouched", []string{"--dir", "auth-password"}, []string{"--dir", "auth-password"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := redactArgv(tc.argv); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
