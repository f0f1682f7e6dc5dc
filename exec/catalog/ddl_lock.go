package catalog

import (
	"errors"

	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// ChangeError maps a catalog sentinel of a change to db.name to MongoDB's error.
func ChangeError(err error, db, name string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrExists):
		return mongoerr.Wrap(err, mongoerr.NamespaceExists, "Collection %s.%s already exists.", db, name)
	case errors.Is(err, store.ErrNotFound):
		return mongoerr.Wrap(err, mongoerr.NamespaceNotFound, "ns not found %s.%s", db, name)
	}
	return StoreError(err)
}

// CollChangedError is the error of a write whose collection ci was dropped, renamed, or
// replaced by a rename's dropTarget between its lookup and its key locks: StaleConfig, as a
// MongoDB shard answers a router whose routing information predates a drop, so that the
// router looks the name up again and routes the write there (a dropped or renamed
// collection's name is created anew, a rename's target is the renamed collection).
func CollChangedError(ci *Coll) error {
	return mongoerr.New(mongoerr.StaleConfig, "collection %s was dropped, renamed or replaced while the write was routed", ci.NS())
}
