package agg

import (
	"bytes"
	"context"
	"sort"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// windowStage is $setWindowFields: documents are sorted by partitionBy then sortBy (the
// $sort MongoDB inserts), read one partition at a time, and each gets the output fields
// computed by window functions over the documents of its partition.
type windowStage struct {
	raw       bsoncore.Value
	env       *Env
	partition *expr.Expr // nil: one partition
	sort      windowSort
	funcs     []*winFunc
	// out sets the output fields as $addFields does; field i reads parameter outParam(i).
	out *projNode
}

// windowSort is $setWindowFields' sortBy.
type windowSort struct {
	present bool // sortBy was given (it may be empty)
	fields  []bsonx.SortField
	path    *expr.Expr // "$<field>" when there is one field: range windows read it
}

// outParam names the parameter that carries output field i's value into the $addFields tree.
func outParam(i int) string { return "swfout" + strconv.Itoa(i) }

// parseWindowStage parses {$setWindowFields: {partitionBy, sortBy, output}}.
func parseWindowStage(env *Env, _ string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $setWindowFields stage specification must be an object, found %s", bsonx.TypeName(arg.Type))
	}
	s := &windowStage{raw: arg, env: env}
	var partBy bsoncore.Value
	var sortDoc, output bsoncore.Document
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "partitionBy":
			partBy = v
		case "sortBy", "output":
			doc, ok := v.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$setWindowFields.%s' is the wrong type '%s', expected type 'object'",
					el.Key(), bsonx.TypeName(v.Type))
			}
			if el.Key() == "sortBy" {
				sortDoc = doc
			} else {
				output = doc
			}
		default:
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field '$setWindowFields.%s' is an unknown field.", el.Key())
		}
	}
	if output == nil {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$setWindowFields.output' is missing but a required field")
	}
	if err := s.parseSortBy(sortDoc); err != nil {
		return nil, err
	}
	if err := s.parsePartitionBy(partBy); err != nil {
		return nil, err
	}
	if err := s.parseOutput(output); err != nil {
		return nil, err
	}
	return s, nil
}

// parseSortBy parses sortBy.
func (s *windowStage) parseSortBy(d bsoncore.Document) error {
	if d == nil {
		return nil
	}
	fields, err := query.ParseSort(d)
	if err != nil {
		return err
	}
	s.sort = windowSort{present: true, fields: fields}
	if len(fields) == 1 {
		if s.sort.path, err = s.env.CompileExpr(bsonx.StringValue("$" + fields[0].Path)); err != nil {
			return err
		}
	}
	return nil
}

// parsePartitionBy compiles partitionBy; a constant partitions nothing.
func (s *windowStage) parsePartitionBy(v bsoncore.Value) error {
	if v.Type == 0 {
		return nil
	}
	e, err := s.env.CompileExpr(v)
	if err != nil {
		return err
	}
	if e.IsConstant() {
		c, err := e.Eval(query.EmptyDoc, nil)
		if err == nil && c.Type == bsoncore.TypeArray {
			return mongoerr.New(mongoerr.TypeMismatch, "An expression used to partition cannot evaluate to value of type array")
		}
		return nil
	}
	s.partition = e
	return nil
}

// parseOutput parses the output fields and builds the $addFields tree that sets them.
func (s *windowStage) parseOutput(output bsoncore.Document) error {
	s.out = &projNode{}
	elems, _ := output.Elements()
	params := make([]string, len(elems))
	for i := range elems {
		params[i] = outParam(i)
	}
	for i, el := range elems {
		k := el.Key()
		parts, err := expr.SplitPath(k)
		if err != nil {
			return err
		}
		pe, err := expr.Compile(bsonx.StringValue("$$"+params[i]), &expr.Options{Params: params})
		if err != nil {
			return err
		}
		if !s.out.addComputed(parts, pe) {
			return mongoerr.New(mongoerr.Location6307900, "$setWindowFields 'output' specification contains two conflicting paths")
		}
		d, ok := el.Value().DocumentOK()
		if !ok {
			return mongoerr.New(mongoerr.FailedToParse, "The field '%s' must be an object", k)
		}
		f, err := parseWindowFunc(s.env, d, &s.sort)
		if err != nil {
			return err
		}
		s.funcs = append(s.funcs, f)
	}
	return nil
}

