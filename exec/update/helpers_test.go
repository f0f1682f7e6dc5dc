package update

import (
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The test tables write documents in relaxed Extended JSON with the mongo shell's bare keys
// ({a: 1, "b.c": [1.5]}) and a few shorthands, so that int32, int64, double and decimal
// stay distinct and field order is exact:
//
//	L(5)        NumberLong(5)          D("1.5")  NumberDecimal("1.5")
//	Date(ms)    a date                 TS(t, i)  Timestamp(t, i)
//	OID(hex)    an ObjectId            F(1)      the double 1.0

var (
	shorthands = []struct {
		re   *regexp.Regexp
		repl string
	}{
		{regexp.MustCompile(`\bL\((-?\d+)\)`), `{"$$numberLong": "$1"}`},
		{regexp.MustCompile(`\bD\("([^"]*)"\)`), `{"$$numberDecimal": "$1"}`},
		{regexp.MustCompile(`\bF\((-?[0-9.eE+-]+|NaN|-?Infinity)\)`), `{"$$numberDouble": "$1"}`},
		{regexp.MustCompile(`\bDate\((-?\d+)\)`), `{"$$date": {"$$numberLong": "$1"}}`},
		{regexp.MustCompile(`\bTS\((\d+), *(\d+)\)`), `{"$$timestamp": {"t": $1, "i": $2}}`},
		{regexp.MustCompile(`\bOID\(([0-9a-f]{24})\)`), `{"$$oid": "$1"}`},
		{regexp.MustCompile(`\bRE\("([^"]*)", *"([^"]*)"\)`), `{"$$regularExpression": {"pattern": "$1", "options": "$2"}}`},
	}
	bareKey = regexp.MustCompile(`([{,]\s*)([A-Za-z0-9_$][A-Za-z0-9_$.\[\]]*)\s*:`)
)

// toExtJSON expands the shorthands and quotes bare keys.
func toExtJSON(s string) string {
	for _, sh := range shorthands {
		s = sh.re.ReplaceAllString(s, sh.repl)
	}
	return bareKey.ReplaceAllString(s, `$1"$2":`)
}

// docOf parses a test document.
func docOf(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(toExtJSON(s)), false, &d); err != nil {
		t.Fatalf("bad test document %s: %v", s, err)
	}
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatalf("marshal %s: %v", s, err)
	}
	return b
}

// docsOf parses a list of test documents.
func docsOf(t testing.TB, ss []string) []bsoncore.Document {
	t.Helper()
	var out []bsoncore.Document
	for _, s := range ss {
		out = append(out, docOf(t, s))
	}
	return out
}

// show renders BSON for failure messages.
func show(b []byte) string {
	if len(b) == 0 {
		return "<nil>"
	}
	return bson.Raw(b).String()
}

// fixedNow is the clock of the tests: 2023-11-14T22:13:20Z.
var fixedNow = time.UnixMilli(1700000000000).UTC()

// testOptions returns options with a fixed clock and the given array filters.
func testOptions(t testing.TB, filters []string) *Options {
	return &Options{
		ArrayFilters: docsOf(t, filters),
		Now:          func() time.Time { return fixedNow },
		Timestamp:    func() (uint32, uint32) { return 1700000000, 7 },
	}
}

// codeOf returns the MongoDB code and message of an error, or (0, "") for nil.
func codeOf(err error) (mongoerr.Code, string) {
	if err == nil {
		return 0, ""
	}
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return me.Code, me.Message
	}
	return -1, err.Error()
}

// at returns a match position for a test case.
func at(i int) *int { return &i }
