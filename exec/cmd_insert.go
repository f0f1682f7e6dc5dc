package exec

import (
	"github.com/cleavedb/cleave/exec/catalog"

	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// insertGroupDocs and insertGroupBytes bound a group of inserted documents that share one
// batch, one set of key locks and one synced commit.
const (
	insertGroupDocs  = 512
	insertGroupBytes = 4 << 20
)

// insert runs the insert command.
func (e *Executor) insert(ctx context.Context, r *request) error {
	const cmd = "insert"
	first, _ := bsonx.FirstElement(r.body)
	name, err := collectionArg(cmd, first.Value())
	if err != nil {
		return err
	}
	var docs bsoncore.Array
	ordered := true
	haveDocs := false
	err = forEachArg(cmd, r.body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "documents":
			haveDocs = true
			var ok bool
			if docs, ok = v.ArrayOK(); !ok {
				err = wrongType(cmd, key, v.Type, "array")
			}
		case "ordered":
			ordered, err = argBool(cmd, key, v)
		case "bypassDocumentValidation":
			_, err = argBool(cmd, key, v)
		case "let":
			_, err = argDoc(cmd, key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	if !haveDocs {
		return missingField(cmd, "documents")
	}
	vals, err := docs.Values()
	if err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "invalid documents array")
	}
	if len(vals) == 0 {
		return mongoerr.New(mongoerr.InvalidLength, "Write batch sizes must be between 1 and %d. Got 0 operations.", maxWriteBatchSize)
	}
	if len(vals) > maxWriteBatchSize {
		return mongoerr.New(mongoerr.InvalidLength, "Write batch sizes must be between 1 and %d. Got %d operations.", maxWriteBatchSize, len(vals))
	}
	wc := parseWriteConcern(r.body)
	ci, err := e.cat.ForWrite(r.db, name)
	if err != nil {
		return err
	}
	res := writeResult{}
	for start := 0; start < len(vals); {
		end, size := start, 0
		for end < len(vals) && end-start < insertGroupDocs && size < insertGroupBytes {
			size += len(vals[end].Data)
			end++
		}
		stop, err := e.insertGroup(ctx, ci, vals[start:end], start, ordered, wc, &res)
		if err != nil {
			return err
		}
		if stop {
			break
		}
		start = end
	}
	e.counters.insertedDocs.Add(res.n)
	r.charge += float64(res.n) * 5
	return res.appendReply(r, false)
}

// insertGroup inserts one group of documents (base is the index of vals[0] in the request).
// It reports whether an ordered insert must stop after an error.
func (e *Executor) insertGroup(ctx context.Context, ci *catalog.Coll, vals []bsoncore.Value, base int,
	ordered bool, wc writeConcern, res *writeResult) (bool, error) {
	writes := make([]docWrite, len(vals))
	failed := make([]error, len(vals))
	var hashes []uint64
	wr := e.newWriter(ci)
	for i, v := range vals {
		doc, ok := v.DocumentOK()
		if !ok {
			failed[i] = mongoerr.New(mongoerr.TypeMismatch, "BSON field 'insert.documents.%d' is the wrong type '%s', expected type 'object'", base+i, bsonx.TypeName(v.Type))
			continue
		}
		doc, err := prepareInsert(doc)
		if err == nil {
			writes[i].hash, err = ci.ShardHash(doc)
		}
		if err != nil {
			failed[i] = err
			continue
		}
		_, writes[i].id = catalog.DocID(doc, nil)
		writes[i].new = doc
		hashes = wr.lockHashes(hashes, &writes[i])
	}
	if err := ctx.Err(); err != nil {
		return true, err
	}
	wr.lock(hashes)
	defer wr.release()
	stop := false
	for i := range writes {
		err := failed[i]
		if err == nil {
			err = wr.checkIDFree(&writes[i])
		}
		if err == nil {
			err = wr.stage(&writes[i])
		}
		if err != nil {
			if mongoerr.As(err) == nil {
				return true, err
			}
			res.errs = append(res.errs, mongoerr.WriteError{Index: base + i, Err: mongoerr.As(err)})
			if ordered {
				stop = true
				break
			}
			continue
		}
		res.n++
	}
	if err := wr.commit(wc.sync()); err != nil {
		return true, err
	}
	return stop, nil
}
