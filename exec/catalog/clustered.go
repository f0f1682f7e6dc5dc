package catalog

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// ClusteredOf returns the clusteredIndex of a collection's stored options, nil when the
// collection is not clustered.
func ClusteredOf(opts bsoncore.Document) bsoncore.Document {
	if opts == nil {
		return nil
	}
	d, _ := opts.Lookup("clusteredIndex").DocumentOK()
	return d
}

// compileClustered makes ci, a clustered collection, keep _id index entries, with the
// collection's expireAfterSeconds as the _id index's TTL.
func (ci *Coll) compileClustered() {
	ci.Clustered = true
	ci.IDIndexed = true
	if len(ci.Indexes) > 0 && ci.Indexes[0].IsID {
		id := *ci.Indexes[0]
		id.TTL, id.HasTTL = ExpireAfterOf(ci.Meta.Options)
		ci.Indexes[0] = &id
	}
}

// ExpireAfterOf returns the collection-level expireAfterSeconds of stored options.
func ExpireAfterOf(opts bsoncore.Document) (int64, bool) {
	if opts == nil {
		return 0, false
	}
	v, err := opts.LookupErr("expireAfterSeconds")
	if err != nil {
		return 0, false
	}
	return bsonx.NumberAsInt64(v)
}
