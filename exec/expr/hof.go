package expr

import (
	"bytes"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// bindAs validates the 'as' name of $map or $filter (default "this") and binds it for
// the parsing of body; the binding ends with the returned function.
func (p *parser) bindAs(asVal bsoncore.Value) (slot int, done func(), err error) {
	name := "this"
	if asVal.Type != 0 {
		s, ok := asVal.StringValueOK()
		if !ok {
			return 0, nil, mongoerr.New(mongoerr.FailedToParse, "'as' must be a string")
		}
		name = s
	}
	if err := validateUserWrite(name); err != nil {
		return 0, nil, err
	}
	mark := len(p.scope)
	slot = p.define(name)
	return slot, func() { p.scope = p.scope[:mark] }, nil
}

// mapNode is $map: {input, as, in}.
type mapNode struct {
	input, in node
	slot      int
}

func (n *mapNode) eval(v *Vars) (bsoncore.Value, error) {
	in, err := n.input.eval(v)
	if err != nil || nullish(in) {
		return valNull, err
	}
	if in.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location16883, "input to $map must be an array not %s", bsonx.TypeName(in.Type))
	}
	elems := arrayValues(in)
	out := make([]bsoncore.Value, len(elems))
	for i, e := range elems {
		v.slots[n.slot] = e
		if out[i], err = n.in.eval(v); err != nil {
			return missing, err
		}
	}
	return v.arrayVal(out), nil
}

// parseMap compiles $map.
func parseMap(p *parser, _ string, arg bsoncore.Value) (node, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location16878, "$map only supports an object as its argument")
	}
	var input, as, in bsoncore.Value
	for _, f := range docFields(arg) {
		switch f.name {
		case "input":
			input = f.val
		case "as":
			as = f.val
		case "in":
			in = f.val
		default:
			return nil, mongoerr.New(mongoerr.Location16879, "Unrecognized parameter to $map: %s", f.name)
		}
	}
	if input.Type == 0 {
		return nil, mongoerr.New(mongoerr.Location16880, "Missing 'input' parameter to $map")
	}
	if in.Type == 0 {
		return nil, mongoerr.New(mongoerr.Location16882, "Missing 'in' parameter to $map")
	}
	n := &mapNode{}
	var err error
	if n.input, err = p.parse(input); err != nil {
		return nil, err
	}
	slot, done, err := p.bindAs(as)
	if err != nil {
		return nil, err
	}
	defer done()
	n.slot = slot
	if n.in, err = p.parse(in); err != nil {
		return nil, err
	}
	return n, nil
}

// filterNode is $filter: {input, as, cond, limit}.
type filterNode struct {
	input, cond, limit node
	slot               int
}

func (n *filterNode) eval(v *Vars) (bsoncore.Value, error) {
	in, err := n.input.eval(v)
	if err != nil || nullish(in) {
		return valNull, err
	}
	if in.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location28651, "input to $filter must be an array not %s", bsonx.TypeName(in.Type))
	}
	limit := int64(-1)
	if n.limit != nil {
		l, err := n.limit.eval(v)
		if err != nil {
			return missing, err
		}
		if !nullish(l) {
			i, ok := int32Arg(l)
			if !ok {
				return missing, mongoerr.New(mongoerr.Location327391, "$filter: limit must be represented as a 32-bit integral value: %s", l.String())
			}
			if i < 1 {
				return missing, mongoerr.New(mongoerr.Location327392, "$filter: limit must be greater than 0: %d", i)
			}
			limit = int64(i)
		}
	}
	var out []bsoncore.Value
	for _, e := range arrayValues(in) {
		if limit >= 0 && int64(len(out)) >= limit {
			break
		}
		v.slots[n.slot] = e
		c, err := n.cond.eval(v)
		if err != nil {
			return missing, err
		}
		if truthy(c) {
			out = append(out, e)
		}
	}
	return v.arrayVal(out), nil
}

// parseFilter compiles $filter.
func parseFilter(p *parser, _ string, arg bsoncore.Value) (node, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location28646, "$filter only supports an object as its argument")
	}
	var input, as, cond, limit bsoncore.Value
	for _, f := range docFields(arg) {
		switch f.name {
		case "input":
			input = f.val
		case "as":
			as = f.val
		case "cond":
			cond = f.val
		case "limit":
			limit = f.val
		default:
			return nil, mongoerr.New(mongoerr.Location28647, "Unrecognized parameter to $filter: %s", f.name)
		}
	}
	if input.Type == 0 {
		return nil, mongoerr.New(mongoerr.Location28648, "Missing 'input' parameter to $filter")
	}
	if cond.Type == 0 {
		return nil, mongoerr.New(mongoerr.Location28650, "Missing 'cond' parameter to $filter")
	}
	n := &filterNode{}
	var err error
	if n.input, err = p.parse(input); err != nil {
		return nil, err
	}
	if limit.Type != 0 {
		if n.limit, err = p.parse(limit); err != nil {
			return nil, err
		}
	}
	slot, done, err := p.bindAs(as)
	if err != nil {
		return nil, err
	}
	defer done()
	n.slot = slot
	if n.cond, err = p.parse(cond); err != nil {
		return nil, err
	}
	return n, nil
}

