package exec

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// A stale router (docs/cluster.md): a node routes on its cached catalog,
// which its watch keeps at some revision of the cluster's. When the owner of a shard
// planned the per-shard part on a different map, it answers StaleConfig 13388 with its own
// revision (catalogRev in the error's fields). As mongos does, the router then waits until
// its watch reaches that revision, plans again and runs the part again, a bounded number of
// times and within the command's deadline; only then does the client see 13388. Reads retry
// the whole command (nothing was answered yet: the owner refuses at the open); an insert
// re-routes only the documents the owner refused, which it wrote none of.

// runStaleRetrying runs cmd, and runs a read again when an owner answered StaleConfig.
//
// With replicated shards a retryable write (one with a txnNumber, outside a transaction) is
// run again too when the shard's leader stepped down under it (NotWritablePrimary,
// InterruptedDueToReplStateChange) or its node went away (HostUnreachable), once a leader
// serves (reads too): its session's record, written with
// its writes, makes a second run return what the first one wrote, and a new leader serves
// only after applying every entry its predecessors committed.
func (e *Executor) runStaleRetrying(ctx context.Context, r *command.Request, cmd *command.Command) error {
	retryableWrite := e.Storage.Replicas != nil && r.Txn == nil && r.Cmd.Has(command.RetryableWrite) && hasTxnNumber(r.Body)
	if e.Remote == nil || !r.Cmd.Has(command.StaleRetry) && !retryableWrite || r.Txn != nil || pipelineWrites(r.Body) {
		return cmd.Run(ctx, r)
	}
	mark := len(r.Out)
	for attempt := 0; ; attempt++ {
		err := cmd.Run(ctx, r)
		if attempt == command.MaxStaleRetries || !e.awaitRetry(ctx, r, err, retryableWrite) {
			return err
		}
		r.Out = r.Out[:mark]
		r.Conn.Log.Debug("planning again after StaleConfig", zap.String("cmd", r.Name), zap.Int("attempt", attempt+1))
	}
}

// pipelineWrites reports whether body is an aggregate ending in $out or $merge, which a
// retry could run twice.
func pipelineWrites(body bsoncore.Document) bool {
	p, ok := body.Lookup("pipeline").ArrayOK()
	if !ok {
		return false
	}
	vals, _ := p.Values()
	for _, v := range vals {
		if d, ok := v.DocumentOK(); ok {
			if el, err := d.IndexErr(0); err == nil && (el.Key() == "$out" || el.Key() == "$merge") {
				return true
			}
		}
	}
	return false
}

// withCatalogRev adds this node's catalog revision to the StaleConfig an internal command
// answers, so that the router knows what to wait for.
func (e *Executor) withCatalogRev(r *command.Request, err error) error {
	me := mongoerr.As(err)
	if me == nil || me.Code != mongoerr.StaleConfig || !strings.HasPrefix(r.Name, "_cleaveShard") {
		return err
	}
	out := *me
	out.Info = bsoncore.NewDocumentBuilder().AppendInt64(command.CatalogRevField, e.Storage.Catalog.Revision()).Build()
	return &out
}

// awaitRetry reports whether cmd should run again after err, having waited for what it
// needs: the catalog revision a StaleConfig names (reads), or a new shard leader.
func (e *Executor) awaitRetry(ctx context.Context, r *command.Request, err error, retryableWrite bool) bool {
	me := mongoerr.As(err)
	if me == nil {
		return false
	}
	if me.Code == mongoerr.NotWritablePrimary || me.Code == mongoerr.InterruptedDueToReplStateChange || me.Code == mongoerr.HostUnreachable {
		if e.Storage.Replicas == nil || !retryableWrite && !r.Cmd.Has(command.StaleRetry) {
			return false
		}
		stale := mongoerr.New(mongoerr.StaleConfig, "%s", me.Message) // no revision: wait for a leader
		return e.AwaitStale(ctx, stale)
	}
	return r.Cmd.Has(command.StaleRetry) && e.AwaitStale(ctx, err)
}

// hasTxnNumber reports whether body carries a txnNumber: a retryable write.
func hasTxnNumber(body bsoncore.Document) bool {
	_, err := body.LookupErr("txnNumber")
	return err == nil
}
