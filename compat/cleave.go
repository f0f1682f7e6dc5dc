package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Dirs finds the compat module and the repository around it from dir (any directory inside
// compat/): the compat module is where go test runs, the repository is where cleave builds.
func Dirs(dir string) (moduleDir, repoDir string, err error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	for {
		if modulePath(filepath.Join(d, "go.mod")) == "github.com/cleavedb/cleave/compat" {
			repo := filepath.Dir(d)
			if modulePath(filepath.Join(repo, "go.mod")) != "github.com/cleavedb/cleave" {
				return "", "", fmt.Errorf("%s: not the cleave repository", repo)
			}
			return d, repo, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", "", fmt.Errorf("%s is not inside cleave's compat module", dir)
		}
		d = up
	}
}

func modulePath(gomod string) string {
	raw, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// Server is a cleave process started for a run.
type Server struct {
	Addr    string // host:port it listens on
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
}

// BuildCleave builds the cleave binary of repoDir into bin.
func BuildCleave(ctx context.Context, repoDir, bin string) error {
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/cleave")
	build.Dir = repoDir
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building cleave: %w\n%s", err, out)
	}
	return nil
}

// StartCleave starts the cleave binary bin on a free port of 127.0.0.1 with its data in workDir
// and test commands (failpoints) on. Its log goes to workDir/cleave.log.
func StartCleave(ctx context.Context, bin, workDir string) (*Server, error) {
	addrFile := filepath.Join(workDir, "addr")
	logPath := filepath.Join(workDir, "cleave.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = logf.Close() }() // the child has its own descriptor
	// No HTTP listener: the default 127.0.0.1:8080 would collide with any other cleave.
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--dir", filepath.Join(workDir, "data"),
		"--addr-file", addrFile, "--http-addr", "", "--test-commands", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if raw, err := os.ReadFile(addrFile); err == nil && len(bytes.TrimSpace(raw)) > 0 {
			s.Addr = string(bytes.TrimSpace(raw))
			break
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("cleave exited before listening (log: %s)", logPath)
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, errors.New("cleave did not write its address within 30s")
		}
	}
	return s, nil
}

// URI is the connection string for the driver's test framework. It names the server twice, as
// 127.0.0.1 and localhost: the framework then sees two mongos routers, which spec tests with
// useMultipleMongoses: true require, and cleave, being a single router, is both. A socket
// timeout makes a command the server never answers fail its test instead of the whole suite.
func (s *Server) URI(twoHosts bool) string {
	hosts := s.Addr
	if _, port, err := net.SplitHostPort(s.Addr); err == nil && twoHosts {
		hosts += ",localhost:" + port
	}
	return "mongodb://" + hosts + "/?socketTimeoutMS=" + strconv.Itoa(int(socketTimeout/time.Millisecond))
}

// socketTimeout bounds how long a test waits for one reply.
const socketTimeout = 30 * time.Second

// Exited reports whether the process has ended (it crashed if Stop was not called).
func (s *Server) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Stop stops the server: SIGINT, then SIGKILL after 10 seconds.
func (s *Server) Stop() {
	if s.Exited() {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	raw, err := os.ReadFile(s.LogPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
