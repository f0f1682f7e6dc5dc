package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Connection states, for Shutdown to tell idle connections from busy ones.
const (
	stateIdle   int32 = iota // waiting for the next request
	stateActive              // reading, handling or answering a request
	stateClosed              // closed by Shutdown while idle
)

// errClosedIdle ends a connection that Shutdown closed while it waited for a request.
var errClosedIdle = errors.New("wire: connection closed by shutdown")

// connStats are one connection's network counters; Server.Stats sums them.
type connStats struct {
	bytesIn, bytesOut, physicalIn, physicalOut, requests atomic.Int64
}

// conn is one client connection and the state its goroutine reuses from request to request.
// Buffers bigger than the read buffer are borrowed from the pool for one request only, so an
// idle connection holds its read buffer and little else.
type conn struct {
	srv    *Server
	nc     net.Conn
	id     int64
	r      *bufio.Reader
	cancel context.CancelFunc // cancels the context of Handle calls
	ch     ConnHandler
	state  atomic.Int32
	stats  *connStats // shared with the requests a pipelined connection runs at once
	watch  watchState
	pipe   *pipe // set once the connection is pipelined (pipeline.go)

	msg, inner Message // the request, and what an OP_COMPRESSED request carries
	req        Request
	frameBuf   *[]byte // borrowed: a frame larger than the read buffer
	inflateBuf *[]byte // borrowed: a decompressed request
	scratch    *[]byte // borrowed: a rebuilt request body
}

// newConn wraps nc; serve runs it with a context that cancel ends.
func newConn(s *Server, nc net.Conn, id int64, cancel context.CancelFunc) *conn {
	c := &conn{srv: s, nc: nc, id: id, cancel: cancel, stats: new(connStats)}
	c.r = bufio.NewReaderSize(connReader{c}, s.opts.ReadBufferSize)
	return c
}

// replyTo describes how to answer a request: in which format, and how it must be wrapped.
type replyTo struct {
	requestID  int32
	legacy     bool     // OP_REPLY rather than OP_MSG
	flags      MsgFlags // ChecksumPresent when the request carried a checksum
	compressed bool     // the request came in an OP_COMPRESSED
	compressor Compressor
}

// serve runs the connection until it ends, then tells the handler and the server. ctx is
// what Handle calls get; forceClose cancels it.
func (c *conn) serve(ctx context.Context) {
	defer c.finish()
	c.ch = c.srv.h.Connect(ConnInfo{ID: c.id, Remote: c.nc.RemoteAddr(), Local: c.nc.LocalAddr()})
	if ce := c.srv.log.Check(zap.DebugLevel, "connection accepted"); ce != nil {
		ce.Write(zap.Int64("conn_id", c.id), zap.String("peer", c.nc.RemoteAddr().String()))
	}
	for {
		if err := c.serveOne(ctx); err != nil {
			c.logEnd(err)
			return
		}
		c.state.Store(stateIdle)
		if c.srv.shutting.Load() {
			c.logEnd(errClosedIdle)
			return
		}
		if c.req.Concurrent {
			if f, ok := c.ch.(Forker); ok {
				c.logEnd(c.servePipelined(ctx, f))
				return
			}
		}
	}
}

// finish releases the connection: it survives a panicking handler, closes the socket, calls
// ConnHandler.Close and removes the connection from the server.
func (c *conn) finish() {
	if r := recover(); r != nil {
		c.srv.log.Error("panic while serving a connection; closing it", zap.Int64("conn_id", c.id),
			zap.String("peer", c.nc.RemoteAddr().String()), zap.Any("panic", r), zap.StackSkip("stack", 1))
	}
	_ = c.nc.Close()
	c.cancel()
	if c.watch.timer != nil {
		c.watch.timer.Stop() // NB: a watcher that fired has ended: stopWatch waited for it
	}
	if c.ch != nil {
		c.closeHandler()
	}
	c.release()
	c.srv.removeConn(c)
	c.srv.conns.Done()
}

// closeHandler calls ConnHandler.Close, surviving a panic in it.
func (c *conn) closeHandler() {
	defer func() {
		if r := recover(); r != nil {
			c.srv.log.Error("panic in ConnHandler.Close", zap.Int64("conn_id", c.id), zap.Any("panic", r))
		}
	}()
	c.ch.Close()
}

// closeIfIdle closes the connection when it waits for a request; Shutdown calls it.
func (c *conn) closeIfIdle() {
	if c.state.CompareAndSwap(stateIdle, stateClosed) {
		_ = c.nc.Close()
	}
}

// forceClose closes the socket, then cancels the running Handle call (in that order, so
// that no reply goes out after a forced stop).
func (c *conn) forceClose() {
	_ = c.nc.Close()
	c.cancel()
}

