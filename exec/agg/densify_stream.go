package agg

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Open implements Stage.
func (s *densifyStage) Open(in stream.Stream) (stream.Stream, error) {
	var keys []bsonx.SortField
	if s.mode != densifyFull {
		for _, p := range s.partitions {
			keys = append(keys, bsonx.SortField{Path: p})
		}
	}
	keys = append(keys, bsonx.SortField{Path: strings.Join(s.field, ".")})
	sorted := &stream.Sort{In: in, Spec: keys, Coll: s.env.Collator(), AllowDiskUse: s.env.AllowDiskUse, MaxBytes: s.env.SortBytes, Temp: s.env.Temp}
	return &densifyStream{s: s, in: sorted, vars: expr.NewVars(), cvars: expr.NewVars(), parts: map[string]*densifyPart{}}, nil
}

// densifyPart is the state of one partition: the last value of the step grid it has
// (fresh: none yet, the grid starts at base) and its partition fields.
type densifyPart struct {
	fields bsoncore.Document
	cur    bsoncore.Value
	fresh  bool
	base   bsoncore.Value
}

// densifyGen emits the grid values [g, limit) of a partition, then final (an input
// document, whose value becomes the partition's last grid value when g reaches it).
type densifyGen struct {
	p        *densifyPart
	g, limit bsoncore.Value
	final    bsoncore.Document
	finalVal bsoncore.Value
}

// densifyStream runs $densify over its sorted input.
type densifyStream struct {
	s         *densifyStage
	in        stream.Stream
	vars      *expr.Vars
	cvars     *expr.Vars
	parts     map[string]*densifyPart
	order     []*densifyPart
	single    *densifyPart // the partition when there are no partitionByFields
	last      *densifyPart // the partition of the last document with a value
	globalMin bsoncore.Value
	globalMax bsoncore.Value
	gen       *densifyGen
	inEOF     bool
	tail      int // the next partition to finish after the input ends
	done      bool
	generated int
	key       []byte
}

