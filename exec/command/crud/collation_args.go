package crud

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/collation"
)

// CollationFor resolves an operation's collation: the one it names (d; {locale: "simple"}
// is the simple collation even on a collection with a default), else the collection's
// default (none when ci is nil). A bad document is MongoDB's error, collection or not.
func CollationFor(d bsoncore.Document, ci *catalog.Coll) (bsonx.Collator, error) {
	if d != nil {
		c, err := collation.Parse(d)
		if err != nil {
			return nil, err
		}
		return c.Collator(), nil
	}
	if ci == nil {
		return nil, nil
	}
	return ci.Collation.Collator(), nil
}
