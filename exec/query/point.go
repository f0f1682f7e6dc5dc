package query

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
)

// ReadPoint reads the first document q yields when q is a point read on this node's shards,
// without planning it as Open does: q's filter fixes a single _id by equality (not a string
// compared under a collation), q has no sort, hint, skip, projection, bounds or shard
// restriction, its collection is not time-series, and every shard that owns a partition the
// filter targets is local. The read is the point plan's, through the same shard streams as
// Open's, in the same order (a collection sharded on another field is read on each shard in
// turn until one holds the _id, as Open's concatenation does): the same admission (16500 when
// a partition's budget is spent), meters, filter and request units, which charge returns. The
// document is the caller's. ok is false, having read nothing, when q is not such a read: Open
// then reads it (issue 13: the general open was a twentieth of an update by _id; issue 43: an
// update by _id of a collection sharded on another field, on two shards, took it too).
func (g *Engine) ReadPoint(ctx context.Context, q *Query) (doc bsoncore.Document, charge float64, ok bool, err error) {
	if len(q.Sort) > 0 || q.Hint.Type != 0 || q.Skip > 0 || q.Proj != nil || q.bounds != nil ||
		q.Shards != nil || q.RecycleBuffers || q.CI.TS != nil || q.Filter.Near() != nil {
		return nil, 0, false, nil
	}
	if _, text := q.Filter.Text(); text { // only a $text plan scores and matches the search
		return nil, 0, false, nil
	}
	ids, isEq := q.Filter.Equalities("_id")
	if !isEq || len(ids) != 1 || collatedStrings(q.Filter, ids) {
		return nil, 0, false, nil
	}
	pr := new(pointRead)
	p := &pr.p
	p.targets, p.hashes = targets(q.CI, q.Filter, p)
	if len(p.targets) == 0 {
		return nil, 0, true, nil // nothing can match (Open's PlanEOF)
	}
	shards, local := g.pointShards(q.CI, p.targets, pr.shards[:0])
	if !local {
		return nil, 0, false, nil
	}
	p = planIDs(q.CI, ids, p)
	ss := &pr.ss
	for i, s := range shards {
		if err := g.initShardStream(ss, q.CI, p, q.Filter, s); err != nil {
			return nil, charge, true, err
		}
		if i == 0 {
			g.notePlan(q.CI, p)
		}
		doc, err = ss.Next(ctx)
		ss.Close()
		charge += ss.Stats.Charge()
		if doc != nil || err != nil {
			return doc, charge + g.unreadCharge(ss, q, p, shards[i+1:]), true, err
		}
	}
	return nil, charge, true, nil
}

// unreadCharge is what Open charges for the streams of shards that a point read's first
// document made it leave unread: each still pays for the partitions it targeted
// (ScanStats.Charge), as a fan-out does, and none is admitted (it read nothing). ss is a
// closed stream to set up each in.
func (g *Engine) unreadCharge(ss *ShardStream, q *Query, p *Plan, shards []int) float64 {
	var charge float64
	for _, s := range shards {
		if g.initShardStream(ss, q.CI, p, q.Filter, s) == nil {
			charge += ss.Stats.Charge()
		}
		ss.Close()
	}
	return charge
}

// pointRead is a point read's plan, stream (one shard's at a time) and shards, allocated at
// once. The document read is in a buffer allocated apart, which the caller keeps after they
// are gone.
type pointRead struct {
	p      Plan
	ss     ShardStream
	shards [2]int
}

// pointShards appends to dst the shards that own the partitions targets, each once, in the
// order of their first partition (Open's order), and reports whether they are all this
// node's.
func (g *Engine) pointShards(ci *catalog.Coll, targets []int, dst []int) ([]int, bool) {
	list := g.shardList()
	for _, t := range targets {
		s := ci.Map.Partition(t).Shard
		if slices.Contains(dst, s) {
			continue
		}
		if _, remote := list[s].Node(); remote {
			return dst, false
		}
		dst = append(dst, s)
	}
	return dst, true
}
