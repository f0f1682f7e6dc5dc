package wire

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// update rewrites generated test data: here, the fuzz seeds captured from the driver.
var update = flag.Bool("update", false, "rewrite testdata/fuzz seeds captured from the Go driver")

// seen is one request as a handler saw it.
type seen struct {
	cmd        string
	compressor Compressor
	legacy     bool
	ndocs      int
}

// mongosHandler is the smallest handler the Go driver accepts: hello/isMaster (as a mongos,
// negotiating compression), ping, insert and endSessions. It records what it sees.
type mongosHandler struct {
	mu   sync.Mutex
	seen []seen
}

// Connect implements Handler.
func (h *mongosHandler) Connect(info ConnInfo) ConnHandler {
	return &mongosConn{h: h, id: info.ID}
}

// mongosConn is one connection of a mongosHandler.
type mongosConn struct {
	h  *mongosHandler
	id int64
}

// Handle implements ConnHandler.
func (c *mongosConn) Handle(_ context.Context, req *Request) (bsoncore.Document, error) {
	name := req.Body.Index(0).Key()
	s := seen{cmd: name, compressor: req.Compressor, legacy: req.Legacy}
	idx, b := bsoncore.AppendDocumentStart(nil)
	switch name {
	case "hello", "isMaster", "ismaster":
		b = appendHelloFields(b, req.Body, name == "hello", c.id)
	case "insert":
		vals, _ := req.Body.Lookup("documents").Array().Values()
		s.ndocs = len(vals)
		b = bsoncore.AppendInt32Element(b, "n", int32(len(vals)))
	case "ping", "endSessions":
	default:
		return mongoerr.New(mongoerr.CommandNotFound, "no such command: '%s'", name).Reply(), nil
	}
	b = bsoncore.AppendDoubleElement(b, "ok", 1)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	c.h.mu.Lock()
	c.h.seen = append(c.h.seen, s)
	c.h.mu.Unlock()
	return b, nil
}

// Close implements ConnHandler.
func (c *mongosConn) Close() {}

// appendHelloFields appends a mongos hello reply, its compression list the intersection of
// the client's with what this package serves, in the client's order.
func appendHelloFields(b []byte, cmd bsoncore.Document, modern bool, connID int64) []byte {
	if modern {
		b = bsoncore.AppendBooleanElement(b, "isWritablePrimary", true)
	} else {
		b = bsoncore.AppendBooleanElement(b, "ismaster", true)
	}
	b = bsoncore.AppendStringElement(b, "msg", "isdbgrid")
	b = bsoncore.AppendBooleanElement(b, "helloOk", true)
	b = bsoncore.AppendInt32Element(b, "maxBsonObjectSize", MaxBSONSize)
	b = bsoncore.AppendInt32Element(b, "maxMessageSizeBytes", MaxMessageSize)
	b = bsoncore.AppendInt32Element(b, "maxWriteBatchSize", 100_000)
	b = bsoncore.AppendDateTimeElement(b, "localTime", time.Now().UnixMilli())
	b = bsoncore.AppendInt32Element(b, "logicalSessionTimeoutMinutes", 30)
	b = bsoncore.AppendInt64Element(b, "connectionId", connID)
	b = bsoncore.AppendInt32Element(b, "minWireVersion", 0)
	b = bsoncore.AppendInt32Element(b, "maxWireVersion", 21)
	b = bsoncore.AppendBooleanElement(b, "readOnly", false)
	if list, ok := cmd.Lookup("compression").ArrayOK(); ok {
		aidx, out := bsoncore.AppendArrayElementStart(b, "compression")
		vals, _ := list.Values()
		i := 0
		for _, v := range vals {
			if name, ok := v.StringValueOK(); ok {
				if _, ok := ParseCompressor(name); ok {
					out = bsoncore.AppendStringElement(out, fmt.Sprint(i), name)
					i++
				}
			}
		}
		b, _ = bsoncore.AppendArrayEnd(out, aidx)
	}
	return b
}

// recordingListener keeps every byte its connections read, to capture the driver's frames.
type recordingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*recordingConn
}

// Accept implements net.Listener.
func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	rc := &recordingConn{Conn: c}
	l.mu.Lock()
	l.conns = append(l.conns, rc)
	l.mu.Unlock()
	return rc, nil
}

// frames splits what each connection received into frames.
func (l *recordingListener) frames() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]byte
	for _, c := range l.conns {
		c.mu.Lock()
		in := c.in.Bytes()
		for len(in) >= HeaderSize {
			n := int(le.Uint32(in))
			if n < HeaderSize || n > len(in) {
				break
			}
			out = append(out, bytes.Clone(in[:n]))
			in = in[n:]
		}
		c.mu.Unlock()
	}
	return out
}

// recordingConn records what it reads.
type recordingConn struct {
	net.Conn
	mu sync.Mutex
	in bytes.Buffer
}

// Read implements net.Conn.
func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.in.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

// TestDriverInterop drives the server with the official Go driver, without compression and
// with each compressor, and checks that the handshake arrived as an uncompressed OP_QUERY,
// that later commands arrived compressed with the negotiated compressor, that an insertMany
// arrived as a document sequence merged into the body, and that the driver understood every
// reply. Every frame the driver sent must decode and re-encode byte for byte.
func TestDriverInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the Go driver")
	}
	for _, comp := range []string{"", "snappy", "zlib", "zstd"} {
		name := map[string]string{"": "None", "snappy": "Snappy", "zlib": "Zlib", "zstd": "Zstd"}[comp]
		t.Run("Compressor"+name, func(t *testing.T) {
			h := &mongosHandler{}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			rl := &recordingListener{Listener: ln}
			srv := NewServer(ServerOptions{}, h, zap.NewNop())
			served := make(chan error, 1)
			go func() { served <- srv.Serve(rl) }()

			runDriver(t, ln.Addr().String(), comp)

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-served; err != nil {
				t.Fatal(err)
			}
			checkSeen(t, h, comp)
			frames := rl.frames()
			checkCapturedFrames(t, frames)
			if *update {
				writeDriverSeeds(t, comp, frames)
			}
		})
	}
}

