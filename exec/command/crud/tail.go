package crud

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/cursor"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Tailable cursors. find with tailable: true on a capped collection (catalog.Capped) opens a
// cursor that stays open at the end of the data: each getMore returns what was inserted
// since (query.Tail). With awaitData, a getMore that finds nothing waits for an insert, up
// to its maxTimeMS (the drivers' maxAwaitTimeMS; 1 s by default), and returns as soon as one
// arrives: writers close the collection's wake channel (catalog.CappedState) once their
// inserts are visible, so nothing polls. As in MongoDB, a tailable find on an empty
// collection returns a closed cursor, the find's maxTimeMS bounds the find only, and a
// cursor whose position the cap evicted fails with CappedPositionLost.

// defaultAwaitData is how long a getMore of an awaitData cursor waits without maxTimeMS.
const defaultAwaitData = time.Second

// checkTailable applies MongoDB's rules to tailable and awaitData (tailableModeFromBools,
// query_request_helper::validateFindCommandRequest).
func checkTailable(a *findArgs) error {
	if a.awaitData && !a.tailable {
		return mongoerr.New(mongoerr.FailedToParse, "Cannot set 'awaitData' without also setting 'tailable'")
	}
	if !a.tailable {
		return nil
	}
	if len(a.sort) > 5 && !isNaturalAscending(a.sort) {
		return mongoerr.New(mongoerr.BadValue, "cannot use tailable option with a sort other than {$natural: 1}")
	}
	if a.singleBatch {
		return mongoerr.New(mongoerr.BadValue, "cannot use tailable option with the 'singleBatch' option")
	}
	return nil
}

// isNaturalAscending reports whether sort is {$natural: 1}.
func isNaturalAscending(sort bsoncore.Document) bool {
	elems, _ := sort.Elements()
	if len(elems) != 1 || elems[0].Key() != "$natural" {
		return false
	}
	n, ok := bsonx.NumberAsFloat64(elems[0].Value())
	return ok && n == 1
}

// findTailable answers a find with tailable: true on collection ci (which exists).
func (h *Handlers) findTailable(ctx context.Context, r *command.Request, a *findArgs, ci *catalog.Coll, q *query.Query) error {
	ns := ci.NS()
	if r.Txn != nil {
		return mongoerr.New(mongoerr.InvalidOptions, "It is illegal to open a tailable cursor in a transaction")
	}
	if ci.Capped == nil {
		filter := "$and"
		if len(a.filter) > 5 {
			filter = bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: a.filter})
		}
		return mongoerr.New(mongoerr.BadValue, "error processing query: ns=%sTree: %s\nSort: {}\nProj: {}\n tailable cursor requested on non capped collection", ns, filter)
	}
	tail := h.QueryFor(r).OpenTail(ci, q.Filter)
	var s stream.Stream = tail
	if q.Skip > 0 {
		s = &stream.Skip{In: s, N: q.Skip}
	}
	if q.Proj != nil {
		ps := &stream.Project{In: s, P: q.Proj}
		ps.Pos = func(doc bsoncore.Document) int {
			_, pos := q.Filter.MatchPos(doc)
			return pos
		}
		s = ps
	}
	c := &cursor.Cursor{Ns: ns, Stream: s, Limit: a.limit, NoTimeout: a.noCursorTimeout, Coll: ci.Meta,
		Tailable: true, AwaitData: a.awaitData, Waiter: h.Cat.CappedState(ci.Meta.ID), Tail: tail}
	n := a.batchSize
	if n < 0 {
		n = defaultFirstBatch
	}
	// MongoDB keeps a tailable cursor unless the collection is empty (shouldSaveCursor).
	docs, _ := h.Storage.Shards[ci.Map.Partition(0).Shard].CollStats(ci.Meta.ID)
	fctx, cancel := h.Deadline(ctx, a.maxTimeMS)
	defer cancel()
	err := h.FirstBatch(fctx, r, c, n, docs == 0)
	r.Charge += tail.Stats.Charge()
	return query.TimeLimitError(fctx, err)
}
