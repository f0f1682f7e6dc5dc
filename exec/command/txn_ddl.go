package command

import (
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// DDL in a transaction. MongoDB (4.4+) lets a transaction create a collection, explicitly
// (create) or implicitly (an insert or upsert into a namespace that does not exist), and
// create indexes on a collection it created; an abort undoes them. cleave creates the
// collection at once, as a statement outside the transaction would, remembers it, and drops
// it again when the transaction aborts (with the indexes created on it since); a commit
// keeps it. Until the commit, other clients can see the new collection (empty: the
// transaction's documents stay in its buffer), which MongoDB hides.

// txnCreated is a collection a transaction created.
type txnCreated struct {
	db, name string
	id       store.CollID
}

// trackTxnDDL notes, around a statement of a transaction, whether it created the collection
// it names; call the returned function once the statement ran.
func (e *Server) trackTxnDDL(r *Request) func() {
	if r.Txn == nil || !r.Cmd.Has(TxnCreates) || e.Cat == nil {
		return func() {}
	}
	first, _ := r.Body.Elements()
	if len(first) == 0 {
		return func() {}
	}
	name, ok := first[0].Value().StringValueOK()
	if !ok || e.Storage.Catalog.State().Collection(r.DB, name) != nil {
		return func() {}
	}
	return func() {
		if c := e.Storage.Catalog.State().Collection(r.DB, name); c != nil {
			tx := r.Txn
			tx.mu.Lock()
			tx.created = append(tx.created, txnCreated{db: r.DB, name: name, id: c.ID})
			tx.mu.Unlock()
			reg := tx.reg
			reg.mu.Lock()
			if reg.pending == nil {
				reg.pending = map[string]*txnState{}
			}
			reg.pending[r.DB+"."+name] = tx
			reg.mu.Unlock()
		}
	}
}

// hidden reports whether collection db.name is one an open transaction other than r's
// created: it is not listed until that transaction commits.
func (reg *txnRegistry) Hidden(r *Request, db, name string) bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	tx := reg.pending[db+"."+name]
	return tx != nil && tx != r.Txn
}

// createdByTxn reports whether tx created collection db.name.
func (tx *txnState) createdByTxn(db, name string) bool {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	for _, c := range tx.created {
		if c.db == db && c.name == name {
			return true
		}
	}
	return false
}

// dropTxnCreated drops the collections an aborted transaction created, unless one was
// dropped and created again since.
func (e *Server) dropTxnCreated(created []txnCreated) {
	if len(created) == 0 || e.Cat == nil {
		return
	}
	unlock := e.Cat.LockDDL()
	defer unlock()
	for _, tc := range created {
		c := e.Storage.Catalog.State().Collection(tc.db, tc.name)
		if c == nil || c.ID != tc.id {
			continue
		}
		dropped, err := e.Storage.Catalog.DropCollection(tc.db, tc.name)
		if err != nil {
			e.Log.Error("cannot drop the collection of an aborted transaction", zap.String("ns", tc.db+"."+tc.name),
				zap.Error(catalog.StoreError(err)))
			continue
		}
		e.Cat.DeleteData(dropped)
		e.Log.Info("dropped the collection an aborted transaction created", zap.String("ns", tc.db+"."+tc.name))
	}
}
