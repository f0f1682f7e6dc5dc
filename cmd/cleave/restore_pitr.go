package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	exe "github.com/cleavedb/cleave/exec"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/tools/pitr"
	"github.com/cleavedb/cleave/tools/progress"
)

// pointInTime replays onto the server restored in dir (from the backup m) the change log of
// logFrom (a server's URI or a later backup's directory) up to until: cleave restore --until.
func pointInTime(m *store.Manifest, dir, logFrom string, until pitr.Point, stdout, stderr io.Writer) error {
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), ".cleave-pitr-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	o := pitr.Options{From: m.ClusterTime, Until: until, SourceURI: logFrom, SourceName: logFrom}
	if !strings.HasPrefix(logFrom, "mongodb://") && !strings.HasPrefix(logFrom, "mongodb+srv://") {
		// A later backup: served from a restored copy, whose log holds every write before
		// its cluster time.
		lm, err := store.Restore(store.RestoreOptions{From: logFrom, To: filepath.Join(tmp, "source", "data"), ServerVersion: exe.ServerVersion})
		if err != nil {
			return fmt.Errorf("--log-from %s: %w", logFrom, restoreMessage(err))
		}
		src, err := startChild(filepath.Join(tmp, "source", "data"), len(lm.Shards), filepath.Join(tmp, "source"))
		if err != nil {
			return err
		}
		defer src.stop()
		o.SourceURI, o.End = src.uri, lm.ClusterTime-1
	}
	target, err := startChild(dir, len(m.Shards), filepath.Join(tmp, "target"))
	if err != nil {
		return err
	}
	defer target.stop()
	o.TargetURI = target.uri
	return replay(m, o, until, stdout, stderr)
}

// replay runs the replay o and says what it did.
func replay(m *store.Manifest, o pitr.Options, until pitr.Point, stdout, stderr io.Writer) error {
	bar := progress.New(stderr, "change events replayed", -1)
	o.Progress = bar.Set
	start := time.Now()
	res, err := pitr.Run(context.Background(), o)
	bar.Done()
	if err != nil {
		return err
	}
	last := "none"
	if res.Last != 0 {
		last = pitr.FormatTS(res.Last)
	}
	say(stdout, "replayed %d change events (%s) from %s up to %s in %d ms; the last at %s\n", res.Events, opCounts(res.Ops),
		m.ClusterTimeString, until, time.Since(start).Milliseconds(), last)
	return nil
}

// opCounts says how many events of each type a replay applied.
func opCounts(ops map[string]int64) string {
	var parts []string
	for _, op := range []string{"insert", "update", "replace", "delete", "create", "createIndexes", "dropIndexes",
		"modify", "shardCollection", "rename", "drop", "dropDatabase"} {
		if ops[op] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", ops[op], op))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// child is a cleave server this process started on a data directory, listening on a free
// port of 127.0.0.1.
type child struct {
	cmd  *exec.Cmd
	uri  string
	done chan struct{}
}

// startChild starts `cleave --dir dir --shards shards` with its files (address, log) in tmp,
// keeping its whole change log (no retention), and connects to it.
func startChild(dir string, shards int, tmp string, extra ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(tmp, "server.log"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = logf.Close() }()
	addrFile := filepath.Join(tmp, "addr")
	cmd := exec.Command(self, "--dir", dir, "--shards", strconv.Itoa(shards), "--listen", "127.0.0.1:0",
		"--addr-file", addrFile, "--http-addr", "127.0.0.1:0", "--change-retention", "0", "--change-retention-bytes", "0")
	cmd.Args = append(cmd.Args, extra...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := &child{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(ch.done) }()
	addr, err := ch.waitAddr(addrFile, logf.Name())
	if err != nil {
		ch.stop()
		return nil, err
	}
	ch.uri = "mongodb://" + addr + "/?directConnection=true"
	return ch, nil
}

// waitAddr waits until the child wrote its address (a minute at most).
func (ch *child) waitAddr(addrFile, logName string) (string, error) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			return string(b), nil
		}
		select {
		case <-ch.done:
			out, _ := os.ReadFile(logName)
			return "", fmt.Errorf("the server on the restored data exited: %s", tail(out))
		case <-time.After(20 * time.Millisecond):
		}
	}
	return "", errors.New("the server on the restored data did not start within a minute")
}

// tail returns the last lines of a log.
func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}

// stop stops the child (SIGTERM, then SIGKILL after a minute).
func (ch *child) stop() {
	_ = ch.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ch.done:
	case <-time.After(time.Minute):
		_ = ch.cmd.Process.Kill()
		<-ch.done
	}
}
