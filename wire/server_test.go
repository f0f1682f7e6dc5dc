package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// echoHandler answers every command with {ok: 1, cmd, body, ndocs, compressor, legacy}
// (body as binary, so that replies never nest deeper or grow larger than requests, and only
// up to 1 MiB; ndocs counts the "documents" array); a few
// command names trigger failures: "fail" returns an error, "panic" panics, "nilReply"
// returns nothing, "slow" blocks until release is closed or its context ends; "stream" (n)
// streams n replies after the first (exhaust).
type echoHandler struct {
	connects, closes atomic.Int32
	started          chan struct{} // receives when a "slow" command starts
	release          chan struct{} // closing it lets "slow" commands finish
	cancelled        atomic.Int32  // "slow" commands that saw their context end
}

// newEchoHandler returns an echoHandler whose slow commands wait for release.
func newEchoHandler() *echoHandler {
	return &echoHandler{started: make(chan struct{}, 16), release: make(chan struct{})}
}

// Connect implements Handler.
func (h *echoHandler) Connect(ConnInfo) ConnHandler {
	h.connects.Add(1)
	return &echoConn{h: h}
}

// echoConn is one connection of an echoHandler; it reuses its reply buffer, as the contract
// allows.
type echoConn struct {
	h   *echoHandler
	buf []byte
}

// Handle implements ConnHandler.
func (c *echoConn) Handle(ctx context.Context, req *Request) (bsoncore.Document, error) {
	name := req.Body.Index(0).Key()
	switch name {
	case "fail":
		return nil, errors.New("handler gave up")
	case "panic":
		panic("handler panicked")
	case "nilReply":
		return nil, nil
	case "stream": // {stream: n}: n more replies follow the first, when exhaust is allowed
		n, _ := req.Body.Index(0).Value().AsInt64OK()
		req.Exhaust = int64(req.Replies) < n
	case "slow":
		c.h.started <- struct{}{}
		select {
		case <-c.h.release:
		case <-ctx.Done():
			c.h.cancelled.Add(1)
		}
	}
	idx, b := bsoncore.AppendDocumentStart(c.buf[:0])
	b = bsoncore.AppendDoubleElement(b, "ok", 1)
	b = bsoncore.AppendStringElement(b, "cmd", name)
	if len(req.Body) <= 1<<20 {
		b = bsoncore.AppendBinaryElement(b, "body", 0, req.Body)
	}
	if arr, ok := req.Body.Lookup("documents").ArrayOK(); ok {
		vals, _ := arr.Values()
		b = bsoncore.AppendInt32Element(b, "ndocs", int32(len(vals)))
	}
	b = bsoncore.AppendInt32Element(b, "compressor", int32(req.Compressor))
	b = bsoncore.AppendBooleanElement(b, "legacy", req.Legacy)
	b = bsoncore.AppendInt32Element(b, "replies", int32(req.Replies))
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	c.buf = b
	return b, nil
}

// Close implements ConnHandler.
func (c *echoConn) Close() { c.h.closes.Add(1) }

// testServer is a Server on a loopback listener, with its logs observed.
type testServer struct {
	*Server
	addr   string
	logs   *observer.ObservedLogs
	served chan error
}

// startServer serves h on 127.0.0.1 and shuts the server down when the test ends.
func startServer(t testing.TB, opts ServerOptions, h Handler) *testServer {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: NewServer(opts, h, zap.New(core)), addr: ln.Addr().String(), logs: logs, served: make(chan error, 1)}
	go func() { ts.served <- ts.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := ts.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-ts.served; err != nil {
			t.Errorf("Serve returned %v after Shutdown", err)
		}
	})
	return ts
}

// rawConn is a test client speaking raw frames.
type rawConn struct {
	net.Conn
	br *bufio.Reader
}

// dial opens a raw client connection to ts.
func dial(t testing.TB, ts *testServer) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{Conn: c, br: bufio.NewReader(c)}
}

// read reads one message within a deadline.
func (c *rawConn) read() (*Message, error) {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	return ReadMessage(c.br, MaxMessageSize)
}

// roundTrip sends frame and reads the reply.
func (c *rawConn) roundTrip(t testing.TB, frame []byte) *Message {
	t.Helper()
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	m, err := c.read()
	if err != nil {
		t.Fatalf("reading the reply: %v", err)
	}
	return m
}

// expectClosed fails t unless the server closes the connection without a reply.
func (c *rawConn) expectClosed(t testing.TB) {
	t.Helper()
	m, err := c.read()
	if err == nil {
		t.Fatalf("want the connection closed, got a %s reply", m.Header.OpCode)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("want the connection closed, it is still open")
	}
}

