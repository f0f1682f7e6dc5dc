package exec

import (
	"github.com/cleavedb/cleave/exec/args"

	"github.com/cleavedb/cleave/exec/write"

	"github.com/cleavedb/cleave/exec/catalog"

	"context"
	"errors"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/store"
)

// ttlBatchDocs is how many expired documents the TTL monitor deletes per write batch.
const ttlBatchDocs = 256

// startTTLMonitor starts the background goroutine that deletes expired documents of TTL
// indexes, as MongoDB's TTLMonitor does; Close stops it.
func (e *Executor) startTTLMonitor() {
	e.ddl.ttlInterval.Store(int64(defaultTTLInterval))
	e.ddl.ttlWake = make(chan struct{}, 1)
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		for {
			t := time.NewTimer(time.Duration(e.ddl.ttlInterval.Load()))
			select {
			case <-e.stop:
				t.Stop()
				return
			case <-t.C:
			case <-e.ddl.ttlWake:
				t.Stop()
			}
			e.ttlPass()
		}
	}()
}

// ttlPass deletes the expired documents of every TTL index once.
func (e *Executor) ttlPass() {
	e.ddl.ttlStarted.Add(1)
	defer e.ddl.ttlPasses.Add(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-e.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	state := e.st.Catalog.State()
	for _, db := range state.Databases() {
		for _, c := range state.Collections(db.Name) {
			ci, err := e.cat.Info(c)
			if err != nil {
				continue
			}
			for _, xi := range ci.Indexes {
				if !xi.HasTTL || len(xi.Fields) != 1 || xi.Hashed {
					continue // MongoDB's TTL applies to single-field indexes only
				}
				n, err := e.expireIndex(ctx, ci, xi)
				if err != nil && ctx.Err() == nil {
					e.log.Warn("TTL deletion failed", zap.String("ns", ci.NS()), zap.String("index", xi.Meta.Name), zap.Error(err))
				}
				if n > 0 {
					e.log.Info("TTL deleted expired documents", zap.String("ns", ci.NS()),
						zap.String("index", xi.Meta.Name), zap.Int64("deleted", n))
				}
			}
		}
	}
}

// expireIndex deletes the documents whose date in TTL index xi is older than its
// expireAfterSeconds, shard by shard, and returns how many it deleted.
func (e *Executor) expireIndex(ctx context.Context, ci *catalog.Coll, xi *catalog.Index) (int64, error) {
	cutoff := time.Now().Add(-time.Duration(xi.TTL) * time.Second).UnixMilli()
	lower, upper := ttlBounds(xi.Fields[0].Desc, cutoff)
	var total int64
	for s, db := range e.st.Shards {
		var cands []buildDoc
		it, err := db.NewIndexIter(ci.Meta.ID, xi.Meta.ID, lower, upper, false)
		if err != nil {
			return total, catalog.StoreError(err)
		}
		for it.Next() {
			cands = append(cands, buildDoc{hash: it.Hash(), id: append([]byte(nil), it.ID()...)})
		}
		err = errors.Join(it.Err(), it.Close())
		if err != nil {
			return total, catalog.StoreError(err)
		}
		for start := 0; start < len(cands); start += ttlBatchDocs {
			if err := ctx.Err(); err != nil {
				return total, err
			}
			n, err := e.expireBatch(ci, xi, s, cutoff, cands[start:min(start+ttlBatchDocs, len(cands))])
			total += n
			if err != nil {
				return total, err
			}
		}
	}
	e.counters.deletedDocs.Add(total)
	return total, nil
}

// ttlBounds returns the index key range that holds the dates before cutoff (ascending
// index) or, for a descending one, a range that contains them (documents are re-checked).
func ttlBounds(desc bool, cutoff int64) ([]byte, []byte) {
	minDate := bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, math.MinInt64)}
	cut := bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, cutoff)}
	if !desc {
		return bsonx.AppendKey(nil, minDate), bsonx.AppendKey(nil, cut)
	}
	return bsonx.AppendKeyDesc(nil, cut), store.KeyPrefixEnd(bsonx.AppendKeyDesc(nil, minDate)[:1])
}

// expireBatch deletes those of docs (index entries of shard s) whose document is still
// expired, through the write path, so that every index stays consistent.
func (e *Executor) expireBatch(ci *catalog.Coll, xi *catalog.Index, s int, cutoff int64, docs []buildDoc) (int64, error) {
	wr := e.write.NewWriter(ci)
	hashes := make([]uint64, len(docs))
	for i, d := range docs {
		hashes[i] = write.DocLockHash(ci.Meta.ID, d.id)
	}
	wr.Lock(hashes)
	defer wr.Release()
	var n int64
	for _, d := range docs {
		doc, err := e.st.Shards[s].GetDoc(ci.Meta.ID, d.hash, d.id, nil)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return n, catalog.StoreError(err)
		}
		if !ttlExpired(xi, doc, cutoff) {
			continue
		}
		if err := wr.Stage(&write.DocWrite{Hash: d.hash, ID: d.id, Old: doc}); err != nil {
			return n, err
		}
		n++
	}
	return n, wr.Commit(true)
}

// ttlExpired reports whether doc's date in TTL index xi (the earliest, for an array) is
// before cutoff (milliseconds since the epoch).
func ttlExpired(xi *catalog.Index, doc bsoncore.Document, cutoff int64) bool {
	if !xi.Applies(doc) {
		return false
	}
	v, ok := bsonx.Lookup(doc, xi.Fields[0].Path)
	if !ok {
		return false
	}
	if t, ok := v.DateTimeOK(); ok {
		return t < cutoff
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return false
	}
	vals, _ := arr.Values()
	for _, x := range vals {
		if t, ok := x.DateTimeOK(); ok && t < cutoff {
			return true
		}
	}
	return false
}

// ttlMonitorCommand is the test-only command {cleaveTTLMonitor: 1, intervalMS: n}: it sets
// the monitor's interval (when given), runs a pass now and waits for it, and answers the
// number of passes done.
func (e *Executor) ttlMonitorCommand(ctx context.Context, r *request) error {
	const cmd = "cleaveTTLMonitor"
	err := args.ForEach(cmd, r.body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "intervalMS" {
			return false, nil
		}
		n, err := args.Int64(cmd, key, v)
		if err == nil && n > 0 {
			e.ddl.ttlInterval.Store(int64(time.Duration(n) * time.Millisecond))
		}
		return true, err
	})
	if err != nil {
		return err
	}
	// The first pass to start after the wake-up is complete once passes reaches started+1.
	started := e.ddl.ttlStarted.Load()
	select {
	case e.ddl.ttlWake <- struct{}{}:
	default:
	}
	for e.ddl.ttlPasses.Load() < started+1 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	r.out = bsoncore.AppendInt64Element(r.out, "passes", e.ddl.ttlPasses.Load())
	return nil
}
