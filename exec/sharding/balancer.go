package sharding

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
)

// The balancer's switch (balancerStop, balancerStart; mongosh's sh.stopBalancer() and
// sh.getBalancerState()). As on MongoDB it is the document {_id: "balancer", mode, stopped}
// of config.settings, a real collection: the commands write it, a user may write it too (as
// older shells stopped the balancer), and a restart keeps it. While it says off, the
// partition manager moves nothing on its own: no balancing of bytes or load, no draining, and
// a load split keeps its right child on its shard. Splits go on (a partition above its size
// or throughput must split), and moveChunk still moves, as on MongoDB. In cluster mode the
// balancer always runs: config.settings is not shared between the nodes yet, so the commands
// that would stop it answer NotImplemented.

const balancerID = "balancer"

// balancerKey is {_id: "balancer"}, the key of the balancer's document.
var balancerKey = bsoncore.NewDocumentBuilder().AppendString("_id", balancerID).Build()

// BalancerOn reports whether the balancer runs: config.settings has no balancer document,
// or one whose mode is not "off" and which is not stopped.
func (m *Manager) BalancerOn() bool {
	if m.mopts.Cluster != nil {
		return true
	}
	doc, err := m.balancerDoc()
	if err != nil || doc == nil {
		return true
	}
	if v, err := doc.LookupErr("mode"); err == nil {
		if s, ok := v.StringValueOK(); ok && s == "off" {
			return false
		}
	}
	if v, err := doc.LookupErr("stopped"); err == nil {
		if b, ok := v.BooleanOK(); ok && b {
			return false
		}
	}
	return true
}

// balancerDoc returns config.settings' balancer document, or nil.
func (m *Manager) balancerDoc() (bsoncore.Document, error) {
	ci, err := m.cat.Lookup("config", "settings")
	if err != nil || ci == nil {
		return nil, err
	}
	_, id := catalog.DocID(balancerKey, nil)
	hash, err := ci.ShardHash(balancerKey)
	if err != nil {
		return nil, err
	}
	doc, err := m.cat.Shards()[ci.Map.Partition(ci.Map.Locate(hash)).Shard].GetDoc(ci.Meta.ID, hash, id, nil)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return doc, catalog.StoreError(err)
}

// SetBalancer writes the balancer's switch into config.settings, synced. Turning it off
// then waits for the manager round in progress, so that no balancing move starts after it
// returns (MongoDB's balancerStop waits for its balancer round too); a move that round
// started runs to its end first.
func (m *Manager) SetBalancer(on bool) error {
	mode := "off"
	if on {
		mode = "full"
	}
	doc := bsoncore.NewDocumentBuilder().AppendString("_id", balancerID).AppendString("mode", mode).
		AppendBoolean("stopped", !on).Build()
	if err := m.putBalancerDoc(doc); err != nil {
		return err
	}
	if !on {
		m.round.Lock()
		m.round.Unlock() //nolint:staticcheck // an empty critical section: waits for the round in progress
	}
	return nil
}

// putBalancerDoc replaces (or inserts) config.settings' balancer document with doc.
func (m *Manager) putBalancerDoc(doc bsoncore.Document) error {
	ci, err := m.cat.ForWrite("config", "settings")
	if err != nil {
		return err
	}
	_, id := catalog.DocID(doc, nil)
	h, err := ci.ShardHash(doc)
	if err != nil {
		return err
	}
	w := write.DocWrite{Hash: h, ID: id, New: doc}
	wr := m.write.NewWriter(ci)
	wr.Lock(wr.LockHashes(nil, &w))
	defer wr.Release()
	if w.Old, err = m.balancerDoc(); err != nil { // under the key lock: no writer changes it meanwhile
		return err
	}
	if err := wr.Stage(&w); err != nil {
		return err
	}
	return wr.Commit(true)
}
