package wire

import (
	"context"
	"errors"
	"runtime"
	"sync"

	"go.uber.org/zap"
)

// pipe is the state of a pipelined connection (Request.Concurrent): the connection's
// goroutine reads frames and runs none but the brief requests an Inliner names; every other
// request runs on a worker (a goroutine with a handler forked from the connection's; an idle
// one, else a new one, so the workers are as many as the most requests that ran at once),
// and the replies go out as they finish through one
// combining writer, many in one write when they finish together. Workers live as long as
// the connection: a goroutine per request would grow its stack anew for every command (a
// fifth of the owner's CPU in a profile). A client that disconnects cancels the requests in
// flight, as the disconnect watcher does for one.
type pipe struct {
	c    *conn
	fork Forker
	// inliner, when the handler is one, names the requests run by the reader itself on
	// inline, a handler forked when the first of them comes (Inliner).
	inliner Inliner
	inline  *conn
	wg      sync.WaitGroup // one per worker
	tasks   chan task      // a request, to an idle worker
	quit    chan struct{}  // closed when the connection ends: the workers return

	// base is the parent of the requests' contexts: the connection's values without its
	// cancellation, so that a request's context costs no registration with the
	// connection's (a lock and a map entry on every request); the requests in flight are
	// cancelled through running when the connection's context ends (cancelAll).
	base context.Context
	ctx  context.Context // the connection's

	mu       sync.Mutex
	inflight int
	reading  bool                              // a frame is being read
	running  map[int32]context.CancelCauseFunc // the requests in flight, by requestID

	wmu     sync.Mutex
	wbuf    []byte // replies appended while a write is under way
	spare   []byte
	writing bool
	werr    error // the first write error: the connection is closing
}

// task is one request of a pipelined connection: its frame and its context, which a cancel
// message ends.
type task struct {
	id     int32
	frame  *[]byte
	ctx    context.Context
	cancel context.CancelCauseFunc // ends ctx: Request.Cancel
}

// CancelField is the only field of a pipelined connection's cancel message: an OP_MSG with
// moreToCome, {$cancel: requestID} (an int32), which cancels the context of that request if it
// still runs and is answered with nothing. The client sends it for a request it gave up on, as
// closing the connection did before it was pipelined.
const CancelField = "$cancel"

// servePipelined serves c pipelined until it ends, and returns why.
func (c *conn) servePipelined(ctx context.Context, f Forker) error {
	p := &pipe{c: c, fork: f, tasks: make(chan task), quit: make(chan struct{}), running: map[int32]context.CancelCauseFunc{}}
	p.ctx, p.base = ctx, context.WithoutCancel(ctx)
	stop := context.AfterFunc(ctx, p.cancelAll)
	defer stop()
	p.inliner, _ = f.(Inliner)
	c.pipe = p
	err := p.readLoop()
	if !errors.Is(err, errClosedIdle) {
		c.cancel() // the client went away or broke the protocol: its requests are moot
	}
	close(p.quit)
	p.wg.Wait()
	if p.inline != nil {
		closeFork(c, p.inline.ch)
	}
	return err
}

// readLoop reads requests and starts each until the connection fails or the server shuts
// down.
func (p *pipe) readLoop() error {
	c := p.c
	for {
		frame, n, err := c.readFrame()
		if err != nil {
			p.mu.Lock()
			p.reading = false
			p.mu.Unlock()
			return err
		}
		if id, ok := cancelOf(frame); ok {
			if n <= c.r.Size() {
				_, _ = c.r.Discard(n)
			}
			p.cancel(id)
			continue
		}
		buf := c.frameBuf // a large frame is read into a borrowed buffer: it goes with the request
		c.frameBuf = nil
		if buf == nil {
			buf = getBuf(n)
			*buf = append((*buf)[:0], frame...)
			_, _ = c.r.Discard(n)
		}
		t := task{id: c.req.RequestID, frame: buf}
		t.ctx, t.cancel = context.WithCancelCause(p.base)
		p.mu.Lock()
		p.inflight++
		p.reading = false
		p.running[t.id] = t.cancel
		if p.ctx.Err() != nil { // after cancelAll
			t.cancel(nil)
		}
		p.mu.Unlock()
		switch {
		case p.inliner != nil && p.inliner.Inline(msgBody(*buf)):
			if p.inline == nil {
				p.inline = p.newRunner(p.fork.Fork())
			}
			p.run(p.inline, t)
		default:
			select {
			case p.tasks <- t:
			default:
				p.wg.Add(1)
				go p.worker(t)
			}
		}
		if c.srv.shutting.Load() {
			return errClosedIdle
		}
	}
}

// activate marks a frame as being read (the connection is busy); false when Shutdown closed
// the connection while it was idle.
func (p *pipe) activate() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.c.state.CompareAndSwap(stateIdle, stateActive) && p.c.state.Load() != stateActive {
		return false
	}
	p.reading = true
	return true
}

// worker runs t, then the requests handed to it, on a handler of its own, until the
// connection ends.
func (p *pipe) worker(t task) {
	defer p.wg.Done()
	h := p.fork.Fork()
	defer closeFork(p.c, h)
	rc := p.newRunner(h)
	for {
		p.run(rc, t)
		select {
		case t = <-p.tasks:
		case <-p.quit:
			return
		}
	}
}

// newRunner returns the connection's state for running requests on handler h (a worker's,
// or the reader's for the requests it runs in line).
func (p *pipe) newRunner(h ConnHandler) *conn {
	return &conn{srv: p.c.srv, nc: p.c.nc, id: p.c.id, cancel: p.c.cancel, ch: h, stats: p.c.stats, pipe: p}
}

