package catalog

import (
	"strconv"

	"github.com/cleavedb/cleave/store"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// IndexSpecDoc is an index as listIndexes reports it: {v: 2, key, name, ...options}.
func IndexSpecDoc(x *store.Index) bsoncore.Document {
	idx, d := bsoncore.AppendDocumentStart(nil)
	d = bsoncore.AppendInt32Element(d, "v", 2)
	d = bsoncore.AppendDocumentElement(d, "key", x.Key)
	d = bsoncore.AppendStringElement(d, "name", x.Name)
	if x.Spec != nil {
		elems, _ := x.Spec.Elements()
		for _, el := range elems {
			d = append(d, el...)
		}
	}
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}

// ShardName is the name of shard i, as listShards, config.chunks and explain report it
// ("shard-0", ...).
func ShardName(i int) string { return "shard-" + strconv.Itoa(i) }
