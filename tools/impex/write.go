package impex

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cleavedb/cleave/tools/progress"
)

// batchDocs is how many documents go to the server in one write.
const batchDocs = 1000

// maxReports is how many refused documents an import reports one by one.
const maxReports = 20

// writer batches an import's documents into unordered bulk writes.
type writer struct {
	coll    *mongo.Collection
	o       ImportOptions
	models  []mongo.WriteModel
	lines   []int // the input line of each model
	bar     *progress.Bar
	reports int
	res     ImportResult
}

// add queues one document as the write its mode makes of it.
func (w *writer) add(ctx context.Context, line int, d bson.D) error {
	w.bar.Add(1)
	w.models = append(w.models, w.model(d))
	w.lines = append(w.lines, line)
	if len(w.models) < batchDocs {
		return nil
	}
	return w.flush(ctx)
}

// model is d's write: an insert, or with upsert and merge a replace or $set of the
// document matching the upsert fields (an insert when d has none of them).
func (w *writer) model(d bson.D) mongo.WriteModel {
	if w.o.Mode == "insert" {
		return mongo.NewInsertOneModel().SetDocument(d)
	}
	filter := bson.D{}
	raw, _ := bson.Marshal(d) // d came from a parser: it marshals
	for _, f := range w.o.UpsertFields {
		if v, ok := lookupPath(raw, f); ok {
			filter = append(filter, bson.E{Key: f, Value: v})
		}
	}
	if len(filter) == 0 {
		return mongo.NewInsertOneModel().SetDocument(d)
	}
	if w.o.Mode == "upsert" {
		return mongo.NewReplaceOneModel().SetFilter(filter).SetReplacement(d).SetUpsert(true)
	}
	set := bson.D{}
	for _, e := range d {
		if e.Key != "_id" {
			set = append(set, e)
		}
	}
	return mongo.NewUpdateOneModel().SetFilter(filter).SetUpdate(bson.D{{Key: "$set", Value: set}}).SetUpsert(true)
}

// flush writes the queued documents, unordered: the server's refusals are counted and the
// first reported with their lines, and the others are written.
func (w *writer) flush(ctx context.Context) error {
	if len(w.models) == 0 {
		return nil
	}
	models, lines := w.models, w.lines
	w.models, w.lines = nil, nil
	_, err := w.coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	var bwe mongo.BulkWriteException
	switch {
	case err == nil:
	case errors.As(err, &bwe) && bwe.WriteConcernError == nil:
		w.res.Failed += int64(len(bwe.WriteErrors))
		for _, we := range bwe.WriteErrors {
			if w.reports++; w.reports <= maxReports {
				say(w.o.Log, "line %d: refused: %s\n", lines[we.Index], we.Message)
			}
		}
		w.res.Imported -= int64(len(bwe.WriteErrors))
	default:
		return fmt.Errorf("write to %s.%s: %w", w.o.DB, w.o.Collection, err)
	}
	w.res.Imported += int64(len(models))
	return nil
}
