package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/tools/pitr"
	"github.com/cleavedb/cleave/wire"
)

// runTool runs the subcommand args name (`cleave backup …`, `cleave restore …`, and the
// clients of dump.go and export.go) and returns
// its exit code; ok is false when args name none (the server's flags follow).
func runTool(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case "backup":
		return runBackup(args[1:], stdout, stderr), true
	case "restore":
		return runRestore(args[1:], stdout, stderr), true
	case "dump":
		return runDump(args[1:], stdout, stderr), true
	case "load":
		return runLoad(args[1:], stdout, stderr), true
	case "export":
		return runExport(args[1:], stdout, stderr), true
	case "import":
		return runImport(args[1:], stdout, stderr), true
	}
	return 0, false
}

// runBackup is `cleave backup --to DIR [--incremental-from PREV] [--uri URI]`: it asks the server at URI to back
// itself up into DIR (the backup command, docs/backup.md) and prints what it answered.
func runBackup(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cleave backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	to := fs.String("to", "", "backup directory on the server's file system: missing or empty (a relative path is made absolute here)")
	uri := fs.String("uri", env("URI", "mongodb://127.0.0.1:27017"), "the server: mongodb://host:port or host:port (no TLS or authentication)")
	timeout := fs.Duration("timeout", time.Hour, "how long to wait for the backup")
	prev := fs.String("incremental-from", "", "a backup made before, on the server's file system: copy only the sstables it lacks")
	if err := fs.Parse(args); err != nil {
		return exitParse(err)
	}
	if *to == "" || fs.NArg() > 0 {
		say(stderr, "cleave backup: --to DIR is required, and nothing else\n")
		return 2
	}
	dir, err := filepath.Abs(*to)
	if err != nil {
		say(stderr, "cleave backup: %v\n", err)
		return 2
	}
	addr, err := uriAddr(*uri)
	if err != nil {
		say(stderr, "cleave backup: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	c := wire.NewClient(addr, wire.ClientOptions{})
	defer c.Close()
	b := bsoncore.NewDocumentBuilder().AppendInt32("backup", 1).AppendString("to", dir)
	if *prev != "" {
		p, err := filepath.Abs(*prev)
		if err != nil {
			say(stderr, "cleave backup: %v\n", err)
			return 2
		}
		b.AppendString("incrementalFrom", p)
	}
	cmd := b.AppendString("$db", "admin").Build()
	reply, err := c.Command(ctx, cmd)
	if err != nil {
		say(stderr, "cleave backup: cannot reach %s: %v\n", addr, err)
		return 1
	}
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 {
		msg, _ := reply.Lookup("errmsg").StringValueOK()
		name, _ := reply.Lookup("codeName").StringValueOK()
		say(stderr, "cleave backup: %s (%s)\n", msg, name)
		return 1
	}
	t, i, _ := reply.Lookup("clusterTime").TimestampOK()
	say(stdout, "backup of %d shards, %d collections, %d documents at cluster time Timestamp(%d, %d) in %s\n",
		replyInt(reply, "shards"), replyInt(reply, "collections"), replyInt(reply, "documents"), t, i, dir)
	if from, ok := reply.Lookup("incrementalFrom").StringValueOK(); ok {
		say(stdout, "incremental from %s: %d of %d sstables (%d bytes) reused, not copied\n",
			from, replyInt(reply, "reusedFiles"), replyInt(reply, "files"), replyInt(reply, "reusedBytes"))
	}
	say(stdout, "writes paused %d µs; took %d ms\n", replyInt(reply, "writePauseMicros"), replyInt(reply, "durationMillis"))
	return 0
}

// runRestore is `cleave restore --from DIR --dir DATADIR`: it lays out DATADIR from the
// backup in DIR and verifies it (store.Restore); `cleave --dir DATADIR` then serves it. A
// cluster's backup restores with --etcd and --node NAME=DATADIR instead (restore_cluster.go).
func runRestore(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cleave restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "backup directory (made by cleave backup)")
	dir := fs.String("dir", "", "data directory to lay out: missing or empty")
	etcd := fs.String("etcd", "", "a cluster's backup: the new cluster's etcd endpoints (host:port,...), where nothing is under --etcd-prefix yet")
	prefix := fs.String("etcd-prefix", "/cleave", "a cluster's backup: the new cluster's key prefix in etcd")
	until := fs.String("until", "", "point-in-time restore: replay the change log after the backup's time up to this cluster time (Timestamp(s, i) or s:i) or RFC 3339 time; needs --log-from")
	logFrom := fs.String("log-from", "", "with --until: the change log to replay, a later backup's directory or the server's mongodb:// URI")
	nodes := nodeDirs{}
	fs.Var(nodes, "node", "a cluster's backup: `NAME=DATADIR`, a node of the new cluster and its data directory (missing or empty); repeat for each node")
	if err := fs.Parse(args); err != nil {
		return exitParse(err)
	}
	if *etcd != "" || len(nodes) > 0 {
		if *from == "" || *etcd == "" || len(nodes) == 0 || *dir != "" || fs.NArg() > 0 || (*until == "") != (*logFrom == "") ||
			(*logFrom != "" && !isURI(*logFrom)) {
			say(stderr, "cleave restore: a cluster's restore takes --from DIR, --etcd ENDPOINTS, one --node NAME=DATADIR per node and, for a point in time, --until with --log-from the cluster's mongodb:// URI (not a backup directory), and nothing else\n")
			return 2
		}
		var point *pitr.Point
		if *until != "" {
			p, err := pitr.ParsePoint(*until)
			if err != nil {
				say(stderr, "cleave restore: --until %v\n", err)
				return 2
			}
			point = &p
		}
		return restoreCluster(*from, *etcd, *prefix, nodes, point, *logFrom, stdout, stderr) // restore_cluster.go
	}
	if *from == "" || *dir == "" || fs.NArg() > 0 || (*until == "") != (*logFrom == "") {
		say(stderr, "cleave restore: --from DIR and --dir DATADIR are required, --until and --log-from go together, and nothing else\n")
		return 2
	}
	var point pitr.Point
	if *until != "" {
		p, err := pitr.ParsePoint(*until)
		if err != nil {
			say(stderr, "cleave restore: --until %v\n", err)
			return 2
		}
		point = p
	}
	start := time.Now()
	m, err := store.Restore(store.RestoreOptions{From: *from, To: *dir, ServerVersion: exec.ServerVersion})
	if err != nil {
		say(stderr, "cleave restore: %v\n", restoreMessage(err))
		return 1
	}
	var docs int64
	for _, c := range m.Collections {
		docs += c.Count
	}
	say(stdout, "restored %d shards, %d collections, %d documents at cluster time %s into %s, verified in %d ms\n",
		len(m.Shards), len(m.Collections), docs, m.ClusterTimeString, *dir, time.Since(start).Milliseconds())
	if *until != "" {
		if err := pointInTime(m, *dir, *logFrom, point, stdout, stderr); err != nil {
			say(stderr, "cleave restore: %v; nothing was restored\n", err)
			removeAll(*dir)
			return 1
		}
	}
	say(stdout, "start it with: cleave --dir %s --shards %d\n", *dir, len(m.Shards))
	return 0
}

// restoreMessage says why a restore refused in a user's words.
func restoreMessage(err error) error {
	switch {
	case errors.Is(err, store.ErrNoManifest):
		return fmt.Errorf("not a backup: %w", err)
	case errors.Is(err, store.ErrNotEmpty):
		return fmt.Errorf("the target must be missing or empty: %w", err)
	case errors.Is(err, store.ErrBadManifest):
		return fmt.Errorf("the backup is corrupt or incomplete, nothing was restored: %w", err)
	}
	return err
}

// exitParse is the exit code of a subcommand whose flags did not parse (its flag set said
// why): 0 for -h.
func exitParse(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// uriAddr returns the host:port of a mongodb:// URI's first host (or of host:port itself).
// It refuses what it cannot honour: TLS, credentials, mongodb+srv.
func uriAddr(uri string) (string, error) {
	rest, scheme := strings.CutPrefix(uri, "mongodb://")
	if !scheme && strings.Contains(uri, "://") {
		return "", fmt.Errorf("--uri %q: only mongodb:// URIs are supported", uri)
	}
	rest, query, _ := strings.Cut(rest, "?")
	if q := strings.ToLower(query); strings.Contains(q, "tls=true") || strings.Contains(q, "ssl=true") {
		return "", fmt.Errorf("--uri %q: TLS is not supported by cleave backup yet", uri)
	}
	if strings.Contains(rest, "@") {
		return "", fmt.Errorf("--uri %q: credentials are not supported by cleave backup yet", uri)
	}
	host, _, _ := strings.Cut(rest, "/")
	host, _, _ = strings.Cut(host, ",")
	if host == "" {
		return "", fmt.Errorf("--uri %q names no host", uri)
	}
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, "27017")
	}
	return host, nil
}

// replyInt reads a number of a reply (0 when absent).
func replyInt(reply bsoncore.Document, key string) int64 {
	n, _ := reply.Lookup(key).AsInt64OK()
	return n
}

// say writes a line of a subcommand's output; a failed write to a terminal has no one to
// report to.
func say(w io.Writer, format string, args ...any) {
	_, _ = fmt.Fprintf(w, format, args...)
}

// removeAll removes what a failed restore laid out in dir, leaving dir itself (which may
// have existed, empty).
func removeAll(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
