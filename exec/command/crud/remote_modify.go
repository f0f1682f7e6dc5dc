package crud

import (
	"context"
	"slices"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/update"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Updates, deletes and findAndModify in cluster mode (the router's side; the owner's is
// exec/command/node/modify.go). A statement is targeted as it is locally (query.TargetPartitions:
// the shard key fixed → its partitions, otherwise all of them) and its targets grouped by
// node. When they are all this node's the statement runs here as in single-node mode;
// otherwise each owner re-parses the statement (a one-statement command: stmtCommand) and
// runs it with _cleaveShardModify, restricted to its shards and to the hash ranges the
// router planned on (StaleConfig 13388 when its map differs):
//   - a statement all of whose targets are on one other node runs there whole, upsert
//     included (an upsert fixes the full shard key, so its document lands there);
//   - a multi update or delete runs on every owning node at once; the router sums n and
//     nModified, and when nothing matched anywhere an upsert runs on the node owning the
//     new document's shard;
//   - a single-document write targeting several nodes (an exact _id, which mongos 7.0
//     allows) first asks every node whether a retryable statement already ran there
//     (mode probe), then finds the first matching document in sort order through a read
//     over every node (remote reads merge as any read does) and writes it on its owner by
//     hash and _id (mode target, write.Path.RunTarget); a document gone or changed
//     meanwhile is looked for again, as the local write path does.
// A document never moves between nodes: WouldChangeOwningShard 283 (write.checkOwningShard).

// maxTargetAttempts bounds how often a single-document write looks for its document again
// after the one it found went away or stopped matching before its owner locked it.
const maxTargetAttempts = 100

// ModifyStmt is a statement as its owner re-parses it: kind is the command ("update",
// "delete" or "findAndModify"), list the array of statements ("updates", "deletes", ""),
// stmt the statement itself (update and delete), index its statement id.
type ModifyStmt struct {
	Kind, list string
	stmt       bsoncore.Value
	Index      int32
	CI         *catalog.Coll // the collection, set by runWrite
	// Cmd, when set, is the one-statement command itself (an owner forwarding the moved
	// documents of a statement routed to it: remote_moved.go).
	Cmd bsoncore.Document
}

// NodePart is the part of a statement on one node: its targeted shards there and the hash
// ranges of the targeted partitions on them, in target order.
type NodePart struct {
	node   string
	remote bool
	shard  int // the first of shards: where requests are sent
	shards []int
	Ranges [][2]uint64
}

// target is the document a single-document write found: its hash and encoded _id.
type target struct {
	hash uint64
	id   []byte
}

// runWrite runs op, statement ms of r, on the shards that hold its documents: here as in
// single-node mode, or on their owners (see above). A single-document statement an owner
// answered StaleConfig wrote nothing (owners check before writing): it is planned again
// once this node's catalog caught up with the owner's (awaitStale), as reads are, on the
// collection that now has its name if a layout change replaced it. A multi statement is not:
// another node may have run its part already.
func (h *Handlers) runWrite(ctx context.Context, r *command.Request, op *write.Op, ms *ModifyStmt, res *write.Result) error {
	if h.Remote == nil || r.Txn != nil || op.CI == nil || op.CI.View != nil {
		return h.WriteFor(r).Run(ctx, op, res)
	}
	for attempt := 0; ; attempt++ {
		err := h.runWriteOnce(ctx, r, op, ms, res)
		if op.Multi || attempt == command.MaxStaleRetries || !h.AwaitStale(ctx, err) {
			return err
		}
		*res = write.Result{Charge: res.Charge}
		op.CI = h.Cat.Refresh(op.CI)
		if h.Cat.Replaced(op.CI) { // a layout change renamed its copy over the collection
			ci, lerr := h.Cat.Lookup(op.CI.Meta.DB, op.CI.Meta.Name)
			if lerr != nil || ci == nil {
				return err
			}
			op.CI = ci
		}
		// The statement may now run here, on a shard whose record another node wrote.
		if err := h.WriteFor(r).RefreshRetry(op.Retry); err != nil {
			return err
		}
		if rec, ok := command.Retried(op.Retry, int(op.Stmt), op.Multi); ok {
			*res = rec
			return nil
		}
	}
}

// runWriteOnce is one attempt of runWrite.
func (h *Handlers) runWriteOnce(ctx context.Context, r *command.Request, op *write.Op, ms *ModifyStmt, res *write.Result) error {
	if !h.Route.SpansRemote(op.CI) {
		return h.RunLocal(ctx, r, op, ms, res)
	}
	ms.CI = op.CI
	parts := h.NodeParts(op.CI, op.Filter, nil)
	switch {
	case len(parts) == 0 || len(parts) == 1 && !parts[0].remote:
		return h.RunLocal(ctx, r, op, ms, res)
	case len(parts) == 1:
		if u := compactUpdate(r, op, ms, parts[0]); u != nil {
			_, err := h.Remote.Update(ctx, u, res)
			return err
		}
		return h.modifyOn(ctx, r, ms, parts[0], route.ModifyRun, op.Upsert, nil, res)
	case op.Multi:
		return h.modifyMulti(ctx, r, op, ms, parts, res)
	default:
		return h.modifyOne(ctx, r, op, ms, parts, res)
	}
}

// NodeParts groups the partitions f targets in ci by node, keeping those on the shards
// keep accepts (nil: all).
func (h *Handlers) NodeParts(ci *catalog.Coll, f *match.Filter, keep func(s int) bool) []*NodePart {
	all := h.Cat.Shards()
	var parts []*NodePart
	for _, t := range query.TargetPartitions(ci, f) {
		s := ci.Map.Partition(t).Shard
		if keep != nil && !keep(s) {
			continue
		}
		node, remote := all[s].Node()
		i := slices.IndexFunc(parts, func(p *NodePart) bool { return p.node == node && p.remote == remote })
		if i < 0 {
			i = len(parts)
			parts = append(parts, &NodePart{node: node, remote: remote, shard: s})
		}
		p := parts[i]
		if !slices.Contains(p.shards, s) {
			p.shards = append(p.shards, s)
		}
		lo, hi := ci.Map.Range(t)
		p.Ranges = append(p.Ranges, [2]uint64{lo, hi})
	}
	return parts
}

// modifyMulti runs a multi statement on every node at once and merges the results; when
// nothing matched anywhere, an upsert runs where its document belongs.
func (h *Handlers) modifyMulti(ctx context.Context, r *command.Request, op *write.Op, ms *ModifyStmt, parts []*NodePart, res *write.Result) error {
	out := make([]write.Result, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		// request-scoped: the goroutines end before modifyMulti returns (wg.Wait).
		go func() {
			defer wg.Done()
			if p.remote {
				errs[i] = h.modifyOn(ctx, r, ms, p, route.ModifyRun, false, nil, &out[i])
				return
			}
			local := *op
			local.Shards, local.Upsert = p.shards, false
			errs[i] = h.RunLocal(ctx, r, &local, ms, &out[i])
		}()
	}
	wg.Wait()
	for i := range out {
		res.Matched += out[i].Matched
		res.Modified += out[i].Modified
		res.Charge += out[i].Charge
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if res.Matched > 0 || !op.Upsert || op.Upd == nil {
		return nil
	}
	return h.upsertRouted(ctx, r, op, ms, res)
}

// modifyOne runs a single-document statement whose targets span nodes: the document is
// found by a read over every node, then written on its owner.
func (h *Handlers) modifyOne(ctx context.Context, r *command.Request, op *write.Op, ms *ModifyStmt, parts []*NodePart, res *write.Result) error {
	if op.Retry != nil { // executed before on another node? (this node's records: retried)
		for _, p := range parts {
			if !p.remote {
				continue
			}
			var rec write.Result
			executed, err := h.modifyOnReply(ctx, r, ms, p, route.ModifyProbe, false, nil, &rec)
			if err != nil {
				return err
			}
			if executed {
				*res = rec
				return nil
			}
		}
	}
	wp := h.WriteFor(r)
	q := &query.Query{CI: op.CI, Filter: op.Filter, Sort: op.Sort, Limit: 1, Hint: op.Hint}
	all := h.Cat.Shards()
	for range maxTargetAttempts {
		if err := ctx.Err(); err != nil {
			return err
		}
		doc, err := wp.FirstMatch(ctx, q, res)
		if err != nil {
			return err
		}
		if doc == nil {
			if op.Upsert && op.Upd != nil {
				return h.upsertRouted(ctx, r, op, ms, res)
			}
			if op.Retry != nil {
				return wp.RecordNoop(op.Retry, write.StmtResult{Stmt: op.Stmt}, op.Sync)
			}
			return nil
		}
		t := &target{}
		if t.hash, err = op.CI.ShardHash(doc); err != nil {
			return err
		}
		_, t.id = catalog.DocID(doc, nil)
		s := op.CI.Map.Partition(op.CI.Map.Locate(t.hash)).Shard
		if node, remote := all[s].Node(); remote {
			err = h.modifyOn(ctx, r, ms, &NodePart{node: node, remote: true, shard: s}, route.ModifyTarget, false, t, res)
		} else {
			err = wp.RunTarget(ctx, op, t.hash, t.id, res)
		}
		if err != nil || res.Matched > 0 {
			return err
		}
	}
	return nil
}

// upsertRouted inserts the document of an upsert that matched nothing on any node: the
// statement runs again, with its upsert, on the shard that owns the new document.
func (h *Handlers) upsertRouted(ctx context.Context, r *command.Request, op *write.Op, ms *ModifyStmt, res *write.Result) error {
	doc, err := update.Upsert(nil, op.Query, op.Upd)
	if err != nil {
		return err
	}
	if doc, err = write.PrepareInsert(doc); err != nil {
		return err
	}
	hash, err := op.CI.ShardHash(doc)
	if err != nil {
		return err
	}
	s := op.CI.Map.Partition(op.CI.Map.Locate(hash)).Shard
	if _, remote := h.Cat.Shards()[s].Node(); !remote {
		local := *op
		local.Shards = []int{s}
		return h.WriteFor(r).Run(ctx, &local, res)
	}
	parts := h.NodeParts(op.CI, op.Filter, func(x int) bool { return x == s })
	if len(parts) != 1 { // the document's shard is not one the query targets
		return mongoerr.New(mongoerr.ShardKeyNotFound, "Failed to target upsert by query :: could not extract exact shard key")
	}
	return h.modifyOn(ctx, r, ms, parts[0], route.ModifyRun, true, nil, res)
}

// modifyOn runs statement ms on node part p in mode (modify* constants), merging its
// result into res.
func (h *Handlers) modifyOn(ctx context.Context, r *command.Request, ms *ModifyStmt, p *NodePart, mode string,
	upsert bool, t *target, res *write.Result,
) error {
	_, err := h.modifyOnReply(ctx, r, ms, p, mode, upsert, t, res)
	return err
}

// modifyOnReply is modifyOn, also reporting whether the owner had executed the statement
// before (a retry).
func (h *Handlers) modifyOnReply(ctx context.Context, r *command.Request, ms *ModifyStmt, p *NodePart, mode string,
	upsert bool, t *target, res *write.Result,
) (bool, error) {
	m := &route.Modify{CI: ms.CI, Kind: ms.Kind, Cmd: ms.command(r.Body), Index: ms.Index, Mode: mode, Upsert: upsert}
	if mode == route.ModifyRun {
		m.Shards, m.Ranges = p.shards, p.Ranges
	}
	if t != nil {
		m.Hash, m.ID = t.hash, t.id
	}
	return h.Remote.Modify(ctx, p.shard, route.Session{DB: r.DB, Body: r.Body}, m, res)
}

// command is the one-statement command of ms, a statement of body.
func (ms *ModifyStmt) command(body bsoncore.Document) bsoncore.Document {
	if ms.Cmd != nil {
		return ms.Cmd
	}
	return stmtCommand(body, ms.list, ms.stmt)
}

// stmtCommand is body (an update, delete or findAndModify command) as a command of the one
// statement stmt (list names body's array of statements; "" for findAndModify), without
// the fields of the session and the request, which the internal command carries itself.
func stmtCommand(body bsoncore.Document, list string, stmt bsoncore.Value) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	elems, _ := body.Elements()
	for _, el := range elems {
		switch k := el.Key(); {
		case k == "lsid", k == "txnNumber", k == "$db", k == "$clusterTime", k == "autocommit", k == "startTransaction",
			k == "stmtId", k == "stmtIds", k == "maxTimeMS", k == "$readPreference":
		case list != "" && k == list:
			b.AppendArray(k, bsoncore.NewArrayBuilder().AppendValue(stmt).Build())
		default:
			b.AppendValue(k, el.Value())
		}
	}
	return b.Build()
}
