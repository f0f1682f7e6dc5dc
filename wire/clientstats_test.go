package wire

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestClientDropConns: DropConns takes a client's connections out of use at once (Stats
// shows none open, and the next command dials a new one), while a request in flight on a
// dropped connection still gets its reply: the connection closes only after it.
func TestClientDropConns(t *testing.T) {
	h := newEchoHandler()
	ts := startServer(t, ServerOptions{}, h)
	c := NewClient(ts.addr, ClientOptions{Conns: 1})
	defer c.Close()
	ctx := context.Background()
	cmd := func(name string) bsoncore.Document {
		return bsoncore.NewDocumentBuilder().AppendInt32(name, 1).AppendString("$db", "admin").Build()
	}
	if _, err := c.Command(ctx, cmd("ping")); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s != (ClientStats{Open: 1, Available: 1, Created: 1}) {
		t.Fatalf("stats after a ping: %+v", s)
	}
	slow := make(chan error, 1)
	go func() {
		_, err := c.Command(ctx, cmd("slow")) // held by the server until h.release
		slow <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); c.Stats().InUse != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the slow command is not in flight: %+v", c.Stats())
		}
	}
	if n := c.DropConns(); n != 1 {
		t.Fatalf("DropConns dropped %d connections, want 1", n)
	}
	if s := c.Stats(); s.Open != 0 {
		t.Fatalf("stats after DropConns: %+v", s)
	}
	if _, err := c.Command(ctx, cmd("ping")); err != nil {
		t.Fatalf("ping after DropConns: %v", err)
	}
	if s := c.Stats(); s.Open != 1 || s.Created != 2 || h.connects.Load() != 2 {
		t.Fatalf("stats after the next ping: %+v, %d connections accepted; want a new one", s, h.connects.Load())
	}
	close(h.release)
	if err := <-slow; err != nil {
		t.Fatalf("the request in flight on the dropped connection: %v", err)
	}
}
