package command

import (
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/exec/write"
	"go.uber.org/zap"
)

// QueryFor returns the query engine of r: its transaction's, or the executor's.
func (e *Server) QueryFor(r *Request) *query.Engine {
	if r.Txn != nil {
		return r.Txn.Write.Query()
	}
	if r.Snap != nil {
		return r.Snap.Engine
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
