package wire

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestServerDisconnectCancels checks that a client closing its connection while its request
// runs cancels the request's context, and that the connection is then closed and counted out.
func TestServerDisconnectCancels(t *testing.T) {
	h := newEchoHandler()
	ts := startServer(t, ServerOptions{}, h)
	c := dial(t, ts)
	if _, err := c.Write(AppendOpMsg(nil, 1, 0, 0, d("slow", int32(1), "$db", "a"))); err != nil {
		t.Fatal(err)
	}
	<-h.started
	_ = c.Close()
	waitFor(t, func() bool { return h.cancelled.Load() == 1 })
	waitFor(t, func() bool { return h.closes.Load() == 1 && ts.Stats().ConnectionsCurrent == 0 })
}

// TestServerDisconnectWatchPipelined checks that a request pipelined behind a long one (the
// watcher reads its first byte while the long one runs) is still answered whole and in order,
// and that a long request whose client stays does not see its context cancelled.
func TestServerDisconnectWatchPipelined(t *testing.T) {
	h := newEchoHandler()
	ts := startServer(t, ServerOptions{}, h)
	c := dial(t, ts)
	if _, err := c.Write(AppendOpMsg(nil, 1, 0, 0, d("slow", int32(1), "$db", "a"))); err != nil {
		t.Fatal(err)
	}
	<-h.started
	time.Sleep(3 * DisconnectWatchDelay) // the watcher is reading now
	if _, err := c.Write(AppendOpMsg(nil, 2, 0, 0, ping)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * DisconnectWatchDelay)
	close(h.release)
	for _, want := range []struct {
		id  int32
		cmd string
	}{{1, "slow"}, {2, "ping"}} {
		m, err := c.read()
		if err != nil {
			t.Fatalf("reply to %d: %v", want.id, err)
		}
		if m.Header.ResponseTo != want.id || m.Msg.Body.Lookup("cmd").StringValue() != want.cmd {
			t.Fatalf("reply %d: %s", m.Header.ResponseTo, bson.Raw(m.Msg.Body))
		}
	}
	c.ping(t, 3)
	if n := h.cancelled.Load(); n != 0 {
		t.Fatalf("%d requests cancelled, want 0", n)
	}
}

// TestServerSlowClients checks FrameReadTimeout (a client that stalls mid-frame) and
// WriteTimeout (a client that stops reading its replies): both connections are closed with
// a Warn line.
func TestServerSlowClients(t *testing.T) {
	ts := startServer(t, ServerOptions{FrameReadTimeout: 100 * time.Millisecond, WriteTimeout: 200 * time.Millisecond}, newEchoHandler())
	stalled := dial(t, ts)
	frame := AppendOpMsg(nil, 1, 0, 0, ping)
	if _, err := stalled.Write(frame[:len(frame)-3]); err != nil {
		t.Fatal(err)
	}
	stalled.expectClosed(t)

	deaf := dial(t, ts)
	big := AppendOpMsg(nil, 2, 0, 0, d("echo", int32(1), "$db", "a", "pad", string(bytes.Repeat([]byte{'x'}, 1<<20-200))))
	go func() {
		for range 64 { // 64 MiB of replies: far beyond what socket buffers hold
			if _, err := deaf.Write(big); err != nil {
				return
			}
		}
	}()
	waitFor(t, func() bool { return ts.Stats().ConnectionsCurrent == 0 })
	waitFor(t, func() bool {
		n := 0
		for _, e := range ts.logs.FilterMessage("closing connection").All() {
			if strings.Contains(e.ContextMap()["reason"].(string), errSlowClient.Error()) {
				n++
			}
		}
		return n == 2
	})
}