// logEnd logs why the connection ends: Warn for protocol violations and handler failures,
// Debug for disconnects.
func (c *conn) logEnd(err error) {
	var perr *ProtocolError
	switch {
	case errors.As(err, &perr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errHandler),
		errors.Is(err, errSlowClient):
		c.srv.log.Warn("closing connection", zap.Int64("conn_id", c.id),
			zap.String("peer", c.nc.RemoteAddr().String()), zap.Int32("request_id", c.req.RequestID),
			zap.String("reason", err.Error()))
	default:
		if ce := c.srv.log.Check(zap.DebugLevel, "connection ended"); ce != nil {
			ce.Write(zap.Int64("conn_id", c.id), zap.String("peer", c.nc.RemoteAddr().String()),
				zap.String("reason", err.Error()))
		}
	}
}

// serveOne reads, handles and answers one request.
func (c *conn) serveOne(ctx context.Context) error {
	frame, n, err := c.readFrame()
	if err != nil {
		return err
	}
	err = c.handle(ctx, frame)
	scribble(frame)
	if n <= c.r.Size() {
		_, _ = c.r.Discard(n)
	}
	c.release()
	return err
}

// readFrame waits for the next request and reads its frame of n bytes: in place in the read
// buffer (valid until Discard(n)) when it fits, else into c.frameBuf. The connection turns
// active once the request's header is in.
func (c *conn) readFrame() (frame []byte, n int, err error) {
	// Waiting for a request has no deadline (drivers keep idle pooled connections); once
	// its first byte is in, the rest must arrive within FrameReadTimeout.
	if _, err := c.r.Peek(1); err != nil {
		return nil, 0, err
	}
	deadline := false
	if c.r.Buffered() < HeaderSize {
		c.setFrameDeadline()
		deadline = true
	}
	hdr, err := c.r.Peek(HeaderSize)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, fmt.Errorf("truncated message header: %w", slowClient("reading a header", err))
	}
	if !c.activate() {
		return nil, 0, errClosedIdle
	}
	c.req.RequestID = int32(le.Uint32(hdr[4:]))
	n, err = checkLength(hdr, MaxMessageSize)
	if err != nil {
		return nil, 0, err
	}
	if !deadline && c.r.Buffered() < n {
		c.setFrameDeadline()
		deadline = true
	}
	if n <= c.r.Size() {
		frame, err = c.r.Peek(n) // decoded in place: valid until Discard
	} else {
		frame, err = c.readLarge(n)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, fmt.Errorf("truncated message of %d bytes: %w", n, slowClient("reading a frame", err))
	}
	if deadline {
		_ = c.nc.SetReadDeadline(time.Time{})
	}
	return frame, n, nil
}

// activate marks the connection busy with a request; false when Shutdown closed it.
func (c *conn) activate() bool {
	if c.pipe != nil {
		return c.pipe.activate()
	}
	return c.state.CompareAndSwap(stateIdle, stateActive)
}

// readLarge reads a frame of n bytes that does not fit the read buffer into a borrowed
// one. Past the largest pooled size, the buffer grows (doubling) as bytes arrive, so that a
// header announcing 48 MB costs memory only once the bytes are really sent.
func (c *conn) readLarge(n int) ([]byte, error) {
	c.frameBuf = getBuf(min(n, largestPooled))
	frame := *c.frameBuf
	for len(frame) < n {
		step := min(n-len(frame), max(cap(frame)-len(frame), len(frame)))
		frame = slices.Grow(frame, step)
		*c.frameBuf = frame
		k, err := io.ReadFull(c.r, frame[len(frame):len(frame)+step])
		frame = frame[:len(frame)+k]
		if err != nil {
			return nil, err
		}
	}
	*c.frameBuf = frame
	return frame, nil
}

// release returns the buffers borrowed for the last request.
func (c *conn) release() {
	scribbleBuf(c.inflateBuf)
	scribbleBuf(c.scratch)
	putBuf(c.frameBuf)
	putBuf(c.inflateBuf)
	putBuf(c.scratch)
	c.frameBuf, c.inflateBuf, c.scratch = nil, nil, nil
	c.req.Body = nil
}

// errHandler marks a connection closed because its handler failed.
var errHandler = errors.New("handler failed")

