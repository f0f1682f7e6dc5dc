package server

import (
	"context"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The awaitable hello of the drivers' streaming monitoring (the SDAM spec's "streaming
// protocol"), as a mongos answers it. Every hello reply carries the server's topologyVersion:
// a process id chosen at start and a counter. A hello that sends back the version it last
// saw, with maxAwaitTimeMS, waits until the topology changes or the time is up, then answers:
// the driver learns of a change at once and otherwise hears from the server every
// heartbeatFrequencyMS without polling. A router's topology changes only when it shuts
// down: Quiesce increments the counter and every hello, waiting or new, then answers
// ShutdownInProgress 91 with the new version, so that drivers stop routing here before
// the listener closes. Waiting hellos end as well when their client disconnects.
//
// An awaitable hello that allows exhaust (OP_MSG's exhaustAllowed) streams, as mongod's
// does: each reply sets moreToCome and the next one waits on the version it answered, until
// an error (quiesce, a disconnected client) ends the stream. The Node.js driver monitors
// this way and takes a lone reply for a broken stream: it cleared its connection pool at
// every heartbeat (wire.Request.Exhaust).

// topology is the router's topologyVersion and its quiesce state.
type topology struct {
	processID [12]byte
	mu        sync.Mutex
	counter   int64
	quiesce   chan struct{} // closed by Quiesce
}

// newTopology returns the topology of a process that just started.
func newTopology() *topology {
	return &topology{processID: bsonx.NewObjectID(), quiesce: make(chan struct{})}
}

// version returns the current topologyVersion and whether the router is quiescing.
func (t *topology) version() (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.quiesce:
		return t.counter, true
	default:
		return t.counter, false
	}
}

// appendVersion appends {processId, counter} as the element key.
func (t *topology) appendVersion(dst []byte, key string, counter int64) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendObjectIDElement(dst, "processId", t.processID)
	dst = bsoncore.AppendInt64Element(dst, "counter", counter)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// Quiesce marks the start of shutdown: hellos answer ShutdownInProgress from now on, and
// the waiting ones are woken to answer it. The server stops accepting afterwards.
func (h *Handlers) Quiesce() {
	t := h.topo
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.quiesce:
	default:
		t.counter++
		close(t.quiesce)
	}
}

// errQuiesce is the error every hello answers while the router shuts down.
func (t *topology) errQuiesce(counter int64) error {
	err := mongoerr.New(mongoerr.ShutdownInProgress, "Mongos is in quiesce mode and will shut down")
	info := bsoncore.AppendInt64Element(nil, "remainingQuiesceTimeMillis", 0)
	info = t.appendVersion(info, "topologyVersion", counter)
	err.Info = bsoncore.BuildDocument(nil, info)
	return err
}

// awaitArgs are hello's topologyVersion and maxAwaitTimeMS; await is false without them.
type awaitArgs struct {
	await     bool
	processID [12]byte
	counter   int64
	maxAwait  time.Duration
}

// parseAwait reads and checks the awaitable-hello arguments of a hello body.
func parseAwait(cmd string, body bsoncore.Document) (awaitArgs, error) {
	var a awaitArgs
	tv, hasTV := body.Lookup("topologyVersion"), false
	if tv.Type != 0 {
		hasTV = true
		d, ok := tv.DocumentOK()
		if !ok {
			return a, args.WrongType(cmd, "topologyVersion", tv.Type, "object")
		}
		pid, ok := d.Lookup("processId").ObjectIDOK()
		if !ok {
			return a, args.WrongType(cmd+".topologyVersion", "processId", d.Lookup("processId").Type, "objectId")
		}
		c, err := args.Int64(cmd+".topologyVersion", "counter", d.Lookup("counter"))
		if err != nil {
			return a, err
		}
		a.processID, a.counter = pid, c
	}
	mv, hasMax := body.Lookup("maxAwaitTimeMS"), false
	if mv.Type != 0 {
		hasMax = true
		ms, err := args.Int64(cmd, "maxAwaitTimeMS", mv)
		if err != nil {
			return a, err
		}
		if hasTV && ms < 0 {
			return a, mongoerr.New(51759, "maxAwaitTimeMS must be a non-negative integer")
		}
		a.maxAwait = time.Duration(ms) * time.Millisecond
	}
	switch {
	case hasTV && hasMax:
		if a.counter < 0 {
			return a, mongoerr.New(51758, "topologyVersion must have a non-negative counter")
		}
		a.await = true
	case hasTV:
		return a, mongoerr.New(51760, "A request with a 'topologyVersion' must include 'maxAwaitTimeMS'")
	case hasMax:
		return a, mongoerr.New(51760, "A request with 'maxAwaitTimeMS' must include a 'topologyVersion'")
	}
	return a, nil
}

// await waits as an awaitable hello with a, and returns the topologyVersion counter to
// answer with, or the error to answer.
func (t *topology) await(ctx context.Context, a awaitArgs) (int64, error) {
	counter, quiescing := t.version()
	if quiescing {
		return 0, t.errQuiesce(counter)
	}
	if !a.await || a.processID != t.processID || a.counter < counter {
		return counter, nil
	}
	if a.counter > counter {
		return 0, mongoerr.New(51761, "Received a topology version with counter: %d which is greater than the mongos topology version counter: %d",
			a.counter, counter)
	}
	timer := time.NewTimer(a.maxAwait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-t.quiesce:
	case <-ctx.Done():
		return 0, command.InterruptError(ctx, ctx.Err())
	}
	counter, quiescing = t.version()
	if quiescing {
		return 0, t.errQuiesce(counter)
	}
	return counter, nil
}
