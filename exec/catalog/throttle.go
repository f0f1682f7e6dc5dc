package catalog

import (
	"context"
	"errors"

	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Throttled turns a budget's refusal (*shard.ThrottledError) into Cosmos DB's answer: code
// 16500 TooManyRequests, whose message carries RetryAfterMs=<n>, the hint drivers' and
// applications' retry policies parse. Other errors are returned as they are.
func Throttled(ci *Coll, err error) error {
	var te *shard.ThrottledError
	if !errors.As(err, &te) {
		return err
	}
	return mongoerr.Wrap(err, mongoerr.TooManyRequests,
		"Request rate is large. More Request Units may be needed, so no changes were made. "+
			"Please retry this request later. RetryAfterMs=%d, Details='partition %d of %s used "+
			"its share of the provisioned throughput, %.0f RU/s'",
		te.RetryAfter.Milliseconds(), te.PartitionID, ci.NS(), te.BudgetRU)
}

// PriorityField is the generic argument (and a user's customData field) that names a
// request's priority: "high" or "low", in any case.
const PriorityField = "priorityLevel"

// PriorityArgument returns the priorityLevel argument that carries the priority of the
// request ctx belongs to (WithPriority) to another node, and false for a high-priority
// request, which needs none.
func PriorityArgument(ctx context.Context) (string, bool) {
	p, _ := ctx.Value(priorityKey{}).(shard.Priority)
	if p == shard.PriorityHigh {
		return "", false
	}
	return p.String(), true
}

// priorityKey is the context key of a request's priority (WithPriority).
type priorityKey struct{}

// WithPriority returns ctx for a request of priority p: the budgets its reads and writes
// are admitted by see it (Admission). A high-priority request, the default, needs no value.
func WithPriority(ctx context.Context, p shard.Priority) context.Context {
	if p == shard.PriorityHigh {
		return ctx
	}
	return context.WithValue(ctx, priorityKey{}, p)
}

// Admission returns what a request running under ctx brings to a partition's budget: its
// priority (WithPriority) and its deadline (maxTimeMS), which a wait for budget never
// passes.
func Admission(ctx context.Context) shard.Admission {
	var a shard.Admission
	if ctx == nil {
		return a
	}
	a.Priority, _ = ctx.Value(priorityKey{}).(shard.Priority)
	a.Deadline, _ = ctx.Deadline()
	return a
}