// msgBody returns the body of the OP_MSG frame carries, its first section, whose length it
// checks against the frame's and nothing else (nil for any other frame: a compressed one, a
// legacy opcode, a first section that is a document sequence).
func msgBody(frame []byte) []byte {
	const bodyAt = HeaderSize + 4 + 1 // flags, then the body section's kind byte
	if len(frame) < bodyAt+5 || OpCode(le.Uint32(frame[12:])) != OpCodeMsg || frame[bodyAt-1] != 0 {
		return nil
	}
	n := int(le.Uint32(frame[bodyAt:]))
	if n < 5 || n > len(frame)-bodyAt {
		return nil
	}
	return frame[bodyAt : bodyAt+n]
}

// run handles one request on rc and writes its reply.
func (p *pipe) run(rc *conn, t task) {
	c := p.c
	defer func() {
		if r := recover(); r != nil {
			c.srv.log.Error("panic while serving a pipelined request; closing the connection", zap.Int64("conn_id", c.id),
				zap.Any("panic", r), zap.StackSkip("stack", 1))
			_ = c.nc.Close()
		}
		rc.release()
		scribbleBuf(t.frame)
		putBuf(t.frame)
		p.done(t.id)
	}()
	rc.req.Cancel = t.cancel
	if err := rc.handle(t.ctx, *t.frame); err != nil {
		rc.logEnd(err)
		_ = c.nc.Close() // the reader fails and the connection ends
	}
}

// done notes a request answered; the last request of an idle connection makes it idle, and
// closes it when the server is shutting down.
func (p *pipe) done(id int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cancel := p.running[id]; cancel != nil {
		cancel(nil)
		delete(p.running, id)
	}
	p.inflight--
	if p.inflight > 0 || p.reading {
		return
	}
	if p.c.srv.shutting.Load() {
		p.c.state.Store(stateClosed)
		_ = p.c.nc.Close()
		return
	}
	p.c.state.CompareAndSwap(stateActive, stateIdle)
}

// busy reports whether requests other than the caller's are in flight.
func (p *pipe) busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inflight > 1
}

// yieldBeforeWrite lets the goroutines that are ready to run go first, once, before a write
// that other requests in flight may join: a worker about to answer, or a client goroutine
// about to send, appends its frame to the write instead of making one of its own. Under 32
// clients reading through one node of three, two in three of them on other nodes, the
// nodes' read and write system calls were a third of their CPU, and most writes carried
// one frame. The yield costs a trip through the scheduler, and nothing when the
// connection carries one request at a time (the caller does not yield then).
func yieldBeforeWrite() { runtime.Gosched() }

// cancel ends the context of request id, if it still runs.
func (p *pipe) cancel(id int32) {
	p.mu.Lock()
	cancel := p.running[id]
	p.mu.Unlock()
	if cancel != nil {
		cancel(nil)
	}
}

// cancelAll ends the context of every request in flight: the connection's context ended
// (the client went away, the server shuts down).
func (p *pipe) cancelAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cancel := range p.running {
		cancel(nil)
	}
}

// cancelOf reports whether frame is a cancel message (CancelField), and for which request:
// an OP_MSG with moreToCome and no checksum whose body is {$cancel: <int32>} alone.
func cancelOf(frame []byte) (int32, bool) {
	const bodyAt = HeaderSize + 4 + 1 // flags, then the body section's kind byte
	const size = 4 + 1 + len(CancelField) + 1 + 4 + 1
	if len(frame) != bodyAt+size || OpCode(le.Uint32(frame[12:])) != OpCodeMsg ||
		MsgFlags(le.Uint32(frame[HeaderSize:])) != MoreToCome || frame[bodyAt-1] != 0 {
		return 0, false
	}
	body := frame[bodyAt:]
	if int(le.Uint32(body)) != size || body[4] != 0x10 || string(body[5:5+len(CancelField)]) != CancelField || body[5+len(CancelField)] != 0 {
		return 0, false
	}
	return int32(le.Uint32(body[size-5:])), true
}

// write sends a reply frame: appended to the next batch while another reply is being
// written, whose writer sends it when its write returns. A writer whose connection runs
// other requests first yields once (yieldBeforeWrite): the replies that finish meanwhile
// go out in its write.
func (p *pipe) write(frame []byte) error {
	p.wmu.Lock()
	if p.werr != nil {
		err := p.werr
		p.wmu.Unlock()
		return err
	}
	p.wbuf = append(p.wbuf, frame...)
	if p.writing {
		p.wmu.Unlock()
		return nil
	}
	p.writing = true
	if p.busy() {
		p.wmu.Unlock()
		yieldBeforeWrite()
		p.wmu.Lock()
	}
	var err error
	for len(p.wbuf) > 0 && err == nil {
		buf := p.wbuf
		p.wbuf = p.spare[:0]
		p.c.armWriteDeadline() // only the writer touches it
		p.wmu.Unlock()
		_, err = p.c.nc.Write(buf)
		p.wmu.Lock()
		if cap(buf) <= maxRetainedWriteBuf {
			p.spare = buf[:0]
		} else {
			p.spare = nil
		}
	}
	p.writing = false
	if err != nil {
		err = slowClient("writing a reply", err)
		p.werr = err
		p.wbuf = nil
	}
	p.wmu.Unlock()
	return err
}

// closeFork calls a fork's Close, surviving a panic in it.
func closeFork(c *conn, h ConnHandler) {
	defer func() {
		if r := recover(); r != nil {
			c.srv.log.Error("panic in ConnHandler.Close", zap.Int64("conn_id", c.id), zap.Any("panic", r))
		}
	}()
	h.Close()
}
