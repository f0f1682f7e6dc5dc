package agg

import (
	"context"
	"slices"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// GroupStage is $group: documents grouped by the value of _id, each group folded through the
// accumulators. Groups come out in the order they were first seen (MongoDB leaves it
// unspecified).
type GroupStage struct {
	name string
	raw  bsoncore.Value
	id   *expr.Expr
	accs []*accSpec
	env  *Env
	// bucket, when set, maps the _id value to its bucket ($bucket) and sorts the output.
	bucket func(v bsoncore.Value) (bsoncore.Value, error)
}

// one is int32(1), the input of $count.
var one = bsoncore.Value{Type: bsoncore.TypeInt32, Data: []byte{1, 0, 0, 0}}

// parseGroupStage parses {$group: {_id: expr, field: {acc: expr}, ...}}.
func parseGroupStage(env *Env, name string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location15947, "a group's fields must be specified in an object")
	}
	s := &GroupStage{name: name, raw: arg, env: env}
	elems, _ := d.Elements()
	for _, el := range elems {
		k := el.Key()
		if k == "_id" {
			id, err := env.CompileExpr(el.Value())
			if err != nil {
				return nil, err
			}
			s.id = id
			continue
		}
		if err := s.addAccumulator(k, el.Value()); err != nil {
			return nil, err
		}
	}
	if s.id == nil {
		return nil, mongoerr.New(mongoerr.Location15955, "a group specification must include an _id")
	}
	return s, nil
}

// addAccumulator parses the accumulator of output field k.
func (s *GroupStage) addAccumulator(k string, v bsoncore.Value) error {
	if strings.HasPrefix(k, "$") {
		return mongoerr.New(mongoerr.Location40236, "The field name '%s' cannot be an operator name", k)
	}
	if strings.Contains(k, ".") {
		return mongoerr.New(mongoerr.Location40235, "The field name '%s' cannot contain '.'", k)
	}
	a, err := parseAccumulator(s.env, k, v)
	if err != nil {
		return err
	}
	s.accs = append(s.accs, a)
	return nil
}

// Spec implements Stage.
func (s *GroupStage) Spec() bsoncore.Document { return StageSpec(s.name, s.raw) }

// distinctPath returns the field a $group groups by ({_id: "$dev"}) when one document of
// each of that field's values gives its output, as distinct reads them (Query.Distinct): it
// has no accumulators (acc ""), or only $first accumulators, which take the first document
// of each value in the order of the sort before them (the latest reading of each device:
// $sort {dev: 1, t: -1} or {t: -1}, $group {_id: "$dev", last: {$first: "$$ROOT"}}), or only
// $last ones, which take the last (Pipeline.sortedDistinct). path is "" when none holds.
func (s *GroupStage) distinctPath() (path, acc string) {
	if s.name != "$group" || s.bucket != nil {
		return "", ""
	}
	path, ok := s.id.FieldPath()
	if !ok {
		return "", ""
	}
	if len(s.accs) == 0 {
		return path, ""
	}
	acc = s.accs[0].op
	if acc != "$first" && acc != "$last" {
		return "", ""
	}
	for _, a := range s.accs {
		if a.op != acc {
			return "", ""
		}
	}
	return path, acc
}

// topSort returns, for a $group by a field path whose accumulators are all $top or $bottom
// ranking by one order ($bottom's reversed), that order without the field (which is
// constant within a group): the first document of each value in it gives the group's output,
// as a distinct scan sorted on the field and then that order reads (MongoDB 8.0's
// DISTINCT_SCAN for $top and $bottom).
func (s *GroupStage) topSort() (path string, by []bsonx.SortField, ok bool) {
	if s.name != "$group" || s.bucket != nil || len(s.accs) == 0 {
		return "", nil, false
	}
	if path, ok = s.id.FieldPath(); !ok {
		return "", nil, false
	}
	for i, a := range s.accs {
		if a.op != "$top" && a.op != "$bottom" {
			return "", nil, false
		}
		order := a.sortBy
		if a.op == "$bottom" {
			order = bsonx.ReverseSort(order)
		}
		if len(order) > 0 && order[0].Path == path {
			order = order[1:]
		}
		for _, f := range order {
			if f.Path == path {
				return "", nil, false
			}
		}
		if i == 0 {
			by = order
		} else if !slices.Equal(by, order) {
			return "", nil, false
		}
	}
	return path, by, true
}

