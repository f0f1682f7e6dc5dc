package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// ServerOptions configures a Server. The zero value is usable.
type ServerOptions struct {
	// MaxConns caps open connections; 0 means unlimited. A connection accepted beyond it is
	// closed at once with a log line, as mongod does past maxIncomingConnections.
	MaxConns int
	// ReadBufferSize is the per-connection read buffer (default 8 KiB). Requests that fit in
	// it are decoded in place; larger ones are read into a pooled buffer. It is most of what
	// an idle connection costs.
	ReadBufferSize int
	// FrameReadTimeout bounds how long a request may take to arrive once its first byte is
	// in (default DefaultFrameReadTimeout): a client that stalls mid-frame is disconnected
	// instead of holding a goroutine and a partly filled buffer. Waiting for a request has
	// no limit.
	FrameReadTimeout time.Duration
	// WriteTimeout bounds how long writing a reply may block (default DefaultWriteTimeout):
	// a client that stops reading is disconnected and the reply's buffer freed. A write is
	// given at least half of it.
	WriteTimeout time.Duration
}

// Defaults of the connection timeouts of ServerOptions.
const (
	DefaultFrameReadTimeout = time.Minute
	DefaultWriteTimeout     = time.Minute
)

// EnsureDefaults fills unset fields with their defaults.
func (o *ServerOptions) EnsureDefaults() {
	if o.ReadBufferSize == 0 {
		o.ReadBufferSize = 8 << 10
	}
	if o.FrameReadTimeout == 0 {
		o.FrameReadTimeout = DefaultFrameReadTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
}

// Validate reports options that cannot work.
func (o ServerOptions) Validate() error {
	if o.MaxConns < 0 {
		return fmt.Errorf("wire: MaxConns %d is negative", o.MaxConns)
	}
	if o.ReadBufferSize != 0 && o.ReadBufferSize < 1024 {
		return fmt.Errorf("wire: ReadBufferSize %d is below 1024", o.ReadBufferSize)
	}
	if o.FrameReadTimeout < 0 || o.WriteTimeout < 0 {
		return fmt.Errorf("wire: FrameReadTimeout %v and WriteTimeout %v must not be negative", o.FrameReadTimeout, o.WriteTimeout)
	}
	return nil
}

// Stats are the server's counters, in the units serverStatus reports them.
type Stats struct {
	ConnectionsCurrent      int64 // open connections
	ConnectionsActive       int64 // connections handling a request right now
	ConnectionsTotalCreated int64 // connections accepted since the start (rejected ones excluded)
	ConnectionsRejected     int64 // connections closed at once because of MaxConns
	BytesIn                 int64 // request bytes, counted uncompressed (serverStatus network.bytesIn)
	BytesOut                int64 // reply bytes, counted uncompressed
	PhysicalBytesIn         int64 // bytes read from sockets
	PhysicalBytesOut        int64 // bytes written to sockets
	NumRequests             int64 // messages received
}

// add accumulates o into s's network counters.
func (s *Stats) add(o *connStats) {
	s.BytesIn += o.bytesIn.Load()
	s.BytesOut += o.bytesOut.Load()
	s.PhysicalBytesIn += o.physicalIn.Load()
	s.PhysicalBytesOut += o.physicalOut.Load()
	s.NumRequests += o.requests.Load()
}

// Server accepts connections and runs, for each one, a goroutine that reads a request,
// decodes it, calls the Handler and writes the reply, one request at a time.
type Server struct {
	opts ServerOptions
	h    Handler
	log  *zap.Logger

	nextConnID    atomic.Int64
	nextRequestID atomic.Int32
	created       atomic.Int64
	rejected      atomic.Int64
	shutting      atomic.Bool
	conns         sync.WaitGroup // one per connection goroutine

	mu struct {
		sync.Mutex
		listeners map[net.Listener]struct{}
		conns     map[*conn]struct{}
		closed    Stats // network counters of connections that have ended
	}
}

// NewServer returns a server that answers requests with h and logs to logger.Named("wire").
// Invalid options are replaced by their defaults, with a log line.
func NewServer(opts ServerOptions, h Handler, logger *zap.Logger) *Server {
	if logger == nil {
		logger = zap.NewNop()
	}
	s := &Server{h: h, log: logger.Named("wire")}
	if err := opts.Validate(); err != nil {
		s.log.Warn("invalid server options; using defaults", zap.Error(err))
		opts = ServerOptions{}
	}
	opts.EnsureDefaults()
	s.opts = opts
	s.mu.listeners = map[net.Listener]struct{}{}
	s.mu.conns = map[*conn]struct{}{}
	return s
}

// ErrListenerClosed is returned by Serve when its listener was closed by someone other than
// Shutdown.
var ErrListenerClosed = errors.New("wire: listener closed")

// Serve accepts connections on ln until Shutdown, then returns nil. Temporary accept errors
// (such as running out of file descriptors) are logged and retried with a backoff. Serve may
// run on several listeners at once.
func (s *Server) Serve(ln net.Listener) error {
	if !s.trackListener(ln) {
		_ = ln.Close()
		return nil
	}
	defer s.untrackListener(ln)
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.shutting.Load() {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("%w: %w", ErrListenerClosed, err)
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed; retrying", zap.Error(err), zap.Duration("retry_in", delay))
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.accept(nc)
	}
}

// trackListener records ln for Shutdown; false when the server is already shutting down.
func (s *Server) trackListener(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutting.Load() {
		return false
	}
	s.mu.listeners[ln] = struct{}{}
	return true
}

// untrackListener forgets ln.
func (s *Server) untrackListener(ln net.Listener) {
	s.mu.Lock()
	delete(s.mu.listeners, ln)
	s.mu.Unlock()
}

// accept starts serving nc, or closes it when the server is full or shutting down.
func (s *Server) accept(nc net.Conn) {
	s.mu.Lock()
	if s.shutting.Load() {
		s.mu.Unlock()
		_ = nc.Close()
		return
	}
	if s.opts.MaxConns > 0 && len(s.mu.conns) >= s.opts.MaxConns {
		s.mu.Unlock()
		s.rejected.Add(1)
		_ = nc.Close()
		s.log.Warn("connection refused because too many open connections",
			zap.String("peer", nc.RemoteAddr().String()), zap.Int("max_conns", s.opts.MaxConns))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := newConn(s, nc, s.nextConnID.Add(1), cancel)
	s.mu.conns[c] = struct{}{}
	s.conns.Add(1)
	s.mu.Unlock()
	s.created.Add(1)
	go c.serve(ctx)
}

// removeConn forgets c and keeps its counters.
func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.mu.conns, c)
	s.mu.closed.add(c.stats)
	s.mu.Unlock()
}

// Shutdown stops accepting, closes idle connections at once, lets requests being handled
// finish and their replies be written (their connections close afterwards), and waits for
// every connection goroutine. If ctx ends first, it cancels the context of the Handle calls
// still running, closes every connection and returns ctx.Err() without waiting further.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutting.Store(true)
	for ln := range s.mu.listeners {
		_ = ln.Close()
	}
	for c := range s.mu.conns {
		c.closeIfIdle()
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.mu.conns {
			c.forceClose()
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}

// Stats returns the server's counters. It reads atomics and walks the open connections
// under a lock, so it is cheap enough for every serverStatus.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mu.closed
	st.ConnectionsCurrent = int64(len(s.mu.conns))
	for c := range s.mu.conns {
		st.add(c.stats)
		if c.state.Load() == stateActive {
			st.ConnectionsActive++
		}
	}
	st.ConnectionsTotalCreated = s.created.Load()
	st.ConnectionsRejected = s.rejected.Load()
	return st
}
