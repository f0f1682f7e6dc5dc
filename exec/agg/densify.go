package agg

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// maxDensifyDocs bounds the documents one $densify generates (MongoDB's
// internalQueryMaxAllowedDensifyDocs).
const maxDensifyDocs = 500000

// densifyMode is what range.bounds says.
type densifyMode int

const (
	densifyFull      densifyMode = iota // from the smallest to the largest value of all documents
	densifyPartition                    // from the smallest to the largest value of each partition
	densifyExplicit                     // [lo, hi) in every partition
)

// densifyStage is $densify: the input sorted by partitionByFields and field, with documents
// generated ({partition fields..., field: value}) for the values of the step grid that no
// document has.
type densifyStage struct {
	raw        bsoncore.Value
	env        *Env
	field      []string
	partitions []string
	partExpr   *expr.Expr // {p1: "$p1", ...}; nil without partitions
	step       bsoncore.Value
	unit       string
	dateAdd    *calc
	mode       densifyMode
	lo, hi     bsoncore.Value
}

// parseDensifyStage parses {$densify: {field, partitionByFields, range: {step, unit, bounds}}}.
func parseDensifyStage(env *Env, _ string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The $densify stage specification must be an object, found %s", bsonx.TypeName(arg.Type))
	}
	s := &densifyStage{raw: arg, env: env}
	var field string
	var rng bsoncore.Document
	hasField := false
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "field":
			if field, ok = v.StringValueOK(); !ok {
				return nil, idlTypeError("$densify.field", v, "string")
			}
			hasField = true
		case "partitionByFields":
			if err := s.parsePartitionFields(v); err != nil {
				return nil, err
			}
		case "range":
			if rng, ok = v.DocumentOK(); !ok {
				return nil, idlTypeError("$densify.range", v, "object")
			}
		default:
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field '$densify.%s' is an unknown field.", el.Key())
		}
	}
	switch {
	case !hasField:
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$densify.field' is missing but a required field")
	case rng == nil:
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$densify.range' is missing but a required field")
	}
	if err := s.parseRange(rng); err != nil {
		return nil, err
	}
	var err error
	if s.field, err = expr.SplitPath(field); err != nil {
		return nil, err
	}
	if s.mode == densifyPartition && len(s.partitions) == 0 {
		return nil, mongoerr.New(mongoerr.Location5733408, "One cannot specify the bounds as 'partition' without specifying a non-empty array of partitionByFields. You may have meant to specify 'full' bounds.")
	}
	if err := s.compilePartitions(); err != nil {
		return nil, err
	}
	return s, nil
}

// idlTypeError is the error of a stage argument of the wrong type.
func idlTypeError(path string, v bsoncore.Value, want string) error {
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected type '%s'", path, bsonx.TypeName(v.Type), want)
}

// parsePartitionFields parses partitionByFields: an array of strings.
func (s *densifyStage) parsePartitionFields(v bsoncore.Value) error {
	arr, ok := v.ArrayOK()
	if !ok {
		return idlTypeError("$densify.partitionByFields", v, "array")
	}
	vals, _ := arr.Values()
	for i, x := range vals {
		p, ok := x.StringValueOK()
		if !ok {
			return idlTypeError("$densify.partitionByFields."+bsonx.ArrayKey(i), x, "string")
		}
		s.partitions = append(s.partitions, p)
	}
	return nil
}

// compilePartitions builds the partition key expression {a: {b: "$a.b"}, c: "$c"}.
func (s *densifyStage) compilePartitions() error {
	if len(s.partitions) == 0 {
		return nil
	}
	root := &specNode{}
	for _, p := range s.partitions {
		parts, err := expr.SplitPath(p)
		if err != nil {
			return err
		}
		root.add(parts, p)
	}
	e, err := expr.Compile(root.value(), nil)
	if err != nil {
		return err
	}
	s.partExpr = e
	return nil
}

// specNode is one level of an expression object of field paths, built from dotted names.
type specNode struct {
	keys []string
	kids map[string]*specNode
	path map[string]string
}

// add sets parts (the components of path) to "$path"; a later path replaces an earlier
// one at the same place, as MongoDB's setNestedField does.
func (n *specNode) add(parts []string, path string) {
	k := parts[0]
	if n.kids == nil {
		n.kids, n.path = map[string]*specNode{}, map[string]string{}
	}
	_, isLeaf := n.path[k]
	if !isLeaf && n.kids[k] == nil {
		n.keys = append(n.keys, k)
	}
	if len(parts) == 1 {
		delete(n.kids, k)
		n.path[k] = path
		return
	}
	delete(n.path, k)
	if n.kids[k] == nil {
		n.kids[k] = &specNode{}
	}
	n.kids[k].add(parts[1:], path)
}

