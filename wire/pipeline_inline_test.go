package wire

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// inliningHandler is a forkingHandler whose connections run "inlinePing" and "slow" on
// the goroutine reading the pipelined connection (Inliner); its handlers note, by command,
// whether they ran there.
type inliningHandler struct {
	forkingHandler
	mu       sync.Mutex
	onReader map[string]bool
}

// Connect implements Handler.
func (h *inliningHandler) Connect(ConnInfo) ConnHandler {
	h.connects.Add(1)
	return inliningConn{forkingConn{&echoConn{h: h.echoHandler}}, h}
}

type inliningConn struct {
	forkingConn
	h *inliningHandler
}

// Handle implements ConnHandler: it notes whether the pipelined connection's reader runs it.
func (c inliningConn) Handle(ctx context.Context, req *Request) (bsoncore.Document, error) {
	buf := make([]byte, 64<<10)
	stack, _, _ := strings.Cut(string(buf[:runtime.Stack(buf, false)]), "\ncreated by") // a worker is created by the reader
	c.h.mu.Lock()
	c.h.onReader[req.Body.Index(0).Key()] = strings.Contains(stack, "(*pipe).readLoop")
	c.h.mu.Unlock()
	return c.forkingConn.Handle(ctx, req)
}

// Fork implements Forker.
func (c inliningConn) Fork() ConnHandler {
	return inliningConn{forkingConn{&echoConn{h: c.h.echoHandler}}, c.h}
}

// Inline implements Inliner.
func (c inliningConn) Inline(body []byte) bool {
	name := bsoncore.Document(body).Index(0).Key()
	return name == "inlinePing" || name == "slow"
}

// TestServerPipelinedInline: on a pipelined connection whose handler is an Inliner, the
// commands it names run on the goroutine reading the connection, the others on workers; a
// request sent while an inline one runs is read once it returns.
func TestServerPipelinedInline(t *testing.T) {
	h := &inliningHandler{forkingHandler: forkingHandler{newEchoHandler()}, onReader: map[string]bool{}}
	ts := startServer(t, ServerOptions{}, h)
	c := NewClient(ts.addr, ClientOptions{Conns: 1, Hello: pipelineHello})
	defer c.Close()
	ctx := context.Background()
	for _, name := range []string{"inlinePing", "ping"} {
		reply, err := c.Command(ctx, command(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := reply.Lookup("cmd").StringValue(); got != name {
			t.Fatalf("%s got the reply to %s", name, got)
		}
	}
	h.mu.Lock()
	onReader := map[string]bool{"inlinePing": h.onReader["inlinePing"], "ping": h.onReader["ping"]}
	h.mu.Unlock()
	if !onReader["inlinePing"] || onReader["ping"] {
		t.Fatalf("ran on the reader: %v, want inlinePing only", onReader)
	}

	// An inline request that waits holds the reader: the next request is read after it.
	slow := make(chan error, 1)
	go func() {
		_, err := c.Command(ctx, command("slow"))
		slow <- err
	}()
	<-h.started
	ping := make(chan error, 1)
	go func() {
		_, err := c.Command(ctx, command("ping"))
		ping <- err
	}()
	// Time for a reader that is free to read and answer the ping: the check cannot fail
	// on a slow machine, only miss a reader that is free.
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-ping:
		t.Fatalf("ping answered while an inline request held the reader: %v", err)
	default:
	}
	close(h.release)
	for _, ch := range []chan error{slow, ping} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
}

// TestServerPipelinedCancelsOnClose: a server that closes a pipelined connection at once
// (Shutdown with its context ended) ends the contexts of the requests running on it.
func TestServerPipelinedCancelsOnClose(t *testing.T) {
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
	sctx, cancel := context.WithCancel(ctx)
	cancel()
	_ = ts.Shutdown(sctx)
	<-done
	deadline := time.Now().Add(30 * time.Second)
	for h.cancelled.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the slow command's context did not end when its connection was closed")
		}
		time.Sleep(time.Millisecond)
	}
	close(h.release)
}
