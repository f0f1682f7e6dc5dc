package ddl

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
)

// ttlBatchDocs is how many expired documents the TTL monitor deletes per write batch.
const ttlBatchDocs = 256

// StartTTL starts the background goroutine that deletes expired documents of TTL
// indexes, as MongoDB's TTLMonitor does; Close stops it.
func (x *Runner) StartTTL() {
	x.bg.Add(1)
	go func() {
		defer x.bg.Done()
		for {
			t := time.NewTimer(time.Duration(x.ttlInterval.Load()))
			select {
			case <-x.stop:
				t.Stop()
				return
			case <-t.C:
			case <-x.ttlWake:
				t.Stop()
			}
			x.ttlPass()
		}
	}()
}

// ttlPass deletes the expired documents of every TTL index once.
func (x *Runner) ttlPass() {
	x.ttlStarted.Add(1)
	defer x.ttlPasses.Add(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-x.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	state := x.cat.Store().State()
	for _, db := range state.Databases() {
		for _, c := range state.Collections(db.Name) {
			ci, err := x.cat.Info(c)
			if err != nil {
				continue
			}
			for _, xi := range ci.Indexes {
				if !xi.HasTTL || len(xi.Fields) != 1 || xi.Hashed {
					continue // MongoDB's TTL applies to single-field indexes only
				}
				n, err := x.expireIndex(ctx, ci, xi)
				if err != nil && ctx.Err() == nil {
					x.log.Warn("TTL deletion failed", zap.String("ns", ci.NS()), zap.String("index", xi.Meta.Name), zap.Error(err))
				}
				if n > 0 {
					x.log.Info("TTL deleted expired documents", zap.String("ns", ci.NS()),
						zap.String("index", xi.Meta.Name), zap.Int64("deleted", n))
				}
			}
		}
	}
}

// expireIndex deletes the documents whose date in TTL index xi is older than its
// expireAfterSeconds, shard by shard, and returns how many it deleted.
func (x *Runner) expireIndex(ctx context.Context, ci *catalog.Coll, xi *catalog.Index) (int64, error) {
	cutoff := time.Now().Add(-time.Duration(xi.TTL) * time.Second).UnixMilli()
	lower, upper := ttlBounds(xi.Fields[0].Desc, cutoff)
	var total int64
	for s, db := range x.cat.Shards() {
		if _, remote := db.Node(); remote {
			continue // its node's monitor expires it
		}
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
		cands = distinctDocs(cands)
		for start := 0; start < len(cands); start += ttlBatchDocs {
			if err := ctx.Err(); err != nil {
				return total, err
			}
			n, err := x.expireBatch(ci, xi, s, cutoff, cands[start:min(start+ttlBatchDocs, len(cands))])
			total += n
			if err != nil {
				return total, err
			}
		}
	}
	x.deleted.Add(total)
	return total, nil
}

// distinctDocs sorts docs (index entries) in storage order and drops the repeats of a
// document: a multikey document has an entry per array element, and is deleted once. Each
// document is then in one batch only: neither staged twice in a batch (its delete and
// statistics counted twice) nor looked up again by a later one.
func distinctDocs(docs []buildDoc) []buildDoc {
	slices.SortFunc(docs, func(a, b buildDoc) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return bytes.Compare(a.id, b.id)
	})
	return slices.CompactFunc(docs, func(a, b buildDoc) bool {
		return a.hash == b.hash && bytes.Equal(a.id, b.id)
	})
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

// expireBatch deletes those of docs (distinct documents of index entries of shard s, see
// distinctDocs) whose document is still expired, through the write path, so that every
// index stays consistent.
func (x *Runner) expireBatch(ci *catalog.Coll, xi *catalog.Index, s int, cutoff int64, docs []buildDoc) (int64, error) {
	wr := x.write.NewWriter(ci)
	hashes := make([]uint64, len(docs))
	for i, d := range docs {
		hashes[i] = write.DocLockHash(ci.Meta.ID, d.id)
	}
	wr.Lock(hashes)
	defer wr.Release()
	var n int64
	for _, d := range docs {
		doc, err := x.cat.Shards()[s].GetDoc(ci.Meta.ID, d.hash, d.id, nil)
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
