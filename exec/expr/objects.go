package expr

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// fieldList is a document under construction in which setting an existing field
// replaces its value in place and a new field is appended (MutableDocument::setField).
type fieldList struct {
	fields []field
	index  map[string]int
}

// set sets name to x; a missing x removes the field.
func (l *fieldList) set(name string, x bsoncore.Value) {
	if l.index == nil {
		l.index = make(map[string]int)
	}
	if i, ok := l.index[name]; ok {
		l.fields[i].val = x
		return
	}
	l.index[name] = len(l.fields)
	l.fields = append(l.fields, field{name, x})
}

// mergeObjectsOp is $mergeObjects: later documents' fields override earlier ones;
// null and missing operands are skipped.
func mergeObjectsOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	var l fieldList
	for _, a := range args {
		if nullish(a) {
			continue
		}
		if a.Type != bsoncore.TypeEmbeddedDocument {
			return missing, mongoerr.New(mongoerr.Location40400, "$mergeObjects requires object inputs, but input %s is of type %s", a.String(), bsonx.TypeName(a.Type))
		}
		for _, f := range docFields(a) {
			l.set(f.name, f.val)
		}
	}
	return v.docVal(l.fields), nil
}

// objectToArrayOp is $objectToArray: [{k, v}, ...].
func objectToArrayOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	a := args[0]
	if nullish(a) {
		return valNull, nil
	}
	if a.Type != bsoncore.TypeEmbeddedDocument {
		return missing, mongoerr.New(mongoerr.Location40390, "$objectToArray requires a document input, found: %s", bsonx.TypeName(a.Type))
	}
	fields := docFields(a)
	out := make([]bsoncore.Value, len(fields))
	for i, f := range fields {
		out[i] = v.docVal([]field{{"k", v.stringVal(f.name)}, {"v", f.val}})
	}
	return v.arrayVal(out), nil
}

// arrayToObjectOp is $arrayToObject: from [[k, v], ...] or [{k, v}, ...].
func arrayToObjectOp(v *Vars, args []bsoncore.Value) (bsoncore.Value, error) {
	a := args[0]
	if nullish(a) {
		return valNull, nil
	}
	if a.Type != bsoncore.TypeArray {
		return missing, mongoerr.New(mongoerr.Location40386, "$arrayToObject requires an array input, found: %s", bsonx.TypeName(a.Type))
	}
	var l fieldList
	var first bsoncore.Type
	for _, e := range arrayValues(a) {
		if first == 0 {
			first = e.Type
			if first != bsoncore.TypeArray && first != bsoncore.TypeEmbeddedDocument {
				return missing, mongoerr.New(mongoerr.Location40398, "Unrecognised input type format for $arrayToObject: %s", bsonx.TypeName(e.Type))
			}
		} else if e.Type != first {
			return missing, mongoerr.New(mongoerr.Location40391, "$arrayToObject requires a consistent input format. Elements must all be arrays or all be objects. %s was detected, now found: %s",
				map[bool]string{true: "Array", false: "Object"}[first == bsoncore.TypeArray], bsonx.TypeName(e.Type))
		}
		k, val, err := keyValue(e)
		if err != nil {
			return missing, err
		}
		if strings.IndexByte(k, 0) >= 0 {
			return missing, mongoerr.New(mongoerr.Location4940400, "Key field cannot contain an embedded null byte")
		}
		l.set(k, val)
	}
	return v.docVal(l.fields), nil
}

// keyValue reads one [k, v] or {k, v} element of $arrayToObject's input.
func keyValue(e bsoncore.Value) (string, bsoncore.Value, error) {
	if e.Type == bsoncore.TypeArray {
		pair := arrayValues(e)
		if len(pair) != 2 {
			return "", missing, mongoerr.New(mongoerr.Location40397, "$arrayToObject requires an array of size 2 arrays,found array of size: %d", len(pair))
		}
		k, ok := pair[0].StringValueOK()
		if !ok {
			return "", missing, mongoerr.New(mongoerr.Location40395, "$arrayToObject requires an array of key-value pairs, where the key must be of type string. Found key type: %s", bsonx.TypeName(pair[0].Type))
		}
		return k, pair[1], nil
	}
	fields := docFields(e)
	if len(fields) != 2 {
		return "", missing, mongoerr.New(mongoerr.Location40392, "$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of keys:%d", len(fields))
	}
	var kv, vv bsoncore.Value
	for _, f := range fields {
		switch f.name {
		case "k":
			kv = f.val
		case "v":
			vv = f.val
		}
	}
	if kv.Type == 0 || vv.Type == 0 {
		return "", missing, mongoerr.New(mongoerr.Location40393, "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both keys from: %s", e.String())
	}
	k, ok := kv.StringValueOK()
	if !ok {
		return "", missing, mongoerr.New(mongoerr.Location40394, "$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' must be of type string. Found type: %s", bsonx.TypeName(kv.Type))
	}
	return k, vv, nil
}

