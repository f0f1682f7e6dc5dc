package integration

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// binary is the cleave binary built by TestMain; repoRoot is the repository's top directory.
var binary, repoRoot string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("integration: skipped with -short")
		os.Exit(0)
	}
	os.Exit(runMain(m))
}

// runMain builds the binary into a temporary directory, runs the tests and cleans up.
func runMain(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = filepath.Dir(wd)
	dir, err := os.MkdirTemp("", "cleave-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	binary = filepath.Join(dir, "cleave")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "./cmd/cleave")...)
	build.Dir = repoRoot
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cleave:", err)
		return 1
	}
	if raceEnabled {
		shortenRaceExit()
	}
	code := m.Run()
	sharedMu.Lock()
	if shared != nil {
		shared.stop()
		_ = os.RemoveAll(shared.dir) // the shared server's data directory is the harness's own
	}
	sharedMu.Unlock()
	return code
}

// shortenRaceExit makes the race-built processes the tests start (servers, cleave backup,
// restore, dump...) sleep 50 ms before they exit instead of the race runtime's default of a
// second (GORACE's atexit_sleep_ms), unless $GORACE sets it. That second, which lets other
// threads finish reporting a race found at the last moment, was paid at every stop of every
// server, one after another at the end of each test: minutes of the package. Races found
// before still make the process exit 66, which stop reports.
func shortenRaceExit() {
	v := os.Getenv("GORACE")
	if strings.Contains(v, "atexit_sleep_ms") {
		return
	}
	_ = os.Setenv("GORACE", strings.TrimSpace(v+" atexit_sleep_ms=50"))
}

// server is one running cleave process.
type server struct {
	t    testing.TB
	dir  string
	args []string
	cmd  *exec.Cmd
	addr string
	log  *syncBuffer
	done chan struct{}
	// httpAddr is the HTTP listener's address (/metrics); every server gets one on a free port.
	httpAddr string
}

// startServer starts cleave with a fresh data directory and extra flags, and stops it when
// the test ends.
func startServer(t testing.TB, args ...string) *server {
	t.Helper()
	s := &server{t: t, dir: t.TempDir(), args: args}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// startAuthServer starts cleave with access control on (--auth) and a root user created at
// startup (--auth-user, --auth-password), plus extra flags.
func startAuthServer(t testing.TB, user, password string, args ...string) *server {
	t.Helper()
	return startServer(t, append([]string{"--auth", "--auth-user", user, "--auth-password", password}, args...)...)
}

// userURI is the connection string for user with password, authenticating on authSource.
func (s *server) userURI(user, password, db, authSource string) string {
	return "mongodb://" + user + ":" + password + "@" + s.addr + "/" + db + "?authSource=" + authSource
}

// start runs the binary on a free port and waits until it has written its address.
func (s *server) start() {
	s.t.Helper()
	addrFile, httpAddrFile := filepath.Join(s.dir, "addr"), filepath.Join(s.dir, "http-addr")
	_ = os.Remove(addrFile)
	_ = os.Remove(httpAddrFile)
	// The HTTP listener too takes a free port: the default 8080 would collide between the
	// servers of parallel tests.
	args := append([]string{"--listen", "127.0.0.1:0", "--dir", filepath.Join(s.dir, "data"),
		"--addr-file", addrFile, "--http-addr", "127.0.0.1:0", "--http-addr-file", httpAddrFile,
		"--log-level", "info"}, s.args...)
	s.log = &syncBuffer{}
	s.cmd = exec.Command(binary, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("starting cleave: %v", err)
	}
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); s.keepLog(); close(s.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			s.addr = string(b)
			h, _ := os.ReadFile(httpAddrFile) // written before addrFile
			s.httpAddr = string(h)
			return
		}
		select {
		case <-s.done:
			s.t.Fatalf("cleave exited during startup:\n%s", s.log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("cleave did not start within a minute:\n%s", s.log.String())
		}
	}
}

// keepLog writes the exited process's output to $CLEAVE_TEST_LOGS/<test>-<pid>.log when that
// variable names a directory: every incarnation's log, those of passing runs and killed
// processes included (a failed test prints only the last incarnation's).
func (s *server) keepLog() {
	dir := os.Getenv("CLEAVE_TEST_LOGS")
	if dir == "" {
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(s.t.Name())
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.log", name, s.cmd.Process.Pid))
	_ = os.WriteFile(path, []byte(s.log.String()), 0o644)
}

// uri is the connection string for the server.
func (s *server) uri() string { return "mongodb://" + s.addr + "/" }

// stop sends SIGTERM and waits for a clean exit; a server that does not stop in time is
// killed and the test fails.
func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		if code := s.cmd.ProcessState.ExitCode(); code != 0 {
			s.t.Errorf("cleave exited with %d after SIGTERM:\n%s", code, s.log.String())
		}
	case <-time.After(30 * time.Second):
		// SIGQUIT: the Go runtime prints every goroutine's stack and exits, so the log says
		// where the shutdown hung.
		_ = s.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		s.t.Errorf("cleave did not stop within 30s of SIGTERM (its goroutines at the end of the log):\n%s", s.log.String())
	}
}

