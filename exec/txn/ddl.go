package txn

import (
	"github.com/cleavedb/cleave/store"
)

// DDL in a transaction. MongoDB (4.4+) lets a transaction create a collection, explicitly
// (create) or implicitly (an insert or upsert into a namespace that does not exist), and
// create indexes on a collection it created; an abort undoes them. cleave creates the
// collection at once, as a statement outside the transaction would, remembers it, and drops
// it again when the transaction aborts (with the indexes created on it since); a commit
// keeps it. Until the commit, other clients can see the new collection (empty: the
// transaction's documents stay in its buffer), which MongoDB hides.

// Created is a collection a transaction created.
type Created struct {
	DB, Name string
	ID       store.CollID
}

// Hidden reports whether collection db.name is one an open transaction other than self
// (nil: none) created: it is not listed until that transaction commits.
func (reg *Registry) Hidden(self *Txn, db, name string) bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	tx := reg.pending[db+"."+name]
	return tx != nil && tx != self
}

// NoteCreated records that tx created collection db.name (id): an abort drops it, and
// others do not list it until tx commits.
func (tx *Txn) NoteCreated(db, name string, id store.CollID) {
	tx.mu.Lock()
	tx.created = append(tx.created, Created{DB: db, Name: name, ID: id})
	tx.mu.Unlock()
	reg := tx.reg
	reg.mu.Lock()
	if reg.pending == nil {
		reg.pending = map[string]*Txn{}
	}
	reg.pending[db+"."+name] = tx
	reg.mu.Unlock()
}

// Created reports whether tx created collection db.name.
func (tx *Txn) Created(db, name string) bool {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	for _, c := range tx.created {
		if c.DB == db && c.Name == name {
			return true
		}
	}
	return false
}
