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

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Client sends commands to one server as OP_MSG requests over a pool of connections, one
// request at a time on each: the internal client a cluster node reaches another node's
// shards through (docs/cluster.md, Internal protocol). It speaks only what our server answers
// (no handshake, no compression); a connection that fails in any way is closed, never
// reused, so a reply can never be read by the wrong request.
//
//	c := wire.NewClient("10.0.0.2:27017", wire.ClientOptions{})
//	reply, err := c.Command(ctx, cmd) // cmd carries its "$db"
type Client struct {
	addr   string
	opts   ClientOptions
	nextID atomic.Int32
	mu     struct {
		sync.Mutex
		idle   []*clientConn
		closed bool
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
	// MaxIdle is how many idle connections the pool keeps; default 64. Below the number of
	// requests a router has in flight to one node, every request past it dials and closes a
	// connection of its own: at 16, with 32 clients reading through one node of three, the
	// dials took 13% of the router's CPU.
	MaxIdle int
	// Hello, when set, is run on every new connection before its first command (the
	// internal authentication of a node to another); its {ok: 0} fails the dial.
	Hello func(ctx context.Context, run func(cmd bsoncore.Document) (bsoncore.Document, error)) error
}

// EnsureDefaults fills in the zero fields of o.
func (o *ClientOptions) EnsureDefaults() {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.MaxIdle <= 0 {
		o.MaxIdle = 64
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

// clientConn is one pooled connection.
type clientConn struct {
	nc net.Conn
	br *bufio.Reader
}

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
	return &Client{addr: addr, opts: opts}
}

// Addr returns the server's address.
func (c *Client) Addr() string { return c.addr }

// Command runs cmd (which names its database in "$db") and returns the reply's body: {ok:
// 1, …} or {ok: 0, …} alike, the caller reads it. Errors are *UnreachableError, ctx's error
// when it ended first, or a *mongoerr.Error for a reply that is not a valid OP_MSG.
func (c *Client) Command(ctx context.Context, cmd bsoncore.Document) (bsoncore.Document, error) {
	cc, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	reply, reusable, err := c.exchange(ctx, cc, cmd)
	if !reusable {
		_ = cc.nc.Close()
	} else {
		c.put(cc)
	}
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return reply, err
}

// exchange runs one round trip on cc within ctx and reports whether cc can serve another.
// Only ctx ends the round trip: a socket deadline set to ctx's own would race its timer and
// surface as an i/o timeout before ctx.Err() says why.
func (c *Client) exchange(ctx context.Context, cc *clientConn, cmd bsoncore.Document) (bsoncore.Document, bool, error) {
	_ = cc.nc.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = cc.nc.SetDeadline(longAgo) })
	reply, err := c.roundTrip(cc, cmd)
	if !stop() {
		// ctx ended as the round trip did: its callback may set the deadline at any time
		// now, so cc cannot serve another command (the next one on it failed with an i/o
		// timeout, its own ctx alive: TestClusterExplainRemoteShards).
		return reply, false, err
	}
	return reply, err == nil, err
}

// roundTrip writes one request on cc and reads its reply.
func (c *Client) roundTrip(cc *clientConn, cmd bsoncore.Document) (bsoncore.Document, error) {
	id := c.nextID.Add(1)
	buf := getBuf(len(cmd) + 64)
	frame := AppendOpMsg((*buf)[:0], id, 0, 0, cmd)
	_, err := cc.nc.Write(frame)
	*buf = frame
	putBuf(buf)
	if err != nil {
		return nil, &UnreachableError{Addr: c.addr, Err: err}
	}
	m, err := ReadMessage(cc.br, MaxMessageSize)
	if err != nil {
		if me := mongoerr.As(err); me != nil {
			return nil, me
		}
		return nil, &UnreachableError{Addr: c.addr, Err: err}
	}
	switch {
	case m.Header.ResponseTo != id:
		return nil, &UnreachableError{Addr: c.addr, Err: fmt.Errorf("reply to request %d, want %d", m.Header.ResponseTo, id)}
	case m.Header.OpCode != OpCodeMsg:
		return nil, &UnreachableError{Addr: c.addr, Err: fmt.Errorf("reply is %v, want OP_MSG", m.Header.OpCode)}
	}
	return m.Msg.Body, nil
}

// get returns an idle connection or dials a new one.
func (c *Client) get(ctx context.Context) (*clientConn, error) {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil, &UnreachableError{Addr: c.addr, Err: errors.New("client closed"), NotSent: true}
	}
	if n := len(c.mu.idle); n > 0 {
		cc := c.mu.idle[n-1]
		c.mu.idle = c.mu.idle[:n-1]
		c.mu.Unlock()
		return cc, nil
	}
	c.mu.Unlock()
	return c.dial(ctx)
}

// dial opens a connection and runs the Hello hook on it.
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
	cc := &clientConn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}
	if c.opts.Hello != nil {
		run := func(cmd bsoncore.Document) (bsoncore.Document, error) {
			reply, reusable, err := c.exchange(dctx, cc, cmd)
			if err == nil && !reusable {
				err = &UnreachableError{Addr: c.addr, Err: dctx.Err()}
			}
			return reply, err
		}
		if err := c.opts.Hello(dctx, run); err != nil {
			_ = nc.Close()
			var ue *UnreachableError
			if errors.As(err, &ue) {
				ue.NotSent = true
			}
			return nil, err
		}
	}
	return cc, nil
}

// put returns cc to the pool, or closes it when the pool is full or closed.
func (c *Client) put(cc *clientConn) {
	c.mu.Lock()
	if !c.mu.closed && len(c.mu.idle) < c.opts.MaxIdle {
		c.mu.idle = append(c.mu.idle, cc)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	_ = cc.nc.Close()
}

// Close closes the idle connections; those in use close when their command ends.
func (c *Client) Close() {
	c.mu.Lock()
	idle := c.mu.idle
	c.mu.idle, c.mu.closed = nil, true
	c.mu.Unlock()
	for _, cc := range idle {
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
