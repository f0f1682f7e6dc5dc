package js

import (
	"encoding/hex"

	"github.com/dop251/goja"

	"github.com/cleavedb/cleave/bsonx"
)

// prelude defines MongoDB's shell types and helpers. Their methods and markers are not
// enumerable, so a document's fields are what for-in and Object.keys see.
const prelude = `
(function(g) {
  function def(o, name, v) { Object.defineProperty(o, name, {value: v, writable: true, configurable: true}); }
  function type(C, t) { def(C.prototype, '__bsontype', t); }

  function ObjectId(s) {
    if (!(this instanceof ObjectId)) return new ObjectId(s);
    if (s === undefined) s = __newObjectId();
    if (typeof s !== 'string' || !/^[0-9a-fA-F]{24}$/.test(s)) throw new Error('invalid object id: ' + s);
    def(this, 'str', s.toLowerCase());
  }
  type(ObjectId, 'oid');
  def(ObjectId.prototype, 'toString', function() { return 'ObjectId("' + this.str + '")'; });
  def(ObjectId.prototype, 'tojson', function() { return this.toString(); });
  def(ObjectId.prototype, 'toHexString', function() { return this.str; });
  def(ObjectId.prototype, 'valueOf', function() { return this.str; });
  def(ObjectId.prototype, 'equals', function(o) { return o instanceof ObjectId && o.str === this.str; });
  def(ObjectId.prototype, 'getTimestamp', function() { return new Date(parseInt(this.str.substr(0, 8), 16) * 1000); });

  function NumberLong(v) {
    if (!(this instanceof NumberLong)) return new NumberLong(v);
    var s = v === undefined ? '0' : String(v);
    if (typeof v === 'number') s = String(Math.trunc(v));
    def(this, '__v', s);
    def(this, 'floatApprox', Number(s));
  }
  type(NumberLong, 'long');
  def(NumberLong.prototype, 'valueOf', function() { return this.floatApprox; });
  def(NumberLong.prototype, 'toNumber', function() { return this.floatApprox; });
  def(NumberLong.prototype, 'toString', function() { return 'NumberLong(' + (Math.abs(this.floatApprox) < 2147483648 ? this.__v : '"' + this.__v + '"') + ')'; });
  def(NumberLong.prototype, 'tojson', function() { return this.toString(); });

  function NumberInt(v) {
    if (!(this instanceof NumberInt)) return new NumberInt(v);
    def(this, '__v', v === undefined ? 0 : (Number(v) | 0));
  }
  type(NumberInt, 'int');
  def(NumberInt.prototype, 'valueOf', function() { return this.__v; });
  def(NumberInt.prototype, 'toNumber', function() { return this.__v; });
  def(NumberInt.prototype, 'toString', function() { return 'NumberInt(' + this.__v + ')'; });
  def(NumberInt.prototype, 'tojson', function() { return this.toString(); });

  function NumberDecimal(v) {
    if (!(this instanceof NumberDecimal)) return new NumberDecimal(v);
    def(this, '__v', v === undefined ? '0' : String(v));
  }
  type(NumberDecimal, 'decimal');
  def(NumberDecimal.prototype, 'valueOf', function() { return Number(this.__v); });
  def(NumberDecimal.prototype, 'toString', function() { return 'NumberDecimal("' + this.__v + '")'; });
  def(NumberDecimal.prototype, 'tojson', function() { return this.toString(); });

  function Timestamp(t, i) {
    if (!(this instanceof Timestamp)) return new Timestamp(t, i);
    def(this, 't', t || 0); def(this, 'i', i || 0);
  }
  type(Timestamp, 'timestamp');
  def(Timestamp.prototype, 'toString', function() { return 'Timestamp(' + this.t + ', ' + this.i + ')'; });
  def(Timestamp.prototype, 'tojson', function() { return this.toString(); });

  function BinData(sub, b64) {
    if (!(this instanceof BinData)) return new BinData(sub, b64);
    def(this, 'subtype', sub); def(this, '__b64', b64);
  }
  type(BinData, 'binary');
  def(BinData.prototype, 'base64', function() { return this.__b64; });
  def(BinData.prototype, 'toString', function() { return 'BinData(' + this.subtype + ',"' + this.__b64 + '")'; });
  def(BinData.prototype, 'tojson', function() { return this.toString(); });

  function ISODate(s) { return s === undefined ? new Date() : new Date(s); }

  function tojson(x, indent) {
    indent = indent || '';
    if (x === undefined) return 'undefined';
    if (x === null) return 'null';
    if (typeof x === 'string') return JSON.stringify(x);
    if (typeof x === 'number' || typeof x === 'boolean') return String(x);
    if (x instanceof Date) return 'ISODate("' + x.toISOString() + '")';
    if (x instanceof RegExp) return String(x);
    if (typeof x.tojson === 'function') return x.tojson();
    if (typeof x === 'function') return x.toString();
    var inner = indent + '\t';
    if (Array.isArray(x)) {
      if (x.length === 0) return '[ ]';
      return '[\n' + x.map(function(e) { return inner + tojson(e, inner); }).join(',\n') + '\n' + indent + ']';
    }
    var keys = Object.keys(x);
    if (keys.length === 0) return '{ }';
    return '{\n' + keys.map(function(k) { return inner + JSON.stringify(k) + ' : ' + tojson(x[k], inner); }).join(',\n') + '\n' + indent + '}';
  }

  g.ObjectId = ObjectId; g.NumberLong = NumberLong; g.NumberInt = NumberInt;
  g.NumberDecimal = NumberDecimal; g.Timestamp = Timestamp; g.BinData = BinData;
  g.ISODate = ISODate; g.tojson = tojson;

  // The Array helpers of MongoDB's JavaScript environment, which mapReduce's reduce
  // functions use (Array.sum(values) in MongoDB's own examples): null for an empty array.
  Array.sum = function(a) {
    if (a.length === 0) return null;
    var s = a[0];
    for (var i = 1; i < a.length; i++) s += a[i];
    return s;
  };
  Array.avg = function(a) { return a.length === 0 ? null : Array.sum(a) / a.length; };
  Array.contains = function(a, x) { return a.indexOf(x) >= 0; };
  Array.unique = function(a) {
    var out = [];
    for (var i = 0; i < a.length; i++) if (out.indexOf(a[i]) < 0) out.push(a[i]);
    return out;
  };
  Array.stdDev = function(a) {
    if (a.length === 0) return null;
    var m = Array.avg(a), s = 0;
    for (var i = 0; i < a.length; i++) s += (a[i] - m) * (a[i] - m);
    return Math.sqrt(s / a.length);
  };
})(this);
`

// preludeProgram is the prelude compiled once for every runtime.
var preludeProgram = goja.MustCompile("prelude", prelude, false)

// newVM returns a runtime with the prelude and the Go-side helpers defined.
func newVM() (*vm, error) {
	v := &vm{rt: goja.New(), funcs: map[*goja.Program]goja.Callable{}}
	v.rt.SetMaxCallStackSize(maxCallStack)
	if err := v.rt.Set("__newObjectId", func() string { id := bsonx.NewObjectID(); return hex.EncodeToString(id[:]) }); err != nil {
		return nil, err
	}
	if err := v.rt.Set("sleep", v.sleep); err != nil {
		return nil, err
	}
	if _, err := v.rt.RunProgram(preludeProgram); err != nil {
		return nil, interpreterError(err)
	}
	return v, nil
}
