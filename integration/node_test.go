package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNodeDriver runs integration/node/app.js, an application-style test written with the
// Node.js driver (pinned in package-lock.json), against the shared server.
func TestNodeDriver(t *testing.T) {
	t.Parallel()
	runNodeScript(t, sharedServer(t), "app", dbName(t), 3*time.Minute)
}

// TestNodeDriverTransactions runs integration/node/txn.js: the Node.js driver's
// withTransaction moving amounts between two accounts of one logical partition from 8
// clients, 1,000 times; the sum is conserved.
func TestNodeDriverTransactions(t *testing.T) {
	t.Parallel()
	out := runNodeScript(t, startServer(t, "--shards", "2"), "txn", "nodetxn", 3*time.Minute)
	t.Log(strings.TrimSpace(out))
}

// TestNodeDriverMonitoring runs integration/node/monitor.js: the Node.js driver monitors by
// streaming awaitable hellos (exhaust) every 500 ms while the application works, without a
// failed heartbeat or a cleared pool.
func TestNodeDriverMonitoring(t *testing.T) {
	t.Parallel()
	out := runNodeScript(t, sharedServer(t), "monitor", dbName(t), time.Minute)
	t.Log(strings.TrimSpace(out))
}

// TestNodeDriverChangeStream runs integration/node/changestream.js: an application's change
// listener with the Node.js driver (its "change" events), on two shards.
func TestNodeDriverChangeStream(t *testing.T) {
	t.Parallel()
	runNodeScript(t, startServer(t, "--shards", "2"), "changestream", "nodecs", 3*time.Minute)
}

// runNodeScript runs integration/node/<script>.js with the Node.js driver against srv's
// database db, within limit, and fails the test unless it prints "node <script> ok"; it
// returns the output.
func runNodeScript(t *testing.T, srv *server, script, db string, limit time.Duration) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required (make test installs the Node.js packages): %v", err)
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "node_modules", "mongodb")); err != nil {
		t.Fatalf("the mongodb npm package is missing; run make test (npm ci): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(repoRoot, "integration", "node", script+".js"))
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "MONGODB_URI="+srv.uri(), "DB_NAME="+db)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "node "+script+" ok") {
		t.Fatalf("node %s.js: %v\n%s", script, err, out)
	}
	return string(out)
}