// ping sends an OP_MSG ping and checks the echo.
func (c *rawConn) ping(t testing.TB, id int32) {
	t.Helper()
	m := c.roundTrip(t, AppendOpMsg(nil, id, 0, 0, ping))
	if m.Header.OpCode != OpCodeMsg || m.Header.ResponseTo != id || m.Msg.Body.Lookup("cmd").StringValue() != "ping" {
		t.Fatalf("bad ping reply %s: %s", m.Header.OpCode, bson.Raw(m.Msg.Body))
	}
}

// replyDocument returns the single document of a reply, unwrapping OP_COMPRESSED.
func replyDocument(t testing.TB, m *Message) (bsoncore.Document, *Message) {
	t.Helper()
	if m.Header.OpCode == OpCodeCompressed {
		inner, err := m.Decompress()
		if err != nil {
			t.Fatalf("reply does not decompress: %v", err)
		}
		m = inner
	}
	switch m.Header.OpCode {
	case OpCodeMsg:
		return m.Msg.Body, m
	case OpCodeReply:
		return bsoncore.Document(m.Reply.Documents), m
	}
	t.Fatalf("unexpected reply opcode %s", m.Header.OpCode)
	return nil, nil
}

// requestShape decodes what a raw request was: its compressor (when compressed), inner
// opcode and OP_MSG flags.
func requestShape(raw []byte) (compressedWith int, op OpCode, flags MsgFlags) {
	compressedWith = -1
	op = OpCode(le.Uint32(raw[12:]))
	body := raw[HeaderSize:]
	if op == OpCodeCompressed {
		compressedWith = int(raw[24])
		var m Message
		if err := m.Decode(raw, MaxMessageSize); err == nil {
			if orig, err := m.Compressed.appendOriginal(nil, m.Header); err == nil {
				op, body = OpCode(le.Uint32(orig[12:])), orig[HeaderSize:]
			}
		}
	}
	if op == OpCodeMsg && len(body) >= 4 {
		flags = MsgFlags(le.Uint32(body))
	}
	return compressedWith, op, flags
}

// TestServerFrames drives a server with every raw frame of the table and checks the reply
// (format, compression, checksum, content), the silence of moreToCome, the closing of the
// connection on protocol violations with a Warn line, and that answered connections stay
// usable.
func TestServerFrames(t *testing.T) {
	ts := startServer(t, ServerOptions{}, newEchoHandler())
	for _, tc := range messageCases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, ts)
			if _, err := c.Write(tc.raw); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.server == protocol || tc.server == truncated:
				if tc.server == truncated {
					_ = c.Conn.(*net.TCPConn).CloseWrite()
				}
				c.expectClosed(t)
				checkWarned(t, ts, c.LocalAddr().String())
				return
			case tc.noReply:
			default:
				m, err := c.read()
				if err != nil {
					t.Fatalf("reading the reply: %v", err)
				}
				checkReply(t, tc, m)
			}
			c.ping(t, 1000) // the connection is still usable
		})
	}
}

// checkWarned fails t unless the server logged exactly one Warn line, with conn_id, peer
// and reason, for closing the connection from peer.
func checkWarned(t *testing.T, ts *testServer, peer string) {
	t.Helper()
	lines := ts.logs.FilterMessage("closing connection").FilterField(zap.String("peer", peer)).All()
	if len(lines) != 1 || lines[0].Level != zapcore.WarnLevel {
		t.Fatalf("want one Warn line for %s, got %v", peer, lines)
	}
	fields := lines[0].ContextMap()
	if _, ok := fields["conn_id"]; !ok || fields["reason"] == "" {
		t.Fatalf("Warn line lacks conn_id or reason: %v", fields)
	}
}