// kill sends SIGKILL and waits for the process to die.
func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// restart starts the server again on the same data directory (on a new port).
func (s *server) restart() {
	s.t.Helper()
	s.start()
}

// client connects the Go driver to the server and disconnects when the test ends.
func (s *server) client(t testing.TB, opts ...*options.ClientOptions) *mongo.Client {
	t.Helper()
	// Heartbeats every 500 ms: the driver streams awaitable hellos, and after a state change
	// error (a failpoint's ShutdownInProgress) it marks the server Unknown until its monitor's
	// next hello answers, which with the default 10 s would outlast the selection timeout (a
	// mongos's errors carry no topologyVersion outside its quiesce mode, as cleave's).
	o := options.Client().ApplyURI(s.uri()).SetServerSelectionTimeout(10 * time.Second).
		SetHeartbeatInterval(500 * time.Millisecond)
	all := append([]*options.ClientOptions{o}, opts...)
	c, err := mongo.Connect(all...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	// Disconnect ends the client's sessions on a server it selects: a server that stopped
	// first would keep it waiting for the server selection timeout, for nothing. So would
	// one killed or restarted since (on another port): the sessions died with it, and a
	// done context lets Disconnect just close the client.
	addr := s.addr
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if !s.runningAt(addr) {
			cancel()
		}
		_ = c.Disconnect(ctx)
	})
	return c
}

// runningAt reports whether the server runs, listening at addr.
func (s *server) runningAt(addr string) bool {
	select {
	case <-s.done:
		return false
	default:
		return s.addr == addr
	}
}

// shared is one server that tests needing no special flags share, started on first use.
var (
	sharedMu sync.Mutex
	shared   *server
)

// sharedServer returns the shared server, starting it if needed. It lives until TestMain ends.
func sharedServer(t testing.TB) *server {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil {
		dir, err := os.MkdirTemp("", "cleave-shared-")
		if err != nil {
			t.Fatal(err)
		}
		shared = &server{t: &mainTB{TB: t}, dir: dir}
		shared.start()
	}
	return shared
}

// mainTB lets the shared server report failures after the test that started it has ended.
type mainTB struct{ testing.TB }

// Fatalf reports to stderr and exits: the shared server is broken for every later test.
func (m *mainTB) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

// Errorf reports to stderr.
func (m *mainTB) Errorf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// Helper does nothing.
func (m *mainTB) Helper() {}

// dbName returns a database name unique to the test, derived from its name.
func dbName(t testing.TB) string {
	n := strings.NewReplacer("/", "_", " ", "_", ".", "_", "$", "_").Replace(t.Name())
	if len(n) > 60 {
		n = n[:60]
	}
	return n
}

// mongoshPath is where `npm ci` installs mongosh.
func mongoshPath(t testing.TB) string {
	t.Helper()
	p := filepath.Join(repoRoot, "node_modules", ".bin", "mongosh")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("mongosh is not installed at %s: run `make test` (it runs npm ci) or `npm ci`", p)
	}
	return p
}

// mongosh runs a mongosh script file or --eval string against the server's database db
// and returns its combined output; a non-zero exit fails the test.
func (s *server) mongosh(t testing.TB, db string, args ...string) string {
	t.Helper()
	return s.mongoshRaw(t, append([]string{"--quiet", s.uri() + db}, args...)...)
}

// mongoshRaw runs mongosh with exactly these arguments (plus --norc) and returns its output;
// a non-zero exit fails the test.
func (s *server) mongoshRaw(t testing.TB, args ...string) string {
	t.Helper()
	return s.mongoshStdin(t, "", args...)
}

// mongoshStdin runs mongosh with input on its standard input, the way a user types at the
// prompt (mongosh then prints its banner and prompts), and returns its combined output.
func (s *server) mongoshStdin(t testing.TB, input string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	all := append([]string{"--norc"}, args...)
	cmd := exec.CommandContext(ctx, mongoshPath(t), all...)
	cmd.Env = append(os.Environ(), "MONGOSH_NO_UPDATE_CHECK=1", "DO_NOT_TRACK=1", "NO_COLOR=1")
	cmd.Dir = t.TempDir() // mongosh writes nothing to the repo
	cmd.Env = append(cmd.Env, "HOME="+cmd.Dir)
	if input != "" {
		cmd.Stdin = strings.NewReader(input)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mongosh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// syncBuffer is a bytes.Buffer safe for the process's concurrent writes and our reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
