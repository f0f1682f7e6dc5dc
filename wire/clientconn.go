package wire

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// maxRetainedWriteBuf is the largest write buffer a client connection keeps between writes.
const maxRetainedWriteBuf = 1 << 20

// clientConn is one pipelined connection of a Client: the requests waiting for their reply
// by requestID, the frames waiting to be written, and whether a writer is at work.
type clientConn struct {
	c  *Client
	nc net.Conn
	br *bufio.Reader // the reader goroutine's (the Hello's round trips before it starts)

	inflight atomic.Int32 // requests waiting for their reply: len(pending)
	retired  atomic.Bool  // dropped (Client.DropConns): closed once no request waits on it

	mu      sync.Mutex
	pending map[int32]*call
	err     error // set once the connection failed: every request fails with it

	wmu     sync.Mutex
	wbuf    []byte // frames appended while a write is under way
	spare   []byte // the buffer of the last write, reused for the next batch
	writing bool
}

// call is one request in flight: done is closed once reply or err is set.
type call struct {
	done     chan struct{}
	reply    bsoncore.Document
	err      error
	deadline time.Time // the request's own bound (CommandWithin); zero: none
}

var callPool = sync.Pool{New: func() any { return &call{} }}

func getCall() *call {
	cl := callPool.Get().(*call)
	cl.done = make(chan struct{})
	return cl
}

func putCall(cl *call) {
	*cl = call{}
	callPool.Put(cl)
}

// register records the request id as waiting for its reply on cc.
func (cc *clientConn) register(id int32, cl *call) error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.err != nil {
		return cc.err
	}
	cc.pending[id] = cl
	cc.inflight.Add(1)
	return nil
}

// forget drops the request id, reporting whether it was still waiting (false: its reply or
// the connection's failure was delivered).
func (cc *clientConn) forget(id int32) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	_, ok := cc.pending[id]
	if ok {
		delete(cc.pending, id)
		cc.inflight.Add(-1)
	}
	return ok
}

// cancel asks the server to stop running request id (CancelField), without a reply. A
// server that does not pipeline the connection answers nothing to it either (moreToCome).
func (cc *clientConn) cancel(id int32) {
	cmd := bsoncore.NewDocumentBuilder().AppendInt32(CancelField, id).Build()
	_ = cc.write(cc.c.nextID.Add(1), MoreToCome, cmd)
}

// send writes the request id carrying cmd. Frames that arrive while another request's write
// is under way are appended to the next batch, which that writer sends when its write
// returns: under load many requests go out in one write. A writer that is not alone (other
// requests in flight) first yields once (yieldBeforeWrite), so that the requests of the
// goroutines ready to run join its write. An error means the connection
// failed (the request may have left, in part).
func (cc *clientConn) send(id int32, cmd bsoncore.Document) error {
	return cc.write(id, 0, cmd)
}

// write writes an OP_MSG with flags carrying cmd (send).
func (cc *clientConn) write(id int32, flags MsgFlags, cmd bsoncore.Document) error {
	cc.wmu.Lock()
	cc.wbuf = AppendOpMsg(cc.wbuf, id, 0, flags, cmd)
	if cc.writing {
		cc.wmu.Unlock()
		return nil
	}
	cc.writing = true
	if cc.inflight.Load() > 1 {
		cc.wmu.Unlock()
		yieldBeforeWrite()
		cc.wmu.Lock()
	}
	var err error
	for len(cc.wbuf) > 0 && err == nil {
		buf := cc.wbuf
		cc.wbuf = cc.spare[:0]
		cc.wmu.Unlock()
		_, err = cc.nc.Write(buf)
		cc.wmu.Lock()
		if cap(buf) <= maxRetainedWriteBuf {
			cc.spare = buf[:0]
		} else {
			cc.spare = nil
		}
	}
	cc.writing = false
	if err != nil {
		cc.wbuf = cc.wbuf[:0]
	}
	cc.wmu.Unlock()
	if err != nil {
		err = &UnreachableError{Addr: cc.c.addr, Err: err}
		cc.fail(err)
	}
	return err
}

// readLoop reads replies and hands each to its request until the connection fails.
func (cc *clientConn) readLoop() {
	for {
		m, err := ReadMessage(cc.br, MaxMessageSize)
		if err == nil && m.Header.OpCode != OpCodeMsg {
			err = fmt.Errorf("reply is %v, want OP_MSG", m.Header.OpCode)
		}
		if err != nil {
			if me := mongoerr.As(err); me != nil && m != nil {
				// A reply that is not valid OP_MSG, its frame whole: that request fails.
				cc.deliver(m.Header.ResponseTo, nil, me)
				continue
			}
			cc.fail(&UnreachableError{Addr: cc.c.addr, Err: err})
			return
		}
		cc.deliver(m.Header.ResponseTo, m.Msg.Body, nil)
	}
}

// deliver hands a reply to request id, unless it was forgotten (false).
func (cc *clientConn) deliver(id int32, reply bsoncore.Document, err error) bool {
	cc.mu.Lock()
	cl := cc.pending[id]
	if cl != nil {
		delete(cc.pending, id)
		cc.inflight.Add(-1)
	}
	cc.mu.Unlock()
	if cl != nil {
		cl.reply, cl.err = reply, err
		close(cl.done)
		if cc.retired.Load() && cc.inflight.Load() == 0 {
			_ = cc.nc.Close() // its reader ends it
		}
	}
	return cl != nil
}

// fail ends cc: it is closed and leaves the client, and every request on it fails with err.
func (cc *clientConn) fail(err error) {
	cc.mu.Lock()
	if cc.err != nil {
		cc.mu.Unlock()
		return
	}
	cc.err = err
	pending := cc.pending
	cc.pending = nil
	cc.mu.Unlock()
	cc.c.drop(cc)
	_ = cc.nc.Close()
	for _, cl := range pending {
		cl.err = err
		close(cl.done)
	}
}

// roundTrip writes one request on cc and reads its reply, before the reader starts (the
// Hello hook's commands).
func (cc *clientConn) roundTrip(id int32, cmd bsoncore.Document) (bsoncore.Document, error) {
	buf := getBuf(len(cmd) + 64)
	frame := AppendOpMsg((*buf)[:0], id, 0, 0, cmd)
	_, err := cc.nc.Write(frame)
	*buf = frame
	putBuf(buf)
	if err != nil {
		return nil, &UnreachableError{Addr: cc.c.addr, Err: err}
	}
	m, err := ReadMessage(cc.br, MaxMessageSize)
	if err != nil {
		if me := mongoerr.As(err); me != nil {
			return nil, me
		}
		return nil, &UnreachableError{Addr: cc.c.addr, Err: err}
	}
	switch {
	case m.Header.ResponseTo != id:
		return nil, &UnreachableError{Addr: cc.c.addr, Err: fmt.Errorf("reply to request %d, want %d", m.Header.ResponseTo, id)}
	case m.Header.OpCode != OpCodeMsg:
		return nil, &UnreachableError{Addr: cc.c.addr, Err: fmt.Errorf("reply is %v, want OP_MSG", m.Header.OpCode)}
	}
	return m.Msg.Body, nil
}
