package update

import (
	"bytes"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// opKind is an update operator.
type opKind uint8

const (
	opSet opKind = iota + 1
	opSetOnInsert
	opUnset
	opInc
	opMul
	opMin
	opMax
	opCurrentDate
	opBit
	opPush
	opAddToSet
	opPop
	opPull
	opPullAll
	opRename       // $rename, placed at the destination path
	opRenameSource // $rename's placeholder at the source path
)

// operators maps MongoDB's update modifiers (modifier_table.cpp) to their kinds.
var operators = map[string]opKind{
	"$set":         opSet,
	"$setOnInsert": opSetOnInsert,
	"$unset":       opUnset,
	"$inc":         opInc,
	"$mul":         opMul,
	"$min":         opMin,
	"$max":         opMax,
	"$currentDate": opCurrentDate,
	"$bit":         opBit,
	"$push":        opPush,
	"$addToSet":    opAddToSet,
	"$pop":         opPop,
	"$pull":        opPull,
	"$pullAll":     opPullAll,
	"$rename":      opRename,
}

// leaf is one operator applied at one path, parsed and validated at compile time.
type leaf struct {
	op       opKind
	path     string         // dotted path as written (the destination for $rename)
	key      string         // the operator's field name in the update, for messages
	val      bsoncore.Value // $set, $setOnInsert, $min, $max value; $inc and $mul operand
	num      number         // $inc and $mul operand
	nesting  int            // nesting depth of val, or 1 + that of the values to push/add
	tsType   bool           // $currentDate: a timestamp rather than a date
	bits     []bitOp        // $bit
	push     *pushSpec      // $push
	values   []bsoncore.Value
	popFront bool          // $pop: -1
	pull     *match.Filter // $pull, from match.CompileValue
	from     []string      // $rename: source path
	fromPath string
	coll     bsonx.Collator // the update's collation: $min, $max, $addToSet, $pullAll
}

// compare compares a and b in MongoDB's order, strings under the leaf's collation.
func (lf *leaf) compare(a, b bsoncore.Value) int {
	return bsonx.Compare(bsonx.Collate(lf.coll, a), bsonx.Collate(lf.coll, b))
}

// bitOp is one operation of $bit.
type bitOp struct {
	kind    bitOpKind
	operand number
}

// newLeaf parses and validates the argument of one operator field, as each MongoDB update
// node's init() does. e is the element {<path>: <argument>} of the operator's document;
// coll is the update's collation (nil: simple). key is string(e.key), which the caller has
// already made: one string for both the leaf's path and its key.
func newLeaf(op opKind, key string, e elem, coll bsonx.Collator) (*leaf, error) {
	lf := &leaf{op: op, path: key, key: key, val: e.value(), coll: coll}
	switch op {
	case opSet, opSetOnInsert, opMin, opMax:
		lf.nesting = nestingDepth(e.t, e.val)
	case opInc, opMul:
		n, ok := numberOf(e.t, e.val)
		if !ok {
			verb := "increment"
			if op == opMul {
				verb = "multiply"
			}
			return nil, errf(mongoerr.TypeMismatch, "Cannot %s with non-numeric argument: {%s}",
				verb, bsonx.ShellElement(e.key, e.t, e.val))
		}
		lf.num = n
	case opCurrentDate:
		return lf, lf.parseCurrentDate(e)
	case opBit:
		return lf, lf.parseBit(e)
	case opPush:
		return lf, lf.parsePush(e)
	case opAddToSet:
		return lf, lf.parseAddToSet(e)
	case opPop:
		n, reason, ok := integerArg(e.t, e.val)
		if !ok {
			return nil, errf(mongoerr.FailedToParse, "%s%s", reason, bsonx.ShellElement(e.key, e.t, e.val))
		}
		if n != 1 && n != -1 {
			return nil, errf(mongoerr.FailedToParse, "$pop expects 1 or -1, found: %d", n)
		}
		lf.popFront = n == -1
	case opPull:
		m, err := match.CompileValue(e.value(), &match.Options{Collator: coll})
		if err != nil {
			return nil, err
		}
		lf.pull = m
	case opPullAll:
		if e.t != bsoncore.TypeArray {
			return nil, errf(mongoerr.BadValue, "$pullAll requires an array argument but was given a %s", bsonx.TypeName(e.t))
		}
		vals, err := arrayValues(e.val)
		if err != nil {
			return nil, err
		}
		lf.values = vals
	case opRename:
		return lf, lf.parseRename(e)
	}
	return lf, nil
}

// parseCurrentDate validates $currentDate's argument: true/false or {$type: "date"|"timestamp"}.
func (lf *leaf) parseCurrentDate(e elem) error {
	switch e.t {
	case bsoncore.TypeBoolean:
		return nil
	case bsoncore.TypeEmbeddedDocument:
		body, _ := docBody(e.val)
		found := false
		for len(body) > 0 {
			f, rest, ok := readElem(body)
			if !ok {
				return errInvalidBSON("update")
			}
			body = rest
			if string(f.key) != "$type" {
				return errf(mongoerr.BadValue, "Unrecognized $currentDate option: %s", f.key)
			}
			if f.t == bsoncore.TypeString {
				switch string(strValue(f.val)) {
				case "date":
					lf.tsType, found = false, true
				case "timestamp":
					lf.tsType, found = true, true
				}
			}
		}
		if !found {
			return errf(mongoerr.BadValue, "The '$type' string field is required to be 'date' or 'timestamp': "+
				"{$currentDate: {field : {$type: 'date'}}}")
		}
		return nil
	}
	return errf(mongoerr.BadValue, "%s is not valid type for $currentDate. Please use a boolean ('true') "+
		"or a $type expression ({$type: 'timestamp/date'}).", bsonx.TypeName(e.t))
}

// parseBit validates $bit's argument {and|or|xor: <int32|int64>, ...}.
func (lf *leaf) parseBit(e elem) error {
	if e.t != bsoncore.TypeEmbeddedDocument {
		return errf(mongoerr.BadValue, "The $bit modifier is not compatible with a %s. "+
			"You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}", bsonx.TypeName(e.t))
	}
	body, _ := docBody(e.val)
	for len(body) > 0 {
		f, rest, ok := readElem(body)
		if !ok {
			return errInvalidBSON("update")
		}
		body = rest
		var kind bitOpKind
		switch string(f.key) {
		case "and":
			kind = bitAnd
		case "or":
			kind = bitOr
		case "xor":
			kind = bitXor
		default:
			return errf(mongoerr.BadValue, "The $bit modifier only supports 'and', 'or', and 'xor', not '%s' "+
				"which is an unknown operator: {%s}", f.key, bsonx.ShellElement(f.key, f.t, f.val))
		}
		if f.t != bsoncore.TypeInt32 && f.t != bsoncore.TypeInt64 {
			return errf(mongoerr.BadValue, "The $bit modifier field must be an Integer(32/64 bit); a '%s' "+
				"is not supported here: {%s}", bsonx.TypeName(f.t), bsonx.ShellElement(f.key, f.t, f.val))
		}
		n, _ := numberOf(f.t, f.val)
		lf.bits = append(lf.bits, bitOp{kind: kind, operand: n})
	}
	if len(lf.bits) == 0 {
		return errf(mongoerr.BadValue, "You must pass in at least one bitwise operation. "+
			"The format is: {$bit: {field: {and/or/xor: #}}")
	}
	return nil
}

// parseAddToSet validates $addToSet's argument: a value, or {$each: [...]} with $each first
// and alone. Duplicates among the values are dropped, first one kept.
func (lf *leaf) parseAddToSet(e elem) error {
	vals := []bsoncore.Value{e.value()}
	if e.t == bsoncore.TypeEmbeddedDocument {
		body, _ := docBody(e.val)
		if first, rest, ok := readElem(body); ok && string(first.key) == "$each" {
			if first.t != bsoncore.TypeArray {
				return errf(mongoerr.TypeMismatch,
					"The argument to $each in $addToSet must be an array but it was of type %s", bsonx.TypeName(first.t))
			}
			if len(rest) > 0 {
				return errf(mongoerr.BadValue, "Found unexpected fields after $each in $addToSet: %s", bsonx.ShellDoc(e.val))
			}
			var err error
			if vals, err = arrayValues(first.val); err != nil {
				return err
			}
		}
	}
	for _, v := range vals {
		dup := false
		for _, w := range lf.values {
			if lf.compare(v, w) == 0 {
				dup = true
				break
			}
		}
		if !dup {
			lf.values = append(lf.values, v)
			lf.nesting = max(lf.nesting, 1+nestingDepth(v.Type, v.Data))
		}
	}
	return nil
}

// parseRename validates {$rename: {<from>: <to>}}; the caller has placed the source
// placeholder already, as MongoDB does before it looks at the destination.
func (lf *leaf) parseRename(e elem) error {
	if e.t != bsoncore.TypeString {
		return errf(mongoerr.BadValue, "The 'to' field for $rename must be a string: %s", bsonx.ShellElement(e.key, e.t, e.val))
	}
	to := strValue(e.val)
	if bytes.IndexByte(to, 0) >= 0 {
		return errf(mongoerr.BadValue, "The 'to' field for $rename cannot contain an embedded null byte")
	}
	lf.path, lf.fromPath = string(to), string(e.key)
	from, err := splitPath(lf.fromPath)
	if err != nil {
		return err
	}
	toParts, err := splitPath(lf.path)
	if err != nil {
		return err
	}
	lf.from = from
	switch {
	case samePath(from, toParts):
		return errf(mongoerr.BadValue, "The source and target field for $rename must differ: %s",
			bsonx.ShellElement(e.key, e.t, e.val))
	case isPrefixPath(from, toParts) || isPrefixPath(toParts, from):
		return errf(mongoerr.BadValue, "The source and target field for $rename must not be on the same path: %s",
			bsonx.ShellElement(e.key, e.t, e.val))
	case hasDynamic(from):
		return errf(mongoerr.BadValue, "The source field for $rename may not be dynamic: %s", lf.fromPath)
	case hasDynamic(toParts):
		return errf(mongoerr.BadValue, "The destination field for $rename may not be dynamic: %s", lf.path)
	}
	return nil
}

// hasDynamic reports whether a path holds "$", "$[]" or "$[<id>]".
func hasDynamic(parts []string) bool {
	for _, p := range parts {
		if isDynamic(p) {
			return true
		}
	}
	return false
}

// arrayValues returns the values of an array.
func arrayValues(arr []byte) ([]bsoncore.Value, error) {
	body, ok := docBody(arr)
	if !ok {
		return nil, errInvalidBSON("update")
	}
	var vals []bsoncore.Value
	for len(body) > 0 {
		e, rest, ok := readElem(body)
		if !ok {
			return nil, errInvalidBSON("update")
		}
		vals = append(vals, e.value())
		body = rest
	}
	return vals, nil
}

// nestingDepth returns how many levels of documents and arrays a value spans: 0 for scalars
// and empty containers, 1 for {a: 1}, 2 for {a: {b: 1}}.
func nestingDepth(t bsoncore.Type, v []byte) int {
	if !isContainer(t) {
		return 0
	}
	body, ok := docBody(v)
	if !ok || len(body) == 0 {
		return 0
	}
	d := 1
	for len(body) > 0 {
		e, rest, ok := readElem(body)
		if !ok {
			break
		}
		if isContainer(e.t) {
			d = max(d, 1+nestingDepth(e.t, e.val))
		}
		body = rest
	}
	return d
}