// reduceNode is $reduce: {input, initialValue, in} with $$value and $$this.
type reduceNode struct {
	input, initial, in  node
	valueSlot, thisSlot int
}

func (n *reduceNode) eval(v *Vars) (bsoncore.Value, error) {
	in, err := n.input.eval(v)
	if err != nil || nullish(in) {
		return valNull, err
	}
	if in.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location40080, "$reduce requires that 'input' be an array, found: %s", in.String())
	}
	acc, err := n.initial.eval(v)
	if err != nil {
		return missing, err
	}
	for _, e := range arrayValues(in) {
		v.slots[n.valueSlot], v.slots[n.thisSlot] = acc, e
		if acc, err = n.in.eval(v); err != nil {
			return missing, err
		}
	}
	return acc, nil
}

// parseReduce compiles $reduce.
func parseReduce(p *parser, _ string, arg bsoncore.Value) (node, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location40075, "$reduce requires an object as an argument, found: %s", bsonx.TypeName(arg.Type))
	}
	var input, initial, in bsoncore.Value
	for _, f := range docFields(arg) {
		switch f.name {
		case "input":
			input = f.val
		case "initialValue":
			initial = f.val
		case "in":
			in = f.val
		default:
			return nil, mongoerr.New(mongoerr.Location40076, "$reduce found an unknown argument: %s", f.name)
		}
	}
	for i, x := range []bsoncore.Value{input, initial, in} {
		if x.Type == 0 {
			return nil, mongoerr.New(mongoerr.Code(40077+i), "$reduce requires '%s' to be specified",
				[]string{"input", "initialValue", "in"}[i])
		}
	}
	n := &reduceNode{}
	var err error
	if n.input, err = p.parse(input); err != nil {
		return nil, err
	}
	if n.initial, err = p.parse(initial); err != nil {
		return nil, err
	}
	mark := len(p.scope)
	n.valueSlot, n.thisSlot = p.define("value"), p.define("this")
	n.in, err = p.parse(in)
	p.scope = p.scope[:mark]
	if err != nil {
		return nil, err
	}
	return n, nil
}

// sortArrayNode is $sortArray: {input, sortBy}; sortBy is 1, -1 (whole values) or a
// sort pattern applied to document elements.
type sortArrayNode struct {
	input node
	desc  bool
	spec  []bsonx.SortField
}

func (n *sortArrayNode) eval(v *Vars) (bsoncore.Value, error) {
	in, err := n.input.eval(v)
	if err != nil || nullish(in) {
		return valNull, err
	}
	if in.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location2942504, "The input argument to $sortArray must be an array, but was of type: %s", bsonx.TypeName(in.Type))
	}
	vals := arrayValues(in)
	if n.spec == nil {
		sort.SliceStable(vals, func(i, j int) bool {
			c := bsonx.Compare(vals[i], vals[j])
			return (c < 0 && !n.desc) || (c > 0 && n.desc)
		})
		return v.arrayVal(vals), nil
	}
	keys := make([][]byte, len(vals))
	for i, e := range vals {
		d, ok := e.DocumentOK()
		if !ok {
			d = bsoncore.Document{5, 0, 0, 0, 0}
		}
		keys[i] = bsonx.AppendSortKey(nil, d, n.spec)
	}
	idx := make([]int, len(vals))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return bytes.Compare(keys[idx[i]], keys[idx[j]]) < 0 })
	out := make([]bsoncore.Value, len(vals))
	for i, k := range idx {
		out[i] = vals[k]
	}
	return v.arrayVal(out), nil
}

// parseSortArray compiles $sortArray.
func parseSortArray(p *parser, _ string, arg bsoncore.Value) (node, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location2942500, "$sortArray requires an object as an argument, found: %s", bsonx.TypeName(arg.Type))
	}
	n := &sortArrayNode{}
	var sortBy bsoncore.Value
	for _, f := range docFields(arg) {
		switch f.name {
		case "input":
			x, err := p.parse(f.val)
			if err != nil {
				return nil, err
			}
			n.input = x
		case "sortBy":
			sortBy = f.val
		default:
			return nil, mongoerr.New(mongoerr.Location2942501, "$sortArray found an unknown argument: %s", f.name)
		}
	}
	if n.input == nil {
		return nil, mongoerr.New(mongoerr.Location2942502, "$sortArray requires 'input' to be specified")
	}
	if sortBy.Type == 0 {
		return nil, mongoerr.New(mongoerr.Location2942503, "$sortArray requires 'sortBy' to be specified")
	}
	if err := n.parseSortBy(sortBy); err != nil {
		return nil, err
	}
	if isConst(n.input) {
		return fold(n), nil
	}
	return n, nil
}

