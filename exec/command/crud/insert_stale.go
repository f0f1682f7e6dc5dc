package crud

import (
	"context"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// A partition that moves between nodes while an insert is routed makes the old owner answer
// StaleConfig 13388 (docs/cluster.md): as a writeError for each document it
// refused (the router's own write path, or another node's _cleaveShardWrite: nothing of
// those documents is written), or as the command's error. mongos retries such writes after
// refreshing its routing table, and so does the insert command here: it waits for its
// catalog to move past the revision it routed with, then inserts the refused documents again
// (an ordered insert: from the first refused one on), at most staleRetries times.

// staleRetries bounds the re-routings of one insert (a replicated shard's election takes a
// few of them).
const staleRetries = 8

// staleWait bounds the wait for a newer catalog before a re-routing.
const staleWait = 2 * time.Second

// insertRetryingStale inserts vals into db.name (ci: as looked up at revision rev), routing
// again the documents refused with StaleConfig.
func (h *Handlers) insertRetryingStale(ctx context.Context, r *command.Request, name string, ci *catalog.Coll, rev int64,
	vals []bsoncore.Value, ordered, bypass bool, wc write.Concern, rt *write.Retry, res *write.Results,
) error {
	stmts := make([]int, len(vals))
	for i := range stmts {
		stmts[i] = i
	}
	for attempt := 0; ; attempt++ {
		var part write.Results
		err := h.insertOnce(ctx, r, ci, vals, stmts, ordered, bypass, wc, rt, &part)
		var again func(stmt int) bool // which statements run again
		var ownerRev int64            // the catalog revision the owner answered with, if any
		replaced := write.IsReplaced(err)
		switch {
		case attempt == staleRetries:
		case route.IsStale(err) && (rt != nil || part.N == 0 && len(part.Errs) == 0):
			// Re-running a whole attempt is exact only when nothing of it is known to be
			// done, or when its statements are retryable (their records answer the done ones).
			ownerRev = staleRevision(mongoerr.As(err))
			part, err = write.Results{}, nil
			again = func(int) bool { return true }
		case err == nil:
			again, ownerRev = takeStale(&part, ordered)
		}
		mergeResults(res, &part)
		if again == nil {
			return err
		}
		var nv []bsoncore.Value
		var ns []int
		for i, s := range stmts {
			if again(s) {
				nv, ns = append(nv, vals[i]), append(ns, s)
			}
		}
		vals, stmts = nv, ns
		if !replaced { // this node's catalog already has the new collection
			h.waitNewerCatalog(ctx, rev, ownerRev)
		}
		// The documents may now go to a shard here whose record another node wrote.
		if err := h.WriteFor(r).RefreshRetry(rt); err != nil {
			return err
		}
		rev = h.Storage.Catalog.Revision()
		if ci, err = h.Cat.ForWrite(r.DB, name); err != nil {
			return err
		}
	}
}

// staleRevision returns the catalog revision an owner's StaleConfig names (exec/stale.go),
// 0 for none.
func staleRevision(me *mongoerr.Error) int64 {
	if me == nil || me.Info == nil {
		return 0
	}
	rev, _ := me.Info.Lookup(command.CatalogRevField).Int64OK()
	return rev
}

// takeStale takes the StaleConfig writeErrors out of part and returns which statements to
// insert again (nil: none): those documents, or for an ordered insert every one from the
// first of them on (an ordered insert stops at its first error, which that one was); and
// the newest catalog revision their owners answered with.
func takeStale(part *write.Results, ordered bool) (func(stmt int) bool, int64) {
	stale := map[int]bool{}
	first := -1
	var ownerRev int64
	keep := part.Errs[:0]
	for _, we := range part.Errs {
		if we.Err != nil && we.Err.Code == mongoerr.StaleConfig {
			ownerRev = max(ownerRev, staleRevision(we.Err))
			stale[we.Index] = true
			if first < 0 || we.Index < first {
				first = we.Index
			}
			continue
		}
		keep = append(keep, we)
	}
	part.Errs = keep
	switch {
	case first < 0:
		return nil, 0
	case ordered:
		return func(s int) bool { return s >= first }, ownerRev
	}
	return func(s int) bool { return stale[s] }, ownerRev
}

// insertOnce inserts vals (request indexes stmts) once, routed to their nodes when ci spans
// several.
func (h *Handlers) insertOnce(ctx context.Context, r *command.Request, ci *catalog.Coll, vals []bsoncore.Value, stmts []int,
	ordered, bypass bool, wc write.Concern, rt *write.Retry, res *write.Results,
) error {
	if h.Remote != nil && r.Txn == nil && h.Route.SpansRemote(ci) {
		return h.insertRouted(ctx, r, ci, vals, stmts, ordered, bypass, wc, rt, res)
	}
	for start := 0; start < len(vals); {
		end, size := start, 0
		for end < len(vals) && end-start < write.InsertGroupDocs && size < write.InsertGroupBytes {
			size += len(vals[end].Data)
			end++
		}
		stop, err := h.WriteFor(r).InsertStmts(ctx, ci, vals[start:end], stmts[start:end], ordered, bypass, wc, res, rt)
		if err != nil || stop {
			// The groups before this one are committed, as in MongoDB, whose interrupted
			// write commands fail as a whole whatever they applied before.
			return err
		}
		start = end
	}
	return nil
}

// mergeResults adds part to res, writeErrors in index order.
func mergeResults(res, part *write.Results) {
	res.N += part.N
	res.Charge += part.Charge
	res.Errs = append(res.Errs, part.Errs...)
	slices.SortFunc(res.Errs, func(a, b mongoerr.WriteError) int { return a.Index - b.Index })
}

// waitNewerCatalog waits until this node's catalog has the revision an owner answered with
// (ownerRev; WaitRevision also releases a catalog the pauseCatalogWatch failpoint holds), or
// without one, at most staleWait until it is past revision rev.
func (h *Handlers) waitNewerCatalog(ctx context.Context, rev, ownerRev int64) {
	if ownerRev > h.Storage.Catalog.Revision() {
		_ = h.Storage.Catalog.WaitRevision(ctx, ownerRev)
		return
	}
	if h.Storage.Replicas != nil {
		// A replicated shard's leader may have changed instead: wait for that too.
		_ = h.AwaitStale(ctx, mongoerr.New(mongoerr.StaleConfig, "re-routing an insert"))
		if h.Storage.Catalog.Revision() > rev {
			return
		}
	}
	deadline := time.Now().Add(staleWait)
	for h.Storage.Catalog.Revision() <= rev && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}
