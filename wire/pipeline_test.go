package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// forkingHandler is an echoHandler whose connections can be pipelined: {pipeline: 1} sets
// Request.Concurrent, and Fork gives a handler of the same connection.
type forkingHandler struct{ *echoHandler }

// Connect implements Handler.
func (h forkingHandler) Connect(ConnInfo) ConnHandler {
	h.connects.Add(1)
	return forkingConn{&echoConn{h: h.echoHandler}}
}

type forkingConn struct{ *echoConn }

// Handle implements ConnHandler.
func (c forkingConn) Handle(ctx context.Context, req *Request) (bsoncore.Document, error) {
	if req.Body.Index(0).Key() == "pipeline" {
		req.Concurrent = true
	}
	return c.echoConn.Handle(ctx, req)
}

// Fork implements Forker.
func (c forkingConn) Fork() ConnHandler { return forkingConn{&echoConn{h: c.h}} }

// pipelineHello is the Hello hook that asks for a pipelined connection.
func pipelineHello(_ context.Context, run func(cmd bsoncore.Document) (bsoncore.Document, error)) error {
	_, err := run(command("pipeline"))
	return err
}

func command(name string) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendInt32(name, 1).AppendString("$db", "admin").Build()
}

// TestClientPipelined: on one connection, many requests are in flight at once and each gets
// its own reply; replies come out of order: 200 commands are answered while one sent before
// them is still running on the server.
func TestClientPipelined(t *testing.T) {
	h := forkingHandler{newEchoHandler()}
	ts := startServer(t, ServerOptions{}, h)
	c := NewClient(ts.addr, ClientOptions{Conns: 1, Hello: pipelineHello})
	defer c.Close()
	ctx := context.Background()
	slow := make(chan error, 1)
	go func() {
		reply, err := c.Command(ctx, command("slow"))
		if err == nil && reply.Lookup("cmd").StringValue() != "slow" {
			err = fmt.Errorf("slow got the reply to %s", reply.Lookup("cmd").StringValue())
		}
		slow <- err
	}()
	<-h.started
	// A connection that is not pipelined holds them all behind the slow command: they
	// would wait for ever, so they give up (after long enough for any machine) and fail.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("cmd%d", i)
			reply, err := c.Command(wctx, command(name))
			if err == nil && reply.Lookup("cmd").StringValue() != name {
				err = fmt.Errorf("%s got the reply to %s", name, reply.Lookup("cmd").StringValue())
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case err := <-slow:
		t.Fatalf("the slow command ended before its release: %v", err)
	default:
	}
	close(h.release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	if n := h.connects.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// TestClientPipelinedCancel: a request whose context ends is forgotten, and the server told
// to stop it (its handler's context ends); the connection carries the next requests, and the
// cancelled one's reply, if any comes, goes to no one.
func TestClientPipelinedCancel(t *testing.T) {
	h := forkingHandler{newEchoHandler()}
	ts := startServer(t, ServerOptions{}, h)
	c := NewClient(ts.addr, ClientOptions{Conns: 1, Hello: pipelineHello})
	defer c.Close()
	ctx := context.Background()
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := c.Command(cctx, command("slow"))
		done <- err
	}()
	<-h.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled command: %v, want context.Canceled", err)
	}
	ping := func() {
		t.Helper()
		reply, err := c.Command(ctx, command("ping"))
		if err != nil {
			t.Fatalf("ping: %v", err)
		}
		if got := reply.Lookup("cmd").StringValue(); got != "ping" {
			t.Fatalf("ping got the reply to %s", got)
		}
	}
	ping()
	// The client told the server: the slow command's context ends there too.
	for h.cancelled.Load() != 1 {
		time.Sleep(time.Millisecond)
	}
	close(h.release)
	for range 10 {
		ping()
	}
	if n := h.connects.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// TestClientPipelinedPeerClosed: a server that closes the connection fails the requests in
// flight with an *UnreachableError; once a server listens at the address again, the client
// dials it for the next request.
func TestClientPipelinedPeerClosed(t *testing.T) {
	h := forkingHandler{newEchoHandler()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv := NewServer(ServerOptions{}, h, nil)
	go func() { _ = srv.Serve(ln) }()
	c := NewClient(addr, ClientOptions{Conns: 2, Hello: pipelineHello, DialTimeout: time.Second})
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Command(ctx, command("ping")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Command(ctx, command("slow"))
		done <- err
	}()
	<-h.started
	sctx, cancel := context.WithCancel(ctx)
	cancel() // Shutdown closes the connections at once
	_ = srv.Shutdown(sctx)
	var ue *UnreachableError
	if err := <-done; !errors.As(err, &ue) {
		t.Fatalf("request in flight on a closed connection: %v, want *UnreachableError", err)
	}
	if _, err := c.Command(ctx, command("ping")); !errors.As(err, &ue) {
		t.Fatalf("ping with no server: %v, want *UnreachableError", err)
	}

	h2 := forkingHandler{newEchoHandler()}
	ts := startServerAt(t, addr, h2)
	_ = ts
	reply, err := c.Command(ctx, command("ping"))
	if err != nil {
		t.Fatalf("ping after the server came back: %v", err)
	}
	if got := reply.Lookup("cmd").StringValue(); got != "ping" {
		t.Fatalf("ping got the reply to %s", got)
	}
	if n := h2.connects.Load(); n != 1 {
		t.Fatalf("%d connections to the new server, want 1", n)
	}
}

// startServerAt serves h at addr until the test ends.
func startServerAt(t *testing.T, addr string, h Handler) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ServerOptions{}, h, nil)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return srv
}

