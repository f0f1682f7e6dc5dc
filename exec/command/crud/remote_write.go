package crud

import (
	"context"
	"slices"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Inserts in cluster mode: the router computes each document's shard (its _id generated
// first, so that every node stores the same document) and hands each node the documents of
// its shards with their statement indexes, which are their statement ids (retryable
// writes record them on the owner's shards) and their writeErrors indexes. An ordered
// insert runs consecutive runs of one node in order and stops at the first error; an
// unordered one runs each node's documents at once, in parallel. The owner runs them
// through its own write path (locks, unique checks, one atomic batch per shard); the router
// merges n, writeErrors (in index order) and the request units.

// insertGroup is the documents of one node: node "" is this one.
type insertGroup struct {
	node  string
	shard int // one of the node's shards: where the request is sent
	vals  []bsoncore.Value
	stmts []int
}

// insertRouted inserts vals into ci, each on its owner's node.
func (h *Handlers) insertRouted(ctx context.Context, r *command.Request, ci *catalog.Coll, vals []bsoncore.Value, stmts []int,
	ordered, bypass bool, wc write.Concern, rt *write.Retry, res *write.Results,
) error {
	shards := h.Cat.Shards()
	var runs []*insertGroup
	byNode := map[string]*insertGroup{}
	for i, v := range vals {
		node, s := "", -1
		doc, err := write.PrepareInsert(v.Document())
		if err == nil {
			var h uint64
			if h, err = ci.ShardHash(doc); err == nil {
				s = ci.Map.Partition(ci.Map.Locate(h)).Shard
				node, _ = shards[s].Node()
				v = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
			}
		}
		// A document that fails here fails the same way in the local insert, at its index.
		g := byNode[node]
		if ordered && (len(runs) == 0 || runs[len(runs)-1].node != node) || !ordered && g == nil {
			g = &insertGroup{node: node, shard: s}
			runs = append(runs, g)
			byNode[node] = g
		}
		g.vals, g.stmts = append(g.vals, v), append(g.stmts, stmts[i])
	}
	if ordered {
		for _, g := range runs {
			n := len(res.Errs)
			if err := h.insertGroupOn(ctx, r, ci, g, ordered, bypass, wc, rt, res); err != nil {
				return err
			}
			if len(res.Errs) > n {
				return nil
			}
		}
		return nil
	}
	return h.insertParallel(ctx, r, ci, runs, bypass, wc, rt, res)
}

// insertParallel runs the groups of an unordered insert at once and merges their results.
func (h *Handlers) insertParallel(ctx context.Context, r *command.Request, ci *catalog.Coll, groups []*insertGroup,
	bypass bool, wc write.Concern, rt *write.Retry, res *write.Results,
) error {
	out := make([]write.Results, len(groups))
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Add(1)
		// request-scoped: the goroutines end before insertParallel returns (wg.Wait).
		go func() {
			defer wg.Done()
			errs[i] = h.insertGroupOn(ctx, r, ci, g, false, bypass, wc, rt, &out[i])
		}()
	}
	wg.Wait()
	for i := range groups {
		res.N += out[i].N
		res.Charge += out[i].Charge
		res.Errs = append(res.Errs, out[i].Errs...)
	}
	slices.SortFunc(res.Errs, func(a, b mongoerr.WriteError) int { return a.Index - b.Index })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// insertGroupOn inserts one node's group: here through the write path, elsewhere with
// _cleaveShardWrite.
func (h *Handlers) insertGroupOn(ctx context.Context, r *command.Request, ci *catalog.Coll, g *insertGroup,
	ordered, bypass bool, wc write.Concern, rt *write.Retry, res *write.Results,
) error {
	if g.node == "" {
		for start := 0; start < len(g.vals); start += write.InsertGroupDocs {
			end := min(start+write.InsertGroupDocs, len(g.vals))
			stop, err := h.WriteFor(r).InsertStmts(ctx, ci, g.vals[start:end], g.stmts[start:end], ordered, bypass, wc, res, rt)
			if err != nil || stop {
				return err
			}
		}
		return nil
	}
	return h.Remote.Insert(ctx, g.shard, ci, route.Session{DB: r.DB, Body: r.Body}, g.vals, g.stmts, ordered, bypass, res)
}
