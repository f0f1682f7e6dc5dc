package command

// What a request runs with: its read engine and write path (its transaction's or the
// server's), its session's retryable-write state, the user its sessions belong to.

import (
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/session"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/exec/write"
	"go.uber.org/zap"
)

// QueryFor returns the query engine of r: its transaction's, or the executor's (passing
// the shards' read barriers for a linearizable read).
func (e *Server) QueryFor(r *Request) *query.Engine {
	if r.Txn != nil {
		return r.Txn.Write.Query()
	}
	if r.Snap != nil {
		return r.Snap.Engine
	}
	if r.Barrier != nil {
		return e.Query.WithBarrier(r.Barrier)
	}
	return e.Query
}

// WriteFor returns the write path of r: its transaction's, or the executor's.
func (e *Server) WriteFor(r *Request) *write.Path {
	if r.Txn != nil {
		return r.Txn.Write
	}
	return e.Write
}

// dropTxnCreated drops the collections an aborted transaction created, unless one was
// dropped and created again since.
func (e *Server) dropTxnCreated(created []txn.Created) {
	if len(created) == 0 || e.Cat == nil {
		return
	}
	unlock := e.Cat.LockDDL()
	defer unlock()
	for _, tc := range created {
		c := e.Storage.Catalog.State().Collection(tc.DB, tc.Name)
		if c == nil || c.ID != tc.ID {
			continue
		}
		dropped, err := e.Storage.Catalog.DropCollection(tc.DB, tc.Name)
		if err != nil {
			e.Log.Error("cannot drop the collection of an aborted transaction", zap.String("ns", tc.DB+"."+tc.Name),
				zap.Error(catalog.StoreError(err)))
			continue
		}
		e.Cat.DeleteData(dropped)
		e.Log.Info("dropped the collection an aborted transaction created", zap.String("ns", tc.DB+"."+tc.Name))
	}
}

// CheckoutRetryable returns the retryable-write state of r's session for r's txnNumber and
// a function that checks the session back in; rt is nil (and release a no-op) when r is not
// a retryable write.
func (e *Server) CheckoutRetryable(r *Request) (rt *write.Retry, release func(), err error) {
	if r.Txn != nil { // a transaction's statements are recorded by its commit
		return nil, func() {}, nil
	}
	return e.Sessions.CheckoutRetryable(r.Body, e.Write)
}

// CompactUpdates returns the compact updates this node sent to other nodes and served for
// them (route.ShardUpdate); none on a single node.
func (e *Server) CompactUpdates() route.UpdateCounts {
	if e.Remote == nil {
		return route.UpdateCounts{}
	}
	return e.Remote.CompactUpdates()
}

// SessionUser returns the user r runs as for its sessions: its connection's with
// authentication on, none otherwise.
func (e *Server) SessionUser(r *Request) session.Owner {
	if !e.Access.Enabled() || r.Conn == nil || len(r.Conn.Authn.Users) == 0 {
		return session.Owner{}
	}
	return session.Owner{User: r.Conn.Authn.Users[0], Set: true}
}

// Retried returns the recorded result of statement i of a retryable write (rt non-nil)
// when it was executed before. Multi statements are never recorded (write.Op.Retry).
func Retried(rt *write.Retry, i int, multi bool) (write.Result, bool) {
	if rt == nil || multi {
		return write.Result{}, false
	}
	rec, ok := rt.Executed(int32(i))
	if !ok {
		return write.Result{}, false
	}
	return rec.Result(), true
}