// Next implements stream.Stream.
func (w *densifyStream) Next(ctx context.Context) (bsoncore.Document, error) {
	for {
		if w.gen != nil {
			if w.generated%256 == 255 { // generating reads no input, whose scan would check ctx
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			d, err := w.step(w.gen)
			if d != nil || err != nil {
				return d, err
			}
			w.gen = nil
			continue
		}
		if w.done {
			return nil, nil
		}
		if !w.inEOF {
			d, err := w.in.Next(ctx)
			if err != nil {
				return nil, err
			}
			if d == nil {
				w.inEOF = true
				w.in.Close()
				continue
			}
			if err := w.process(d); err != nil {
				return nil, err
			}
			continue
		}
		if err := w.finishNext(); err != nil {
			return nil, err
		}
	}
}

// Close implements stream.Stream.
func (w *densifyStream) Close() { w.in.Close() }

// step returns the next document of g, or nil when it is done.
func (w *densifyStream) step(g *densifyGen) (bsoncore.Document, error) {
	if g.limit.Type != 0 && bsonx.Compare(g.g, g.limit) < 0 {
		w.generated++
		if w.generated > maxDensifyDocs {
			return nil, mongoerr.New(mongoerr.Location5897900, "Generated %d documents in $densify, which is over the limit of %d. Increase the 'internalQueryMaxAllowedDensifyDocs' parameter to allow more generated documents",
				w.generated, maxDensifyDocs)
		}
		d, err := w.build(g.p, g.g)
		if err != nil {
			return nil, err
		}
		g.p.cur, g.p.fresh = g.g, false
		if g.g, err = w.increment(g.g); err != nil {
			return nil, err
		}
		return d, nil
	}
	if g.final == nil {
		return nil, nil
	}
	if g.finalVal.Type != 0 && bsonx.Compare(g.g, g.finalVal) == 0 {
		g.p.cur, g.p.fresh = g.finalVal, false
	}
	d := g.final
	g.final = nil
	return d, nil
}

// increment returns v + step (a $dateAdd of step units for dates).
func (w *densifyStream) increment(v bsoncore.Value) (bsoncore.Value, error) {
	if w.s.unit != "" {
		return w.s.dateAdd.eval(w.cvars, v, w.s.step)
	}
	return expr.AddNumbers(v, w.s.step)
}

// nextOf returns the next grid value of p.
func (w *densifyStream) nextOf(p *densifyPart) (bsoncore.Value, error) {
	if p.fresh {
		return p.base, nil
	}
	return w.increment(p.cur)
}

// process handles one input document: a missing or null value passes through; otherwise
// the grid values before it are generated in its partition.
func (w *densifyStream) process(in bsoncore.Document) error {
	d := append(bsoncore.Document(nil), in...)
	v := lookupDocPath(d, w.s.field)
	if nullish(v) {
		w.gen = &densifyGen{final: d}
		return nil
	}
	switch {
	case !bsonx.IsNumber(v.Type) && v.Type != bsoncore.TypeDateTime:
		return mongoerr.New(mongoerr.Location5733201, "Densify field type must be numeric or a date")
	case w.s.unit == "" && v.Type == bsoncore.TypeDateTime:
		return mongoerr.New(mongoerr.Location6053600, "Encountered date densify value in collection when step does not have a date unit.")
	case w.s.unit != "" && v.Type != bsoncore.TypeDateTime:
		return mongoerr.New(mongoerr.Location6053600, "Encountered numeric densify value in collection when step has a date unit.")
	}
	v = ownValue(v)
	if w.s.mode == densifyFull && w.globalMin.Type == 0 {
		w.globalMin = v
	}
	p, isNew, err := w.partitionOf(d)
	if err != nil {
		return err
	}
	w.last = p
	switch w.s.mode {
	case densifyFull:
		w.globalMax = v
		if isNew {
			p.fresh, p.base = true, w.globalMin
		}
	case densifyPartition:
		if isNew {
			p.cur = v
			w.gen = &densifyGen{final: d}
			return nil
		}
	case densifyExplicit:
		if isNew {
			p.fresh, p.base = true, w.s.lo
		}
		return w.processExplicit(p, d, v)
	}
	next, err := w.nextOf(p)
	if err != nil {
		return err
	}
	w.gen = &densifyGen{p: p, g: next, limit: v, final: d, finalVal: v}
	return nil
}

// processExplicit handles a document with value v of partition p for bounds [lo, hi).
func (w *densifyStream) processExplicit(p *densifyPart, d bsoncore.Document, v bsoncore.Value) error {
	lo, hi := w.s.lo, w.s.hi
	switch c := bsonx.Compare(v, lo); {
	case c < 0:
		w.gen = &densifyGen{final: d}
		return nil
	case c == 0:
		p.cur, p.fresh = v, false
		w.gen = &densifyGen{final: d}
		return nil
	}
	next, err := w.nextOf(p)
	if err != nil {
		return err
	}
	if bsonx.Compare(v, hi) < 0 {
		w.gen = &densifyGen{p: p, g: next, limit: v, final: d, finalVal: v}
	} else {
		w.gen = &densifyGen{p: p, g: next, limit: hi, final: d}
	}
	return nil
}

// partitionOf returns the partition of d, creating it.
func (w *densifyStream) partitionOf(d bsoncore.Document) (*densifyPart, bool, error) {
	if w.s.partExpr == nil {
		if w.single == nil {
			w.single = &densifyPart{fields: query.EmptyDoc}
			w.order = append(w.order, w.single)
			return w.single, true, nil
		}
		return w.single, false, nil
	}
	v, err := w.s.partExpr.Eval(d, w.vars)
	if err != nil {
		return nil, false, err
	}
	w.key = bsonx.AppendKey(w.key[:0], v)
	if p := w.parts[string(w.key)]; p != nil {
		return p, false, nil
	}
	p := &densifyPart{fields: append(bsoncore.Document(nil), v.Document()...)}
	w.parts[string(w.key)] = p
	w.order = append(w.order, p)
	if w.s.env.overMemory(int64(len(w.parts)) * int64(2*len(w.key)+len(p.fields)+96)) {
		return nil, false, mongoerr.New(mongoerr.Location6007200, "$densify exceeded memory limit of %d", MaxStageBytes)
	}
	return p, true, nil
}

// finishNext starts the generation of the next partition's tail once the input has ended:
// up to hi for explicit bounds, up to the largest value seen for "full" with partitions.
func (w *densifyStream) finishNext() error {
	if w.s.mode == densifyExplicit && w.s.partExpr == nil && w.single == nil {
		// No document had a value: the whole range.
		w.single = &densifyPart{fields: query.EmptyDoc, fresh: true, base: w.s.lo}
		w.order = append(w.order, w.single)
	}
	limit := w.s.hi
	switch {
	case w.s.mode == densifyPartition, w.s.mode == densifyFull && w.s.partExpr == nil:
		w.done = true
		return nil
	case w.s.mode == densifyFull:
		limit = w.globalMax
		if w.tail == 0 && w.last != nil && !w.last.fresh {
			on, err := w.onStep(w.globalMax, w.last.cur)
			if err != nil {
				return err
			}
			if on {
				if limit, err = w.increment(w.globalMax); err != nil {
					return err
				}
			}
			w.globalMax = limit
		}
	}
	for w.tail < len(w.order) {
		p := w.order[w.tail]
		w.tail++
		val, err := w.nextOf(p)
		if err != nil {
			return err
		}
		if bsonx.Compare(val, limit) >= 0 {
			continue
		}
		if w.s.mode == densifyExplicit && bsonx.Compare(val, w.s.lo) < 0 {
			val = w.s.lo
		}
		w.gen = &densifyGen{p: p, g: val, limit: limit}
		return nil
	}
	w.done = true
	return nil
}

// onStep reports whether v lies on the step grid through base.
func (w *densifyStream) onStep(v, base bsoncore.Value) (bool, error) {
	if w.s.unit == "" {
		diff, err := calcSubtract.eval(w.cvars, v, base)
		if err != nil {
			return false, err
		}
		rem, err := calcMod.eval(w.cvars, diff, w.s.step)
		if err != nil {
			return false, err
		}
		f, _ := bsonx.NumberAsFloat64(rem)
		return f == 0, nil
	}
	if ms, ok := timeUnitMillis[w.s.unit]; ok {
		n, _ := bsonx.NumberAsInt64(w.s.step)
		return (v.DateTime()-base.DateTime())%(n*ms) == 0, nil
	}
	// Months vary in length: step from base.
	g := base
	for bsonx.Compare(g, v) < 0 {
		var err error
		if g, err = w.increment(g); err != nil {
			return false, err
		}
	}
	return bsonx.Compare(g, v) == 0, nil
}

// build returns a generated document: p's partition fields with the field set to v.
func (w *densifyStream) build(p *densifyPart, v bsoncore.Value) (bsoncore.Document, error) {
	return setDocPath(nil, p.fields, w.s.field, v)
}

// lookupDocPath returns the value at path in d through embedded documents only (arrays
// end the path, as MongoDB's getNestedField does), or missing.
func lookupDocPath(d bsoncore.Document, path []string) bsoncore.Value {
	cur := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
	for _, c := range path {
		doc, ok := cur.DocumentOK()
		if !ok {
			return bsoncore.Value{}
		}
		v, err := doc.LookupErr(c)
		if err != nil {
			return bsoncore.Value{}
		}
		cur = v
	}
	return cur
}

// setDocPath appends d with path set to v, creating embedded documents; it refuses to go
// through arrays or to overwrite other values with documents.
func setDocPath(dst []byte, d bsoncore.Document, path []string, v bsoncore.Value) ([]byte, error) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	found := false
	elems, _ := d.Elements()
	for _, el := range elems {
		if el.Key() != path[0] {
			dst = append(dst, el...)
			continue
		}
		found = true
		var err error
		if dst, err = setDocPathValue(dst, el.Value(), path, v); err != nil {
			return nil, err
		}
	}
	if !found {
		var err error
		if dst, err = setDocPathValue(dst, bsoncore.Value{}, path, v); err != nil {
			return nil, err
		}
	}
	return bsoncore.AppendDocumentEnd(dst, idx)
}

// setDocPathValue appends path[0]: old with the rest of path set to v.
func setDocPathValue(dst []byte, old bsoncore.Value, path []string, v bsoncore.Value) ([]byte, error) {
	if len(path) == 1 {
		return bsoncore.AppendValueElement(dst, path[0], v), nil
	}
	switch old.Type {
	case bsoncore.TypeArray:
		return nil, mongoerr.New(mongoerr.Location5733307, "$densify cannot generate fields nested inside arrays")
	case 0, bsoncore.TypeEmbeddedDocument:
	default:
		return nil, mongoerr.New(mongoerr.Location5733308, "$densify cannot overwrite non-object values with objects")
	}
	sub := query.EmptyDoc
	if old.Type != 0 {
		sub = old.Document()
	}
	dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, path[0])
	return setDocPath(dst, sub, path[1:], v)
}
