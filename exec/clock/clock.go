package clock

import (
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Clock is the server's hybrid logical clock, MongoDB's cluster time: a Timestamp
// (seconds since the epoch in the high 32 bits, a counter in the low 32) that never goes
// back, advances with every write (tick), follows the wall clock, and moves forward to the
// times clients gossip ($clusterTime). Replies carry it as
// $clusterTime and operationTime (causal consistency).
type Clock struct {
	t atomic.Uint64
	// lastWrite is the latest time Tick gave a write (LastWrite).
	lastWrite atomic.Uint64
}

// Now returns the latest cluster time.
func (c *Clock) Now() uint64 {
	if t := c.t.Load(); t != 0 {
		return t
	}
	return c.Tick()
}

// Tick advances the clock for a write and returns the write's time: the wall clock's
// second if it is ahead, else the next counter value.
func (c *Clock) Tick() uint64 {
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

// Advance moves the clock to t if t is ahead of it.
func (c *Clock) Advance(t uint64) {
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

// AppendClusterTime appends $clusterTime and operationTime to a reply.
func AppendClusterTime(dst []byte, t uint64) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, "$clusterTime")
	dst = bsoncore.AppendTimestampElement(dst, "clusterTime", uint32(t>>32), uint32(t))
	dst = bsoncore.AppendDocumentElement(dst, "signature", zeroSignature)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return bsoncore.AppendTimestampElement(dst, "operationTime", uint32(t>>32), uint32(t))
}

// Gossip advances the clock to the $clusterTime a client sent, and checks its
// readConcern.afterClusterTime: on one node every write up to the clock is visible, so a read
// after a time the clock has reached is satisfied at once; a time ahead of it (one no reply
// gave and no $clusterTime gossiped) answers InvalidOptions, as mongod does.
func (c *Clock) Gossip(clusterTime, readConcern bsoncore.Value) error {
	if t, i, ok := bsonx.SubField(clusterTime, "clusterTime").TimestampOK(); ok {
		c.Advance(uint64(t)<<32 | uint64(i))
	}
	v := bsonx.SubField(readConcern, "afterClusterTime")
	if v.Type == 0 {
		return nil
	}
	t, i, ok := v.TimestampOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch,
			"BSON field 'readConcern.afterClusterTime' is the wrong type '%s', expected type 'timestamp'", bsonx.TypeName(v.Type))
	}
	if want, cur := uint64(t)<<32|uint64(i), c.Now(); want > cur {
		return mongoerr.New(mongoerr.InvalidOptions, "readConcern afterClusterTime value must not be greater than the current clusterTime. "+
			"Requested clusterTime: { ts: Timestamp(%d, %d) }; current clusterTime: { ts: Timestamp(%d, %d) }", t, i, cur>>32, uint32(cur))
	}
	return nil
}

// LastWrite is the latest time Tick gave a write: snapshot reads use it to tell whether the
// present state is the state at an earlier time.
func (c *Clock) LastWrite() uint64 { return c.lastWrite.Load() }