// checkReply checks the reply m to tc.raw.
func checkReply(t *testing.T, tc messageCase, m *Message) {
	t.Helper()
	compressedWith, op, flags := requestShape(tc.raw)
	if m.Header.ResponseTo != int32(le.Uint32(tc.raw[4:])) {
		t.Fatalf("responseTo %d, want %d", m.Header.ResponseTo, le.Uint32(tc.raw[4:]))
	}
	if got := m.Header.OpCode == OpCodeCompressed; got != (compressedWith >= 0) {
		t.Fatalf("reply compressed = %v, request compressed with %d", got, compressedWith)
	}
	if compressedWith >= 0 && int(m.Compressed.Compressor) != compressedWith {
		t.Fatalf("reply compressed with %s, request with %d", m.Compressed.Compressor, compressedWith)
	}
	doc, inner := replyDocument(t, m)
	if want := map[OpCode]OpCode{OpCodeMsg: OpCodeMsg, OpCodeQuery: OpCodeReply}[op]; inner.Header.OpCode != want {
		t.Fatalf("reply is %s, want %s", inner.Header.OpCode, want)
	}
	if op == OpCodeMsg && inner.Msg.Flags != flags&ChecksumPresent {
		t.Fatalf("reply flags %b, request flags %b", inner.Msg.Flags, flags)
	}
	switch {
	case tc.queryFailure:
		if inner.Reply.Flags != QueryFailure || doc.Lookup("code").Int32() != 5739101 || doc.Lookup("$err").Type != bsoncore.TypeString {
			t.Fatalf("want a QueryFailure $err reply, got flags %d %s", inner.Reply.Flags, bson.Raw(doc))
		}
		return
	case op == OpCodeQuery && inner.Reply.Flags != AwaitCapable:
		t.Fatalf("OP_REPLY flags %d, want AwaitCapable", inner.Reply.Flags)
	}
	if tc.server == answered {
		if doc.Lookup("ok").Double() != 0 || doc.Lookup("code").Int32() != int32(tc.code) ||
			doc.Lookup("codeName").StringValue() != tc.code.String() {
			t.Fatalf("want {ok: 0, code: %d}, got %s", tc.code, bson.Raw(doc))
		}
		return
	}
	if doc.Lookup("ok").Double() != 1 {
		t.Fatalf("want ok: 1, got %s", bson.Raw(doc))
	}
	if _, seen := doc.Lookup("body").Binary(); tc.body != nil && !bytes.Equal(seen, tc.body) {
		t.Fatalf("handler saw\n%s\nwant\n%s", bson.Raw(seen), bson.Raw(tc.body))
	}
	if compressedWith >= 0 && doc.Lookup("compressor").Int32() != int32(compressedWith) {
		t.Fatalf("Request.Compressor = %d, want %d", doc.Lookup("compressor").Int32(), compressedWith)
	}
}

// TestServerHandlerFailures checks that a handler error, panic or missing reply closes only
// that connection, with a log line, and calls ConnHandler.Close.
func TestServerHandlerFailures(t *testing.T) {
	for _, name := range []string{"fail", "panic", "nilReply"} {
		t.Run(name, func(t *testing.T) {
			h := newEchoHandler()
			ts := startServer(t, ServerOptions{}, h)
			c := dial(t, ts)
			c.ping(t, 1)
			if _, err := c.Write(AppendOpMsg(nil, 2, 0, 0, d(name, int32(1), "$db", "a"))); err != nil {
				t.Fatal(err)
			}
			c.expectClosed(t)
			dial(t, ts).ping(t, 3) // the server still serves
			waitFor(t, func() bool { return h.closes.Load() == 1 })
			if ts.logs.FilterLevelExact(zapcore.WarnLevel).Len()+ts.logs.FilterLevelExact(zapcore.ErrorLevel).Len() == 0 {
				t.Fatalf("no log line for the failure: %v", ts.logs.All())
			}
		})
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
	}
}

// TestServerLargeMessages sends frames larger than the read buffer: a 20 MB insert in a
// document sequence, a body at the 16 MiB + 16 KiB limit, and one byte over it (answered
// with BSONObjectTooLarge on a connection that stays usable).
func TestServerLargeMessages(t *testing.T) {
	ts := startServer(t, ServerOptions{}, newEchoHandler())
	c := dial(t, ts)
	big := d("_id", int32(1), "pad", string(bytes.Repeat([]byte{'x'}, 1<<20)))
	docs := make([][]byte, 20)
	for i := range docs {
		docs[i] = big
	}
	m := c.roundTrip(t, rawMsg(1, 0, sec0(insertBody), sec1("documents", docs...)))
	if n := m.Msg.Body.Lookup("ndocs").Int32(); n != 20 {
		t.Fatalf("handler saw %d documents, want 20", n)
	}
	for _, extra := range []int{0, 1} {
		size := MaxBSONInternalSize + extra
		pad := size - len(d("ping", int32(1), "$db", "admin", "pad", ""))
		doc := d("ping", int32(1), "$db", "admin", "pad", string(bytes.Repeat([]byte{'y'}, pad)))
		if len(doc) != size {
			t.Fatalf("built a %d-byte document, want %d", len(doc), size)
		}
		m := c.roundTrip(t, AppendOpMsg(nil, 2, 0, 0, doc))
		if got := m.Msg.Body.Lookup("ok").Double(); (got == 1) != (extra == 0) {
			t.Fatalf("size %d: reply %.200s", size, bson.Raw(m.Msg.Body))
		}
		if extra == 1 && m.Msg.Body.Lookup("code").Int32() != int32(mongoerr.BSONObjectTooLarge) {
			t.Fatalf("want BSONObjectTooLarge, got %.200s", bson.Raw(m.Msg.Body))
		}
	}
	c.ping(t, 3)
}

