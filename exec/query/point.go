package query

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
)

// ReadPoint reads the first document q yields when q is a point read on one of this node's
// shards, without planning it as Open does: q's filter fixes a single _id by equality (not
// a string compared under a collation), q has no sort, hint, skip, projection, bounds or
// shard restriction, its collection is not time-series, and every partition the filter
// targets is on one local shard (an _id whose hash the catalog knows, or a collection of
// one shard). The read is the point plan's, through the same shard stream as Open's: the
// same admission (16500 when a partition's budget is spent), meters, filter and request
// units, which charge returns. The document is the caller's. ok is false, having read
// nothing, when q is not such a read: Open then reads it (issue 13: the general open was
// a twentieth of an update by _id).
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
	s, local := g.pointShard(q.CI, p.targets)
	if !local {
		return nil, 0, false, nil
	}
	p = planIDs(q.CI, ids, p)
	ss := &pr.ss
	if err := g.initShardStream(ss, q.CI, p, q.Filter, s); err != nil {
		return nil, 0, true, err
	}
	g.notePlan(q.CI, p)
	doc, err = ss.Next(ctx)
	ss.Close()
	return doc, ss.Stats.Charge(), true, err
}

// pointRead is a point read's plan and stream, allocated at once. The document read is in a
// buffer allocated apart, which the caller keeps after both are gone.
type pointRead struct {
	p  Plan
	ss ShardStream
}

// pointShard returns the shard that owns every one of the partitions targets, and whether
// there is one and it is this node's.
func (g *Engine) pointShard(ci *catalog.Coll, targets []int) (int, bool) {
	s := ci.Map.Partition(targets[0]).Shard
	for _, t := range targets[1:] {
		if ci.Map.Partition(t).Shard != s {
			return 0, false
		}
	}
	_, remote := g.shardList()[s].Node()
	return s, !remote
}