// addComputed adds the computed field at path parts to n; it reports false when the path
// conflicts with one already there (a prefix of it, or it a prefix of another).
func (n *projNode) addComputed(parts []string, e *expr.Expr) bool {
	for _, c := range parts[:len(parts)-1] {
		f := n.child(c)
		if f.e != nil {
			return false
		}
		if f.sub == nil {
			f.sub = &projNode{}
		}
		n = f.sub
	}
	f := n.child(parts[len(parts)-1])
	if f.e != nil || f.sub != nil {
		return false
	}
	f.e = e
	return true
}

// Spec implements Stage.
func (s *windowStage) Spec() bsoncore.Document { return StageSpec("$setWindowFields", s.raw) }

// Open implements Stage.
func (s *windowStage) Open(in stream.Stream) (stream.Stream, error) {
	return &windowStream{s: s, in: in, vars: expr.NewVars(), cvars: expr.NewVars(), outVars: expr.NewVars(),
		res: s.env.reservation()}, nil
}

// keyedDoc is an input document with its partition key (and, for sorting, its sort key).
type keyedDoc struct {
	doc  bsoncore.Document
	part []byte
	key  []byte
}

// windowStream runs $setWindowFields over its input.
type windowStream struct {
	s       *windowStage
	in      stream.Stream
	vars    *expr.Vars // partitionBy and the functions' inputs
	cvars   *expr.Vars // the functions' arithmetic (calcs)
	outVars *expr.Vars // the $addFields tree
	sorted  []keyedDoc // the sorted input, when the stage sorts
	sorts   bool
	started bool
	pending *keyedDoc // the first document of the next partition
	eof     bool
	part    *winPart
	evals   []winEval
	res     *stream.Reservation // what the partition holds of the memory account
	i       int
	buf     []byte
	chk     stream.Checker // over the documents read into partitions, across them
}

// Next implements stream.Stream.
func (w *windowStream) Next(ctx context.Context) (bsoncore.Document, error) {
	if !w.started {
		w.started = true
		w.sorts = w.s.partition != nil || len(w.s.sort.fields) > 0
		if w.sorts {
			if err := w.sortInput(ctx); err != nil {
				return nil, err
			}
		}
	}
	for w.part == nil || w.i >= len(w.part.docs) {
		ok, err := w.loadPartition(ctx)
		if err != nil || !ok {
			return nil, err
		}
	}
	i := w.i
	w.i++
	for k, ev := range w.evals {
		v, err := ev.at(i)
		if err != nil {
			return nil, err
		}
		w.outVars.Set(outParam(k), v)
	}
	if err := w.part.checkMemory(w.s.env); err != nil {
		return nil, err
	}
	d := w.part.docs[i]
	out, err := appendAddFields(w.buf[:0], w.s.out, d, d, w.outVars)
	if err != nil {
		return nil, err
	}
	w.buf = out
	return out, nil
}

// Close implements stream.Stream.
func (w *windowStream) Close() {
	w.in.Close()
	w.sorted, w.part, w.evals = nil, nil, nil
	w.res.Release()
}

// partitionKey evaluates partitionBy on d: missing is null, arrays are refused.
func (w *windowStream) partitionKey(dst []byte, d bsoncore.Document) ([]byte, error) {
	if w.s.partition == nil {
		return dst, nil
	}
	v, err := w.s.partition.Eval(d, w.vars)
	if err != nil {
		return nil, err
	}
	switch v.Type {
	case 0:
		v = NullValue
	case bsoncore.TypeArray:
		return nil, mongoerr.New(mongoerr.TypeMismatch, "Cannot 'partitionBy' an expression of type array")
	}
	return bsonx.AppendKey(dst, v), nil
}

