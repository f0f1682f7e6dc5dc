package colls

import (
	"errors"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Throughput's extensions of Cosmos DB's custom commands (cleave's own):
//
//	CreateCollection, UpdateCollection, CreateDatabase, UpdateDatabase: enableBurstCapacity,
//	                 throttleRetryMS (server-side retry: ms, 0 none, -1 back to the level above)
//	RedistributeThroughput collection, targets: [{id, throughput}, ...] | reset: true
//	GetCollection: burstCapacity, throughputPolicy ("Equal", "Custom", "Demand"),
//	               partitionThroughput: [{id, throughput}, ...]

// redistributeArgs are RedistributeThroughput's arguments: partitions' targets in RU/s by
// partition id, or reset.
type redistributeArgs struct {
	ids     []int64
	targets []float64
	reset   bool
}

// parse reads targets ([{id: <partition id>, throughput: <RU/s>}, ...]) or reset.
func (a *redistributeArgs) parse(cmd, key string, v bsoncore.Value) error {
	if key == "reset" {
		var err error
		a.reset, err = args.Bool(cmd, key, v)
		return err
	}
	arr, err := args.Array(cmd, key, v)
	if err != nil {
		return err
	}
	vals, _ := arr.Values()
	for _, v := range vals {
		d, err := args.Doc(cmd, key, v)
		if err != nil {
			return err
		}
		id, err := args.Int64(cmd, "targets.id", d.Lookup("id"))
		if err != nil {
			return err
		}
		ru, ok := bsonx.NumberAsFloat64(d.Lookup("throughput"))
		if !ok || !(ru > 0) {
			return mongoerr.New(mongoerr.BadValue, "targets.throughput of partition %d must be a positive number of RU/s", id)
		}
		a.ids, a.targets = append(a.ids, id), append(a.targets, ru)
	}
	return nil
}

// redistributeThroughput answers customAction RedistributeThroughput: with targets, it sets
// the named partitions' budgets (RU/s) and spreads what is left of T evenly over the others;
// with reset: true, the budgets are even again. Budgets set by hand stay until reset (the
// partition manager does not move them); a split shares a partition's budget between its
// children. Each budget must lie between shard.MinShare and t (--max-partition-ru).
func (h *Handlers) redistributeThroughput(r *command.Request, a *customActionArgs) error {
	ci, err := h.Cat.Lookup(r.DB, a.coll)
	if err != nil {
		return err
	}
	if ci == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns not found %s.%s", r.DB, a.coll)
	}
	ra := &a.redistribute
	if ra.reset == (len(ra.targets) > 0) {
		return mongoerr.New(mongoerr.BadValue, "RedistributeThroughput needs either targets or reset: true")
	}
	var budgets []float64
	if !ra.reset {
		t := sharding.Throughput(h.Storage.Catalog.State(), ci.Meta).RU
		if t <= 0 {
			return mongoerr.New(mongoerr.BadValue, "collection %s has no provisioned throughput to redistribute", ci.NS())
		}
		if budgets, err = h.budgetsFromTargets(ci, t, ra); err != nil {
			return err
		}
	}
	err = h.Shards.SetBudgets(ci, budgets, !ra.reset)
	if errors.Is(err, shard.ErrStaleAction) {
		return mongoerr.Wrap(err, mongoerr.ConflictingOperationInProgress,
			"the partitions of %s changed meanwhile; look them up again", ci.NS())
	}
	if err != nil {
		return catalog.ChangeError(err, r.DB, a.coll)
	}
	return nil
}

// budgetsFromTargets returns the budgets of ci's partitions for throughput t: the targets
// for the partitions named, the rest of t evenly over the others.
func (h *Handlers) budgetsFromTargets(ci *catalog.Coll, t float64, ra *redistributeArgs) ([]float64, error) {
	n := ci.Map.Len()
	floor, ceiling := shard.MinShare(t, n), h.Shards.Policy().PartitionMaxRU
	budgets := make([]float64, n)
	var named float64
	for k, id := range ra.ids {
		i := ci.Map.Index(uint64(id))
		if i < 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "collection %s has no partition %d", ci.NS(), id)
		}
		if budgets[i] > 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "partition %d is named twice", id)
		}
		ru := ra.targets[k]
		if ru < floor-1e-9 || ru > ceiling {
			return nil, mongoerr.New(mongoerr.BadValue,
				"the throughput of partition %d must be between %.0f and %.0f RU/s, not %g", id, floor, ceiling, ru)
		}
		budgets[i] = ru
		named += ru
	}
	others := n - len(ra.ids)
	left := t - named
	if (others == 0 && math.Abs(left) > 1e-6*t) || (others > 0 && left/float64(others) < floor-1e-9) {
		return nil, mongoerr.New(mongoerr.BadValue,
			"the targets sum to %g RU/s: the collection's %g RU/s must cover them and at least %.0f RU/s for each other partition",
			named, t, floor)
	}
	for i := range budgets {
		if budgets[i] == 0 {
			budgets[i] = left / float64(others)
		}
	}
	return budgets, nil
}

