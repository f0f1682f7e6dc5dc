package integration

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestHandshakeCompressors connects the Go driver with each compressor cleave supports, and
// with none, and runs commands over each connection.
func TestHandshakeCompressors(t *testing.T) {
	t.Parallel()
	srv := sharedServer(t)
	for _, comp := range []string{"", "snappy", "zlib", "zstd"} {
		name := comp
		if name == "" {
			name = "None"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := options.Client()
			if comp != "" {
				opts.SetCompressors([]string{comp})
			}
			c := srv.client(t, opts)
			ctx := context.Background()
			admin := c.Database("admin")
			if err := admin.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
				t.Fatalf("ping: %v", err)
			}
			var hello bson.M
			if err := admin.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
				t.Fatalf("hello: %v", err)
			}
			if hello["msg"] != "isdbgrid" || hello["isWritablePrimary"] != true {
				t.Errorf("hello = %v", hello)
			}
			// A larger reply crosses the compressor in both directions.
			var cmds struct{ Commands map[string]bson.Raw }
			if err := admin.RunCommand(ctx, bson.D{{Key: "listCommands", Value: 1}}).Decode(&cmds); err != nil {
				t.Fatalf("listCommands: %v", err)
			}
			if _, ok := cmds.Commands["buildInfo"]; !ok {
				t.Errorf("listCommands lacks buildInfo")
			}
		})
	}
}

// TestCommandNotFound checks MongoDB's error for an unknown command through the driver.
func TestCommandNotFound(t *testing.T) {
	t.Parallel()
	c := sharedServer(t).client(t)
	err := c.Database(dbName(t)).RunCommand(context.Background(), bson.D{{Key: "nosuchcommand", Value: 1}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a CommandError", err)
	}
	if ce.Code != 59 || ce.Name != "CommandNotFound" || ce.Message != "no such command: 'nosuchcommand'" {
		t.Errorf("err = %+v", ce)
	}
}

// TestServerStatusCounts checks that serverStatus counts connections and requests.
func TestServerStatusCounts(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.client(t)
	ctx := context.Background()
	var st struct {
		Process     string
		Connections struct{ Current, TotalCreated int32 }
		Network     struct{ NumRequests int64 }
		Opcounters  struct{ Command int64 }
		Mem         struct{ Resident int32 }
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Process != "mongos" || st.Connections.Current < 1 || st.Network.NumRequests < 1 ||
		st.Opcounters.Command < 1 || st.Mem.Resident < 1 {
		t.Errorf("serverStatus = %+v", st)
	}
}

// TestStartupPortTaken checks that a taken port gives one clear line and exit code 1.
func TestStartupPortTaken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	out, code := runBinary(t, "--listen", ln.Addr().String(), "--dir", t.TempDir())
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if !strings.Contains(last, "cannot listen on "+ln.Addr().String()) || !strings.Contains(last, "address already in use") {
		t.Errorf("last line %q; output:\n%s", last, out)
	}
	if strings.Contains(out, "goroutine ") {
		t.Errorf("output has a stack trace:\n%s", out)
	}
}

// TestStartupBadDir checks that an unusable data directory gives one clear line and exit 1.
func TestStartupBadDir(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runBinary(t, "--listen", "127.0.0.1:0", "--dir", file)
	if code != 1 {
		t.Errorf("exit code %d, want 1; output:\n%s", code, out)
	}
	if !strings.Contains(out, file) || strings.Contains(out, "goroutine ") {
		t.Errorf("output should name the directory in one line:\n%s", out)
	}
}

// runBinary runs cleave to completion with args and returns its output and exit code.
// The HTTP listener is off unless args turn it on: its default port (8080) may be taken on
// the machine, which would fail the run before what the test looks at.
func runBinary(t *testing.T, args ...string) (string, int) {
	t.Helper()
	args = append([]string{"--http-addr", ""}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// TestListLocalSessions checks that the sessions commands arrive with are in the local
// session cache ($listLocalSessions) and leave it with endSessions.
func TestListLocalSessions(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.client(t)
	ctx := context.Background()
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	list := func() []bson.Raw {
		t.Helper()
		cur, err := c.Database("admin").Aggregate(ctx, bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{{Key: "allUsers", Value: true}}}}})
		if err != nil {
			t.Fatal(err)
		}
		var out []bson.Raw
		if err := cur.All(ctx, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	err = mongo.WithSession(ctx, sess, func(ctx context.Context) error {
		return c.Database("test").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	_, id, _ := sess.ID().Lookup("id").BinaryOK()
	found := func() bool {
		for _, s := range list() {
			if _, got, _ := s.Lookup("_id", "id").BinaryOK(); bytes.Equal(got, id) {
				if s.Lookup("lastUse").Type != bson.TypeDateTime || s.Lookup("_id", "uid").Type != bson.TypeBinary {
					t.Errorf("session document %s", s)
				}
				return true
			}
		}
		return false
	}
	if !found() {
		t.Fatalf("the session used by ping is not listed: %v", list())
	}
	// $listSessions on config.system.sessions lists the same cache (cleave is one process).
	cur, err := c.Database("config").Collection("system.sessions").Aggregate(ctx, bson.A{bson.D{{Key: "$listSessions", Value: bson.D{}}}})
	if err != nil {
		t.Fatal(err)
	}
	var all []bson.Raw
	if err := cur.All(ctx, &all); err != nil || len(all) == 0 {
		t.Fatalf("$listSessions: %v %v", all, err)
	}
	// Ending the session in the driver would return it to the driver's pool, to be reused by
	// the next command; endSessions is sent by hand instead.
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "endSessions", Value: bson.A{sess.ID()}}}).Err(); err != nil {
		t.Fatal(err)
	}
	if found() {
		t.Fatal("the ended session is still listed")
	}
	// Any database may list its sessions ({aggregate: 1}); a collection may not.
	if _, err := c.Database("test").Aggregate(ctx, bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{}}}}); err != nil {
		t.Errorf("$listLocalSessions on test: %v", err)
	}
	_, err = c.Database("test").Collection("c").Aggregate(ctx, bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{}}}})
	if ce := (mongo.CommandError{}); !errors.As(err, &ce) || ce.Code != 73 || !strings.Contains(ce.Message, "not a collection") {
		t.Errorf("$listLocalSessions on a collection: %v, want InvalidNamespace", err)
	}
}

// TestHandshakeShapes checks field types drivers and test suites compare exactly: hello's
// connectionId is an int, getParameter lists enableTestCommands and requireApiVersion and
// answers showDetails.
func TestHandshakeShapes(t *testing.T) {
	t.Parallel()
	c := sharedServer(t).client(t)
	ctx := context.Background()
	var hello bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		t.Fatal(err)
	}
	if _, ok := hello["connectionId"].(int32); !ok {
		t.Errorf("hello.connectionId is %T, want an int", hello["connectionId"])
	}
	var params bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getParameter", Value: "*"}}).Decode(&params); err != nil {
		t.Fatal(err)
	}
	if params["enableTestCommands"] != false || params["requireApiVersion"] != false {
		t.Errorf("getParameter *: enableTestCommands %v, requireApiVersion %v", params["enableTestCommands"], params["requireApiVersion"])
	}
	details, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getParameter", Value: bson.D{{Key: "showDetails", Value: true}}},
		{Key: "cursorTimeoutMillis", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	d := details.Lookup("cursorTimeoutMillis").Document()
	if d.Lookup("value").Int64() != 600_000 || !d.Lookup("settableAtRuntime").Boolean() || !d.Lookup("settableAtStartup").Boolean() {
		t.Errorf("getParameter showDetails: %v", details)
	}
}