// TestServerPipelinedShutdown: Shutdown lets the requests in flight on a pipelined
// connection finish and answers them, then closes it.
func TestServerPipelinedShutdown(t *testing.T) {
	h := forkingHandler{newEchoHandler()}
	ts := startServer(t, ServerOptions{}, h)
	c := NewClient(ts.addr, ClientOptions{Conns: 1, Hello: pipelineHello})
	defer c.Close()
	ctx := context.Background()
	done := make(chan error, 1)
	go func() {
		_, err := c.Command(ctx, command("slow"))
		done <- err
	}()
	<-h.started
	shut := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		shut <- ts.Shutdown(sctx)
	}()
	for !ts.shutting.Load() {
		time.Sleep(time.Millisecond)
	}
	close(h.release)
	if err := <-done; err != nil {
		t.Fatalf("request in flight during Shutdown: %v", err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n, m := h.closes.Load(), h.connects.Load(); n < 2 || m != 1 {
		t.Fatalf("%d handlers closed on %d connection(s), want the connection's and its fork's", n, m)
	}
}

// TestCancelOf: the cancel message is recognised by its exact shape only.
func TestCancelOf(t *testing.T) {
	body := bsoncore.NewDocumentBuilder().AppendInt32(CancelField, 42).Build()
	if id, ok := cancelOf(AppendOpMsg(nil, 7, 0, MoreToCome, body)); !ok || id != 42 {
		t.Fatalf("cancel message: %d, %v", id, ok)
	}
	for name, frame := range map[string][]byte{
		"reply wanted":  AppendOpMsg(nil, 7, 0, 0, body),
		"another field": AppendOpMsg(nil, 7, 0, MoreToCome, bsoncore.NewDocumentBuilder().AppendInt32("$cancez", 42).Build()),
		"an int64":      AppendOpMsg(nil, 7, 0, MoreToCome, bsoncore.NewDocumentBuilder().AppendInt64(CancelField, 42).Build()),
		"more fields":   AppendOpMsg(nil, 7, 0, MoreToCome, bsoncore.NewDocumentBuilder().AppendInt32(CancelField, 42).AppendString("$db", "admin").Build()),
	} {
		if _, ok := cancelOf(frame); ok {
			t.Errorf("%s: taken for a cancel message", name)
		}
	}
}
