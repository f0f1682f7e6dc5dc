package agg

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// parseFillStage parses {$fill: {partitionBy | partitionByFields, sortBy, output}} into
// what MongoDB runs for it: a $setWindowFields with $locf / $linearFill outputs for the
// 'method' fields, then an $addFields of {$ifNull: ["$field", value]} for the 'value'
// fields.
func parseFillStage(env *Env, name string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The $fill stage specification must be an object, found %s", bsonx.TypeName(arg.Type))
	}
	var sortBy, output bsoncore.Value
	var partBy, partFields bsoncore.Value
	elems, _ := d.Elements()
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "sortBy":
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return nil, idlTypeError("$fill.sortBy", v, "object")
			}
			sortBy = v
		case "partitionBy":
			if v.Type != bsoncore.TypeString && v.Type != bsoncore.TypeEmbeddedDocument {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$fill.partitionBy' is the wrong type '%s', %s", bsonx.TypeName(v.Type), args.Expected("string", "object"))
			}
			partBy = v
		case "partitionByFields":
			if v.Type != bsoncore.TypeArray {
				return nil, idlTypeError("$fill.partitionByFields", v, "array")
			}
			partFields = v
		case "output":
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return nil, idlTypeError("$fill.output", v, "object")
			}
			output = v
		default:
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field '$fill.%s' is an unknown field.", el.Key())
		}
	}
	if output.Type == 0 {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$fill.output' is missing but a required field")
	}
	windowOut, addFields, err := fillOutputs(output.Document())
	if err != nil {
		return nil, err
	}
	if partBy.Type != 0 && partFields.Type != 0 {
		return nil, mongoerr.New(mongoerr.Location6050204, "Maximum one of 'partitionBy' and 'partitionByFields can be specified in '$fill'")
	}
	chain := &chainStage{name: name, raw: arg}
	if len(windowOut) > 0 {
		spec, err := fillWindowSpec(windowOut, sortBy, partBy, partFields)
		if err != nil {
			return nil, err
		}
		s, err := parseWindowStage(env, "$setWindowFields", spec)
		if err != nil {
			return nil, err
		}
		chain.stages = append(chain.stages, s)
	}
	if len(addFields) > 0 {
		s, err := parseAddFieldsStage(env, "$addFields", objValue(addFields.keys(), addFields.vals()))
		if err != nil {
			return nil, err
		}
		chain.stages = append(chain.stages, s)
	}
	return chain, nil
}

// fillWindowSpec builds the $setWindowFields specification of $fill's 'method' outputs.
func fillWindowSpec(out fillFields, sortBy, partBy, partFields bsoncore.Value) (bsoncore.Value, error) {
	spec := fillFields{{"output", objValue(out.keys(), out.vals())}}
	if sortBy.Type != 0 {
		spec = append(spec, fillField{"sortBy", sortBy})
	}
	if partBy.Type != 0 {
		spec = append(spec, fillField{"partitionBy", partBy})
	}
	if partFields.Type != 0 {
		pb, err := fillPartitionFields(partFields)
		if err != nil {
			return bsoncore.Value{}, err
		}
		spec = append(spec, fillField{"partitionBy", pb})
	}
	return objValue(spec.keys(), spec.vals()), nil
}

// fillField is one field of a generated stage specification.
type fillField struct {
	k string
	v bsoncore.Value
}

// fillFields is an ordered list of {field: value}.
type fillFields []fillField

// keys returns the field names.
func (f fillFields) keys() []string {
	out := make([]string, len(f))
	for i, x := range f {
		out[i] = x.k
	}
	return out
}

// vals returns the values.
func (f fillFields) vals() []bsoncore.Value {
	out := make([]bsoncore.Value, len(f))
	for i, x := range f {
		out[i] = x.v
	}
	return out
}

// fillOutputs splits $fill's output into $setWindowFields outputs ({field: {$locf:
// "$field"}}) and $addFields fields ({field: {$ifNull: ["$field", value]}}).
func fillOutputs(output bsoncore.Document) (window, add fillFields, err error) {
	elems, _ := output.Elements()
	if len(elems) == 0 {
		return nil, nil, mongoerr.New(mongoerr.Location6050203, "The output field in '$fill' must contain an object with at least one element")
	}
	for _, el := range elems {
		k := el.Key()
		spec, ok := el.Value().DocumentOK()
		if !ok {
			return nil, nil, mongoerr.New(mongoerr.Location6050200, "Each fill output specification must be an object with exactly one field")
		}
		var method, value bsoncore.Value
		fe, _ := spec.Elements()
		for _, f := range fe {
			switch f.Key() {
			case "method":
				if f.Value().Type != bsoncore.TypeString {
					return nil, nil, idlTypeError("$fill.method", f.Value(), "string")
				}
				method = f.Value()
			case "value":
				value = f.Value()
			default:
				return nil, nil, mongoerr.New(mongoerr.Location40415, "BSON field '$fill.%s' is an unknown field.", f.Key())
			}
		}
		if method.Type != 0 {
			if value.Type != 0 {
				return nil, nil, mongoerr.New(mongoerr.Location6050201, "Each fill output specification must have exactly one of 'method' or 'value' fields, not both")
			}
			fn := "$locf"
			switch method.StringValue() {
			case "locf":
			case "linear":
				fn = "$linearFill"
			default:
				return nil, nil, mongoerr.New(mongoerr.Location6050202, "Method must be either locf or linear")
			}
			window = append(window, fillField{k, objValue([]string{fn}, []bsoncore.Value{bsonx.StringValue("$" + k)})})
		}
		if value.Type != 0 {
			add = append(add, fillField{k, opValue("$ifNull", bsonx.StringValue("$"+k), value)})
		}
	}
	return window, add, nil
}

// fillPartitionFields turns partitionByFields into the partitionBy {f: "$f", ...}.
func fillPartitionFields(v bsoncore.Value) (bsoncore.Value, error) {
	vals, _ := v.Array().Values()
	keys := make([]string, len(vals))
	exprs := make([]bsoncore.Value, len(vals))
	for i, x := range vals {
		s, ok := x.StringValueOK()
		if !ok {
			return bsoncore.Value{}, idlTypeError("$fill.partitionByFields."+bsonx.ArrayKey(i), x, "string")
		}
		keys[i], exprs[i] = s, bsonx.StringValue("$"+s)
	}
	return objValue(keys, exprs), nil
}