// handle decodes frame, runs the handler and writes the reply.
func (c *conn) handle(ctx context.Context, frame []byte) error {
	m, rt, merr, err := c.decode(frame)
	if err != nil {
		return err
	}
	moreToCome := !rt.legacy && m.Msg.Flags&MoreToCome != 0
	if merr != nil {
		if moreToCome {
			return nil // MongoDB answers nothing to a moreToCome request, errors included
		}
		return c.writeReply(rt, merr.Reply(), 0)
	}
	if rt.legacy {
		if _, ok := commandDatabase(m.Query.FullCollectionName); !ok {
			return c.writeReply(rt, unsupportedOpQueryReply, QueryFailure)
		}
	}
	if rt.legacy || len(m.Msg.Sequences) > 0 {
		c.scratch = getBuf(int(m.Header.MessageLength) + 64)
	}
	if merr := m.fillRequest(&c.req, c.scratch); merr != nil {
		return c.writeReply(rt, merr.Reply(), 0)
	}
	c.req.Compressor = rt.compressor
	c.req.Replies = 0
	if c.pipe != nil {
		c.req.ExhaustAllowed = false // replies of a pipelined connection are one per request
	}
	for {
		c.req.Exhaust = false
		c.startWatch()
		reply, err := c.ch.Handle(ctx, &c.req)
		c.stopWatch()
		switch {
		case err != nil:
			return fmt.Errorf("%w: %w", errHandler, err)
		case len(reply) < 5:
			return fmt.Errorf("%w: Handle returned neither a reply nor an error", errHandler)
		case moreToCome:
			return nil
		case !c.req.Exhaust || !c.req.ExhaustAllowed || rt.legacy:
			return c.writeReply(rt, reply, 0)
		}
		// An exhaust stream: this reply says more follow, and the next answers it (mongod
		// makes each reply the request of the next one).
		more := rt
		more.flags |= MoreToCome
		id, err := c.writeReplyID(more, reply, 0)
		if err != nil {
			return err
		}
		rt.requestID = id
		c.req.Replies++
	}
}

// decode decodes frame, unwrapping an OP_COMPRESSED, and says how to answer it. It returns
// the *mongoerr.Error to answer with, if any, and an error when the connection must close.
func (c *conn) decode(frame []byte) (m *Message, rt replyTo, merr *mongoerr.Error, err error) {
	c.stats.requests.Add(1)
	c.stats.physicalIn.Add(int64(len(frame)))
	m = &c.msg
	derr := m.Decode(frame, MaxMessageSize)
	rt.requestID = m.Header.RequestID
	if derr == nil && m.Header.OpCode == OpCodeCompressed {
		rt.compressed, rt.compressor = true, m.Compressed.Compressor
		c.inflateBuf = getBuf(HeaderSize + int(m.Compressed.UncompressedSize))
		inner, err := m.Compressed.appendOriginal((*c.inflateBuf)[:0], m.Header)
		*c.inflateBuf = inner
		if err != nil {
			return nil, rt, nil, &ProtocolError{Reason: err.Error()}
		}
		m = &c.inner
		frame = inner
		derr = m.Decode(inner, len(inner))
	}
	c.stats.bytesIn.Add(int64(len(frame)))
	if derr != nil {
		// NB: e is declared here, not &merr passed to errors.As: the target escapes, and a
		// heap-allocated result would cost an allocation on every request.
		var e *mongoerr.Error
		if !errors.As(derr, &e) {
			return nil, rt, nil, derr
		}
		merr = e
	}
	switch m.Header.OpCode {
	case OpCodeMsg:
		rt.flags = m.Msg.Flags & ChecksumPresent
	case OpCodeQuery:
		rt.legacy = true
	default:
		return nil, rt, nil, protocolError("unexpected %s from a client", m.Header.OpCode)
	}
	return m, rt, merr, nil
}

// writeReply encodes doc as the answer rt describes and writes it with one Write.
func (c *conn) writeReply(rt replyTo, doc bsoncore.Document, flags ReplyFlags) error {
	_, err := c.writeReplyID(rt, doc, flags)
	return err
}

// writeReplyID is writeReply, also returning the reply's requestID.
func (c *conn) writeReplyID(rt replyTo, doc bsoncore.Document, flags ReplyFlags) (int32, error) {
	out := getBuf(HeaderSize + 20 + len(doc) + 4)
	b := *out
	id := c.srv.nextRequestID.Add(1)
	if rt.legacy {
		if flags == 0 {
			flags = AwaitCapable
		}
		b = AppendOpReply(b, id, rt.requestID, flags, doc)
	} else {
		b = AppendOpMsg(b, id, rt.requestID, rt.flags, doc)
	}
	c.stats.bytesOut.Add(int64(len(b)))
	if rt.compressed {
		plain := b
		z := getBuf(len(plain) + len(plain)/8 + 64)
		var err error
		b, err = AppendCompressed(*z, rt.compressor, plain)
		*out = plain
		putBuf(out)
		out = z
		if err != nil {
			*out = b
			putBuf(out)
			return 0, fmt.Errorf("compressing reply with %s: %w", rt.compressor, err)
		}
	}
	c.stats.physicalOut.Add(int64(len(b)))
	var err error
	if c.pipe != nil {
		err = c.pipe.write(b)
	} else {
		c.armWriteDeadline()
		_, err = c.nc.Write(b)
		err = slowClient("writing a reply", err)
	}
	*out = b
	putBuf(out)
	return id, err
}
