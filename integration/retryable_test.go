package integration

import (
	"bytes"
	"context"
	wirebin "encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// replyDropper is a TCP proxy in front of a server that, when armed, loses the reply of the
// next request carrying a txnNumber: the server has applied the write, the client sees the
// connection close and retries (the retryable-writes spec's network error after the write).
type replyDropper struct {
	ln net.Listener
	mu struct {
		sync.Mutex
		target string
		armed  bool
		// dropped, when set, is signalled when a reply was dropped, and the connection is
		// closed only once resume is closed (a test restarts the server in between).
		dropped chan<- struct{}
		resume  <-chan struct{}
	}
}

// newReplyDropper starts a proxy to target; it stops when the test ends.
func newReplyDropper(t *testing.T, target string) *replyDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyDropper{ln: ln}
	p.mu.target = target
	t.Cleanup(func() { _ = ln.Close() })
	go p.serve()
	return p
}

// uri is the connection string through the proxy.
func (p *replyDropper) uri() string {
	return "mongodb://" + p.ln.Addr().String() + "/?directConnection=true"
}

// setTarget points new connections at addr.
func (p *replyDropper) setTarget(addr string) {
	p.mu.Lock()
	p.mu.target = addr
	p.mu.Unlock()
}

// arm makes the proxy drop the reply of the next request with a txnNumber.
func (p *replyDropper) arm(dropped chan<- struct{}, resume <-chan struct{}) {
	p.mu.Lock()
	p.mu.armed, p.mu.dropped, p.mu.resume = true, dropped, resume
	p.mu.Unlock()
}

// serve accepts client connections until the listener closes.
func (p *replyDropper) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.proxy(c)
	}
}

// proxy relays one client connection, message by message.
func (p *replyDropper) proxy(client net.Conn) {
	defer func() { _ = client.Close() }()
	p.mu.Lock()
	target := p.mu.target
	p.mu.Unlock()
	srv, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer func() { _ = srv.Close() }()
	for {
		req, err := readWireMessage(client)
		if err != nil {
			return
		}
		drop := false
		var dropped chan<- struct{}
		var resume <-chan struct{}
		p.mu.Lock()
		if p.mu.armed && bytes.Contains(req, []byte("txnNumber\x00")) {
			drop, dropped, resume = true, p.mu.dropped, p.mu.resume
			p.mu.armed = false
		}
		p.mu.Unlock()
		if _, err := srv.Write(req); err != nil {
			return
		}
		reply, err := readWireMessage(srv)
		if err != nil {
			return
		}
		if drop {
			if dropped != nil {
				dropped <- struct{}{}
				<-resume
			}
			return // the reply is lost with the connection
		}
		if _, err := client.Write(reply); err != nil {
			return
		}
	}
}

// readWireMessage reads one length-prefixed MongoDB wire message.
func readWireMessage(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(wirebin.LittleEndian.Uint32(hdr[:]))
	if n < 16 || n > 64<<20 {
		return nil, errors.New("bad message length")
	}
	msg := make([]byte, n)
	copy(msg, hdr[:])
	_, err := io.ReadFull(r, msg[4:])
	return msg, err
}

// TestRetryableWriteTxnLostReply loses the reply of each kind of retryable write once: the
// driver retries it with the same lsid and txnNumber, and the write is applied once and
// answered as the first execution was.
func TestRetryableWriteTxnLostReply(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	proxy := newReplyDropper(t, srv.addr)
	cl := srv.client(t, options.Client().ApplyURI(proxy.uri()))
	ctx := context.Background()
	c := cl.Database(dbName(t)).Collection("c")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}

	proxy.arm(nil, nil)
	up, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	if err != nil || up.MatchedCount != 1 || up.ModifiedCount != 1 {
		t.Fatalf("retried $inc: %+v, %v", up, err)
	}
	proxy.arm(nil, nil)
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatalf("retried insert: %v (a duplicate key means it was applied twice)", err)
	}
	proxy.arm(nil, nil)
	many, err := c.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "_id", Value: 4}}})
	if err != nil || len(many.InsertedIDs) != 2 {
		t.Fatalf("retried insertMany: %+v, %v", many, err)
	}
	proxy.arm(nil, nil)
	var before bson.M
	err = c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 10}}}}).Decode(&before)
	if err != nil || before["n"] != int32(1) {
		t.Fatalf("retried findAndModify: pre-image %v, %v; want n: 1", before, err)
	}
	proxy.arm(nil, nil)
	del, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: 4}})
	if err != nil || del.DeletedCount != 1 {
		t.Fatalf("retried delete: %+v, %v", del, err)
	}
	checkDocs(t, c, bson.D{{Key: "_id", Value: 1}}, 11, 3)
}

// TestRetryableWriteTxnRestart kills the server after it applied a write and before its
// reply arrived; the driver's retry reaches the restarted server, which answers from the
// records it wrote with the writes.
func TestRetryableWriteTxnRestart(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	proxy := newReplyDropper(t, srv.addr)
	cl := srv.client(t, options.Client().ApplyURI(proxy.uri()))
	ctx := context.Background()
	c := cl.Database(dbName(t)).Collection("c")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	restartDuring := func(write func() error) error {
		dropped, resume := make(chan struct{}), make(chan struct{})
		proxy.arm(dropped, resume)
		errc := make(chan error, 1)
		go func() { errc <- write() }()
		<-dropped
		srv.kill()
		srv.restart()
		proxy.setTarget(srv.addr)
		close(resume)
		return <-errc
	}
	err := restartDuring(func() error {
		up, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
		if err == nil && (up.MatchedCount != 1 || up.ModifiedCount != 1) {
			t.Errorf("retried $inc after a restart: %+v", up)
		}
		return err
	})
	if err != nil {
		t.Fatalf("retried $inc after a restart: %v", err)
	}
	err = restartDuring(func() error {
		_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}})
		return err
	})
	if err != nil {
		t.Fatalf("retried insert after a restart: %v (a duplicate key means it was applied twice)", err)
	}
	checkDocs(t, c, bson.D{{Key: "_id", Value: 1}}, 1, 2)
}

// checkDocs checks the n field of the document filter selects and the collection's count.
func checkDocs(t *testing.T, c *mongo.Collection, filter bson.D, n int32, count int64) {
	t.Helper()
	ctx := context.Background()
	var doc bson.M
	if err := c.FindOne(ctx, filter).Decode(&doc); err != nil || doc["n"] != n {
		t.Fatalf("document %v: %v, %v; want n: %d (applied once)", filter, doc, err, n)
	}
	if got, err := c.CountDocuments(ctx, bson.D{}); err != nil || got != count {
		t.Fatalf("count: %d, %v; want %d", got, err, count)
	}
}
