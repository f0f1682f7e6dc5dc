package colls

import (
	"context"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// collMod changes the options of a collection or of one of its indexes, as MongoDB 7.0's:
//
//   - index: {keyPattern | name, expireAfterSeconds, hidden, prepareUnique, unique,
//     forceNonUnique}: a hidden index is maintained but not planned with; unique conversion
//     is exec/ddl/collmod_unique.go's two steps;
//   - expireAfterSeconds (a number or "off") of a clustered or time-series collection;
//   - timeseries: {granularity} or {bucketMaxSpanSeconds, bucketRoundingSeconds};
//   - changeStreamPreAndPostImages: {enabled}, stored and shown by listCollections (cleave
//     has no change streams to use it);
//   - validator, validationLevel, validationAction: stored and shown by listCollections
//     like create's, and, like create's, not enforced by cleave's writes;
//   - viewOn and pipeline change a view (crud's view.go) and fail on a collection;
//   - cappedSize and cappedMax resize a capped collection (MongoDB 6.0+): checked and
//     stored as create's size and max; the excess goes at the next insert.
//
// The reply is mongod's: {expireAfterSeconds_old, expireAfterSeconds_new, hidden_old,
// hidden_new, unique_new, prepareUnique_old, prepareUnique_new, forceNonUnique_new, ok}
// with the fields of the changes made.

// collMod runs the collMod command.
func (h *Handlers) collMod(ctx context.Context, r *command.Request) error {
	a, err := ddl.ParseCollMod(r.Body)
	if err != nil && (a == nil || !h.CRUD.IsView(r.DB, a.Coll)) {
		return err
	}
	unlock, err := h.LockDDL(ctx, "collMod", r.Body)
	if err != nil {
		return err
	}
	defer unlock()
	c := h.Storage.Catalog.State().Collection(r.DB, a.Coll)
	if c == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist")
	}
	if catalog.IsView(c) {
		return h.CRUD.CollModView(r, c)
	}
	if err != nil {
		return err
	}
	ci, err := h.Cat.Info(c)
	if err != nil {
		return err
	}
	p, err := ddl.PlanCollMod(a, c, ci)
	if err != nil {
		return err
	}
	if a.DryRun {
		return h.collModDryRun(a, p, ci)
	}
	if p.UniqueNew {
		if err := h.checkConvertible(ci, p.Index); err != nil {
			return err
		}
	}
	slot := h.ReserveChange(c.DB)
	if err := h.applyCollMod(c, p); err != nil {
		slot.Release()
		return err
	}
	h.recordModify(slot, c, r.Body, p)
	h.Log.Info("collMod", zap.String("ns", c.DB+"."+c.Name), zap.Int("changes", p.Mods))
	r.Out = p.AppendReply(r.Out)
	return nil
}

// collModDryRun checks, without changing anything, that the index can become unique.
func (h *Handlers) collModDryRun(a *ddl.CollModArgs, p *ddl.CollModPlan, ci *catalog.Coll) error {
	if a.Index == nil {
		return mongoerr.New(mongoerr.InvalidOptions, "dry run mode requires an valid index modification.")
	}
	if a.Index.Unique == nil || !*a.Index.Unique {
		return mongoerr.New(mongoerr.InvalidOptions, "dry run mode requires an index modification with unique: true.")
	}
	if p.Mods > 1 {
		return mongoerr.New(mongoerr.InvalidOptions, "unique: true cannot be combined with any other modification in dry run mode.")
	}
	return h.checkConvertible(ci, p.Index)
}

// checkConvertible fails with CannotConvertIndexToUnique when index x of ci has
// documents that share a key.
func (h *Handlers) checkConvertible(ci *catalog.Coll, x *store.Index) error {
	for _, xi := range ci.WriteIndexes {
		if xi.Meta.ID != x.ID {
			continue
		}
		groups, truncated, err := h.DDL.Duplicates(ci, xi)
		if err != nil {
			return err
		}
		if len(groups) > 0 {
			return ddl.ConvertUniqueError(groups, truncated)
		}
	}
	return nil
}

// applyCollMod commits plan p to the catalog. A change to prepareUnique or unique is
// followed by a barrier: every write after collMod returns checks the keys as it says.
func (h *Handlers) applyCollMod(c *store.Collection, p *ddl.CollModPlan) error {
	if !p.Changed() {
		return nil
	}
	_, err := h.Storage.Catalog.UpdateCollection(c.DB, c.Name, func(c *store.Collection) error {
		if p.OptsChanged {
			c.Options = p.Opts.Doc()
		}
		if p.Index != nil && p.Spec != nil {
			if x := c.IndexByID(p.Index.ID); x != nil {
				x.Spec = *p.Spec
			}
		}
		return nil
	})
	if err != nil {
		return catalog.ChangeError(err, c.DB, c.Name)
	}
	if p.UniqueNew || p.PrepNew != nil || p.ForceNonUnique {
		h.Cat.Barrier()
	}
	return nil
}
