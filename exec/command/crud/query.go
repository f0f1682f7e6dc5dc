package crud

import (
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/cursor"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addQueryCommands registers count, distinct and explain.
func (h *Handlers) addQueryCommands(add func(*command.Command)) {
	add(&command.Command{Name: "count", Run: h.count, Action: auth.ActionRead, Help: "count objects in collection", Props: command.ReadConcern | command.StaleRetry | command.Explainable | command.APIV1})
	add(&command.Command{Name: "distinct", Run: h.distinct, Action: auth.ActionRead, Help: "{ distinct : 'collection name' , key : 'a.b' , query : {} }", Props: command.ReadConcern | command.InTxn | command.SnapshotRead | command.StaleRetry | command.Explainable})
	add(&command.Command{Name: "explain", Run: h.explain, Action: auth.ActionRead, Help: "explain database reads and writes", Props: command.StaleRetry | command.APIV1})
}

// countArgs are the parsed arguments of count.
type countArgs struct {
	coll        string
	query       bsoncore.Document
	skip, limit int64
	hint        bsoncore.Value
	collation   bsoncore.Document
	maxTimeMS   int64
}

// parseCount parses a count command.
func parseCount(body bsoncore.Document) (*countArgs, error) {
	const cmd = "count"
	first, _ := bsonx.FirstElement(body)
	coll, err := args.Collection(cmd, first.Value())
	if err != nil {
		return nil, err
	}
	a := &countArgs{coll: coll}
	err = args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "query":
			a.query, err = args.OptionalDoc(cmd, key, v)
		case "skip":
			a.skip, err = nonNegative(cmd, key, v)
		case "limit":
			a.limit, err = args.Int64(cmd, key, v)
			if a.limit < 0 {
				a.limit = -a.limit // count treats a negative limit as its absolute value
			}
		case "hint":
			a.hint = v
		case "collation":
			a.collation, err = args.Doc(cmd, key, v)
		case "fields", "readConcern", "query_options":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if v, err := body.LookupErr("maxTimeMS"); err == nil {
		if a.maxTimeMS, err = command.MaxTimeMS(cmd, v); err != nil {
			return nil, err
		}
	}
	return a, catalog.CheckCollation(a.collation)
}

// count runs the count command.
func (h *Handlers) count(ctx context.Context, r *command.Request) error {
	a, err := parseCount(r.Body)
	if err != nil {
		return err
	}
	if h.IsView(r.DB, a.coll) {
		return h.countView(ctx, r, a) // view.go
	}
	ci, err := h.Cat.Lookup(r.DB, a.coll)
	if err != nil {
		return err
	}
	coll, err := CollationFor(a.collation, ci)
	if err != nil {
		return err
	}
	f, err := compileFilterTimed(ctx, a.query, nil, coll, a.maxTimeMS)
	if err == nil {
		err = refuseNear(f)
	}
	if err != nil {
		return err
	}
	if hs, ok := a.hint.StringValueOK(); ok && hs == "" {
		a.hint = bsoncore.Value{}
	}
	// A count without a limit reads every match: in which order does not matter.
	q := &query.Query{CI: ci, Filter: f, Skip: a.skip, Hint: a.hint, Unordered: a.limit == 0, NoFields: true}
	if r.Explain != "" {
		return h.explainQuery(ctx, r, q, "count", a.limit)
	}
	if ci == nil {
		r.Out = bsoncore.AppendInt32Element(r.Out, "n", 0)
		return nil
	}
	var n int64
	if f.IsEmpty() && a.hint.Type == 0 && r.Barrier == nil { // a linearizable count reads
		if n, err = h.Route.DocCount(ctx, ci); err != nil { // not the data of moves in flight
			return err
		}
		n = max(n-a.skip, 0)
		if a.limit > 0 {
			n = min(n, a.limit)
		}
	} else {
		ctx, cancel := h.Deadline(ctx, a.maxTimeMS)
		defer cancel()
		stream, plan, shards, err := h.QueryFor(r).Open(q)
		if err != nil {
			return err
		}
		r.Plan = plan
		defer stream.Close()
		for a.limit == 0 || n < a.limit {
			d, err := stream.Next(ctx)
			if err != nil {
				return query.TimeLimitError(ctx, err)
			}
			if d == nil {
				break
			}
			n++
		}
		for _, s := range shards {
			r.Charge += s.Stats.Charge()
		}
	}
	r.Out = bsonx.AppendIntElement(r.Out, "n", n)
	return nil
}

// distinctArgs are the arguments of a distinct command.
type distinctArgs struct {
	coll, key         string
	filter, collation bsoncore.Document
	hint              bsoncore.Value
	maxTimeMS         int64
}

// parseDistinct parses a distinct command's body.
func parseDistinct(body bsoncore.Document) (*distinctArgs, error) {
	const cmd = "distinct"
	first, _ := bsonx.FirstElement(body)
	coll, err := args.Collection(cmd, first.Value())
	if err != nil {
		return nil, err
	}
	a := &distinctArgs{coll: coll}
	haveKey := false
	maxTime, err := args.ForEachMaxTime(cmd, body, func(k string, v bsoncore.Value) (bool, error) {
		var err error
		switch k {
		case "key":
			haveKey = true
			a.key, err = args.String(cmd, k, v)
		case "query":
			a.filter, err = args.OptionalDoc(cmd, k, v)
		case "collation":
			a.collation, err = args.Doc(cmd, k, v)
		case "hint":
			a.hint = v
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if !haveKey {
		return nil, args.Missing(cmd, "key")
	}
	if err := catalog.CheckCollation(a.collation); err != nil {
		return nil, err
	}
	if maxTime.Type != 0 {
		if a.maxTimeMS, err = command.MaxTimeMS(cmd, maxTime); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// distinct runs the distinct command.
func (h *Handlers) distinct(ctx context.Context, r *command.Request) error {
	a, err := parseDistinct(r.Body)
	if err != nil {
		return err
	}
	ctx, cancel := h.Deadline(ctx, a.maxTimeMS)
	defer cancel()
	coll, key, filter, hint := a.coll, a.key, a.filter, a.hint
	var values []bsoncore.Value
	if h.IsView(r.DB, coll) {
		if values, err = h.distinctView(ctx, r, coll, filter, hint, key); err != nil || r.Explain != "" {
			return err
		}
	} else {
		ci, err := h.Cat.Lookup(r.DB, coll)
		if err != nil {
			return err
		}
		coll, err := CollationFor(a.collation, ci)
		if err != nil {
			return err
		}
		f, err := query.CompileFilterWith(filter, nil, coll)
		if err == nil {
			err = refuseNear(f)
		}
		if err != nil {
			return err
		}
		q := &query.Query{CI: ci, Filter: f, Hint: hint, Unordered: true, Distinct: key} // the values are sorted
		if r.Explain != "" {
			return h.explainQuery(ctx, r, q, "distinct", 0)
		}
		if ci != nil {
			if values, err = h.distinctValues(ctx, r, q, key); err != nil {
				return query.TimeLimitError(ctx, err)
			}
		}
	}
	aidx, out := bsoncore.AppendArrayElementStart(r.Out, "values")
	size := 0
	for i, v := range values {
		size += len(v.Data)
		if size > cursor.MaxBatchBytes {
			return mongoerr.New(mongoerr.BSONObjectTooLarge, "distinct too big, 16mb cap")
		}
		out = bsoncore.AppendValueElement(out, bsonx.ArrayKey(i), v)
	}
	r.Out, _ = bsoncore.AppendArrayEnd(out, aidx)
	return nil
}

// distinctValues collects the distinct values of path among q's matches, sorted in
// MongoDB's order. Array values contribute their elements.
func (h *Handlers) distinctValues(ctx context.Context, r *command.Request, q *query.Query, path string) ([]bsoncore.Value, error) {
	stream, plan, shards, err := h.QueryFor(r).Open(q)
	if err != nil {
		return nil, err
	}
	r.Plan = plan
	defer stream.Close()
	values, err := collectDistinct(ctx, stream, path, q.Collator())
	for _, s := range shards {
		r.Charge += s.Stats.Charge()
	}
	return values, err
}

// distinctView runs distinct on view coll: the distinct values of path among the
// documents of the view's pipeline followed by $match filter.
func (h *Handlers) distinctView(ctx context.Context, r *command.Request, coll string, filter bsoncore.Document, hint bsoncore.Value, path string) ([]bsoncore.Value, error) {
	var stages []bsoncore.Document
	if len(filter) > 5 {
		stages = append(stages, stage("$match", bsonx.DocValue(filter)))
	}
	if r.Explain != "" {
		return nil, h.explainViewRead(ctx, r, coll, stages)
	}
	s, charge, err := h.openViewRead(r, coll, stages, hint)
	if err != nil {
		return nil, err
	}
	defer charge()
	defer s.Close()
	return collectDistinct(ctx, s, path, nil)
}

// collectDistinct collects the distinct values of path among the documents of in, sorted
// in MongoDB's order. Array values contribute their elements.
func collectDistinct(ctx context.Context, stream stream.Stream, path string, coll bsonx.Collator) ([]bsoncore.Value, error) {
	seen := map[string]bool{}
	var values []bsoncore.Value
	var kb []byte
	for {
		d, err := stream.Next(ctx)
		if err != nil {
			return nil, err
		}
		if d == nil {
			break
		}
		bsonx.WalkPath(d, path, func(m bsonx.PathMatch) bool {
			if m.Missing {
				return true
			}
			if m.Value.Type == bsoncore.TypeArray && !m.InLeafArray {
				return true // its elements come as matches of their own
			}
			kb = bsonx.AppendKey(kb[:0], bsonx.Collate(coll, m.Value)) // one value per class of equals
			if !seen[string(kb)] {
				seen[string(kb)] = true
				values = append(values, bsoncore.Value{Type: m.Value.Type, Data: append([]byte(nil), m.Value.Data...)})
			}
			return true
		})
	}
	sort.SliceStable(values, func(i, j int) bool {
		return bsonx.Compare(bsonx.Collate(coll, values[i]), bsonx.Collate(coll, values[j])) < 0
	})
	return values, nil
}
