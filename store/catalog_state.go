package store

import (
	"maps"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// CatalogState is an immutable snapshot of the catalog. Readers get it from Catalog.State
// without locking and may keep it as long as they like; a mutation publishes a new one. The
// records it returns are shared: never modify them.
type CatalogState struct {
	dbs   map[string]*Database
	colls map[string]map[string]*Collection // database name → collection name → record
	byID  map[CollID]*Collection
	// security holds the users and roles (catalog_security.go); an edit copies it only
	// when it changes it.
	security map[securityID]bsoncore.Document
}

// emptyState returns a state with no databases.
func emptyState() *CatalogState {
	return &CatalogState{
		dbs:   map[string]*Database{},
		colls: map[string]map[string]*Collection{},
		byID:  map[CollID]*Collection{},

		security: map[securityID]bsoncore.Document{},
	}
}

// Database returns the database named name, or nil.
func (s *CatalogState) Database(name string) *Database { return s.dbs[name] }

// Databases returns all databases sorted by name.
func (s *CatalogState) Databases() []*Database {
	out := slices.Collect(maps.Values(s.dbs))
	slices.SortFunc(out, func(a, b *Database) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Collection returns collection db.name, or nil.
func (s *CatalogState) Collection(db, name string) *Collection { return s.colls[db][name] }

// Collections returns the collections of database db sorted by name.
func (s *CatalogState) Collections(db string) []*Collection {
	out := slices.Collect(maps.Values(s.colls[db]))
	slices.SortFunc(out, func(a, b *Collection) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// CollectionByID returns the collection with id, or nil.
func (s *CatalogState) CollectionByID(id CollID) *Collection { return s.byID[id] }

// Live reports whether id is a collection of the catalog (for OrphanCollections).
func (s *CatalogState) Live(id CollID) bool { return s.byID[id] != nil }

// edit is a copy-on-write change of a state: it copies the top-level maps once and the
// per-database map of each database it touches.
type edit struct {
	s       *CatalogState
	touched map[string]bool
	// securityCloned is set once security is a private copy.
	securityCloned bool
}

// cloneSecurity makes the edit's security map a private copy, once.
func (e *edit) cloneSecurity() {
	if !e.securityCloned {
		e.s.security = maps.Clone(e.s.security)
		e.securityCloned = true
	}
}

// newEdit starts an edit of a copy of s.
func newEdit(s *CatalogState) *edit {
	return &edit{
		s: &CatalogState{
			dbs:   maps.Clone(s.dbs),
			colls: maps.Clone(s.colls),
			byID:  maps.Clone(s.byID),

			security: s.security,
		},
		touched: map[string]bool{},
	}
}

// collMap returns the writable collection map of db, creating it if needed.
func (e *edit) collMap(db string) map[string]*Collection {
	if !e.touched[db] {
		m := maps.Clone(e.s.colls[db])
		if m == nil {
			m = map[string]*Collection{}
		}
		e.s.colls[db] = m
		e.touched[db] = true
	}
	return e.s.colls[db]
}

// putDatabase adds or replaces a database.
func (e *edit) putDatabase(d *Database) { e.s.dbs[d.Name] = d }

// removeDatabase removes a database and its collection map (its collections must be removed
// with removeCollection first, or byID keeps them).
func (e *edit) removeDatabase(name string) {
	delete(e.s.dbs, name)
	delete(e.s.colls, name)
}

// putCollection adds or replaces a collection.
func (e *edit) putCollection(c *Collection) {
	e.collMap(c.DB)[c.Name] = c
	e.s.byID[c.ID] = c
}

// removeCollection removes a collection.
func (e *edit) removeCollection(c *Collection) {
	delete(e.collMap(c.DB), c.Name)
	delete(e.s.byID, c.ID)
}
