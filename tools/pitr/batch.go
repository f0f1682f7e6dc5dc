package pitr

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// maxBatch is how many writes a batch holds at most.
const maxBatch = 1000

// batch gathers the document writes of consecutive events on one collection into one
// ordered bulk write: a replay applies them in the log's order either way, and one round
// trip (and one commit) for a thousand writes instead of each.
type batch struct {
	target *mongo.Client
	coll   *mongo.Collection
	ns     string
	models []mongo.WriteModel
	events []*event // the event of each model, for errors
	// The counts the bulk write must report: every write changes exactly one document.
	inserted, matched, deleted int64
}

// apply makes ev's change on the target: a document write joins the batch (sent first if
// it holds another collection's writes, or is full), a DDL event is run once the batch is
// sent.
func (b *batch) apply(ctx context.Context, ev *event) error {
	ns := ev.NS.DB + "." + ev.NS.Coll
	if b.ns != ns || len(b.models) >= maxBatch {
		if err := b.flush(ctx); err != nil {
			return err
		}
	}
	b.ns = ns
	b.coll = b.target.Database(ev.NS.DB).Collection(ev.NS.Coll)
	switch ev.Op {
	case "insert":
		b.add(ev, mongo.NewInsertOneModel().SetDocument(ev.FullDocument))
		b.inserted++
	case "replace":
		b.add(ev, mongo.NewReplaceOneModel().SetFilter(ev.DocumentKey).SetReplacement(ev.FullDocument))
		b.matched++
	case "delete":
		b.add(ev, mongo.NewDeleteOneModel().SetFilter(ev.DocumentKey))
		b.deleted++
	case "update":
		models, err := updateModels(ev)
		if err != nil {
			return b.failed(ev, err)
		}
		if len(models) == 0 {
			return b.present(ctx, ev) // an update that changed nothing is recorded too
		}
		for _, m := range models {
			b.add(ev, m)
			b.matched++
		}
	default:
		if err := b.flush(ctx); err != nil {
			return err
		}
		b.ns = ""
		if err := applyDDL(ctx, b.target, b.target.Database(ev.NS.DB), ev); err != nil {
			return b.failed(ev, err)
		}
	}
	return nil
}

// add queues model, the write of ev.
func (b *batch) add(ev *event, m mongo.WriteModel) {
	b.models = append(b.models, m)
	b.events = append(b.events, ev)
}

// present checks that the document of an update that changed nothing is there.
func (b *batch) present(ctx context.Context, ev *event) error {
	if err := b.flush(ctx); err != nil {
		return err
	}
	n, err := b.coll.CountDocuments(ctx, ev.DocumentKey)
	if err == nil && n != 1 {
		err = errNotApplied
	}
	if err != nil {
		return b.failed(ev, err)
	}
	return nil
}

// flush sends the queued writes as one ordered bulk write and checks that each changed its
// document.
func (b *batch) flush(ctx context.Context) error {
	if len(b.models) == 0 {
		return nil
	}
	models, events := b.models, b.events
	want := [3]int64{b.inserted, b.matched, b.deleted}
	b.models, b.events = b.models[:0:0], b.events[:0:0]
	b.inserted, b.matched, b.deleted = 0, 0, 0
	r, err := b.coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(true))
	var bwe mongo.BulkWriteException
	switch {
	case errors.As(err, &bwe) && len(bwe.WriteErrors) > 0:
		return b.failed(events[bwe.WriteErrors[0].Index], bwe.WriteErrors[0])
	case err != nil:
		return b.failed(events[0], err)
	}
	if got := [3]int64{r.InsertedCount, r.MatchedCount, r.DeletedCount}; got != want {
		return fmt.Errorf("replaying %d writes on %s from %s: %d inserted, %d matched, %d deleted, want %d, %d, %d: %w",
			len(models), b.ns, FormatTS(clusterTime(events[0].ClusterTime)), got[0], got[1], got[2], want[0], want[1], want[2], errNotApplied)
	}
	return nil
}

// failed is the error of replaying ev.
func (b *batch) failed(ev *event, err error) error {
	return fmt.Errorf("replaying the %s of %s at %s: %w", ev.Op, ev.NS.DB+"."+ev.NS.Coll, FormatTS(clusterTime(ev.ClusterTime)), err)
}
