package write

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Insert inserts one group of documents (base is the index of vals[0] in the request).
// It reports whether an ordered insert must stop after an error.
func (p *Path) Insert(ctx context.Context, ci *catalog.Coll, vals []bsoncore.Value, base int,
	ordered bool, wc Concern, res *Results) (bool, error) {
	writes := make([]DocWrite, len(vals))
	failed := make([]error, len(vals))
	var hashes []uint64
	wr := p.NewWriter(ci)
	for i, v := range vals {
		doc, ok := v.DocumentOK()
		if !ok {
			failed[i] = mongoerr.New(mongoerr.TypeMismatch, "BSON field 'insert.documents.%d' is the wrong type '%s', expected type 'object'", base+i, bsonx.TypeName(v.Type))
			continue
		}
		doc, err := PrepareInsert(doc)
		if err == nil {
			writes[i].Hash, err = ci.ShardHash(doc)
		}
		if err != nil {
			failed[i] = err
			continue
		}
		_, writes[i].ID = catalog.DocID(doc, nil)
		writes[i].New = doc
		hashes = wr.LockHashes(hashes, &writes[i])
	}
	if err := wr.LockCtx(ctx, hashes); err != nil {
		return true, err
	}
	defer wr.Release()
	stop := false
	for i := range writes {
		err := failed[i]
		if err == nil {
			err = wr.CheckIDFree(&writes[i])
		}
		if err == nil {
			err = wr.Stage(&writes[i])
		}
		if err != nil {
			if mongoerr.As(err) == nil {
				return true, err
			}
			res.Errs = append(res.Errs, mongoerr.WriteError{Index: base + i, Err: mongoerr.As(err)})
			if ordered {
				stop = true
				break
			}
			continue
		}
		res.N++
	}
	if err := wr.Commit(wc.Sync()); err != nil {
		return true, err
	}
	res.Charge += wr.Charge()
	return stop, nil
}