// fieldNode is $getField, $setField or $unsetField.
type fieldNode struct {
	name         string
	field        string
	input, value node // input nil: $$CURRENT; value nil: $getField
	unset        bool
}

func (n *fieldNode) eval(v *Vars) (bsoncore.Value, error) {
	var in bsoncore.Value
	if n.input == nil {
		in = v.slots[slotCurrent]
	} else {
		var err error
		if in, err = n.input.eval(v); err != nil {
			return missing, err
		}
	}
	get := n.value == nil && !n.unset
	if nullish(in) {
		return valNull, nil
	}
	if in.Type != bsoncore.TypeEmbeddedDocument {
		if get {
			return missing, nil
		}
		return missing, mongoerr.New(mongoerr.Location4161105, "%s requires 'input' to evaluate to type Object", n.name)
	}
	if get {
		d, _ := in.DocumentOK()
		f, err := d.LookupErr(n.field)
		if err != nil {
			return missing, nil
		}
		return f, nil
	}
	val := missing
	if !n.unset {
		var err error
		if val, err = n.value.eval(v); err != nil {
			return missing, err
		}
	}
	var l fieldList
	for _, f := range docFields(in) {
		l.set(f.name, f.val)
	}
	l.set(n.field, val)
	return v.docVal(l.fields), nil
}

// parseField compiles $getField ({field, input} or a field name), $setField ({field,
// input, value}) and $unsetField ({field, input}); field must be a constant string.
func parseField(kind string) parseFn {
	return func(p *parser, name string, arg bsoncore.Value) (node, error) {
		n := &fieldNode{name: name, unset: kind == "unset"}
		if kind == "get" && arg.Type != bsoncore.TypeEmbeddedDocument {
			arg = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.NewDocumentBuilder().AppendValue("field", arg).Build()}
		}
		if arg.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(mongoerr.Location4161100, "%s only supports an object as its argument", name)
		}
		var fieldVal bsoncore.Value
		for _, f := range docFields(arg) {
			switch {
			case f.name == "field":
				fieldVal = f.val
			case f.name == "input":
				x, err := p.parse(f.val)
				if err != nil {
					return nil, err
				}
				n.input = x
			case f.name == "value" && kind == "set":
				x, err := p.parse(f.val)
				if err != nil {
					return nil, err
				}
				n.value = x
			default:
				return nil, mongoerr.New(mongoerr.Location4161101, "%s found an unknown argument: %s", name, f.name)
			}
		}
		return n.finish(p, fieldVal, kind)
	}
}

// finish checks the field name and required arguments of a fieldNode.
func (n *fieldNode) finish(p *parser, fieldVal bsoncore.Value, kind string) (node, error) {
	if fieldVal.Type == 0 {
		return nil, mongoerr.New(mongoerr.Location4161102, "%s requires 'field' to be specified", n.name)
	}
	if kind != "get" && n.input == nil {
		return nil, mongoerr.New(mongoerr.Location4161103, "%s requires 'input' to be specified", n.name)
	}
	if kind == "set" && n.value == nil {
		return nil, mongoerr.New(mongoerr.Location4161104, "%s requires 'value' to be specified", n.name)
	}
	fx, err := p.parse(fieldVal)
	if err != nil {
		return nil, err
	}
	c, ok := fx.(*constNode)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location4161106, "%s requires 'field' to evaluate to a constant, but got a non-constant argument", n.name)
	}
	s, ok := c.v.StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location4161107, "%s requires 'field' to evaluate to type String, but got %s", n.name, bsonx.TypeName(c.v.Type))
	}
	n.field = s
	if n.input != nil && isConst(n.input, n.value) {
		return fold(n), nil
	}
	return n, nil
}