// parseSortBy reads 1, -1 or {path: 1|-1, ...}.
func (n *sortArrayNode) parseSortBy(s bsoncore.Value) error {
	dir := func(x bsoncore.Value) (bool, error) {
		i, ok := integral(x)
		if !ok || (i != 1 && i != -1) {
			return false, mongoerr.New(mongoerr.Location15974, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
		return i == -1, nil
	}
	if s.Type != bsoncore.TypeEmbeddedDocument {
		d, err := dir(s)
		n.desc = d
		return err
	}
	fields := docFields(s)
	if len(fields) == 0 {
		return mongoerr.New(mongoerr.Location15976, "$sortArray sort pattern must not be empty")
	}
	for _, f := range fields {
		d, err := dir(f.val)
		if err != nil {
			return err
		}
		n.spec = append(n.spec, bsonx.SortField{Path: f.name, Desc: d})
	}
	return nil
}

// zipNode is $zip: {inputs, useLongestLength, defaults}.
type zipNode struct {
	inputs, defaults []node
	longest          bool
}

func (n *zipNode) eval(v *Vars) (bsoncore.Value, error) {
	arrays := make([][]bsoncore.Value, len(n.inputs))
	minLen, maxLen := -1, 0
	for i, x := range n.inputs {
		a, err := x.eval(v)
		if err != nil {
			return missing, err
		}
		if nullish(a) {
			return valNull, nil
		}
		if a.Type != bsoncore.TypeArray {
			return missing, mongoerr.New(mongoerr.Location34468, "$zip found a non-array expression in input: %s", a.String())
		}
		arrays[i] = arrayValues(a)
		if minLen < 0 || len(arrays[i]) < minLen {
			minLen = len(arrays[i])
		}
		maxLen = max(maxLen, len(arrays[i]))
	}
	defs := make([]bsoncore.Value, len(n.inputs))
	for i, d := range n.defaults {
		x, err := d.eval(v)
		if err != nil {
			return missing, err
		}
		defs[i] = x
	}
	rows := minLen
	if n.longest {
		rows = maxLen
	}
	out := make([]bsoncore.Value, rows)
	for r := range rows {
		row := make([]bsoncore.Value, len(arrays))
		for i, a := range arrays {
			if r < len(a) {
				row[i] = a[r]
			} else {
				row[i] = defs[i]
			}
		}
		out[r] = v.arrayVal(row)
	}
	return v.arrayVal(out), nil
}

// parseZip compiles $zip.
func parseZip(p *parser, _ string, arg bsoncore.Value) (node, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location34460, "$zip only supports an object as an argument, found %s", bsonx.TypeName(arg.Type))
	}
	n := &zipNode{}
	var err error
	for _, f := range docFields(arg) {
		switch f.name {
		case "inputs":
			if f.val.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.Location34461, "inputs must be an array of expressions, found %s", bsonx.TypeName(f.val.Type))
			}
			if n.inputs, _, err = p.parseAll(arrayValues(f.val)); err != nil {
				return nil, err
			}
		case "defaults":
			if f.val.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.Location34462, "defaults must be an array of expressions, found %s", bsonx.TypeName(f.val.Type))
			}
			if n.defaults, _, err = p.parseAll(arrayValues(f.val)); err != nil {
				return nil, err
			}
		case "useLongestLength":
			b, ok := f.val.BooleanOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.Location34463, "useLongestLength must be a bool, found %s", bsonx.TypeName(f.val.Type))
			}
			n.longest = b
		default:
			return nil, mongoerr.New(mongoerr.Location34464, "$zip found an unknown argument: %s", f.name)
		}
	}
	switch {
	case len(n.inputs) == 0:
		return nil, mongoerr.New(mongoerr.Location34465, "$zip requires at least one input array")
	case n.defaults != nil && !n.longest:
		return nil, mongoerr.New(mongoerr.Location34466, "cannot specify defaults unless useLongestLength is true")
	case n.defaults != nil && len(n.defaults) != len(n.inputs):
		return nil, mongoerr.New(mongoerr.Location34467, "defaults and inputs must have the same length")
	}
	return n, nil
}
