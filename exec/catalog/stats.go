package catalog

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/store"
)

// Stats counts the catalog's collections and views by kind, as serverStatus' catalogStats
// section reports them (mongod's CatalogStatsSSS). A collection of admin, config or local,
// or one named system.*, is internal and counted only as such; a time-series collection is
// counted only as timeseries (MongoDB 8.2's viewless time-series collections: cleave has no
// system.buckets collection behind a view).
type Stats struct {
	Collections, Capped, Clustered, Timeseries, Views int32
	InternalCollections, InternalViews                int32
	CSFLE, QueryableEncryption                        int32
}

// Stats counts the collections and views of the catalog's current state.
func (c *Catalog) Stats() Stats {
	var st Stats
	state := c.store.State()
	for _, db := range state.Databases() {
		for _, m := range state.Collections(db.Name) {
			st.count(m)
		}
	}
	return st
}

// count adds collection (or view) m to st.
func (st *Stats) count(m *store.Collection) {
	internal := isInternalDB(m.DB) || strings.HasPrefix(m.Name, "system.")
	switch {
	case IsView(m) && internal:
		st.InternalViews++
	case IsView(m):
		st.Views++
	case internal:
		st.InternalCollections++
	case IsTimeseries(m):
		st.Timeseries++
	default:
		st.Collections++
		if IsCapped(m) {
			st.Capped++
		}
		if ClusteredOf(m.Options) != nil {
			st.Clustered++
		}
		if _, ok := m.Options.Lookup("encryptedFields").DocumentOK(); ok {
			st.QueryableEncryption++
		}
		if isCSFLEValidator(m.Options) {
			st.CSFLE++
		}
	}
}

// AppendTo appends st as the document key, in mongod's field order.
func (st Stats) AppendTo(dst []byte, key string) []byte {
	idx, out := bsoncore.AppendDocumentElementStart(dst, key)
	out = bsoncore.AppendInt32Element(out, "collections", st.Collections)
	out = bsoncore.AppendInt32Element(out, "capped", st.Capped)
	out = bsoncore.AppendInt32Element(out, "clustered", st.Clustered)
	out = bsoncore.AppendInt32Element(out, "timeseries", st.Timeseries)
	out = bsoncore.AppendInt32Element(out, "views", st.Views)
	out = bsoncore.AppendInt32Element(out, "internalCollections", st.InternalCollections)
	out = bsoncore.AppendInt32Element(out, "internalViews", st.InternalViews)
	out = bsoncore.AppendInt32Element(out, "csfle", st.CSFLE)
	out = bsoncore.AppendInt32Element(out, "queryableEncryption", st.QueryableEncryption)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// isInternalDB reports whether db is one of MongoDB's internal databases.
func isInternalDB(db string) bool { return db == "admin" || db == "config" || db == "local" }

// isCSFLEValidator reports whether the collection options' validator is a client-side
// field level encryption schema: a $jsonSchema that uses the encrypt or encryptMetadata
// keyword somewhere.
func isCSFLEValidator(opts bsoncore.Document) bool {
	if opts == nil {
		return false
	}
	schema, ok := opts.Lookup("validator", "$jsonSchema").DocumentOK()
	return ok && usesEncrypt(schema)
}

// usesEncrypt reports whether d or a document or array nested in it has an encrypt or
// encryptMetadata field.
func usesEncrypt(d bsoncore.Document) bool {
	elems, _ := d.Elements()
	for _, e := range elems {
		if k := e.Key(); k == "encrypt" || k == "encryptMetadata" {
			return true
		}
		v := e.Value()
		if v.Type == bsoncore.TypeEmbeddedDocument || v.Type == bsoncore.TypeArray {
			if usesEncrypt(v.Data) {
				return true
			}
		}
	}
	return false
}
