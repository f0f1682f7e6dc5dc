package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMongoshScripts runs every integration/mongosh/*.js script with the real mongosh, each
// against its own database on the shared server. A failed assert makes mongosh exit non-zero.
func TestMongoshScripts(t *testing.T) {
	t.Parallel()
	scripts, err := filepath.Glob(filepath.Join("mongosh", "*.js"))
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) == 0 {
		t.Fatal("no mongosh scripts found")
	}
	srv := sharedServer(t)
	for _, script := range scripts {
		name := strings.TrimSuffix(filepath.Base(script), ".js")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			abs, err := filepath.Abs(script)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(abs); err != nil {
				t.Fatal(err)
			}
			out := srv.mongosh(t, "mongosh_"+name, "--file", abs)
			if !strings.Contains(out, name+" ok") {
				t.Errorf("script did not finish (no %q line):\n%s", name+" ok", out)
			}
		})
	}
}

// TestMongoshTelemetryTwoShards runs the telemetry scenario on two shards, where the
// collection's 16 partitions are spread over both and the merge crosses shards.
func TestMongoshTelemetryTwoShards(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	abs, err := filepath.Abs(filepath.Join("mongosh", "telemetry.js"))
	if err != nil {
		t.Fatal(err)
	}
	if out := srv.mongosh(t, "telemetry2", "--file", abs); !strings.Contains(out, "telemetry ok") {
		t.Errorf("script did not finish:\n%s", out)
	}
}

// TestMongoshBanner connects mongosh without --quiet, as a user does, and checks that it
// prints its banner with our version and no error or warning.
func TestMongoshBanner(t *testing.T) {
	t.Parallel()
	srv := sharedServer(t)
	out := srv.mongoshStdin(t, "print('prompt' + ' ready')\n", srv.uri()+"test")
	if !strings.Contains(out, "Using MongoDB:\t\t7.0") || !strings.Contains(out, "prompt ready") {
		t.Fatalf("unexpected mongosh output:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		l := strings.ToLower(line)
		if strings.Contains(l, "node.js") || strings.HasPrefix(l, "deprecation warnings:") {
			continue // about the client's Node.js version, not about the server
		}
		if strings.Contains(l, "warning") || strings.Contains(l, "error") {
			t.Errorf("mongosh printed %q\nfull output:\n%s", line, out)
		}
	}
}
