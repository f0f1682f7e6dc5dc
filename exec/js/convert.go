package js

import (
	"encoding/base64"
	"encoding/hex"
	"math"
	"strconv"
	"time"

	"github.com/dop251/goja"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx/decimal128"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// maxDepth bounds the nesting of values converted either way (BSON's own limit is 100
// levels; a cyclic JavaScript object would otherwise never end).
const maxDepth = 150

// toJS converts a BSON value to the JavaScript value MongoDB's shell types give it.
func (v *vm) toJS(val bsoncore.Value) goja.Value {
	rt := v.rt
	switch val.Type {
	case bsoncore.TypeDouble:
		return rt.ToValue(val.Double())
	case bsoncore.TypeString:
		return rt.ToValue(val.StringValue())
	case bsoncore.TypeEmbeddedDocument:
		return v.docToJS(val.Document())
	case bsoncore.TypeArray:
		vals, _ := val.Array().Values()
		items := make([]any, len(vals))
		for i, e := range vals {
			items[i] = v.toJS(e)
		}
		return rt.NewArray(items...)
	case bsoncore.TypeBinary:
		sub, data := val.Binary()
		return v.construct("BinData", rt.ToValue(int(sub)), rt.ToValue(base64.StdEncoding.EncodeToString(data)))
	case bsoncore.TypeUndefined:
		return goja.Undefined()
	case bsoncore.TypeObjectID:
		id := val.ObjectID()
		return v.construct("ObjectId", rt.ToValue(hex.EncodeToString(id[:])))
	case bsoncore.TypeBoolean:
		return rt.ToValue(val.Boolean())
	case bsoncore.TypeDateTime:
		d, _ := rt.New(rt.Get("Date"), rt.ToValue(val.DateTime()))
		return d
	case bsoncore.TypeNull:
		return goja.Null()
	case bsoncore.TypeRegex:
		pat, opts := val.Regex()
		r, err := rt.New(rt.Get("RegExp"), rt.ToValue(pat), rt.ToValue(jsFlags(opts)))
		if err != nil {
			return rt.ToValue("/" + pat + "/" + opts)
		}
		return r
	case bsoncore.TypeJavaScript:
		return rt.ToValue(val.JavaScript())
	case bsoncore.TypeSymbol:
		return rt.ToValue(val.Symbol())
	case bsoncore.TypeInt32:
		return rt.ToValue(val.Int32()) // a plain number, as in MongoDB
	case bsoncore.TypeTimestamp:
		t, i := val.Timestamp()
		return v.construct("Timestamp", rt.ToValue(t), rt.ToValue(i))
	case bsoncore.TypeInt64:
		return v.construct("NumberLong", rt.ToValue(strconv.FormatInt(val.Int64(), 10)))
	case bsoncore.TypeDecimal128:
		h, l := val.Decimal128()
		return v.construct("NumberDecimal", rt.ToValue(decimal128.Value{H: h, L: l}.String()))
	}
	return goja.Undefined()
}

// docToJS converts a document to a plain object, fields in order.
func (v *vm) docToJS(doc bsoncore.Document) *goja.Object {
	o := v.rt.NewObject()
	elems, _ := doc.Elements()
	for _, el := range elems {
		_ = o.Set(el.Key(), v.toJS(el.Value()))
	}
	return o
}

// construct calls the prelude's constructor name.
func (v *vm) construct(name string, args ...goja.Value) goja.Value {
	o, err := v.rt.New(v.rt.Get(name), args...)
	if err != nil {
		return goja.Undefined()
	}
	return o
}

// jsFlags keeps the BSON regex options JavaScript knows.
func jsFlags(opts string) string {
	out := make([]byte, 0, len(opts))
	for i := 0; i < len(opts); i++ {
		switch opts[i] {
		case 'i', 'm', 's', 'u':
			out = append(out, opts[i])
		}
	}
	return string(out)
}

// appendBSON appends JavaScript value x as a BSON element named key, as MongoDB converts
// a result: numbers become doubles, undefined null, functions Code.
func (v *vm) appendBSON(dst []byte, key string, x goja.Value, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, mongoerr.New(CodeJSInterpreterFailure, "InternalError: too much recursion converting a value to BSON")
	}
	if len(dst) > MaxResultSize {
		return nil, mongoerr.New(mongoerr.BSONObjectTooLarge, "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and 16793600(16MB)", len(dst), len(dst))
	}
	if x == nil || goja.IsUndefined(x) || goja.IsNull(x) {
		return bsoncore.AppendNullElement(dst, key), nil
	}
	switch e := x.Export().(type) {
	case bool:
		return bsoncore.AppendBooleanElement(dst, key, e), nil
	case string:
		return bsoncore.AppendStringElement(dst, key, e), nil
	case int64:
		return bsoncore.AppendDoubleElement(dst, key, float64(e)), nil
	case float64:
		return bsoncore.AppendDoubleElement(dst, key, e), nil
	}
	o, ok := x.(*goja.Object)
	if !ok {
		return bsoncore.AppendStringElement(dst, key, x.String()), nil
	}
	return v.appendObject(dst, key, o, depth)
}

