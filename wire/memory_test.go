package wire

import (
	"bytes"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestServerIdleConnectionsMemory opens 1,000 connections, makes each serve one ping so
// that its goroutine and buffers exist, and checks that together they add less than
// 64 MiB, both as live heap plus goroutine stacks and as resident memory.
func TestServerIdleConnectionsMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures memory; -race inflates it and -short skips it")
	}
	const conns = 1000
	const budget = 64 << 20
	ts := startServer(t, ServerOptions{}, cannedHandler{})
	heap0, rss0 := memoryInUse()
	frame := AppendOpMsg(nil, 1, 0, 0, ping)
	clients := make([]net.Conn, conns)
	var reply [64]byte
	for i := range clients {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }() // the client side; a close error says nothing about the server
		clients[i] = c
		if _, err := c.Write(frame); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, reply[:HeaderSize]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, reply[HeaderSize:le.Uint32(reply[:])]); err != nil {
			t.Fatal(err)
		}
	}
	if n := ts.Stats().ConnectionsCurrent; n != conns {
		t.Fatalf("%d connections open, want %d", n, conns)
	}
	heap1, rss1 := memoryInUse()
	dh, dr := heap1-heap0, rss1-rss0
	t.Logf("%d idle connections: heap+stacks +%.1f MiB (%d B each), RSS +%.1f MiB (%d B each); clients included",
		conns, float64(dh)/(1<<20), dh/conns, float64(dr)/(1<<20), dr/conns)
	if dh > budget || dr > budget {
		t.Fatalf("idle connections cost more than %d MiB", budget>>20)
	}
}

// memoryInUse returns live heap plus goroutine stacks after a GC, and the resident set size
// from /proc (0 where there is no /proc).
func memoryInUse() (heapAndStacks, rss int64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heapAndStacks = int64(ms.HeapInuse + ms.StackInuse)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return heapAndStacks, 0
	}
	for line := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, _ := strconv.ParseInt(string(bytes.Fields(v)[0]), 10, 64)
			rss = kb << 10
		}
	}
	return heapAndStacks, rss
}

// TestServerLargeHeaderAllocatesLazily sends a header announcing a 48 MB message and only a
// few bytes of it: the server must not allocate the 48 MB before they arrive.
func TestServerLargeHeaderAllocatesLazily(t *testing.T) {
	ts := startServer(t, ServerOptions{}, cannedHandler{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := dial(t, ts)
	frame := Header{MessageLength: MaxMessageSize, RequestID: 1, OpCode: OpCodeMsg}.AppendTo(nil)
	if _, err := c.Write(append(frame, make([]byte, 1000)...)); err != nil {
		t.Fatal(err)
	}
	_ = c.Conn.(*net.TCPConn).CloseWrite()
	c.expectClosed(t)
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("a 48 MB header with 1000 bytes behind it made the process allocate %d MiB", grew>>20)
	}
}
