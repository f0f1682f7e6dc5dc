package route

import (
	"context"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Transactions in cluster mode run on one node: the one serving the shards they write
// (transactions within a shard). A client names several nodes in its connection string, as
// it names several mongoses, so a transaction's statements often reach a node that does not
// serve its collection. Such a node routes the whole transaction: when its first statement
// (startTransaction) names a collection every partition of which is on one other node, that
// statement and every later one of the same transaction (its lsid and txnNumber: the getMores
// of its cursors, commitTransaction and abortTransaction, their retries) go to that node as
// the client sent them, which runs the transaction as its own, and its answers are the
// client's — as mongos pins a single-shard transaction to its shard. A transaction whose
// first collection is on this node's shards, or spread over several nodes, runs here, as
// before.

// TxnStatement is what ForwardTxn reads of a statement of a transaction.
type TxnStatement struct {
	LSID      bsoncore.Value // the session id, as sent
	TxnNumber int64
	Start     bool // startTransaction: true
	Name, DB  string
	Body      bsoncore.Document
	// Owner is the uid of the session's user on this node (session.Owner.UID): a
	// killSessions forwarded for the session names it.
	Owner [32]byte
}

// txnPin is the node (one of its shards) a session's transaction runs on.
type txnPin struct {
	txnNumber int64
	shard     int
	used      time.Time
	owner     [32]byte // the uid of the session's user on this node
}

// txnPins are the transactions this node forwards, by session.
type txnPins struct {
	mu    sync.Mutex
	m     map[string]*txnPin
	swept time.Time // when idle pins were last forgotten
}

// pinIdle is how long a pin outlives its last statement: a transaction's lifetime bound
// (transactionLifetimeLimitSeconds, 60 s) several times over, for commit retries.
const pinIdle = 10 * time.Minute

// txnCollCommands are the statements whose first field names the collection they read or
// write, which may start a forwarded transaction.
var txnCollCommands = map[string]bool{"find": true, "insert": true, "update": true, "delete": true,
	"findAndModify": true, "findandmodify": true, "aggregate": true, "count": true, "distinct": true}

// ForwardTxn runs st on the node its transaction is pinned to, pinning it first when st
// starts it on a collection that lives on one other node. forwarded is false when the
// transaction runs on this node; reply is the other node's {ok: 1} reply, err its error
// (labelled as mongos labels a transaction's errors when the node cannot be reached).
func (r *Router) ForwardTxn(ctx context.Context, st TxnStatement) (reply bsoncore.Document, forwarded bool, err error) {
	if r.nodes == nil || st.LSID.Type == 0 {
		return nil, false, nil
	}
	key := lsidKey(st.LSID)
	shard, ok := r.pins.lookup(key, st.TxnNumber, st.Start)
	if !ok {
		if !st.Start || !txnCollCommands[st.Name] {
			return nil, false, nil
		}
		if shard, ok = r.otherNodeOnly(st); !ok {
			return nil, false, nil
		}
		r.pins.pin(key, st.TxnNumber, shard, st.Owner)
	}
	reply, err = r.nodes.Command(ctx, shard, st.Body)
	return reply, true, txnUnreachable(err, st.Name)
}

// EndSessions ends the sessions ids on the nodes this node forwarded their transactions to,
// and forgets their pins: the other node aborts a transaction still open and drops the
// session, as mongos passes a client's endSessions on to its shards. It is best effort, as
// endSessions is: a node that cannot be reached forgets the session when it expires.
func (r *Router) EndSessions(ctx context.Context, ids [][16]byte) {
	if r.nodes == nil {
		return
	}
	for shard, ended := range r.pins.take(ids) {
		_, _ = r.nodes.Command(ctx, shard, sessionsCommand("endSessions", ended)) // it answers ok whatever becomes of it
	}
}

// KillSessions kills, on the nodes this node forwarded their transactions to, the sessions
// match selects (by id and the uid of their user here), and forgets their pins, as mongos
// passes killSessions, killAllSessions and killAllSessionsByPattern on to its shards: the
// other node aborts the transaction and closes its cursors. The other node ran the
// transaction for this node's internal connection, so a killSessions of the ids from that
// connection names its sessions there. The first error of a node that cannot be reached is
// returned, after every other node has been told.
func (r *Router) KillSessions(ctx context.Context, match func(id [16]byte, owner [32]byte) bool) error {
	if r.nodes == nil {
		return nil
	}
	var first error
	for shard, ids := range r.pins.takeMatching(match) {
		if _, err := r.nodes.Command(ctx, shard, sessionsCommand("killSessions", ids)); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sessionsCommand is {<name>: [{id}, ...], $db: "admin"}.
func sessionsCommand(name string, ids [][16]byte) bsoncore.Document {
	arr := bsoncore.NewArrayBuilder()
	for _, id := range ids {
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendBinary("id", 4, id[:]).Build())
	}
	return bsoncore.NewDocumentBuilder().AppendArray(name, arr.Build()).AppendString("$db", "admin").Build()
}

// lsidKey is the key of a session's pin: the id of its lsid ({id: UUID}), so that a statement
// and an endSessions naming the same session find the same pin; the lsid's bytes when it has
// no such id.
func lsidKey(lsid bsoncore.Value) string {
	if d, ok := lsid.DocumentOK(); ok {
		if _, id, ok := d.Lookup("id").BinaryOK(); ok && len(id) == 16 {
			return string(id)
		}
	}
	return string(lsid.Data)
}

// otherNodeOnly returns a shard of the one other node holding every partition of the
// collection st names; ok is false when there is no such collection or node.
func (r *Router) otherNodeOnly(st TxnStatement) (int, bool) {
	first, ok := bsonx.FirstElement(st.Body)
	if !ok {
		return 0, false
	}
	coll, ok := first.Value().StringValueOK()
	if !ok {
		return 0, false
	}
	ci, err := r.cat.Lookup(st.DB, coll)
	if err != nil || ci == nil || ci.View != nil || ci.Map.Len() == 0 {
		return 0, false
	}
	shards := r.cat.Shards()
	s0 := ci.Map.Partition(0).Shard
	node, remote := shards[s0].Node()
	if !remote {
		return 0, false
	}
	for i := 1; i < ci.Map.Len(); i++ {
		if n, rem := shards[ci.Map.Partition(i).Shard].Node(); !rem || n != node {
			return 0, false
		}
	}
	return s0, true
}

// txnUnreachable labels the error of a forwarded statement whose node cannot be reached (or
// has no leader at the moment) as mongos does: a commit's result is unknown, any other
// statement's transaction may be retried whole.
func txnUnreachable(err error, name string) error {
	me := mongoerr.As(err)
	if me == nil || me.Code != mongoerr.HostUnreachable && me.Code != mongoerr.StaleConfig {
		return err
	}
	if name == "commitTransaction" {
		return me.WithLabels("UnknownTransactionCommitResult")
	}
	return me.WithLabels("TransientTransactionError")
}

// lookup returns the shard the transaction txnNumber of session key is pinned to. A
// statement of a later transaction, or one starting a transaction, forgets the session's pin;
// a late one of an earlier transaction leaves it.
func (p *txnPins) lookup(key string, txnNumber int64, start bool) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pin := p.m[key]
	if pin == nil {
		return 0, false
	}
	switch {
	case txnNumber < pin.txnNumber: // a late statement of an earlier transaction
		return 0, false
	case txnNumber > pin.txnNumber || start:
		delete(p.m, key)
		return 0, false
	}
	pin.used = time.Now()
	return pin.shard, true
}

// take forgets the pins of sessions ids and returns them by the shard they were pinned to.
func (p *txnPins) take(ids [][16]byte) map[int][][16]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out map[int][][16]byte
	for _, id := range ids {
		pin := p.m[string(id[:])]
		if pin == nil {
			continue
		}
		if out == nil {
			out = map[int][][16]byte{}
		}
		out[pin.shard] = append(out[pin.shard], id)
		delete(p.m, string(id[:]))
	}
	return out
}

// takeMatching forgets the pins of the sessions match selects and returns their ids by the
// shard they were pinned to. Pins keyed by an lsid without a 16-byte id name no session a
// kill can select.
func (p *txnPins) takeMatching(match func(id [16]byte, owner [32]byte) bool) map[int][][16]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out map[int][][16]byte
	for key, pin := range p.m {
		if len(key) != 16 {
			continue
		}
		id := [16]byte([]byte(key))
		if !match(id, pin.owner) {
			continue
		}
		if out == nil {
			out = map[int][][16]byte{}
		}
		out[pin.shard] = append(out[pin.shard], id)
		delete(p.m, key)
	}
	return out
}

// pin pins the transaction txnNumber of session key to shard, and forgets the pins idle for
// longer than pinIdle (looking for them once a minute at most).
func (p *txnPins) pin(key string, txnNumber int64, shard int, owner [32]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.m == nil {
		p.m = map[string]*txnPin{}
	}
	if now.Sub(p.swept) > time.Minute {
		p.swept = now
		for k, v := range p.m {
			if now.Sub(v.used) > pinIdle {
				delete(p.m, k)
			}
		}
	}
	p.m[key] = &txnPin{txnNumber: txnNumber, shard: shard, used: now, owner: owner}
}
