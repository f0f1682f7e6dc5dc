package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Client sends commands to one server as OP_MSG requests over a few pipelined connections:
// the internal client a cluster node reaches another node's shards through (docs/cluster.md,
// Internal protocol). Each connection carries any number of requests in flight, matched to
// their replies by requestID and responseTo: the requests that arrive while a write is under
// way go out together in the next one, and one reader goroutine per connection hands each
// reply to its request. A request whose context ends is forgotten (its reply, when it comes,
// is dropped, and a cancel message tells the server to stop it), which leaves the connection
// to the others; a connection that fails in any way
// fails every request it carries and is closed, and the next request dials a new one (a
// restarted server is reached again). It speaks only what our server answers (no handshake,
// no compression).
//
//	c := wire.NewClient("10.0.0.2:27017", wire.ClientOptions{})
//	reply, err := c.Command(ctx, cmd) // cmd carries its "$db"
type Client struct {
	addr     string
	opts     ClientOptions
	nextID   atomic.Int32
	created  atomic.Int64 // connections dialed since the client was made (clientstats.go)
	watching atomic.Bool  // the watchdog of requests' own bounds runs (clientwatch.go)
	mu       struct {
		sync.Mutex
		conns   []*clientConn
		dialing int
		dialed  chan struct{} // closed when a dial ends
		closed  bool
	}
}

// ClientOptions configures a Client.
type ClientOptions struct {
	// TLS, when set, wraps every connection in TLS with this configuration; an empty
	// ServerName is the host of the client's address, as with tls.Dial, so the server's
	// certificate is verified for the name or IP address the client dials.
	TLS *tls.Config
	// DialTimeout bounds a connection's dial (and TLS handshake); default 5s.
	DialTimeout time.Duration
	// Conns is how many connections the client keeps to the server, each carrying many
	// requests at once; default 2. Fewer connections batch more requests into each write:
	// with 32 clients reading by _id through one node of three, the nodes made 5.5 read and
	// write system calls per read with 4 connections per peer and 4.6 with 1 (3.0 for a
	// read on one node). More than one keeps a large reply (a batch of 4 MB, a raft
	// snapshot's chunk) from holding up every other request to that server.
	Conns int
	// Hello, when set, is run on every new connection before its first command (the
	// internal authentication of a node to another, and its request for concurrent
	// handling); its {ok: 0} fails the dial. It runs one round trip at a time.
	Hello func(ctx context.Context, run func(cmd bsoncore.Document) (bsoncore.Document, error)) error
}

// EnsureDefaults fills in the zero fields of o.
func (o *ClientOptions) EnsureDefaults() {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.Conns <= 0 {
		o.Conns = 2
	}
}

// UnreachableError is a failure to reach the server or to hear its answer: the dial, the
// write of the request or the read of the reply failed. The command may or may not have run
// (a write whose reply was lost); the caller decides what is safe to retry.
type UnreachableError struct {
	Addr string
	Err  error
	// NotSent is set when the request never left: the connection could not be made (dial,
	// TLS handshake, authentication) or the client was closed. The command did not run.
	NotSent bool
}

// Error implements error.
func (e *UnreachableError) Error() string { return fmt.Sprintf("%s: %v", e.Addr, e.Err) }

// Unwrap returns the network error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// NewClient returns a client of the server at addr; connections are dialed when needed.
func NewClient(addr string, opts ClientOptions) *Client {
	opts.EnsureDefaults()
	if opts.TLS != nil && opts.TLS.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		opts.TLS = opts.TLS.Clone()
		opts.TLS.ServerName = host
	}
	c := &Client{addr: addr, opts: opts}
	c.mu.dialed = make(chan struct{})
	return c
}

// Addr returns the server's address.
func (c *Client) Addr() string { return c.addr }

// Command runs cmd (which names its database in "$db") and returns the reply's body: {ok:
// 1, …} or {ok: 0, …} alike, the caller reads it. Errors are *UnreachableError, ctx's error
// when it ended first, or a *mongoerr.Error for a reply that is not a valid OP_MSG.
func (c *Client) Command(ctx context.Context, cmd bsoncore.Document) (bsoncore.Document, error) {
	return c.command(ctx, cmd, time.Time{})
}

// command is Command, bounded by deadline too unless it is zero (CommandWithin).
func (c *Client) command(ctx context.Context, cmd bsoncore.Document, deadline time.Time) (bsoncore.Document, error) {
	cc, err := c.conn(ctx)
	if err != nil {
		return nil, err
	}
	id := c.nextID.Add(1)
	call := getCall()
	call.deadline = deadline
	if err := cc.register(id, call); err != nil {
		putCall(call)
		return nil, err
	}
	if err := cc.send(id, cmd); err != nil {
		cc.forget(id)
		return nil, err
	}
	select {
	case <-call.done:
		reply, err := call.reply, call.err
		putCall(call)
		return reply, err
	case <-ctx.Done():
		if cc.forget(id) {
			cc.cancel(id) // the server stops running it; its reply, if sent, is dropped
		} else {
			// The reply came as ctx ended: the call is delivered; take it so that the call
			// goes back to the pool clean.
			<-call.done
			putCall(call)
		}
		return nil, ctx.Err()
	}
}

