package wire

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
)

// findCmd is a small find as the Go driver sends it: filter on _id, session and cluster time.
var findCmd = d(
	"find", "coll",
	"filter", bson.D{{Key: "_id", Value: int64(42)}},
	"limit", int64(1),
	"singleBatch", true,
	"lsid", bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}},
	"$clusterTime", bson.D{
		{Key: "clusterTime", Value: bson.Timestamp{T: 1700000000, I: 1}},
		{Key: "signature", Value: bson.D{{Key: "hash", Value: bson.Binary{Data: make([]byte, 20)}}, {Key: "keyId", Value: int64(0)}}},
	},
	"$db", "test",
)

// findReply is a one-document find reply.
var findReply = d(
	"cursor", bson.D{
		{Key: "firstBatch", Value: bson.A{bson.D{{Key: "_id", Value: int64(42)}, {Key: "deviceId", Value: "dev-0042"}, {Key: "metricValue", Value: 41.5}}}},
		{Key: "id", Value: int64(0)},
		{Key: "ns", Value: "test.coll"},
	},
	"ok", 1.0,
)

// BenchmarkReadHeader decodes a message header.
func BenchmarkReadHeader(b *testing.B) {
	frame := AppendOpMsg(nil, 1, 0, 0, findCmd)
	b.ReportAllocs()
	var h Header
	for b.Loop() {
		h, _, _ = ReadHeader(frame)
	}
	_ = h
}

// BenchmarkDecodeFind decodes (and validates) an OP_MSG find into a reused Message.
func BenchmarkDecodeFind(b *testing.B) {
	frame := AppendOpMsg(nil, 1, 0, 0, findCmd)
	var m Message
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Decode(frame, MaxMessageSize); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeInsertSequence decodes an insert of 100 documents in a kind-1 section and
// merges it into one command document.
func BenchmarkDecodeInsertSequence(b *testing.B) {
	docs := make([][]byte, 100)
	for i := range docs {
		docs[i] = d("_id", int64(i), "deviceId", "dev-0001", "metricValue", 1.5, "pad", string(make([]byte, 900)))
	}
	frame := rawMsg(1, 0, sec0(insertBody), sec1("documents", docs...))
	var m Message
	var req Request
	scratch := new([]byte)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Decode(frame, MaxMessageSize); err != nil {
			b.Fatal(err)
		}
		if err := m.fillRequest(&req, scratch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendReply encodes a one-document find reply into a reused buffer.
func BenchmarkAppendReply(b *testing.B) {
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendOpMsg(buf[:0], 2, 1, 0, findReply)
	}
}

// BenchmarkAppendReplyCompressed encodes the reply compressed with each compressor.
func BenchmarkAppendReplyCompressed(b *testing.B) {
	frame := AppendOpMsg(nil, 2, 1, 0, findReply)
	for _, c := range compressors {
		b.Run(c.String(), func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = AppendCompressed(buf[:0], c, frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cannedHandler answers every request with {ok: 1}.
type cannedHandler struct{}

// Connect implements Handler.
func (cannedHandler) Connect(ConnInfo) ConnHandler { return cannedHandler{} }

// okReply is the canned answer.
var okReply = d("ok", 1.0)

// Handle implements ConnHandler.
func (cannedHandler) Handle(context.Context, *Request) (bsoncore.Document, error) {
	return okReply, nil
}

// Close implements ConnHandler.
func (cannedHandler) Close() {}

// roundTripper is a raw client that sends one frame and reads one reply per call.
type roundTripper struct {
	c   net.Conn
	buf []byte
}

// do sends frame and reads the reply into a reused buffer.
func (rt *roundTripper) do(frame []byte) error {
	if _, err := rt.c.Write(frame); err != nil {
		return err
	}
	if _, err := io.ReadFull(rt.c, rt.buf[:HeaderSize]); err != nil {
		return err
	}
	n := int(le.Uint32(rt.buf))
	if n > cap(rt.buf) {
		rt.buf = append(rt.buf[:HeaderSize], make([]byte, n-HeaderSize)...)
	}
	_, err := io.ReadFull(rt.c, rt.buf[HeaderSize:n])
	return err
}

// benchRoundTrip measures ping round trips over loopback against addr.
func benchRoundTrip(b *testing.B, addr string, frame []byte) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = c.Close() }() // the client side; a close error says nothing about the server
	rt := &roundTripper{c: c, buf: make([]byte, 4096)}
	b.ReportAllocs()
	for b.Loop() {
		if err := rt.do(frame); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTrip measures a ping through the Server over loopback with a raw client,
// uncompressed and with each compressor; "Ceiling" runs the same client against a fake
// server built like shared/bench's limitsrv (canned reply, no validation, no handler), so
// that the ratio of the two is the server's share of the wire ceiling.
func BenchmarkRoundTrip(b *testing.B) {
	srv := NewServer(ServerOptions{}, cannedHandler{}, zap.NewNop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Shutdown(context.Background()) }()
	frame := AppendOpMsg(nil, 1, 0, 0, ping)
	b.Run("Server", func(b *testing.B) { benchRoundTrip(b, ln.Addr().String(), frame) })
	for _, c := range compressors[1:] {
		b.Run("Server"+c.String(), func(b *testing.B) { benchRoundTrip(b, ln.Addr().String(), compressed(c, frame)) })
	}
	fake := startCeilingServer(b)
	b.Run("Ceiling", func(b *testing.B) { benchRoundTrip(b, fake, frame) })
}

// startCeilingServer serves canned {ok: 1} OP_MSG replies the way limitsrv does: a 64 KiB
// bufio.Reader, each frame copied into a reused buffer, one Write per reply.
func startCeilingServer(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }() // the client may have hung up first
				r := bufio.NewReaderSize(c, 64<<10)
				in, out := make([]byte, 4096), []byte(nil)
				var id int32
				for {
					if _, err := io.ReadFull(r, in[:HeaderSize]); err != nil {
						return
					}
					n := int(le.Uint32(in))
					if n < HeaderSize || n > len(in) {
						return
					}
					if _, err := io.ReadFull(r, in[HeaderSize:n]); err != nil {
						return
					}
					id++
					out = AppendOpMsg(out[:0], id, int32(le.Uint32(in[4:])), 0, okReply)
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// BenchmarkClientPipelined measures commands sent at once by 32 goroutines through a Client
// (two pipelined connections, as between cluster nodes) to a Server with an echo handler,
// both in this process; syscalls/op are the process's read and write system calls per
// command (/proc/self/io, both sides), which batching several frames in one write lowers.
func BenchmarkClientPipelined(b *testing.B) {
	ts := startServer(b, ServerOptions{}, forkingHandler{newEchoHandler()})
	c := NewClient(ts.addr, ClientOptions{Conns: 2, Hello: pipelineHello})
	defer c.Close()
	ctx := context.Background()
	cmd := command("ping")
	if _, err := c.Command(ctx, cmd); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(32 / max(1, runtime.GOMAXPROCS(0)))
	before := readWriteSyscalls(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Command(ctx, cmd); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(readWriteSyscalls(b)-before)/float64(b.N), "syscalls/op")
}

// readWriteSyscalls returns the read and write system calls this process made so far
// (syscr + syscw of /proc/self/io); 0 where there is no such file.
func readWriteSyscalls(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	n := int64(0)
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && (k == "syscr" || k == "syscw") {
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			n += x
		}
	}
	return n
}
