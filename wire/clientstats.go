package wire

// ClientStats are the connections of a Client, as connPoolStats reports a host's.
type ClientStats struct {
	// Open connections, those of them carrying a request (InUse) and those that carry none
	// (Available); Created counts every connection dialed since the client was made.
	Open, InUse, Available int
	Created                int64
}

// Stats returns c's connections now.
func (c *Client) Stats() ClientStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := ClientStats{Open: len(c.mu.conns), Created: c.created.Load()}
	for _, cc := range c.mu.conns {
		if cc.inflight.Load() > 0 {
			s.InUse++
		} else {
			s.Available++
		}
	}
	return s
}

// DropConns drops c's open connections (dropConnections): the next request dials a new
// one. A connection is closed at once when no request waits on it, else when its last reply
// has come, so that no request in flight fails for it.
func (c *Client) DropConns() int {
	c.mu.Lock()
	conns := c.mu.conns
	c.mu.conns = nil
	c.mu.Unlock()
	for _, cc := range conns {
		cc.retired.Store(true)
		if cc.inflight.Load() == 0 {
			_ = cc.nc.Close()
		}
	}
	return len(conns)
}

// Stats returns the connections of every client of p, by address.
func (p *Pool) Stats() map[string]ClientStats {
	p.mu.Lock()
	clients := make(map[string]*Client, len(p.mu.clients))
	for addr, c := range p.mu.clients {
		clients[addr] = c
	}
	p.mu.Unlock()
	out := make(map[string]ClientStats, len(clients))
	for addr, c := range clients {
		out[addr] = c.Stats()
	}
	return out
}

// DropConns drops the connections of p's client of addr, if any (Client.DropConns), and
// returns how many it dropped.
func (p *Pool) DropConns(addr string) int {
	p.mu.Lock()
	c := p.mu.clients[addr]
	p.mu.Unlock()
	if c == nil {
		return 0
	}
	return c.DropConns()
}
