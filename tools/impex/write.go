package impex

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cleavedb/cleave/tools/progress"
)

// batchDocs is how many documents go to the server in one write.
const batchDocs = 1000

// maxReports is how many refused documents an import reports one by one.
const maxReports = 20

// batch is one bulk write and the input line of each of its models.
type batch struct {
	models []mongo.WriteModel
	lines  []int
}

// writer batches an import's documents into bulk writes, sent by o.InsertionWorkers
// goroutines at once: unordered, or ordered and stopping at the first refusal with
// --stopOnError (and --maintainInsertionOrder, which also keeps one writer so that batches
// go in input order).
type writer struct {
	coll    *mongo.Collection
	o       ImportOptions
	bar     *progress.Bar
	cur     batch      // the batch being filled, by the one goroutine calling add
	batches chan batch // to the writers
	wg      sync.WaitGroup
	cancel  context.CancelFunc // stops the writers after a failure
	mu      struct {
		sync.Mutex
		reports int
		res     ImportResult
		err     error // the first failure that ends the import
	}
}

// newWriter starts the writers of o's import into coll; close ends them.
func newWriter(ctx context.Context, coll *mongo.Collection, o ImportOptions, bar *progress.Bar) *writer {
	ctx, cancel := context.WithCancel(ctx)
	w := &writer{coll: coll, o: o, bar: bar, batches: make(chan batch, o.InsertionWorkers), cancel: cancel}
	for range o.InsertionWorkers {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for b := range w.batches {
				if ctx.Err() == nil {
					w.write(ctx, b)
				}
			}
		}()
	}
	return w
}

// add queues one document as the write its mode makes of it; an error means the import
// stops (a write failed, or one was refused under --stopOnError).
func (w *writer) add(line int, d bson.Raw) error {
	if err := w.failed(); err != nil {
		return err
	}
	m, err := w.model(d)
	if err != nil {
		w.reject(line, err)
		return nil
	}
	w.bar.Add(1)
	w.cur.models = append(w.cur.models, m)
	w.cur.lines = append(w.cur.lines, line)
	if len(w.cur.models) >= batchDocs {
		w.batches <- w.cur
		w.cur = batch{}
	}
	return nil
}

// reject counts and reports a line that is no document.
func (w *writer) reject(line int, err error) {
	w.mu.Lock()
	w.mu.res.Failed++
	w.mu.Unlock()
	say(w.o.Log, "line %d: %v\n", line, err)
}

// close sends the last batch, waits for the writers and returns the counts and the failure
// that stopped the import, if any.
func (w *writer) close() (ImportResult, error) {
	if len(w.cur.models) > 0 && w.failed() == nil {
		w.batches <- w.cur
		w.cur = batch{}
	}
	close(w.batches)
	w.wg.Wait()
	w.cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.res, w.mu.err
}

// failed is the failure that stops the import, if any.
func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.err
}

// model is d's write: an insert, or with upsert and merge a replace or $set of the
// document matching the upsert fields (an insert when d has none of them).
func (w *writer) model(raw bson.Raw) (mongo.WriteModel, error) {
	if w.o.Mode == "insert" {
		return mongo.NewInsertOneModel().SetDocument(raw), nil
	}
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	filter := bson.D{}
	for _, f := range w.o.UpsertFields {
		if v, ok := lookupPath(raw, f); ok {
			filter = append(filter, bson.E{Key: f, Value: v})
		}
	}
	if len(filter) == 0 {
		return mongo.NewInsertOneModel().SetDocument(raw), nil
	}
	if w.o.Mode == "upsert" {
		return mongo.NewReplaceOneModel().SetFilter(filter).SetReplacement(d).SetUpsert(true), nil
	}
	set := bson.D{}
	for _, e := range d {
		if e.Key != "_id" {
			set = append(set, e)
		}
	}
	return mongo.NewUpdateOneModel().SetFilter(filter).SetUpdate(bson.D{{Key: "$set", Value: set}}).SetUpsert(true), nil
}

// write sends one batch: the server's refusals are counted and the first reported with
// their lines; unordered, the others are written; ordered (--stopOnError), the import stops.
func (w *writer) write(ctx context.Context, b batch) {
	_, err := w.coll.BulkWrite(ctx, b.models, options.BulkWrite().SetOrdered(w.o.StopOnError))
	var bwe mongo.BulkWriteException
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
		w.mu.res.Imported += int64(len(b.models))
	case errors.As(err, &bwe) && bwe.WriteConcernError == nil && len(bwe.WriteErrors) > 0:
		w.mu.res.Failed += int64(len(bwe.WriteErrors))
		for _, we := range bwe.WriteErrors {
			if w.mu.reports++; w.mu.reports <= maxReports {
				say(w.o.Log, "line %d: refused: %s\n", b.lines[we.Index], we.Message)
			}
		}
		if !w.o.StopOnError {
			w.mu.res.Imported += int64(len(b.models) - len(bwe.WriteErrors))
			return
		}
		first := bwe.WriteErrors[0]
		w.mu.res.Imported += int64(first.Index) // an ordered write stops at its first error
		if w.mu.err == nil {
			w.mu.err = fmt.Errorf("line %d: refused, and --stopOnError stops the import there", b.lines[first.Index])
		}
		w.cancel()
	default:
		if w.mu.err == nil && ctx.Err() == nil {
			w.mu.err = fmt.Errorf("write to %s.%s: %w", w.o.DB, w.o.Collection, err)
		}
		w.cancel()
	}
}
