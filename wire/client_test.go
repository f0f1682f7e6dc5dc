package wire

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestClientCommandPooled: sequential commands go over one connection and come back with
// their own replies; a command cancelled by its context is forgotten, and the connection
// serves the next ones (behind it, on a server that answers in order).
func TestClientCommandPooled(t *testing.T) {
	h := newEchoHandler()
	ts := startServer(t, ServerOptions{}, h)
	c := NewClient(ts.addr, ClientOptions{})
	defer c.Close()
	ctx := context.Background()
	for _, name := range []string{"ping", "hello", "ping"} {
		reply, err := c.Command(ctx, bsoncore.NewDocumentBuilder().AppendInt32(name, 1).AppendString("$db", "admin").Build())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := reply.Lookup("cmd").StringValue(); got != name {
			t.Fatalf("reply to %s names %s", name, got)
		}
	}
	if n := h.connects.Load(); n != 1 {
		t.Fatalf("%d connections for 3 sequential commands, want 1", n)
	}

	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := c.Command(cctx, bsoncore.NewDocumentBuilder().AppendInt32("slow", 1).AppendString("$db", "admin").Build())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow command under a 50ms deadline: %v, want DeadlineExceeded", err)
	}
	close(h.release)
	for range 3 {
		reply, err := c.Command(ctx, bsoncore.NewDocumentBuilder().AppendInt32("ping", 1).AppendString("$db", "admin").Build())
		if err != nil {
			t.Fatalf("ping after a cancelled command: %v", err)
		}
		if got := reply.Lookup("cmd").StringValue(); got != "ping" {
			t.Fatalf("ping after a cancelled command got the reply to %s", got)
		}
	}
	if n := h.connects.Load(); n != 1 {
		t.Fatalf("%d connections, want 1 (the cancelled command leaves its connection usable)", n)
	}
}

// TestClientCommandUnreachable: a server that is not there is an *UnreachableError.
func TestClientCommandUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	c := NewClient(addr, ClientOptions{DialTimeout: time.Second})
	_, err = c.Command(context.Background(), bsoncore.NewDocumentBuilder().AppendInt32("ping", 1).Build())
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Addr != addr {
		t.Fatalf("err = %v, want *UnreachableError for %s", err, addr)
	}
}

// TestClientCommandCancelledAtReply: a command whose context ends as its reply arrives
// leaves nothing behind on its connection: the commands after it, with live contexts, all
// succeed with their own replies.
func TestClientCommandCancelledAtReply(t *testing.T) {
	ts := startServer(t, ServerOptions{}, newEchoHandler())
	c := NewClient(ts.addr, ClientOptions{})
	defer c.Close()
	ping := bsoncore.NewDocumentBuilder().AppendInt32("ping", 1).AppendString("$db", "admin").Build()
	for i := range 2000 {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(time.Duration(i%50) * time.Microsecond)
			cancel()
		}()
		_, _ = c.Command(ctx, ping) // cancelled before, during or after its round trip
		if _, err := c.Command(context.Background(), ping); err != nil {
			t.Fatalf("command %d after a cancelled one: %v", i, err)
		}
	}
}

// TestClientCommandWithin: a request bounded by CommandWithin that its server holds past the
// bound fails with DeadlineExceeded (the watchdog, not a context, ends it), the server is
// told to stop it, and the connection serves the next requests, which have no bound.
func TestClientCommandWithin(t *testing.T) {
	defer func(d time.Duration) { watchInterval = d }(watchInterval)
	watchInterval = 10 * time.Millisecond
	h := newEchoHandler()
	ts := startServer(t, ServerOptions{}, h)
	c := NewClient(ts.addr, ClientOptions{})
	defer c.Close()
	ctx := context.Background()
	slow := bsoncore.NewDocumentBuilder().AppendInt32("slow", 1).AppendString("$db", "admin").Build()
	if _, err := c.CommandWithin(ctx, slow, 30*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow command bounded by 30ms: %v, want DeadlineExceeded", err)
	}
	close(h.release)
	ping := bsoncore.NewDocumentBuilder().AppendInt32("ping", 1).AppendString("$db", "admin").Build()
	for range 3 {
		reply, err := c.CommandWithin(ctx, ping, time.Minute)
		if err != nil {
			t.Fatalf("ping after an expired command: %v", err)
		}
		if got := reply.Lookup("cmd").StringValue(); got != "ping" {
			t.Fatalf("ping after an expired command got the reply to %s", got)
		}
	}
	if n := h.connects.Load(); n != 1 {
		t.Fatalf("%d connections, want 1 (the expired command leaves its connection usable)", n)
	}
}