// value returns the expression object.
func (n *specNode) value() bsoncore.Value {
	vals := make([]bsoncore.Value, len(n.keys))
	for i, k := range n.keys {
		if kid := n.kids[k]; kid != nil {
			vals[i] = kid.value()
		} else {
			vals[i] = bsonx.StringValue("$" + n.path[k])
		}
	}
	return objValue(n.keys, vals)
}

// parseRange parses range: {step, unit, bounds}.
func (s *densifyStage) parseRange(d bsoncore.Document) error {
	var bounds bsoncore.Value
	hasStep := false
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "step":
			if !bsonx.IsNumber(v.Type) {
				return idlTypeError("$densify.range.step", v, "numeric")
			}
			s.step, hasStep = v, true
		case "unit":
			u, ok := v.StringValueOK()
			if !ok {
				return idlTypeError("$densify.range.unit", v, "string")
			}
			s.unit = u
		case "bounds":
			bounds = v
		default:
			return mongoerr.New(mongoerr.Location40415, "BSON field '$densify.range.%s' is an unknown field.", el.Key())
		}
	}
	switch {
	case !hasStep:
		return mongoerr.New(mongoerr.Location40414, "BSON field '$densify.range.step' is missing but a required field")
	case bounds.Type == 0:
		return mongoerr.New(mongoerr.Location40414, "BSON field '$densify.range.bounds' is missing but a required field")
	}
	if f, _ := bsonx.NumberAsFloat64(s.step); !(f > 0) {
		return mongoerr.New(mongoerr.Location5733401, "The step parameter in a range statement must be a strictly positive numeric value")
	}
	if s.unit != "" {
		if _, ok := WholeNumber(s.step); !ok {
			return mongoerr.New(mongoerr.Location6586400, "The step parameter in a range statement must be a whole number when densifying a date range")
		}
		if err := checkTimeUnit(s.unit); err != nil {
			return err
		}
		var err error
		if s.dateAdd, err = dateAddCalc(s.unit); err != nil {
			return err
		}
	}
	return s.parseBounds(bounds)
}

// parseBounds parses range.bounds: "full", "partition" or [lo, hi].
func (s *densifyStage) parseBounds(v bsoncore.Value) error {
	switch v.Type {
	case bsoncore.TypeString:
		switch v.StringValue() {
		case "full":
			s.mode = densifyFull
		case "partition":
			s.mode = densifyPartition
		default:
			return mongoerr.New(mongoerr.Location5946802, "Bounds string must either be 'full' or 'partition'")
		}
		return nil
	case bsoncore.TypeArray:
	default:
		return mongoerr.New(mongoerr.Location5733404, "The bounds in a range statement must be the string 'full', 'partition', or an ascending array of two numbers or two dates")
	}
	vals, _ := v.Array().Values()
	if len(vals) != 2 {
		return mongoerr.New(mongoerr.Location5733403, "A bounding array in a range statement must have exactly two elements")
	}
	lo, hi := vals[0], vals[1]
	if bsonx.Compare(lo, hi) > 0 {
		return mongoerr.New(mongoerr.Location5733402, "A bounding array must be an ascending array of either two dates or two numbers")
	}
	switch {
	case bsonx.IsNumber(lo.Type):
		switch {
		case s.unit != "":
			return mongoerr.New(mongoerr.Location5733409, "Numeric bounds may not have unit parameter")
		case !bsonx.IsNumber(hi.Type):
			return mongoerr.New(mongoerr.Location5733406, "A bounding array must contain either both dates or both numeric types")
		case lo.Type != hi.Type || lo.Type != s.step.Type:
			return mongoerr.New(mongoerr.Location5876900, "Upper bound, lower bound, and step must all have the same type")
		}
	case lo.Type == bsoncore.TypeDateTime:
		switch {
		case hi.Type != bsoncore.TypeDateTime:
			return mongoerr.New(mongoerr.Location5733405, "A bounding array must contain either both dates or both numeric types")
		case s.unit == "":
			return mongoerr.New(mongoerr.Location5733410, "A bounding array of dates must specify a unit")
		}
	default:
		return mongoerr.New(mongoerr.Location5946800, "Explicit bounds must be numeric or dates")
	}
	s.mode, s.lo, s.hi = densifyExplicit, ownValue(lo), ownValue(hi)
	return nil
}

// Spec implements Stage.
func (s *densifyStage) Spec() bsoncore.Document { return StageSpec("$densify", s.raw) }