// lastAsFirst returns a copy of s, a $group whose accumulators are all $last, with $first
// accumulators instead, for input sorted the other way: its spec says so too.
func (s *GroupStage) lastAsFirst() *GroupStage {
	c := *s
	c.accs = make([]*accSpec, len(s.accs))
	for i, a := range s.accs {
		f := *a
		f.op = "$first"
		c.accs[i] = &f
	}
	d := s.raw.Document()
	idx, out := bsoncore.AppendDocumentStart(nil)
	elems, _ := d.Elements()
	for _, el := range elems {
		acc, ok := el.Value().DocumentOK()
		if el.Key() == "_id" || !ok {
			out = bsoncore.AppendValueElement(out, el.Key(), el.Value())
			continue
		}
		op, _ := bsonx.FirstElement(acc) // validated by parseAccumulator: {$last: input}
		ai, o := bsoncore.AppendDocumentElementStart(out, el.Key())
		o = bsoncore.AppendValueElement(o, "$first", op.Value())
		out, _ = bsoncore.AppendDocumentEnd(o, ai)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	c.raw = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: out}
	return &c
}

// readsNoFields implements fieldless: a $group whose _id and accumulator inputs are constants
// ({_id: null, n: {$sum: 1}}, what countDocuments sends) reads nothing of its input documents.
func (s *GroupStage) readsNoFields() bool {
	if s.bucket != nil || !s.id.IsConstant() {
		return false
	}
	for _, a := range s.accs {
		if a.op != "$count" && (a.input == nil || !a.input.IsConstant() || a.n != nil || a.sortBy != nil || a.output != nil) {
			return false
		}
	}
	return true
}

// group is one group being accumulated.
type group struct {
	id     bsoncore.Value
	states []accState
}

// Open implements Stage.
func (s *GroupStage) Open(in stream.Stream) (stream.Stream, error) {
	return &groupStream{s: s, in: in}, nil // group_spill.go
}

// groupTable holds the groups of one $group (or one shard's part of it).
type groupTable struct {
	s             *GroupStage
	groups        map[string]*group
	order         []*group
	mem           int64
	key           []byte
	vars, accVars *expr.Vars
	fields        *groupFields // nil: every expression is evaluated (group_fields.go)
	// last is the group of the _id group met last, and lastID that _id's type and bytes:
	// inputs often come in runs of one _id (a collection sharded on the field grouped by,
	// read in key order), and the same bytes make the same key, collated or not.
	last   *group
	lastID []byte
	// res is the table's share of the server's memory Budget: only a spillable table's,
	// which its groupStream releases at Close; nil: none.
	res *stream.Reservation
	// spillable tables spill past the memory bound with allowDiskUse; spill is then set
	// (group_spill.go).
	spillable bool
	spill     *store.Spill
}

// newTable returns an empty group table.
func (s *GroupStage) newTable() *groupTable {
	return &groupTable{s: s, groups: map[string]*group{}, vars: expr.NewVars(), accVars: expr.NewVars(),
		fields: s.planFields()}
}

// consume folds every document of in into the table.
func (t *groupTable) consume(ctx context.Context, in stream.Stream) error {
	s := t.s
	// A constant _id ({_id: null}, countDocuments' {_id: 1}) makes one group: it is looked up
	// once.
	var only *group
	var chk stream.Checker
	y := stream.NewYieldPolicy()
	for {
		// The document met last is folded and copied by now: a long input gives up its
		// read view now and then, as a blocking sort's load does (stream.YieldPolicy).
		if y.Due() {
			stream.Yield(in, false)
		}
		d, err := in.Next(ctx)
		if err != nil || d == nil {
			return err
		}
		if err := chk.Tick(ctx); err != nil {
			return err
		}
		if t.fields != nil {
			t.fields.load(d)
		}
		g := only
		if g == nil {
			id, err := t.docID(d)
			if err != nil {
				return err
			}
			if g, err = t.group(id); err != nil {
				return err
			}
			if s.id.IsConstant() && s.bucket == nil {
				only = g
			}
		}
		if err := t.fold(g, d); err != nil {
			return err
		}
		if t.over() {
			if err := t.overflow(ctx, in); err != nil || t.spill != nil {
				return err
			}
		}
	}
}

