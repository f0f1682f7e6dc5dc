package wire

import (
	"errors"
	"fmt"
	"net"
	"time"

	"go.uber.org/zap"
)

// DisconnectWatchDelay is how long a request runs before its connection is watched for the
// client going away. A request that ends sooner costs a timer reset and stop; one that runs
// longer gets a goroutine blocked in a one-byte read of the socket, which sees the client's
// close (EOF or a reset) and cancels the context of the Handle call, as mongod interrupts
// an operation whose client disconnected.
const DisconnectWatchDelay = 10 * time.Millisecond

// errSlowClient ends a connection whose client did not send a whole frame, or did not read
// a reply, within ServerOptions.FrameReadTimeout or WriteTimeout.
var errSlowClient = errors.New("client too slow")

// longAgo is a deadline in the past: setting it wakes a blocked read at once.
var longAgo = time.Unix(1, 0)

// connReader is the source of the connection's bufio.Reader: the byte the watcher read, if
// any, then the socket. Only the connection's goroutine reads it, never while a watcher runs.
type connReader struct{ c *conn }

// Read implements io.Reader.
func (r connReader) Read(p []byte) (int, error) {
	c := r.c
	if c.watch.peeked && len(p) > 0 {
		p[0], c.watch.peeked = c.watch.peekByte, false
		return 1, nil
	}
	return c.nc.Read(p)
}

// watchState is a connection's disconnect watcher: a timer that, DisconnectWatchDelay after a
// request started, runs watchPeer in its own goroutine.
type watchState struct {
	timer    *time.Timer
	done     chan struct{} // watchPeer sends here when it returns
	peekByte byte          // the first byte of a pipelined request, read by watchPeer
	peeked   bool
	// writeDeadline is the write deadline last set on the socket (zero: none yet).
	writeDeadline time.Time
}

// startWatch arms the watcher before a Handle call.
func (c *conn) startWatch() {
	if c.pipe != nil {
		return // the pipelined connection's reader sees the client go (pipeline.go)
	}
	if c.watch.timer == nil {
		c.watch.done = make(chan struct{}, 1)
		c.watch.timer = time.AfterFunc(DisconnectWatchDelay, c.watchPeer)
		return
	}
	c.watch.timer.Reset(DisconnectWatchDelay)
}

// stopWatch disarms the watcher after a Handle call, waiting for its goroutine when it had
// started: a read deadline in the past wakes its read.
func (c *conn) stopWatch() {
	if c.pipe != nil {
		return
	}
	if c.watch.timer.Stop() {
		return // it never fired
	}
	_ = c.nc.SetReadDeadline(longAgo)
	<-c.watch.done
	_ = c.nc.SetReadDeadline(time.Time{})
}

// watchPeer blocks in a one-byte read of the socket while a request runs. A byte is the
// start of a pipelined request, kept for connReader; EOF or a socket error means the client
// is gone, and the running request's context is cancelled. The deadline stopWatch sets ends
// it quietly.
func (c *conn) watchPeer() {
	defer func() { c.watch.done <- struct{}{} }()
	var b [1]byte
	n, err := c.nc.Read(b[:])
	if n == 1 {
		c.watch.peekByte, c.watch.peeked = b[0], true
		return
	}
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		return
	}
	if ce := c.srv.log.Check(zap.DebugLevel, "client disconnected while its request runs; cancelling it"); ce != nil {
		ce.Write(zap.Int64("conn_id", c.id), zap.Error(err))
	}
	c.cancel()
}

// setFrameDeadline bounds the time the rest of a frame may take to arrive.
func (c *conn) setFrameDeadline() {
	_ = c.nc.SetReadDeadline(time.Now().Add(c.srv.opts.FrameReadTimeout))
}

// armWriteDeadline makes sure the next write has at least half of WriteTimeout to complete.
// The deadline is moved only when less than that is left, so that most replies cost a clock
// read and no timer update.
func (c *conn) armWriteDeadline() {
	now := time.Now()
	if c.watch.writeDeadline.Sub(now) >= c.srv.opts.WriteTimeout/2 {
		return
	}
	c.watch.writeDeadline = now.Add(c.srv.opts.WriteTimeout)
	_ = c.nc.SetWriteDeadline(c.watch.writeDeadline)
}

// slowClient wraps a timeout error as errSlowClient.
func slowClient(what string, err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: %s: %w", errSlowClient, what, err)
	}
	return err
}