// sortInput reads the whole input and sorts it by partition key, then sortBy (a stable
// sort bounded like $sort).
func (w *windowStream) sortInput(ctx context.Context) error {
	var size int64
	var chk stream.Checker
	for {
		d, err := w.in.Next(ctx)
		if err != nil {
			return err
		}
		if d == nil {
			break
		}
		if err := chk.Tick(ctx); err != nil {
			return err
		}
		kd := keyedDoc{doc: append(bsoncore.Document(nil), d...)}
		if kd.part, err = w.partitionKey(nil, d); err != nil {
			return err
		}
		if kd.key, err = stream.SortKey(append([]byte(nil), kd.part...), d, w.s.sort.fields, w.s.env.Collator()); err != nil {
			return err
		}
		size += int64(len(kd.doc) + len(kd.key) + len(kd.part))
		if size > stream.MaxBlockingSortBytes && !w.s.env.AllowDiskUse {
			return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed,
				"PlanExecutor error during aggregation :: caused by :: Sort exceeded memory limit of %d bytes, but did not opt in to external sorting.", stream.MaxBlockingSortBytes)
		}
		w.sorted = append(w.sorted, kd)
	}
	sort.SliceStable(w.sorted, func(i, j int) bool { return bytes.Compare(w.sorted[i].key, w.sorted[j].key) < 0 })
	w.in.Close()
	return nil
}

// nextInput returns the next input document with its partition key, or nil at the end.
func (w *windowStream) nextInput(ctx context.Context) (*keyedDoc, error) {
	if w.sorts {
		if len(w.sorted) == 0 {
			return nil, nil
		}
		kd := w.sorted[0]
		// Drop the reference so that finished partitions can be collected.
		w.sorted[0] = keyedDoc{}
		w.sorted = w.sorted[1:]
		return &kd, nil
	}
	d, err := w.in.Next(ctx)
	if d == nil || err != nil {
		return nil, err
	}
	return &keyedDoc{doc: append(bsoncore.Document(nil), d...)}, nil
}

// loadPartition reads the next partition and prepares its window functions; it reports
// false at the end of the input.
func (w *windowStream) loadPartition(ctx context.Context) (bool, error) {
	first := w.pending
	w.pending = nil
	if first == nil && !w.eof {
		var err error
		if first, err = w.nextInput(ctx); err != nil {
			return false, err
		}
	}
	if first == nil {
		w.eof = true
		return false, nil
	}
	p := &winPart{s: w.s, vars: w.vars, cvars: w.cvars, docs: []bsoncore.Document{first.doc}, mem: int64(len(first.doc)),
		res: w.res}
	for {
		kd, err := w.nextInput(ctx)
		if err != nil {
			return false, err
		}
		if kd == nil {
			w.eof = true
			break
		}
		if err := w.chk.Tick(ctx); err != nil {
			return false, err
		}
		if !bytes.Equal(kd.part, first.part) {
			w.pending = kd
			break
		}
		p.docs = append(p.docs, kd.doc)
		p.mem += int64(len(kd.doc))
		hold(p.res, p.mem)
		if w.s.env.overMemory(p.mem) {
			return false, mongoerr.New(mongoerr.Location5643011, "Exceeded max memory. Set 'allowDiskUse: true' to spill to disk")
		}
	}
	w.part, w.i = p, 0
	w.evals = w.evals[:0]
	for _, f := range w.s.funcs {
		w.evals = append(w.evals, newWinEval(p, f))
	}
	return true, nil
}

// winPart is one partition: its documents in sortBy order and what the window functions
// share about them.
type winPart struct {
	s        *windowStage
	vars     *expr.Vars // inputs and sortBy values
	cvars    *expr.Vars // calcs
	docs     []bsoncore.Document
	mem      int64               // bytes held: documents, cached values, function states
	res      *stream.Reservation // mem's share of the memory account (the stream's)
	sortVals []bsoncore.Value    // sortBy values, computed on first use
	runStart [2][]int            // per sortRuns flavour (numbers, dates)
	runEnd   [2][]int
}

// checkMemory fails when the partition and its functions' state exceed the stage's bound.
func (p *winPart) checkMemory(env *Env) error {
	hold(p.res, p.mem)
	if env.overMemory(p.mem) {
		limit := env.MemLimit
		if limit == 0 {
			limit = MaxStageBytes
		}
		return mongoerr.New(mongoerr.Location5414201, "Exceeded memory limit in DocumentSourceSetWindowFields, used %d bytes but max allowed is %d", p.mem, limit)
	}
	return nil
}
