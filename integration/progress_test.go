package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestToolsProgress runs cleave dump, load, export and import on a terminal (a pseudo-terminal
// that script(1) gives them) and on a pipe: on the terminal each draws a bar redrawn in place
// (carriage return, clear to the end of the line), the dump's and export's up to 300/300
// (100.0%); on the pipe each writes plain timestamped lines without terminal controls.
func TestToolsProgress(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) is needed for a pseudo-terminal")
	}
	t.Parallel()
	s := sharedServer(t)
	db := dbName(t)
	docs := make([]any, 300)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "s", Value: strings.Repeat("x", 100)}}
	}
	if _, err := s.client(t).Database(db).Collection("src").InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	for _, tty := range []bool{true, false} {
		dir := t.TempDir()
		steps := []struct {
			args []string
			want string // on the bar's line
		}{
			{[]string{"dump", "--uri", s.uri(), "--db", db, "--out", filepath.Join(dir, "dump")}, db + ".src  [####################]  300/300 (100.0%)"},
			{[]string{"load", "--uri", s.uri(), "--nsFrom", db + ".src", "--nsTo", db + ".loaded", filepath.Join(dir, "dump")}, db + ".loaded  300"},
			{[]string{"export", "--uri", s.uri(), "--db", db, "--collection", "src", "--out", filepath.Join(dir, "src.json")}, db + ".src  [####################]  300/300 (100.0%)"},
			{[]string{"import", "--uri", s.uri(), "--db", db, "--collection", "imported", "--file", filepath.Join(dir, "src.json")}, db + ".imported  300"},
		}
		for _, st := range steps {
			out := runMaybeTerminal(t, tty, st.args)
			switch {
			case !strings.Contains(out, st.want):
				t.Errorf("tty %v, cleave %s: no %q in\n%q", tty, st.args[0], st.want, out)
			case tty && !strings.Contains(out, "\r"+st.want) || tty && !strings.Contains(out, "\x1b[K"):
				t.Errorf("tty %v, cleave %s: the bar is not redrawn in place:\n%q", tty, st.args[0], out)
			case !tty && (strings.Contains(out, "\r") || strings.Contains(out, "\x1b")):
				t.Errorf("tty %v, cleave %s: terminal controls on a pipe:\n%q", tty, st.args[0], out)
			case !tty && !strings.Contains(out, "\t"+st.want):
				t.Errorf("tty %v, cleave %s: the progress line has no timestamp:\n%q", tty, st.args[0], out)
			}
		}
	}
}

// runMaybeTerminal runs the binary with args, its output on a pseudo-terminal when tty, and
// returns what it wrote.
func runMaybeTerminal(t *testing.T, tty bool, args []string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	if tty {
		quoted := []string{binary}
		for _, a := range args {
			quoted = append(quoted, "'"+a+"'")
		}
		cmd = exec.Command("script", "-qec", strings.Join(quoted, " "), "/dev/null")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cleave %v: %v\n%s", args, err, out)
	}
	return string(out)
}