// runDriver connects the driver to addr with the compressor comp and runs pings, a large
// command and an insertMany.
func runDriver(t *testing.T, addr, comp string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts := options.Client().ApplyURI("mongodb://" + addr).SetServerSelectionTimeout(5 * time.Second)
	if comp != "" {
		opts.SetCompressors([]string{comp})
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := client.Disconnect(context.Background()); err != nil {
			t.Errorf("Disconnect: %v", err)
		}
	}()
	for range 3 {
		if err := client.Ping(ctx, nil); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	}
	pad := strings.Repeat("compressible ", 2000)
	var res bson.M
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}, {Key: "pad", Value: pad}}).Decode(&res); err != nil {
		t.Fatalf("ping with padding: %v", err)
	}
	docs := make([]any, 50)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad[:100]}}
	}
	ins, err := client.Database("test").Collection("c").InsertMany(ctx, docs)
	if err != nil || len(ins.InsertedIDs) != len(docs) {
		t.Fatalf("InsertMany: %v", err)
	}
	err = client.Database("test").RunCommand(ctx, bson.D{{Key: "nosuchcommand", Value: 1}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != int32(mongoerr.CommandNotFound) || ce.Name != "CommandNotFound" {
		t.Fatalf("want CommandNotFound, got %v", err)
	}
}

// checkSeen checks how the driver's requests arrived.
func checkSeen(t *testing.T, h *mongosHandler, comp string) {
	t.Helper()
	want, _ := ParseCompressor(comp)
	h.mu.Lock()
	defer h.mu.Unlock()
	var legacyHandshakes, pings, inserts int
	for _, s := range h.seen {
		switch s.cmd {
		case "isMaster", "ismaster", "hello":
			if s.compressor != CompressorNoop {
				t.Errorf("%s arrived compressed with %s; handshakes are never compressed", s.cmd, s.compressor)
			}
			if s.legacy {
				legacyHandshakes++
			}
		case "ping", "insert":
			if s.compressor != want {
				t.Errorf("%s arrived with compressor %s, want %s", s.cmd, s.compressor, want)
			}
			if s.cmd == "ping" {
				pings++
			} else {
				inserts++
				if s.ndocs != 50 {
					t.Errorf("insert carried %d documents, want 50", s.ndocs)
				}
			}
		}
	}
	if legacyHandshakes == 0 || pings < 4 || inserts != 1 {
		t.Fatalf("saw %d OP_QUERY handshakes, %d pings, %d inserts: %+v", legacyHandshakes, pings, inserts, h.seen)
	}
}

// checkCapturedFrames checks that every frame the driver sent decodes and re-encodes.
func checkCapturedFrames(t *testing.T, frames [][]byte) {
	t.Helper()
	var sequences int
	for _, f := range frames {
		var m Message
		if err := m.Decode(f, MaxMessageSize); err != nil {
			t.Fatalf("driver frame does not decode: %v\n%s", err, hexish(f))
		}
		if !bytes.Equal(m.AppendTo(nil), f) {
			t.Fatalf("driver frame does not re-encode:\n%s", hexish(f))
		}
		if m.Header.OpCode == OpCodeCompressed {
			inner, err := m.Decompress()
			if err != nil {
				t.Fatalf("driver frame does not decompress: %v", err)
			}
			m = *inner
		}
		sequences += len(m.Msg.Sequences)
	}
	if sequences == 0 {
		t.Fatal("the driver sent no document sequence")
	}
}

// writeDriverSeeds writes the captured frames as fuzz seeds: every frame for
// FuzzReadMessage, OP_MSG sections for FuzzDecodeSections, compressed bodies for
// FuzzDecompress.
func writeDriverSeeds(t *testing.T, comp string, frames [][]byte) {
	t.Helper()
	if comp == "" {
		comp = "none"
	}
	for i, f := range frames {
		name := fmt.Sprintf("driver-%s-%02d", comp, i)
		writeSeed(t, "FuzzReadMessage", name, fmt.Sprintf("[]byte(%q)", f))
		var m Message
		if err := m.Decode(f, MaxMessageSize); err != nil {
			t.Fatal(err)
		}
		if m.Header.OpCode == OpCodeCompressed {
			c := m.Compressed
			writeSeed(t, "FuzzDecompress", name, fmt.Sprintf("byte(%d)\nint32(%d)\n[]byte(%q)", c.Compressor, c.UncompressedSize, c.Data))
			inner, err := m.Decompress()
			if err != nil {
				t.Fatal(err)
			}
			f = inner.AppendTo(nil)
		}
		if OpCode(le.Uint32(f[12:])) == OpCodeMsg {
			writeSeed(t, "FuzzDecodeSections", name, fmt.Sprintf("uint32(%d)\n[]byte(%q)", le.Uint32(f[HeaderSize:]), f[HeaderSize+4:]))
		}
	}
}

// writeSeed writes one corpus file in Go's fuzz format.
func writeSeed(t *testing.T, target, name, values string) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("go test fuzz v1\n"+values+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