// conn returns a connection for the next request: the open one with the fewest requests in
// flight when it has none, else a new one while fewer than Conns are open, else that one
// (sequential commands share one connection; concurrent ones spread over Conns).
func (c *Client) conn(ctx context.Context) (*clientConn, error) {
	for {
		c.mu.Lock()
		if c.mu.closed {
			c.mu.Unlock()
			return nil, &UnreachableError{Addr: c.addr, Err: errors.New("client closed"), NotSent: true}
		}
		var best *clientConn
		for _, cc := range c.mu.conns {
			if best == nil || cc.inflight.Load() < best.inflight.Load() {
				best = cc
			}
		}
		if (best == nil || best.inflight.Load() > 0) && len(c.mu.conns)+c.mu.dialing < c.opts.Conns {
			c.mu.dialing++
			c.mu.Unlock()
			return c.dialConn(ctx)
		}
		if best != nil {
			c.mu.Unlock()
			return best, nil
		}
		dialed := c.mu.dialed // every slot is being dialed: wait for one
		c.mu.Unlock()
		select {
		case <-dialed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// dialConn dials a connection, starts its reader and adds it to the open ones; the caller
// counted it in dialing.
func (c *Client) dialConn(ctx context.Context) (*clientConn, error) {
	cc, err := c.dial(ctx)
	c.mu.Lock()
	c.mu.dialing--
	close(c.mu.dialed)
	c.mu.dialed = make(chan struct{})
	if err == nil && c.mu.closed {
		err = &UnreachableError{Addr: c.addr, Err: errors.New("client closed"), NotSent: true}
		_ = cc.nc.Close()
	}
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.mu.conns = append(c.mu.conns, cc)
	c.mu.Unlock()
	c.created.Add(1)
	go cc.readLoop()
	return cc, nil
}

// dial opens a connection and runs the Hello hook on it, one round trip at a time.
func (c *Client) dial(ctx context.Context) (*clientConn, error) {
	dctx, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", c.addr)
	if err != nil {
		return nil, &UnreachableError{Addr: c.addr, Err: err, NotSent: true}
	}
	if c.opts.TLS != nil {
		tc := tls.Client(nc, c.opts.TLS)
		if err := tc.HandshakeContext(dctx); err != nil {
			_ = nc.Close()
			return nil, &UnreachableError{Addr: c.addr, Err: err, NotSent: true}
		}
		nc = tc
	}
	cc := &clientConn{c: c, nc: nc, br: bufio.NewReaderSize(nc, 64<<10), pending: map[int32]*call{}}
	if c.opts.Hello != nil {
		run := func(cmd bsoncore.Document) (bsoncore.Document, error) {
			stop := context.AfterFunc(dctx, func() { _ = nc.SetDeadline(longAgo) })
			defer stop()
			return cc.roundTrip(c.nextID.Add(1), cmd)
		}
		if err := c.opts.Hello(dctx, run); err != nil {
			_ = nc.Close()
			var ue *UnreachableError
			if errors.As(err, &ue) {
				ue.NotSent = true
			}
			if dctx.Err() != nil && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if dctx.Err() != nil { // it may have set the deadline as the hook returned
			_ = nc.Close()
			return nil, &UnreachableError{Addr: c.addr, Err: dctx.Err(), NotSent: true}
		}
		_ = nc.SetDeadline(time.Time{})
	}
	return cc, nil
}

// drop removes cc from the open connections.
func (c *Client) drop(cc *clientConn) {
	c.mu.Lock()
	for i, o := range c.mu.conns {
		if o == cc {
			c.mu.conns = append(c.mu.conns[:i], c.mu.conns[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
}

// Close closes the connections; the requests in flight on them fail.
func (c *Client) Close() {
	c.mu.Lock()
	conns := c.mu.conns
	c.mu.conns, c.mu.closed = nil, true
	c.mu.Unlock()
	for _, cc := range conns {
		_ = cc.nc.Close()
	}
}

// Pool holds one Client per server address.
type Pool struct {
	opts ClientOptions
	mu   struct {
		sync.Mutex
		clients map[string]*Client
	}
}

// NewPool returns a pool whose clients use opts.
func NewPool(opts ClientOptions) *Pool {
	p := &Pool{opts: opts}
	p.mu.clients = map[string]*Client{}
	return p
}

// Client returns the client of addr, creating it at the first use.
func (p *Pool) Client(addr string) *Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.mu.clients[addr]
	if c == nil {
		c = NewClient(addr, p.opts)
		p.mu.clients[addr] = c
	}
	return c
}

// Close closes every client.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.mu.clients {
		c.Close()
	}
	clear(p.mu.clients)
}