// over reports whether the table must overflow: past its own bound, or refused more of the
// server's memory Budget while it may spill (allowDiskUse) and holds enough to be worth it.
// Otherwise what it holds is charged to the budget, past its limit if need be.
func (t *groupTable) over() bool {
	if t.mem > t.s.maxMemory() {
		return true
	}
	delta := t.mem - t.res.Held()
	if delta <= 0 || t.res.Grow(delta) {
		return false
	}
	if t.spillable && t.s.env.AllowDiskUse && t.mem >= stream.MinBudgetSpill {
		return true
	}
	t.res.Force(delta)
	return false
}

// group returns the group of id, creating it.
func (t *groupTable) group(id bsoncore.Value) (*group, error) {
	if t.last != nil && len(t.lastID) == 1+len(id.Data) && t.lastID[0] == byte(id.Type) && string(t.lastID[1:]) == string(id.Data) {
		return t.last, nil
	}
	t.key = bsonx.AppendKey(t.key[:0], bsonx.Collate(t.s.env.Collator(), id))
	g := t.groups[string(t.key)]
	if g == nil {
		var err error
		if g, err = t.s.newGroup(id); err != nil {
			return nil, err
		}
		t.groups[string(t.key)] = g
		t.order = append(t.order, g)
		t.mem += int64(2*len(t.key) + 64 + 32*len(t.s.accs))
	}
	t.last, t.lastID = g, append(append(t.lastID[:0], byte(id.Type)), id.Data...)
	return g, nil
}

// docID returns the _id of d's group, from the fields load read when _id is one of them.
func (t *groupTable) docID(d bsoncore.Document) (bsoncore.Value, error) {
	if v, ok := t.fields.idOf(); ok {
		return t.s.finishID(v)
	}
	return t.s.groupID(d, t.vars)
}

// fold feeds d to g's accumulators, the inputs that are fields from what load read.
func (t *groupTable) fold(g *group, d bsoncore.Document) error {
	for i, a := range t.s.accs {
		var n int
		var err error
		if v, ok := t.fields.accOf(i); ok {
			n, err = g.states[i].add(v, d)
		} else {
			n, err = t.s.accumulate(a, g.states[i], d, t.accVars)
		}
		if err != nil {
			return err
		}
		t.mem += int64(n)
	}
	return nil
}

// accumulate feeds document d to accumulator a's state st.
func (s *GroupStage) accumulate(a *accSpec, st accState, d bsoncore.Document, vars *expr.Vars) (int, error) {
	var v bsoncore.Value
	switch {
	case a.op == "$count":
		v = one
	case a.input != nil:
		var err error
		if v, err = a.input.Eval(d, vars); err != nil {
			return 0, err
		}
	}
	return st.add(v, d)
}