// appendObject appends an object: a shell type, a Date, RegExp, array, function or document.
func (v *vm) appendObject(dst []byte, key string, o *goja.Object, depth int) ([]byte, error) {
	if t := o.Get("__bsontype"); t != nil && !goja.IsUndefined(t) {
		return v.appendTyped(dst, key, t.String(), o)
	}
	switch o.ClassName() {
	case "Date":
		if t, ok := o.Export().(time.Time); ok {
			return bsoncore.AppendDateTimeElement(dst, key, t.UnixMilli()), nil
		}
		return bsoncore.AppendNullElement(dst, key), nil
	case "RegExp":
		return bsoncore.AppendRegexElement(dst, key, o.Get("source").String(), sortedFlags(o.Get("flags").String())), nil
	case "Function":
		return bsoncore.AppendJavaScriptElement(dst, key, o.String()), nil
	case "Array":
		idx, out := bsoncore.AppendArrayElementStart(dst, key)
		n := o.Get("length").ToInteger()
		var err error
		for i := int64(0); i < n; i++ {
			if out, err = v.appendBSON(out, strconv.FormatInt(i, 10), o.Get(strconv.FormatInt(i, 10)), depth+1); err != nil {
				return nil, err
			}
		}
		return bsoncore.AppendArrayEnd(out, idx)
	}
	idx, out := bsoncore.AppendDocumentElementStart(dst, key)
	var err error
	for _, k := range o.Keys() {
		f := o.Get(k)
		if f != nil && goja.IsUndefined(f) {
			continue // MongoDB drops undefined fields of an object
		}
		if out, err = v.appendBSON(out, k, f, depth+1); err != nil {
			return nil, err
		}
	}
	return bsoncore.AppendDocumentEnd(out, idx)
}

// appendTyped appends a prelude shell type by its marker.
func (v *vm) appendTyped(dst []byte, key, t string, o *goja.Object) ([]byte, error) {
	switch t {
	case "oid":
		b, err := hex.DecodeString(o.Get("str").String())
		if err != nil || len(b) != 12 {
			return bsoncore.AppendNullElement(dst, key), nil
		}
		var id [12]byte
		copy(id[:], b)
		return bsoncore.AppendObjectIDElement(dst, key, id), nil
	case "int":
		return bsoncore.AppendInt32Element(dst, key, int32(o.Get("__v").ToInteger())), nil
	case "long":
		n, err := strconv.ParseInt(o.Get("__v").String(), 10, 64)
		if err != nil {
			n = int64(o.Get("floatApprox").ToFloat())
		}
		return bsoncore.AppendInt64Element(dst, key, n), nil
	case "decimal":
		d, ok := decimal128.Parse(o.Get("__v").String())
		if !ok {
			return bsoncore.AppendDoubleElement(dst, key, math.NaN()), nil
		}
		return bsoncore.AppendDecimal128Element(dst, key, d.H, d.L), nil
	case "timestamp":
		return bsoncore.AppendTimestampElement(dst, key, uint32(o.Get("t").ToInteger()), uint32(o.Get("i").ToInteger())), nil
	case "binary":
		b, err := base64.StdEncoding.DecodeString(o.Get("__b64").String())
		if err != nil {
			b = nil
		}
		return bsoncore.AppendBinaryElement(dst, key, byte(o.Get("subtype").ToInteger()), b), nil
	}
	return bsoncore.AppendNullElement(dst, key), nil
}

// sortedFlags orders regex flags as BSON requires.
func sortedFlags(f string) string {
	out := make([]byte, 0, len(f))
	for _, c := range "imsux" {
		for i := 0; i < len(f); i++ {
			if rune(f[i]) == c {
				out = append(out, f[i])
				break
			}
		}
	}
	return string(out)
}

// toValue converts a JavaScript result to an owned BSON value.
func (v *vm) toValue(x goja.Value) (bsoncore.Value, error) {
	idx, b := bsoncore.AppendDocumentStart(nil)
	b, err := v.appendBSON(b, "v", x, 0)
	if err != nil {
		return bsoncore.Value{}, err
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	if len(b) > MaxResultSize {
		return bsoncore.Value{}, mongoerr.New(mongoerr.BSONObjectTooLarge, "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and 16793600(16MB)", len(b), len(b))
	}
	return bsoncore.Document(b).Index(0).Value(), nil
}
