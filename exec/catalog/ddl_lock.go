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
