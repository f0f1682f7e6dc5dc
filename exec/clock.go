package exec

import (
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// clusterClock is the server's hybrid logical clock, MongoDB's cluster time: a Timestamp
// (seconds since the epoch in the high 32 bits, a counter in the low 32) that never goes
// back, advances with every write (tick), follows the wall clock, and moves forward to the
// times clients gossip ($clusterTime). Replies carry it as
// $clusterTime and operationTime (causal consistency).
type clusterClock struct {
	t atomic.Uint64
	// lastWrite is the latest time tick gave a write (snapshot reads use it to tell whether
	// the present state is the state at an earlier time).
	lastWrite atomic.Uint64
}

// now returns the latest cluster time.
func (c *clusterClock) now() uint64 {
	if t := c.t.Load(); t != 0 {
		return t
	}
	return c.tick()
}

// tick advances the clock for a write and returns the write's time: the wall clock's
// second if it is ahead, else the next counter value.
func (c *clusterClock) tick() uint64 {
	wall := uint64(time.Now().Unix()) << 32
	for {
		old := c.t.Load()
		next := max(old+1, wall)
		if c.t.CompareAndSwap(old, next) {
			for {
				lw := c.lastWrite.Load()
				if next <= lw || c.lastWrite.CompareAndSwap(lw, next) {
					return next
				}
			}
		}
	}
}

// advance moves the clock to t if t is ahead of it.
func (c *clusterClock) advance(t uint64) {
	for {
		old := c.t.Load()
		if t <= old || c.t.CompareAndSwap(old, t) {
			return
		}
	}
}

// zeroSignature is the signature of the cluster times we send: cleave does not sign them
// (no keys), as a mongod without authentication sends a zero hash and keyId.
var zeroSignature = bsoncore.NewDocumentBuilder().
	AppendBinary("hash", 0, make([]byte, 20)).
	AppendInt64("keyId", 0).
	Build()

// appendClusterTime appends $clusterTime and operationTime to a reply.
func appendClusterTime(dst []byte, t uint64) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, "$clusterTime")
	dst = bsoncore.AppendTimestampElement(dst, "clusterTime", uint32(t>>32), uint32(t))
	dst = bsoncore.AppendDocumentElement(dst, "signature", zeroSignature)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return bsoncore.AppendTimestampElement(dst, "operationTime", uint32(t>>32), uint32(t))
}

// gossip advances the clock to the $clusterTime a client sent, and checks its
// readConcern.afterClusterTime: on one node every write up to the clock is visible, so a read
// after a time the clock has reached is satisfied at once; a time ahead of it (one no reply
// gave and no $clusterTime gossiped) answers InvalidOptions, as mongod does.
func (c *clusterClock) gossip(clusterTime, readConcern bsoncore.Value) error {
	if t, i, ok := subField(clusterTime, "clusterTime").TimestampOK(); ok {
		c.advance(uint64(t)<<32 | uint64(i))
	}
	v := subField(readConcern, "afterClusterTime")
	if v.Type == 0 {
		return nil
	}
	t, i, ok := v.TimestampOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch,
			"BSON field 'readConcern.afterClusterTime' is the wrong type '%s', expected type 'timestamp'", bsonx.TypeName(v.Type))
	}
	if want, cur := uint64(t)<<32|uint64(i), c.now(); want > cur {
		return mongoerr.New(mongoerr.InvalidOptions, "readConcern afterClusterTime value must not be greater than the current clusterTime. "+
			"Requested clusterTime: { ts: Timestamp(%d, %d) }; current clusterTime: { ts: Timestamp(%d, %d) }", t, i, cur>>32, uint32(cur))
	}
	return nil
}
