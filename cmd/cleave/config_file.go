package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v2"
)

// A configuration file (--config FILE, or mongod's -f FILE) is YAML in mongod's shape for the
// options that have a cleave counterpart, plus a `cleave:` section naming any flag of this
// binary (`cleave: {shards: 4, merge-after: 2h}`). A flag given on the command line wins
// over the file; an option the file names that cleave does not know is an error, never
// ignored, so that a mongod file with settings cleave cannot honour does not start a server
// that silently behaves otherwise.

// fileOption maps one of mongod's configuration file options to the flags it sets.
type fileOption struct {
	flags []string
	// value turns the YAML value into each flag's text (nil: the value as written).
	value func(any) (string, error)
}

// fileOptions are the mongod options cleave reads from a configuration file.
var fileOptions = map[string]fileOption{
	"net.port":                   {flags: []string{"port"}},
	"net.bindIp":                 {flags: []string{"bind_ip"}},
	"net.bindIpAll":              {flags: []string{"bind_ip_all"}},
	"net.maxIncomingConnections": {flags: []string{"max-conns"}},
	"net.tls.mode":               {value: tlsMode},
	"net.tls.certificateKeyFile": {flags: []string{"tls-cert", "tls-key"}},
	"net.tls.CAFile":             {flags: []string{"tls-ca"}},
	"storage.dbPath":             {flags: []string{"dbpath"}},
	"security.authorization":     {flags: []string{"auth"}, value: authorization},
	"security.keyFile":           {flags: []string{"keyFile"}},
	"security.javascriptEnabled": {flags: []string{"javascript-enabled"}},
	"operationProfiling.slowOpThresholdMs": {flags: []string{"slow-op"}, value: func(v any) (string, error) {
		return fmt.Sprint(v) + "ms", nil
	}},
}

// tlsMode accepts net.tls.mode values that mean what cleave does: requireTLS with a
// certificate, disabled without one. It sets no flag.
func tlsMode(v any) (string, error) {
	switch fmt.Sprint(v) {
	case "requireTLS", "disabled":
		return "", nil
	}
	return "", fmt.Errorf("net.tls.mode %v: cleave serves requireTLS (with net.tls.certificateKeyFile) or disabled", v)
}

// authorization turns security.authorization's enabled or disabled into --auth.
func authorization(v any) (string, error) {
	switch fmt.Sprint(v) {
	case "enabled":
		return "true", nil
	case "disabled":
		return "false", nil
	}
	return "", fmt.Errorf("security.authorization %v: must be enabled or disabled", v)
}

// applyConfigFile sets, from the YAML file path, every flag of fs that the command line (set)
// did not, and records them in set.
func applyConfigFile(fs *flag.FlagSet, path string, set map[string]bool) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read the configuration file: %w", err)
	}
	var doc yaml.MapSlice
	if err := yaml.UnmarshalStrict(raw, &doc); err != nil {
		return fmt.Errorf("configuration file %s: %w", path, err)
	}
	values := map[string]string{}
	var errs []error
	for _, o := range flatten("", doc) {
		if err := fileValue(fs, o.key, o.value, values); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("configuration file %s: %w", path, err)
	}
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names)
	cmdline := maps.Clone(set)
	for _, name := range names {
		if cmdline[name] || overriddenByFlags(name, cmdline) {
			continue
		}
		if err := fs.Set(name, values[name]); err != nil {
			return fmt.Errorf("configuration file %s: %s: %w", path, name, err)
		}
		set[name] = true
	}
	return nil
}

// overriddenByFlags reports whether the command line gave another spelling of file flag name
// (--dir for storage.dbPath, --listen for net.port and net.bindIp).
func overriddenByFlags(name string, set map[string]bool) bool {
	switch name {
	case "dbpath":
		return set["dir"]
	case "port", "bind_ip", "bind_ip_all":
		return set["listen"] || set["port"] || set["bind_ip"] || set["bind_ip_all"]
	}
	return false
}

// fileValue records in values the flags that option key = v of the file sets.
func fileValue(fs *flag.FlagSet, key string, v any, values map[string]string) error {
	if name, ok := strings.CutPrefix(key, "cleave."); ok {
		if fs.Lookup(name) == nil || name == "config" {
			return fmt.Errorf("cleave.%s: no such flag (cleave --help lists them)", name)
		}
		values[name] = fmt.Sprint(v)
		return nil
	}
	o, ok := fileOptions[key]
	if !ok {
		return fmt.Errorf("%s: not an option cleave reads (docs/configuration.md lists them)", key)
	}
	text := fmt.Sprint(v)
	if o.value != nil {
		var err error
		if text, err = o.value(v); err != nil {
			return err
		}
	}
	for _, f := range o.flags {
		values[f] = text
	}
	return nil
}

// option is one leaf of a configuration file: its dotted path and value.
type option struct {
	key   string
	value any
}

// flatten lists the leaves of a YAML mapping with their dotted paths.
func flatten(prefix string, m yaml.MapSlice) []option {
	var out []option
	for _, item := range m {
		key := prefix + fmt.Sprint(item.Key)
		if sub, ok := item.Value.(yaml.MapSlice); ok {
			out = append(out, flatten(key+".", sub)...)
			continue
		}
		if b, ok := item.Value.(bool); ok {
			out = append(out, option{key, strconv.FormatBool(b)})
			continue
		}
		out = append(out, option{key, item.Value})
	}
	return out
}
