package host

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Caller runs an internal command on the node listening at addr and returns its reply.
type Caller func(ctx context.Context, addr string, cmd bsoncore.Document) (bsoncore.Document, error)

// PoolCaller runs internal commands through pool; an {ok: 0} reply is its error.
func PoolCaller(pool *wire.Pool) Caller {
	return func(ctx context.Context, addr string, cmd bsoncore.Document) (bsoncore.Document, error) {
		reply, err := pool.Client(addr).Command(ctx, cmd)
		if err != nil {
			return nil, err
		}
		if ok, _ := bsonx.NumberAsFloat64(reply.Lookup("ok")); ok != 1 {
			return nil, mongoerr.FromReply(reply)
		}
		return reply, nil
	}
}

// RaftCommand is the internal command that carries raft messages to a node: {_cleaveRaft: 1,
// from: node, msgs: [binary]}, each message its group id (8 bytes, big-endian) followed by
// the marshalled raftpb.Message.
const RaftCommand = "_cleaveRaft"

// The messages to one node go through one queue and one goroutine, in order, batched: a
// request carries what queued while the previous one travelled.
const (
	peerQueue    = 4096
	maxBatchMsgs = 512
	maxBatchSize = 8 << 20
	sendTimeout  = 5 * time.Second
)

// transport is the groups' replica.Transport over internal commands.
type transport struct {
	h     *Host
	mu    sync.Mutex
	peers map[string]*peer
	// fault, set by tests (--test-commands), drops the messages for which it returns true.
	fault atomic.Pointer[func(from, to string) bool]
	wg    sync.WaitGroup
}

// peer is the queue of messages to one node.
type peer struct {
	node string
	ch   chan outMsg
}

// outMsg is one message on its way: its group, recipient and encoding.
type outMsg struct {
	group, to uint64
	data      []byte
}

func newTransport(h *Host) *transport { return &transport{h: h, peers: map[string]*peer{}} }

// Send implements replica.Transport.
func (t *transport) Send(group uint64, msgs []*raftpb.Message) {
	for _, m := range msgs {
		if m.GetType() == raftpb.MsgSnap {
			go t.h.sendSnapshot(group, m) // the state first, then the message (snapshot.go)
			continue
		}
		node := t.h.nodeOfReplica(m.GetTo())
		if node == "" {
			t.h.unreachable(group, m.GetTo())
			continue
		}
		b, err := proto.Marshal(m)
		if err != nil {
			t.h.log.Error("cannot encode a raft message", zap.Error(err))
			continue
		}
		data := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(b)), group)
		data = append(data, b...)
		select {
		case t.peer(node).ch <- outMsg{group: group, to: m.GetTo(), data: data}:
		default: // the node is far behind or away: raft sends again
			t.h.unreachable(group, m.GetTo())
		}
	}
}

// peer returns the queue of node, starting its goroutine.
func (t *transport) peer(node string) *peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peers[node]
	if p == nil {
		p = &peer{node: node, ch: make(chan outMsg, peerQueue)}
		t.peers[node] = p
		t.wg.Add(1)
		go func() { defer t.wg.Done(); t.run(p) }()
	}
	return p
}

// run sends p's messages until the host closes.
func (t *transport) run(p *peer) {
	var batch []outMsg
	for {
		select {
		case m := <-p.ch:
			batch = append(batch[:0], m)
		case <-t.h.ctx.Done():
			return
		}
		size := len(batch[0].data)
	drain:
		for len(batch) < maxBatchMsgs && size < maxBatchSize {
			select {
			case m := <-p.ch:
				batch = append(batch, m)
				size += len(m.data)
			default:
				break drain
			}
		}
		if err := t.send(p.node, batch); err != nil {
			t.h.log.Debug("cannot send raft messages", zap.String("node", p.node), zap.Int("msgs", len(batch)), zap.Error(err))
			for _, m := range batch {
				t.h.unreachable(m.group, m.to)
			}
		}
	}
}

// send delivers batch to node in one internal command.
func (t *transport) send(node string, batch []outMsg) error {
	from := t.h.opts.Node.Name()
	if f := t.fault.Load(); f != nil && (*f)(from, node) {
		return fmt.Errorf("dropped by the test fault from %s to %s", from, node)
	}
	addr := t.h.address(node)
	if addr == "" {
		return fmt.Errorf("node %s is not registered", node)
	}
	call := t.h.opts.Call
	if call == nil {
		return fmt.Errorf("no internal client yet")
	}
	doc := bsoncore.NewDocumentBuilder().AppendInt32(RaftCommand, 1).AppendString("from", from)
	arr := bsoncore.NewArrayBuilder()
	for _, m := range batch {
		arr.AppendBinary(0, m.data)
	}
	doc.AppendArray("msgs", arr.Build())
	if now := t.h.clusterTime.Load(); now != nil {
		ts := (*now)()
		doc.AppendDocument("$clusterTime", bsoncore.NewDocumentBuilder().
			AppendTimestamp("clusterTime", uint32(ts>>32), uint32(ts)).Build())
	}
	cmd := doc.AppendString("$db", "admin").Build()
	ctx, cancel := context.WithTimeout(t.h.ctx, sendTimeout)
	defer cancel()
	_, err := call(ctx, addr, cmd)
	return err
}

// close waits for the senders, which stop with the host's context.
func (t *transport) close() { t.wg.Wait() }

// unreachable tells group's replica that replica to could not be reached.
func (h *Host) unreachable(group, to uint64) {
	h.mu.Lock()
	r := h.hosted[int(group)]
	h.mu.Unlock()
	if r != nil && r.g != nil {
		r.g.ReportUnreachable(to)
	}
}

// address returns node's advertised address, "" while it is not registered.
func (h *Host) address(node string) string {
	for _, m := range h.opts.Node.Members() {
		if m.Name == node {
			return m.Advertise
		}
	}
	return ""
}

// Receive steps the raft messages node from sent (the _cleaveRaft command's handler).
// Messages for a group this node does not run (yet: its placement may lag) are dropped; the
// sender's raft sends them again.
func (h *Host) Receive(from string, msgs [][]byte) error {
	if f := h.net.fault.Load(); f != nil && (*f)(from, h.opts.Node.Name()) {
		return fmt.Errorf("dropped by the test fault from %s to %s", from, h.opts.Node.Name())
	}
	for _, b := range msgs {
		if len(b) < 8 {
			return fmt.Errorf("raft message of %d bytes", len(b))
		}
		group := binary.BigEndian.Uint64(b)
		m := new(raftpb.Message)
		if err := proto.Unmarshal(b[8:], m); err != nil {
			return fmt.Errorf("corrupt raft message for group %d: %w", group, err)
		}
		h.mu.Lock()
		r := h.hosted[int(group)]
		h.mu.Unlock()
		if r != nil && r.g != nil && r.id == m.GetTo() {
			r.g.Step(m)
		}
	}
	return nil
}

// SetFault makes the transport drop the messages between two nodes for which f returns true,
// in both directions as seen from this node (nil: none). Tests only (--test-commands).
func (h *Host) SetFault(f func(from, to string) bool) {
	if f == nil {
		h.net.fault.Store(nil)
		return
	}
	h.net.fault.Store(&f)
}
