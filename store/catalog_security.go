package store

import (
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Security records are the users and roles of access control, kept as catalog records so
// that they share the catalog's guarantees (one synced batch per change, loaded at open,
// published in the same lock-free snapshot). The store does not interpret them: a record is
// a kind byte chosen by the caller, a database and a name, and an opaque BSON document.
//
//	'c' 'S' kind | db | 0x00 | name → document
//
// Database names never hold a NUL byte, so the first one ends the database.
const catalogSecurity byte = 'S'

// SecurityRecord is one user or role definition (the caller decides what Kind means).
type SecurityRecord struct {
	Kind     byte
	DB, Name string
	Doc      bsoncore.Document
}

// securityID identifies a record within a state.
type securityID struct {
	kind     byte
	db, name string
}

// securityKey returns the Pebble key of a record.
func securityKey(kind byte, db, name string) []byte {
	k := append([]byte{prefixCatalog, catalogSecurity, kind}, db...)
	k = append(k, 0)
	return append(k, name...)
}

// decodeSecurityKey splits a security record key; ok is false if it is malformed.
func decodeSecurityKey(k []byte) (id securityID, ok bool) {
	if len(k) < 4 || k[0] != prefixCatalog || k[1] != catalogSecurity {
		return id, false
	}
	db, name, found := strings.Cut(string(k[3:]), "\x00")
	if !found || db == "" {
		return id, false
	}
	return securityID{kind: k[2], db: db, name: name}, true
}

// SecurityRecords returns the records of kind, sorted by database then name; db "" means
// every database. The documents are shared: never modify them.
func (s *CatalogState) SecurityRecords(kind byte, db string) []SecurityRecord {
	var out []SecurityRecord
	for id, doc := range s.security {
		if id.kind == kind && (db == "" || id.db == db) {
			out = append(out, SecurityRecord{Kind: id.kind, DB: id.db, Name: id.name, Doc: doc})
		}
	}
	slices.SortFunc(out, func(a, b SecurityRecord) int {
		if c := strings.Compare(a.DB, b.DB); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// SecurityRecord returns one record's document, or nil.
func (s *CatalogState) SecurityRecord(kind byte, db, name string) bsoncore.Document {
	return s.security[securityID{kind, db, name}]
}

// UpdateSecurity writes puts and removes dels (only Kind, DB and Name of those matter) in one
// synced batch. fn, when not nil, runs first under the catalog mutex with the current state,
// and its error aborts the change: callers use it for conditions ("no user exists yet").
func (c *Catalog) UpdateSecurity(fn func(*CatalogState) error, puts, dels []SecurityRecord) error {
	for _, r := range puts {
		if r.DB == "" || strings.IndexByte(r.DB, 0) >= 0 || len(r.Doc) == 0 {
			return fmt.Errorf("%w: security record %q.%q", ErrInvalid, r.DB, r.Name)
		}
	}
	return c.mutate(func(m *mutation) error {
		if fn != nil {
			if err := fn(m.e.s); err != nil {
				return err
			}
		}
		m.e.cloneSecurity()
		for _, r := range dels {
			_ = m.b.Delete(securityKey(r.Kind, r.DB, r.Name), nil)
			delete(m.e.s.security, securityID{r.Kind, r.DB, r.Name})
		}
		for _, r := range puts {
			doc := cloneDoc(r.Doc)
			_ = m.b.Set(securityKey(r.Kind, r.DB, r.Name), doc, nil)
			m.e.s.security[securityID{r.Kind, r.DB, r.Name}] = doc
		}
		return nil
	})
}
