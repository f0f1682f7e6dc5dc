package expr

import (
	"bytes"
	"testing"
	"time"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// doc parses relaxed Extended JSON (field order kept; 1 is int32, 1.0 a double,
// {"$numberLong": "1"} an int64) into BSON bytes.
func doc(tb testing.TB, s string) bsoncore.Document {
	tb.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		tb.Fatalf("bad extended JSON %s: %v", s, err)
	}
	raw, err := bson.Marshal(d)
	if err != nil {
		tb.Fatalf("marshal %s: %v", s, err)
	}
	return raw
}

// val parses the Extended JSON of one value.
func val(tb testing.TB, s string) bsoncore.Value {
	tb.Helper()
	return doc(tb, `{"v": `+s+`}`).Lookup("v")
}

// evalCase is {expression, document, want}: want is the Extended JSON of the result
// (compared byte for byte, so types matter), "MISSING" for the missing value, or
// "ERR <code>" for an error at compile or evaluation time.
type evalCase struct {
	name string
	expr string
	doc  string
	want string
}

// testNow is $$NOW in the tests.
var testNow = time.Date(2021, 3, 4, 5, 6, 7, 8e6, time.UTC)

// runCases checks a table of evalCases.
func runCases(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.doc
			if d == "" {
				d = "{}"
			}
			got, err := evalString(t, tc.expr, d)
			checkResult(t, tc.want, got, err)
		})
	}
}

// evalString compiles and evaluates an expression given as Extended JSON.
func evalString(t *testing.T, e, d string) (bsoncore.Value, error) {
	t.Helper()
	x, err := Compile(val(t, e), &Options{Now: testNow})
	if err != nil {
		return missing, err
	}
	return x.Eval(doc(t, d), NewVars())
}

// checkResult compares a result with the expected Extended JSON.
func checkResult(t *testing.T, want string, got bsoncore.Value, err error) {
	t.Helper()
	if len(want) > 4 && want[:4] == "ERR " {
		me := mongoerr.As(err)
		if me == nil {
			t.Fatalf("got %v (err %v), want error %s", got, err, want)
		}
		if code := want[4:]; code != itoa(int(me.Code)) {
			t.Fatalf("got error %v, want code %s", err, code)
		}
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if want == "MISSING" {
		if got.Type != 0 {
			t.Fatalf("got %v, want missing", got)
		}
		return
	}
	w := val(t, want)
	if got.Type != w.Type || !bytes.Equal(got.Data, w.Data) {
		t.Fatalf("got %s %v, want %s %v", bsonx.TypeName(got.Type), got, bsonx.TypeName(w.Type), w)
	}
}

// itoa formats an int without strconv in the hot test path.
func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	neg := i < 0
	if neg {
		i = -i
	}
	var b []byte
	for i > 0 {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}
