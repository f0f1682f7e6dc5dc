package ddl

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Clustered collections (create's clusteredIndex: {key: {_id: 1}, unique: true}). cleave
// stores the documents of an unsharded collection under their _id already, so a clustered
// collection is an ordinary one that reports itself as clustered: listCollections shows
// options.clusteredIndex, listIndexes shows the clustered index instead of _id_. Its _id
// index keeps entries (collInfo.idIndexed), so that the collection-level
// expireAfterSeconds can delete documents whose _id is an older date through the TTL
// monitor, and can be switched on, changed or off by collMod at any time.

// parseClusteredIndex validates create's clusteredIndex and returns it as MongoDB stores it,
// {v: 2, key, name, unique: true}; nil for clusteredIndex: false.
func parseClusteredIndex(v bsoncore.Value) (bsoncore.Document, error) {
	const cmd = "create.clusteredIndex"
	if b, ok := v.BooleanOK(); ok {
		if !b {
			return nil, nil
		}
		return nil, mongoerr.New(mongoerr.Location5979703, "The 'clusteredIndex' legacy format {clusteredIndex: <bool>} is only supported for specific internal collections.")
	}
	var key bsoncore.Document
	var name bsoncore.Value
	version := int64(2)
	unique, haveUnique := false, false
	elems, _ := v.Document().Elements()
	for _, el := range elems {
		k, val := el.Key(), el.Value()
		var err error
		switch k {
		case "key":
			key, err = args.Doc(cmd, k, val)
		case "name":
			_, err = args.String(cmd, k, val)
			name = val
		case "v":
			version, err = args.Int64(cmd, k, val)
		case "unique":
			unique, err = args.Bool(cmd, k, val)
			haveUnique = true
		default:
			err = mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", cmd, k)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case key == nil:
		return nil, args.Missing(cmd, "key")
	case !haveUnique:
		return nil, args.Missing(cmd, "unique")
	}
	if err := checkClusteredSpec(key, unique, version, v); err != nil {
		return nil, err
	}
	idx, d := bsoncore.AppendDocumentStart(nil)
	d = bsoncore.AppendInt32Element(d, "v", 2)
	d = bsoncore.AppendDocumentElement(d, "key", key)
	if name.Type == bsoncore.TypeString {
		d = bsoncore.AppendValueElement(d, "name", name)
	} else {
		d = bsoncore.AppendStringElement(d, "name", store.IDIndexName)
	}
	d = bsoncore.AppendBooleanElement(d, "unique", true)
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d, nil
}

// checkClusteredSpec is MongoDB's validateClusteredIndexSpec for a replicated collection.
func checkClusteredSpec(key bsoncore.Document, unique bool, version int64, spec bsoncore.Value) error {
	if !unique {
		return mongoerr.New(mongoerr.Location5979700, "The clusteredIndex option requires unique: true to be specified")
	}
	elems, _ := key.Elements()
	if len(elems) != 1 || elems[0].Key() != "_id" || bsonx.Compare(elems[0].Value(), bsonx.Int32Value(1)) != 0 {
		return mongoerr.New(mongoerr.InvalidIndexSpecificationOption, "The clusteredIndex option is only supported for key: {_id: 1}")
	}
	if version != 2 {
		return mongoerr.New(mongoerr.Location5979704, "Invalid clusteredIndex specification %s; cannot create a clusteredIndex with v=%d", bsonx.ShellString(spec), version)
	}
	return nil
}

// ClusteredListSpec is the clustered index as listIndexes reports it: the clusteredIndex
// option and clustered: true.
func ClusteredListSpec(spec bsoncore.Document) bsoncore.Document {
	idx, d := bsoncore.AppendDocumentStart(nil)
	elems, _ := spec.Elements()
	for _, el := range elems {
		d = append(d, el...)
	}
	d = bsoncore.AppendBooleanElement(d, "clustered", true)
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}
