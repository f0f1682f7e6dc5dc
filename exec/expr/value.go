package expr

import (
	"math"

	"github.com/cleavedb/cleave/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// missing is the absent value: a field that does not exist, $$REMOVE, or an operator
// result MongoDB leaves out of documents. It is distinct from null.
var missing = bsoncore.Value{}

var (
	valNull  = bsoncore.Value{Type: bsoncore.TypeNull}
	valTrue  = bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{1}}
	valFalse = bsoncore.Value{Type: bsoncore.TypeBoolean, Data: []byte{0}}
)

// isMissing reports whether v is the absent value.
func isMissing(v bsoncore.Value) bool { return v.Type == 0 }

// nullish reports whether v is missing, null or undefined: the values most operators
// answer with null.
func nullish(v bsoncore.Value) bool {
	return v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined
}

// boolVal returns true or false as a BSON value.
func boolVal(b bool) bsoncore.Value {
	if b {
		return valTrue
	}
	return valFalse
}

// truthy is MongoDB's Value::coerceToBool: false, null, undefined, missing and numeric
// zeros are false; everything else (empty strings, arrays and documents, NaN) is true.
func truthy(v bsoncore.Value) bool {
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false
	case bsoncore.TypeBoolean:
		b, ok := v.BooleanOK()
		return ok && b
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		i, _ := bsonx.NumberAsInt64(v)
		return i != 0
	case bsoncore.TypeDouble:
		f, _ := v.DoubleOK()
		return f != 0
	case bsoncore.TypeDecimal128:
		return !asDec(v).IsZero()
	}
	return true
}

// finish returns the value of type t whose bytes start at start in the scratch buffer.
// The capacity is clipped so that later appends never write into it.
func (v *Vars) finish(t bsoncore.Type, start int) bsoncore.Value {
	return bsoncore.Value{Type: t, Data: v.buf[start:len(v.buf):len(v.buf)]}
}

// int32Val builds an int32.
func (v *Vars) int32Val(x int32) bsoncore.Value {
	s := len(v.buf)
	v.buf = bsoncore.AppendInt32(v.buf, x)
	return v.finish(bsoncore.TypeInt32, s)
}

// int64Val builds an int64.
func (v *Vars) int64Val(x int64) bsoncore.Value {
	s := len(v.buf)
	v.buf = bsoncore.AppendInt64(v.buf, x)
	return v.finish(bsoncore.TypeInt64, s)
}

// intVal builds an int32 if x fits, else an int64 (MongoDB's Value(long long) narrowing
// used by operators such as $size, $indexOfArray and $strLenBytes returns int32 always;
// this is for results that may exceed it).
func (v *Vars) intVal(x int64) bsoncore.Value {
	if x >= math.MinInt32 && x <= math.MaxInt32 {
		return v.int32Val(int32(x))
	}
	return v.int64Val(x)
}

// doubleVal builds a double.
func (v *Vars) doubleVal(f float64) bsoncore.Value {
	s := len(v.buf)
	v.buf = bsoncore.AppendDouble(v.buf, f)
	return v.finish(bsoncore.TypeDouble, s)
}

// stringVal builds a string.
func (v *Vars) stringVal(str string) bsoncore.Value {
	s := len(v.buf)
	v.buf = bsoncore.AppendString(v.buf, str)
	return v.finish(bsoncore.TypeString, s)
}

// dateVal builds a UTC datetime from milliseconds since the epoch.
func (v *Vars) dateVal(ms int64) bsoncore.Value {
	s := len(v.buf)
	v.buf = bsoncore.AppendDateTime(v.buf, ms)
	return v.finish(bsoncore.TypeDateTime, s)
}

// decimalVal builds a decimal128 from its two words.
func (v *Vars) decimalVal(h, l uint64) bsoncore.Value {
	s := len(v.buf)
	v.buf = bsoncore.AppendDecimal128(v.buf, h, l)
	return v.finish(bsoncore.TypeDecimal128, s)
}

// arrayVal builds an array of vals; missing elements become null, as in MongoDB's
// array expressions.
func (v *Vars) arrayVal(vals []bsoncore.Value) bsoncore.Value {
	s := len(v.buf)
	idx, buf := bsoncore.AppendArrayStart(v.buf)
	for i, e := range vals {
		if isMissing(e) {
			e = valNull
		}
		buf = bsoncore.AppendValueElement(buf, bsonx.ArrayKey(i), e)
	}
	v.buf, _ = bsoncore.AppendArrayEnd(buf, idx)
	return v.finish(bsoncore.TypeArray, s)
}

// field is one element of a document under construction.
type field struct {
	name string
	val  bsoncore.Value
}

// docVal builds a document from fields in order; missing values are left out.
func (v *Vars) docVal(fields []field) bsoncore.Value {
	s := len(v.buf)
	idx, buf := bsoncore.AppendDocumentStart(v.buf)
	for _, f := range fields {
		if !isMissing(f.val) {
			buf = bsoncore.AppendValueElement(buf, f.name, f.val)
		}
	}
	v.buf, _ = bsoncore.AppendDocumentEnd(buf, idx)
	return v.finish(bsoncore.TypeEmbeddedDocument, s)
}

// arrayValues returns the elements of an array value. Malformed bytes end the array.
func arrayValues(a bsoncore.Value) []bsoncore.Value {
	arr, ok := a.ArrayOK()
	if !ok {
		return nil
	}
	vals, err := arr.Values()
	if err != nil {
		return vals
	}
	return vals
}

// docFields returns the fields of a document value in order.
func docFields(d bsoncore.Value) []field {
	doc, ok := d.DocumentOK()
	if !ok {
		return nil
	}
	return documentFields(doc)
}

// documentFields returns the fields of doc in order; malformed bytes end it.
func documentFields(doc bsoncore.Document) []field {
	elems, _ := doc.Elements()
	out := make([]field, 0, len(elems))
	for _, e := range elems {
		k, err := e.KeyErr()
		if err != nil {
			break
		}
		val, err := e.ValueErr()
		if err != nil {
			break
		}
		out = append(out, field{k, val})
	}
	return out
}

// strOf returns the string of a string or symbol value.
func strOf(v bsoncore.Value) (string, bool) {
	switch v.Type {
	case bsoncore.TypeString:
		return v.StringValueOK()
	case bsoncore.TypeSymbol:
		return v.SymbolOK()
	}
	return "", false
}
