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
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required (make test installs the Node.js packages): %v", err)
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "node_modules", "mongodb")); err != nil {
		t.Fatalf("the mongodb npm package is missing; run make test (npm ci): %v", err)
	}
	srv := sharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(repoRoot, "integration", "node", "app.js"))
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "MONGODB_URI="+srv.uri(), "DB_NAME="+dbName(t))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "node app ok") {
		t.Fatalf("node app.js: %v\n%s", err, out)
	}
}

// TestNodeDriverTransactions runs integration/node/txn.js: the Node.js driver's
// withTransaction moving amounts between two accounts of one logical partition from 8
// clients, 1,000 times; the sum is conserved.
func TestNodeDriverTransactions(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required (make test installs the Node.js packages): %v", err)
	}
	srv := startServer(t, "--shards", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(repoRoot, "integration", "node", "txn.js"))
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "MONGODB_URI="+srv.uri(), "DB_NAME=nodetxn")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "node txn ok") {
		t.Fatalf("node txn.js: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(string(out)))
}

// TestNodeDriverMonitoring runs integration/node/monitor.js: the Node.js driver monitors by
// streaming awaitable hellos (exhaust) every 500 ms while the application works, without a
// failed heartbeat or a cleared pool.
func TestNodeDriverMonitoring(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required (make test installs the Node.js packages): %v", err)
	}
	srv := sharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(repoRoot, "integration", "node", "monitor.js"))
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "MONGODB_URI="+srv.uri(), "DB_NAME="+dbName(t))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "node monitor ok") {
		t.Fatalf("node monitor.js: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(string(out)))
}

// TestNodeDriverChangeStream runs integration/node/changestream.js: an application's change
// listener with the Node.js driver (its "change" events), on two shards.
func TestNodeDriverChangeStream(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required (make test installs the Node.js packages): %v", err)
	}
	srv := startServer(t, "--shards", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(repoRoot, "integration", "node", "changestream.js"))
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "MONGODB_URI="+srv.uri(), "DB_NAME=nodecs")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "node changestream ok") {
		t.Fatalf("node changestream.js: %v\n%s", err, out)
	}
}
