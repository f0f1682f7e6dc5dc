package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// update rewrites the generated flags table of docs/configuration.md.
var update = flag.Bool("update", false, "rewrite the flags table of docs/configuration.md from the binary's flags")

// The markers of docs/configuration.md between which flagsTable's output goes.
const (
	flagsBegin = "<!-- flags:begin -->"
	flagsEnd   = "<!-- flags:end -->"
)

// configurationDoc is the page that documents the flags, relative to this package.
var configurationDoc = filepath.Join("..", "..", "docs", "configuration.md")

// TestConfigurationDoc fails when a flag of the binary is missing from docs/configuration.md's
// table, or the table is not what the flags' definitions generate (a default or a description
// changed). `go test ./cmd/cleave -run TestConfigurationDoc -update` rewrites it.
func TestConfigurationDoc(t *testing.T) {
	clearCleaveEnv(t)
	raw, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, flagsBegin), strings.Index(doc, flagsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no %s ... %s region", configurationDoc, flagsBegin, flagsEnd)
	}
	table := flagsTable()
	if *update {
		doc = doc[:i+len(flagsBegin)] + "\n" + table + doc[j:]
		if err := os.WriteFile(configurationDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	const fix = "go test ./cmd/cleave -run TestConfigurationDoc -update"
	region := doc[i+len(flagsBegin) : j]
	var c Config
	c.flagSet(&mongodFlags{}).VisitAll(func(f *flag.Flag) {
		if !strings.Contains(region, "| `--"+f.Name+"` |") {
			t.Errorf("flag --%s is not in docs/configuration.md's table (%s)", f.Name, fix)
		}
	})
	if region != "\n"+table {
		t.Errorf("docs/configuration.md's flags table is stale (%s); it should read:\n%s", fix, table)
	}
}

// TestConfigEnvFallbacks checks the environment column of the flags table: every flag but
// mongod's spellings takes its default from CLEAVE_<NAME> (dashes as underscores), and those
// take none.
func TestConfigEnvFallbacks(t *testing.T) {
	clearCleaveEnv(t)
	var c Config
	defaults := map[string]string{}
	c.flagSet(&mongodFlags{}).VisitAll(func(f *flag.Flag) { defaults[f.Name] = f.DefValue })
	mongod := mongodNames()
	for name, def := range defaults {
		if envName(name, mongod) != "" {
			t.Setenv(envName(name, mongod), otherValue(def))
		}
	}
	var e Config
	e.flagSet(&mongodFlags{}).VisitAll(func(f *flag.Flag) {
		changed := f.DefValue != defaults[f.Name]
		if env := envName(f.Name, mongod); env != "" && !changed {
			t.Errorf("--%s: %s=%s left its default %q", f.Name, env, otherValue(defaults[f.Name]), f.DefValue)
		} else if env == "" && changed {
			t.Errorf("--%s (mongod's spelling) changed with the environment", f.Name)
		}
	})
}

// flagsTable renders the binary's flags as docs/configuration.md's table, in name order: the
// flag, its environment variable, its default and its usage text.
func flagsTable() string {
	var c Config
	mongod := mongodNames()
	var b strings.Builder
	b.WriteString("| flag | environment | default | |\n| --- | --- | --- | --- |\n")
	c.flagSet(&mongodFlags{}).VisitAll(func(f *flag.Flag) {
		env := "none (mongod's spelling)"
		if e := envName(f.Name, mongod); e != "" {
			env = "`" + e + "`"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", f.Name, env, flagDefault(f), mdCell(f.Usage))
	})
	return b.String()
}

// mongodNames returns the names of mongod's spellings (mongodFlags), which have no environment
// variable.
func mongodNames() map[string]bool {
	fs := flag.NewFlagSet("mongod", flag.ContinueOnError)
	(&mongodFlags{}).register(fs)
	names := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	return names
}

// envName is the environment variable a flag falls back to, or "" for mongod's spellings.
func envName(flagName string, mongod map[string]bool) string {
	if mongod[flagName] {
		return ""
	}
	return "CLEAVE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// flagDefault renders a flag's default: empty for an empty string, byte counts (the int64
// flags) in MiB or GiB when they are whole, anything else as the flag package prints it.
func flagDefault(f *flag.Flag) string {
	if f.DefValue == "" {
		return ""
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if n, ok := g.Get().(int64); ok && n >= 1<<20 {
			switch {
			case n%(1<<30) == 0:
				return fmt.Sprintf("%d GiB", n>>30)
			case n%(1<<20) == 0:
				return fmt.Sprintf("%d MiB", n>>20)
			}
		}
	}
	return "`" + f.DefValue + "`"
}

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// otherValue returns a value of a default's type that differs from it.
func otherValue(def string) string {
	switch def {
	case "true":
		return "false"
	case "false":
		return "true"
	}
	if _, err := strconv.ParseFloat(def, 64); err == nil {
		return "7"
	}
	if _, err := time.ParseDuration(def); err == nil {
		return "7s"
	}
	return "x:7"
}

// clearCleaveEnv unsets every CLEAVE_* variable for the test, so that the defaults are the
// binary's own; t.Setenv restores them afterwards.
func clearCleaveEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CLEAVE_") {
			t.Setenv(k, "")
			if err := os.Unsetenv(k); err != nil {
				t.Fatal(err)
			}
		}
	}
}