// TestServerShutdown checks that Shutdown closes idle connections at once, lets an
// in-flight request finish and deliver its reply, then closes that connection too, refuses
// new connections, and calls ConnHandler.Close for each.
func TestServerShutdown(t *testing.T) {
	h := newEchoHandler()
	core, _ := observer.New(zapcore.InfoLevel)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ServerOptions{}, h, zap.New(core))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ts := &testServer{Server: srv, addr: ln.Addr().String()}

	idle, busy := dial(t, ts), dial(t, ts)
	idle.ping(t, 1)
	busy.ping(t, 2)
	if _, err := busy.Write(AppendOpMsg(nil, 3, 0, 0, d("slow", int32(1), "$db", "a"))); err != nil {
		t.Fatal(err)
	}
	<-h.started
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()

	idle.expectClosed(t) // closed while the slow request still runs
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v before the in-flight request finished", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		t.Fatal("a new connection was accepted during shutdown")
	}
	close(h.release)
	m, err := busy.read()
	if err != nil || m.Header.ResponseTo != 3 || m.Msg.Body.Lookup("cmd").StringValue() != "slow" {
		t.Fatalf("in-flight reply lost: %v", err)
	}
	busy.expectClosed(t)
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve returned %v", err)
	}
	if c, cl := h.connects.Load(), h.closes.Load(); c != 2 || cl != 2 {
		t.Fatalf("Connect called %d times, Close %d, want 2 and 2", c, cl)
	}
}

// TestServerShutdownForced checks that when Shutdown's context ends first, the running
// Handle sees its context cancelled, the connection closes and Shutdown reports ctx.Err().
func TestServerShutdownForced(t *testing.T) {
	h := newEchoHandler()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ServerOptions{}, h, zap.NewNop())
	go func() { _ = srv.Serve(ln) }()
	busy := dial(t, &testServer{addr: ln.Addr().String()})
	if _, err := busy.Write(AppendOpMsg(nil, 1, 0, 0, d("slow", int32(1), "$db", "a"))); err != nil {
		t.Fatal(err)
	}
	<-h.started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	busy.expectClosed(t)
	waitFor(t, func() bool { return h.cancelled.Load() == 1 && h.closes.Load() == 1 })
}

// TestServerMaxConns checks that connections beyond MaxConns are accepted and closed at once
// with a log line, counted as rejected, and that a slot freed by a closed connection is
// reused.
func TestServerMaxConns(t *testing.T) {
	ts := startServer(t, ServerOptions{MaxConns: 2}, newEchoHandler())
	a, b := dial(t, ts), dial(t, ts)
	a.ping(t, 1)
	b.ping(t, 2)
	extra := dial(t, ts)
	extra.expectClosed(t)
	if st := ts.Stats(); st.ConnectionsRejected != 1 || st.ConnectionsCurrent != 2 {
		t.Fatalf("stats %+v, want 1 rejected and 2 current", st)
	}
	// The server closes the connection before it logs the refusal: wait for the line.
	waitFor(t, func() bool {
		return ts.logs.FilterMessage("connection refused because too many open connections").Len() == 1
	})
	_ = a.Close()
	waitFor(t, func() bool { return ts.Stats().ConnectionsCurrent == 1 })
	dial(t, ts).ping(t, 3)
}

// TestServerStats checks the counters serverStatus reports.
func TestServerStats(t *testing.T) {
	ts := startServer(t, ServerOptions{}, newEchoHandler())
	c := dial(t, ts)
	c.ping(t, 1)
	zreq := compressed(CompressorZstd, AppendOpMsg(nil, 2, 0, 0, d("ping", int32(1), "$db", "admin", "pad", string(bytes.Repeat([]byte{'z'}, 1000)))))
	c.roundTrip(t, zreq)
	waitFor(t, func() bool { return ts.Stats().ConnectionsActive == 0 }) // it goes idle after writing
	st := ts.Stats()
	if st.NumRequests != 2 || st.ConnectionsCurrent != 1 || st.ConnectionsTotalCreated != 1 {
		t.Fatalf("stats %+v", st)
	}
	if st.PhysicalBytesIn != int64(len(ping)+21+len(zreq)) || st.BytesIn <= st.PhysicalBytesIn {
		t.Fatalf("bytes in: physical %d, logical %d (compressed request of %d bytes)", st.PhysicalBytesIn, st.BytesIn, len(zreq))
	}
	if st.BytesOut == 0 || st.PhysicalBytesOut >= st.BytesOut {
		t.Fatalf("bytes out: physical %d, logical %d", st.PhysicalBytesOut, st.BytesOut)
	}
	_ = c.Close()
	waitFor(t, func() bool { return ts.Stats().ConnectionsCurrent == 0 })
	if after := ts.Stats(); after.NumRequests != 2 || after.BytesIn != st.BytesIn {
		t.Fatalf("counters of a closed connection were lost: %+v", after)
	}
}
