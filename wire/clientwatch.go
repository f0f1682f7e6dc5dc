package wire

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A request's own bound (Client.CommandWithin) is kept by one watchdog per Client rather
// than a context with a timer for each request: a timer, and the registration of a child
// context under the caller's, were a twentieth of a router's CPU for point reads on other
// nodes. The watchdog runs while requests with a bound are in flight, and every
// watchInterval fails those past it as their context would have ended (the server is told
// to stop them); a bound is thus kept to within watchInterval, which suits the minutes-long
// safety bounds it is for.

// watchInterval is how often the watchdog looks for requests past their bound.
var watchInterval = time.Second

// CommandWithin is Command with a bound of its own on the request, d from now, kept as
// described above: past it, the request is forgotten, the server told to stop it, and the
// error is context.DeadlineExceeded.
func (c *Client) CommandWithin(ctx context.Context, cmd bsoncore.Document, d time.Duration) (bsoncore.Document, error) {
	c.watch()
	return c.command(ctx, cmd, time.Now().Add(d))
}

// watch starts the client's watchdog, unless it runs.
func (c *Client) watch() {
	if c.watching.Load() || !c.watching.CompareAndSwap(false, true) {
		return
	}
	go c.watchdog()
}

// watchdog fails the requests past their bound until the client is closed.
func (c *Client) watchdog() {
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	for now := range t.C {
		c.mu.Lock()
		if c.mu.closed {
			c.mu.Unlock()
			return
		}
		conns := append([]*clientConn(nil), c.mu.conns...)
		c.mu.Unlock()
		for _, cc := range conns {
			cc.expire(now)
		}
	}
}

// expire fails the requests of cc whose bound is before now, and tells the server to stop
// them.
func (cc *clientConn) expire(now time.Time) {
	var late []int32
	cc.mu.Lock()
	for id, cl := range cc.pending {
		if !cl.deadline.IsZero() && cl.deadline.Before(now) {
			late = append(late, id)
		}
	}
	cc.mu.Unlock()
	for _, id := range late {
		if cc.deliver(id, nil, context.DeadlineExceeded) {
			cc.cancel(id)
		}
	}
}
