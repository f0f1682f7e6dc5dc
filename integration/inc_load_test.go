package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// incLoad is a workload of $inc updates by _id for the tests of writes during splits and
// moves: each of its workers increments its own documents (_id w*perWorker+j, n: 0 at the
// start) one after the other, over and over, and counts per document the increments
// acknowledged and those whose outcome the client could not learn (a retryable error: the
// update may or may not have been applied). With read set, a worker first reads the document
// it is about to increment, which must hold every increment acknowledged before.
type incLoad struct {
	coll               *mongo.Collection
	workers, perWorker int
	read               bool
	stopped            chan struct{}
	wg                 sync.WaitGroup
	errs               chan error
	mu                 sync.Mutex
	acked, unknown     [][]int32 // per worker, per document
	passes             []int     // full passes over the worker's documents
}

// startIncLoad inserts the documents into coll and starts the workers.
func startIncLoad(t *testing.T, coll *mongo.Collection, workers, perWorker int, read bool) *incLoad {
	t.Helper()
	docs := make([]any, workers*perWorker)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "n", Value: int32(0)}}
	}
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	l := &incLoad{coll: coll, workers: workers, perWorker: perWorker, read: read, stopped: make(chan struct{}),
		errs: make(chan error, workers), acked: make([][]int32, workers), unknown: make([][]int32, workers),
		passes: make([]int, workers)}
	for w := range workers {
		l.acked[w], l.unknown[w] = make([]int32, perWorker), make([]int32, perWorker)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			if err := l.work(w); err != nil {
				l.errs <- err
			}
		}()
	}
	return l
}

// work is worker w's loop, until stop or its first error.
func (l *incLoad) work(w int) error {
	ctx := context.Background()
	for k := 0; ; k++ {
		select {
		case <-l.stopped:
			return nil
		default:
		}
		j := k % l.perWorker
		id := int32(w*l.perWorker + j)
		if l.read {
			var got struct{ N int32 }
			err := l.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&got)
			l.mu.Lock()
			acked := l.acked[w][j]
			l.mu.Unlock()
			switch {
			case err != nil && !retryableCode(err):
				return fmt.Errorf("findOne %d: %w", id, err)
			case err == nil && got.N < acked:
				return fmt.Errorf("findOne %d: n = %d, but %d increments were acknowledged", id, got.N, acked)
			}
		}
		res, err := l.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int32(1)}}}})
		l.mu.Lock()
		switch {
		case err == nil && res.MatchedCount == 1 && res.ModifiedCount == 1:
			l.acked[w][j]++
		case err == nil:
			l.mu.Unlock()
			return fmt.Errorf("update %d: %+v", id, res)
		case retryableCode(err):
			l.unknown[w][j]++
		default:
			l.mu.Unlock()
			return fmt.Errorf("update %d: %w", id, err)
		}
		if j == l.perWorker-1 {
			l.passes[w]++
		}
		l.mu.Unlock()
	}
}

// waitPasses waits until every worker has made a full pass over its documents (or one
// failed): on a quiet machine the splits and moves of a test may end before that.
func (l *incLoad) waitPasses(t *testing.T) {
	t.Helper()
	waitFor(t, 60*time.Second, "a pass of every worker", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, p := range l.passes {
			if p == 0 {
				return len(l.errs) > 0
			}
		}
		return true
	})
}

// stop stops the workers, fails the test with their errors, and checks every document
// through each client: it holds at least the increments acknowledged and at most those plus
// the unknown ones, and every document is there exactly once. It returns the increments
// acknowledged and unknown.
func (l *incLoad) stop(t *testing.T, clients []*mongo.Client, db string) (total, lost int32) {
	t.Helper()
	close(l.stopped)
	l.wg.Wait()
	close(l.errs)
	for err := range l.errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	ctx := context.Background()
	ids := make([]int32, 0, l.workers*l.perWorker)
	for w := range l.workers {
		for j := range l.perWorker {
			id := int32(w*l.perWorker + j)
			ids = append(ids, id)
			total += l.acked[w][j]
			lost += l.unknown[w][j]
			for i, c := range clients {
				var got struct{ N int32 }
				if err := c.Database(db).Collection(l.coll.Name()).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&got); err != nil {
					t.Fatalf("node %d: findOne %d: %v", i, id, err)
				}
				if got.N < l.acked[w][j] || got.N > l.acked[w][j]+l.unknown[w][j] {
					t.Fatalf("node %d: _id %d has n = %d; %d increments acknowledged, %d unknown", i, id, got.N, l.acked[w][j], l.unknown[w][j])
				}
			}
		}
	}
	if total == 0 {
		t.Fatal("no update was acknowledged during the splits and moves")
	}
	checkExactlyOnce(t, clients, db, l.coll.Name(), ids)
	return total, lost
}