// setBurstCapacity stores db.coll's burst capacity setting, unless it is the default.
func (h *Handlers) setBurstCapacity(db, coll string, burst store.Toggle) error {
	if burst == store.ToggleDefault {
		return nil
	}
	_, err := h.Storage.Catalog.UpdateCollection(db, coll, func(c *store.Collection) error {
		c.BurstCapacity = burst
		return nil
	})
	if err != nil {
		return catalog.ChangeError(err, db, coll)
	}
	return nil
}

// throughputPolicy names how c's partitions share its throughput: "Equal" (T/N each, Cosmos
// DB's name), "Custom" (set by RedistributeThroughput, Cosmos DB's name) or "Demand" (moved by
// the partition manager).
func throughputPolicy(c *store.Collection) string {
	switch {
	case c.CustomBudgets:
		return "Custom"
	case sharding.Shares(c) != nil:
		return "Demand"
	}
	return "Equal"
}

// appendThroughputPolicy appends GetCollection's cleave fields: burstCapacity (in force),
// throughputPolicy and, when throughput is provisioned, partitionThroughput.
func (h *Handlers) appendThroughputPolicy(dst []byte, c *store.Collection) []byte {
	st := h.Storage.Catalog.State()
	dst = bsoncore.AppendBooleanElement(dst, "burstCapacity", sharding.BurstCapacity(st, c, h.Shards.Policy().BurstCapacity))
	dst = bsoncore.AppendStringElement(dst, "throughputPolicy", throughputPolicy(c))
	retry := sharding.ThrottleRetry(st, c, h.Shards.Policy().ThrottleWait)
	dst = bsoncore.AppendInt64Element(dst, "throttleRetryMS", retry.Milliseconds())
	t := sharding.Throughput(st, c).RU
	if t <= 0 {
		return dst
	}
	idx, dst := bsoncore.AppendArrayElementStart(dst, "partitionThroughput")
	for i, s := range shard.Shares(t, len(c.Partitions), sharding.Shares(c)) {
		pidx, d := bsoncore.AppendDocumentElementStart(dst, bsonx.ArrayKey(i))
		d = bsoncore.AppendInt64Element(d, "id", int64(c.Partitions[i].ID))
		d = bsoncore.AppendDoubleElement(d, "throughput", s)
		dst, _ = bsoncore.AppendDocumentEnd(d, pidx)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}

// maxThrottleRetryMS bounds throttleRetryMS: Cosmos DB's server-side retry gives up after 60 s.
const maxThrottleRetryMS = 60_000

// parseThrottleRetry reads throttleRetryMS, how long a request out of budget waits for it
// before 16500, and returns it as stored (store.Collection.ThrottleRetryMS): n > 0 as is, 0
// as store.ThrottleRetryNever, -1 (follow the level above) as 0.
func parseThrottleRetry(cmd, key string, v bsoncore.Value) (int64, error) {
	n, err := args.Int64(cmd, key, v)
	if err != nil {
		return 0, err
	}
	switch {
	case n < -1 || n > maxThrottleRetryMS:
		return 0, mongoerr.New(mongoerr.BadValue,
			"%s must be between 0 and %d milliseconds, or -1 to follow the database or server, not %d", key, maxThrottleRetryMS, n)
	case n == 0:
		return store.ThrottleRetryNever, nil
	case n == -1:
		return 0, nil
	}
	return n, nil
}

// setThrottleRetry stores a's throttleRetryMS as its collection's server-side retry, when
// given.
func (h *Handlers) setThrottleRetry(db string, a *customActionArgs) error {
	if !a.retrySet {
		return nil
	}
	_, err := h.Storage.Catalog.UpdateCollection(db, a.coll, func(c *store.Collection) error {
		c.ThrottleRetryMS = a.retry
		return nil
	})
	if err != nil {
		return catalog.ChangeError(err, db, a.coll)
	}
	return nil
}

// databaseRetry returns database d's server-side retry as stored (Options' throttleRetryMS,
// store.Collection.ThrottleRetryMS's values), 0 when it has none.
func databaseRetry(d *store.Database) int64 {
	if d == nil || d.Options == nil {
		return 0
	}
	n, _ := d.Options.Lookup("throttleRetryMS").AsInt64OK()
	return n
}