// finish builds the output documents {_id, fields...}.
func (s *GroupStage) finish(order []*group) ([]bsoncore.Document, error) {
	out := make([]bsoncore.Document, 0, len(order))
	for _, g := range order {
		idx, b := bsoncore.AppendDocumentStart(nil)
		b = bsoncore.AppendValueElement(b, "_id", g.id)
		for i, a := range s.accs {
			v, err := g.states[i].result()
			if err != nil {
				return nil, err
			}
			b = bsoncore.AppendValueElement(b, a.field, v)
		}
		b, err := bsoncore.AppendDocumentEnd(b, idx)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// parseSortByCountStage parses {$sortByCount: expr}: $group {_id: expr, count: {$sum: 1}}
// then $sort {count: -1}.
func parseSortByCountStage(env *Env, name string, arg bsoncore.Value) (Stage, error) {
	isPath := isFieldPath(arg)
	if !isPath && (arg.Type != bsoncore.TypeEmbeddedDocument || isNestedSpec(arg)) {
		return nil, mongoerr.New(mongoerr.Location40148, "the sortByCount field must be defined as a $-prefixed path or an expression")
	}
	id, err := env.CompileExpr(arg)
	if err != nil {
		return nil, err
	}
	g := &GroupStage{name: name, raw: arg, id: id, env: env,
		accs: []*accSpec{{field: "count", op: "$count"}}}
	return &chainStage{name: name, raw: arg, stages: []Stage{g,
		&sortStage{keys: []bsonx.SortField{{Path: "count", Desc: true}}, env: env}}}, nil
}

// chainStage is a stage that runs as a sequence of other stages ($sortByCount).
type chainStage struct {
	name   string
	raw    bsoncore.Value
	stages []Stage
}

// Open implements Stage.
func (s *chainStage) Open(in stream.Stream) (stream.Stream, error) {
	out := in
	for _, st := range s.stages {
		next, err := st.Open(out)
		if err != nil {
			out.Close()
			return nil, err
		}
		out = next
	}
	return out, nil
}

// Spec implements Stage.
func (s *chainStage) Spec() bsoncore.Document { return StageSpec(s.name, s.raw) }

// parseBucketStage parses {$bucket: {groupBy, boundaries, default, output}}.
func parseBucketStage(env *Env, name string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40201, "Argument to $bucket stage must be an object, but found type: %s.", bsonx.TypeName(arg.Type))
	}
	s := &GroupStage{name: name, raw: arg, env: env}
	var bounds []bsoncore.Value
	var def bsoncore.Value
	var output bsoncore.Document
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "groupBy":
			if !isFieldPath(v) && (v.Type != bsoncore.TypeEmbeddedDocument || isNestedSpec(v)) {
				return nil, mongoerr.New(mongoerr.Location40202, "The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, but found: %s.", bsonx.ShellString(v))
			}
			e, err := env.CompileExpr(v)
			if err != nil {
				return nil, err
			}
			s.id = e
		case "boundaries":
			arr, ok := v.ArrayOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.Location40200, "The $bucket 'boundaries' field must be an array, but found type: %s.", bsonx.TypeName(v.Type))
			}
			bounds, _ = arr.Values()
		case "default":
			def = v
		case "output":
			o, ok := v.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.Location40196, "The $bucket 'output' field must be an object, but found type: %s.", bsonx.TypeName(v.Type))
			}
			output = o
		default:
			return nil, mongoerr.New(mongoerr.Location40197, "Unrecognized option to $bucket: %s.", el.Key())
		}
	}
	if s.id == nil || bounds == nil {
		return nil, mongoerr.New(mongoerr.Location40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.")
	}
	if err := checkBoundaries(bounds, def); err != nil {
		return nil, err
	}
	if output == nil {
		s.accs = []*accSpec{{field: "count", op: "$count"}}
	} else {
		oe, _ := output.Elements()
		for _, el := range oe {
			if err := s.addAccumulator(el.Key(), el.Value()); err != nil {
				return nil, err
			}
		}
	}
	s.bucket = func(v bsoncore.Value) (bsoncore.Value, error) {
		if v.Type == bsoncore.TypeNull && v.Data == nil {
			v = NullValue
		}
		if bsonx.Compare(v, bounds[0]) >= 0 && bsonx.Compare(v, bounds[len(bounds)-1]) < 0 {
			i := sort.Search(len(bounds), func(i int) bool { return bsonx.Compare(bounds[i], v) > 0 })
			return bounds[i-1], nil
		}
		if def.Type == 0 {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location40066, "$switch could not find a matching branch for an input, and no default was specified.")
		}
		return def, nil
	}
	return s, nil
}

// checkBoundaries checks $bucket's boundaries: at least two, one type (numbers mix), strictly
// ascending, and a default outside them.
func checkBoundaries(bounds []bsoncore.Value, def bsoncore.Value) error {
	if len(bounds) < 2 {
		return mongoerr.New(mongoerr.Location40192, "The $bucket 'boundaries' field must have at least 2 values, but found %d value(s).", len(bounds))
	}
	for i := 1; i < len(bounds); i++ {
		a, b := bounds[i-1], bounds[i]
		if bsonx.CanonicalRank(a.Type) != bsonx.CanonicalRank(b.Type) {
			return mongoerr.New(mongoerr.Location40193, "All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types %s and %s.", bsonx.TypeName(a.Type), bsonx.TypeName(b.Type))
		}
		if bsonx.Compare(a, b) >= 0 {
			return mongoerr.New(mongoerr.Location40194, "The 'boundaries' option to $bucket must be sorted in ascending order, but elements %d and %d are not in ascending order (%s is not less than %s).",
				i-1, i, bsonx.ShellString(a), bsonx.ShellString(b))
		}
	}
	if def.Type != 0 && bsonx.CanonicalRank(def.Type) == bsonx.CanonicalRank(bounds[0].Type) &&
		bsonx.Compare(def, bounds[0]) >= 0 && bsonx.Compare(def, bounds[len(bounds)-1]) < 0 {
		return mongoerr.New(mongoerr.Location40199, "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.")
	}
	return nil
}
