package catalog

import (
	"errors"

	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// AllStripes holds one hash per key-lock stripe: locking them all waits for every
// writer that holds key locks and keeps new ones out (see Catalog.Barrier).
var AllStripes = stripeHashes()

// stripeHashes returns hashes that cover every stripe of store.KeyLocks. store maps a hash
// h to the top 12 bits of h*φ (Fibonacci hashing, φ odd), so s<<52 * φ⁻¹ lands on stripe s.
func stripeHashes() []uint64 {
	const phi = 0x9E3779B97F4A7C15
	inv := uint64(phi) // Newton's iteration for the inverse of an odd number mod 2^64
	for i := 0; i < 6; i++ {
		inv *= 2 - phi*inv
	}
	hs := make([]uint64, 4096)
	for s := range hs {
		hs[s] = (uint64(s) << 52) * inv
	}
	return hs
}

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
