package vecindex

import (
	"crypto/rand"
	"encoding/hex"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/vector"
	"github.com/cleavedb/cleave/store"
)

// Record is one search index of a collection as its catalog record keeps it
// (store.Collection.SearchIndexes): {id, name, type, definition}.
type Record struct {
	ID, Name, Type string
	Definition     bsoncore.Document
}

// TypeVectorSearch is the only search index type cleave builds.
const TypeVectorSearch = "vectorSearch"

// Records returns the search indexes of c, in creation order.
func Records(c *store.Collection) []Record {
	out := make([]Record, 0, len(c.SearchIndexes))
	for _, d := range c.SearchIndexes {
		r := Record{Definition: d.Lookup("definition").Document()}
		r.ID, _ = d.Lookup("id").StringValueOK()
		r.Name, _ = d.Lookup("name").StringValueOK()
		r.Type, _ = d.Lookup("type").StringValueOK()
		out = append(out, r)
	}
	return out
}

// Find returns the search index of c named name.
func Find(c *store.Collection, name string) (Record, bool) {
	for _, r := range Records(c) {
		if r.Name == name {
			return r, true
		}
	}
	return Record{}, false
}

// Encode returns r as a catalog record.
func (r Record) Encode() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendString("id", r.ID).AppendString("name", r.Name).
		AppendString("type", r.Type).AppendDocument("definition", r.Definition).Build()
}

// Def parses r's definition.
func (r Record) Def() (*vector.Def, error) { return vector.ParseDef(r.Definition) }

// NewID returns a new search index id: 24 hex digits, as an ObjectId prints.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
