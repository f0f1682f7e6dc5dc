package js

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// doc builds {a: int32, n: int64, s: string, id: ObjectId}.
func doc() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendInt32("a", 1).AppendInt64("n", 5).
		AppendString("s", "x").AppendObjectID("id", [12]byte{1}).Build()
}

// whereCases are $where sources and whether doc matches them.
var whereCases = []struct {
	name, src string
	want      bool
}{
	{"Expression", "this.a == 1", true},
	{"ExpressionFalse", "this.a == 2", false},
	{"Function", "function() { return obj.s === 'x' }", true},
	{"Return", "return this.n == 5", true},
	{"NumberLong", "this.n.toString() == 'NumberLong(5)'", true},
	{"ObjectIdStr", "this.id.str == '010000000000000000000000'", true},
	{"Tojson", "tojson(this.s) == '\"x\"'", true},
	{"Helpers", "ObjectId('010000000000000000000000').equals(this.id) && NumberInt(1) == this.a && ISODate('2020-01-01') instanceof Date", true},
}

func TestWhereCases(t *testing.T) {
	s := NewScope(context.Background(), 0)
	for _, tc := range whereCases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s.Where(bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, tc.src)})
			if err != nil {
				t.Fatal(err)
			}
			got, err := p(doc())
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestFunctionResultTypes(t *testing.T) {
	s := NewScope(context.Background(), 0)
	f, err := s.Function("function(a, b) { return {sum: a + b, id: ObjectId('010000000000000000000000'), l: NumberLong(7), d: new Date(0), arr: [1, 'x']} }")
	if err != nil {
		t.Fatal(err)
	}
	v, err := f([]bsoncore.Value{{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 2)}, {Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, 0.5)}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"sum": {"$numberDouble":"2.5"},"id": {"$oid":"010000000000000000000000"},"l": {"$numberLong":"7"},"d": {"$date":{"$numberLong":"0"}},"arr": [{"$numberDouble":"1.0"},"x"]}`
	if got := v.Document().String(); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func TestFunctionErrors(t *testing.T) {
	s := NewScope(context.Background(), 0)
	if _, err := s.Function("function( {"); code(err) != CodeJSInterpreterFailure {
		t.Fatalf("syntax error: %v", err)
	}
	f, _ := s.Function("function() { throw new Error('boom') }")
	if _, err := f(nil); code(err) != CodeJSInterpreterFailure {
		t.Fatalf("throw: %v", err)
	}
	f, _ = NewScope(context.Background(), 50*time.Millisecond).Function("function() { while (true) {} }")
	if _, err := f(nil); code(err) != mongoerr.MaxTimeMSExpired {
		t.Fatalf("loop: %v", err)
	}
}

// code returns err's MongoDB code, 0 if none.
func code(err error) mongoerr.Code {
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return me.Code
	}
	return 0
}

// TestArrayHelpers checks the Array helpers of MongoDB's JavaScript environment that reduce
// functions use: sum, avg, stdDev (null for an empty array), contains, unique.
func TestArrayHelpers(t *testing.T) {
	s := NewScope(context.Background(), 0)
	f, err := s.Function("function() { return {sum: Array.sum([1, 2, 3.5]), avg: Array.avg([2, 4]), none: Array.sum([]), " +
		"sd: Array.stdDev([2, 4, 4, 4, 5, 5, 7, 9]), has: Array.contains([1, 2], 2), uniq: Array.unique([1, 2, 1, 3])} }")
	if err != nil {
		t.Fatal(err)
	}
	v, err := f(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"sum": {"$numberDouble":"6.5"},"avg": {"$numberDouble":"3.0"},"none": null,"sd": {"$numberDouble":"2.0"},` +
		`"has": true,"uniq": [{"$numberDouble":"1.0"},{"$numberDouble":"2.0"},{"$numberDouble":"3.0"}]}`
	if got := v.Document().String(); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}
