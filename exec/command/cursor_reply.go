package command

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// parseCursorOption parses the cursor option of command cmd ({batchSize}, and the fields
// named in accepted, which are ignored) and returns its batch size, -1 if absent.
func ParseCursorOption(cmd string, v bsoncore.Value, accepted ...string) (int64, error) {
	d, err := args.Doc(cmd, "cursor", v)
	if err != nil {
		return -1, err
	}
	batchSize := int64(-1)
	elems, _ := d.Elements()
	for _, el := range elems {
		switch key := el.Key(); {
		case key == "batchSize":
			n, err := args.Int64(cmd, "cursor.batchSize", el.Value())
			if err != nil {
				return -1, err
			}
			if n < 0 {
				return -1, mongoerr.New(mongoerr.Location51024, "BSON field 'batchSize' value must be >= 0, actual value '%d'", n)
			}
			batchSize = n
		case slices.Contains(accepted, key):
		default:
			return -1, mongoerr.New(mongoerr.Location40415, "BSON field '%s.cursor.%s' is an unknown field.", cmd, key)
		}
	}
	return batchSize, nil
}

// listingCursor answers a listing command (listCollections, listIndexes) with a cursor over
// docs: the first batch holds batchSize of them (-1: all that fit), getMore the rest.
func (e *Server) ListingCursor(ctx context.Context, r *Request, ns string, docs []bsoncore.Document, batchSize int64) error {
	if batchSize < 0 {
		batchSize = math.MaxInt64
	}
	return e.firstBatch(ctx, r, &cursor{ns: ns, stream: &stream.Slice{Docs: docs}}, batchSize, false)
}

// splitNS splits "db.coll".
func SplitNS(ns string) (string, string) {
	db, coll, _ := strings.Cut(ns, ".")
	return db, coll
}
