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
func (e *Executor) runStaleRetrying(ctx context.Context, r *command.Request, cmd *command.Command) error {
	if e.Remote == nil || !r.Cmd.Has(command.StaleRetry) || r.Txn != nil || pipelineWrites(r.Body) {
		return cmd.Run(ctx, r)
	}
	mark := len(r.Out)
	for attempt := 0; ; attempt++ {
		err := cmd.Run(ctx, r)
		if attempt == command.MaxStaleRetries || !e.AwaitStale(ctx, err) {
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
