package impex

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// collect reads input with read and returns the documents and rejected lines.
func collect(t *testing.T, read func(add func(int, bson.Raw) error, reject func(int, error)) error) (docs map[int]bson.D, rejected []int) {
	t.Helper()
	docs = map[int]bson.D{}
	add := func(line int, raw bson.Raw) error {
		var d bson.D
		if err := bson.Unmarshal(raw, &d); err != nil {
			return err
		}
		docs[line] = d
		return nil
	}
	err := read(add, func(line int, _ error) { rejected = append(rejected, line) })
	if err != nil {
		t.Fatal(err)
	}
	return docs, rejected
}

// TestImportJSONLinesRejectsMalformedLine checks that a bad line is reported by number and
// the others are read, canonical and relaxed alike.
func TestImportJSONLinesRejectsMalformedLine(t *testing.T) {
	in := `{"_id":{"$numberInt":"1"},"n":{"$numberLong":"5"}}` + "\n" + `{"_id": 2, "broken": ` + "\n\n" + `{"_id":3,"d":{"$date":"2024-01-02T03:04:05Z"}}` + "\n"
	docs, rejected := collect(t, func(add func(int, bson.Raw) error, reject func(int, error)) error {
		return readJSONLines(strings.NewReader(in), 2, add, reject)
	})
	if !reflect.DeepEqual(rejected, []int{2}) {
		t.Errorf("rejected %v, want [2]", rejected)
	}
	if len(docs) != 2 || docs[1][1].Value != int64(5) || docs[4][1].Value != bson.DateTime(1704164645000) {
		t.Errorf("docs %v", docs)
	}
}

// TestImportJSONArrayLines checks that the elements of an array are read with their lines.
func TestImportJSONArrayLines(t *testing.T) {
	in := "[\n{\"_id\":1},\n{\"_id\":\n2},\n{\"_id\":{\"$numberDecimal\":\"x\"}},\n{\"_id\":4}]"
	docs, rejected := collect(t, func(add func(int, bson.Raw) error, reject func(int, error)) error {
		return readJSONArray(strings.NewReader(in), add, reject)
	})
	if !reflect.DeepEqual(rejected, []int{5}) {
		t.Errorf("rejected %v, want [5]", rejected)
	}
	if len(docs) != 3 || docs[2] == nil || docs[3] == nil || docs[6] == nil {
		t.Errorf("docs by line %v, want lines 2, 3 and 6", docs)
	}
}

// TestImportCSVTypesAndPaths checks mongoimport's typing of CSV values and dotted names.
func TestImportCSVTypesAndPaths(t *testing.T) {
	in := "_id,a.b,a.c,s,big,f\n1,2,x,\"q,\"\"r\",9000000000,1.5\n2,,,\"unclosed\n"
	o := ImportOptions{In: strings.NewReader(in), HeaderLine: true, IgnoreBlanks: true}
	docs, rejected := collect(t, func(add func(int, bson.Raw) error, reject func(int, error)) error { return readCSV(o, add, reject) })
	want := bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: bson.D{{Key: "b", Value: int32(2)}, {Key: "c", Value: "x"}}},
		{Key: "s", Value: `q,"r`}, {Key: "big", Value: int64(9000000000)}, {Key: "f", Value: 1.5}}
	if !reflect.DeepEqual(docs[2], want) {
		t.Errorf("row 2: %v, want %v", docs[2], want)
	}
	if len(rejected) != 1 || rejected[0] != 3 {
		t.Errorf("rejected %v, want [3]", rejected)
	}
}

// TestExportCSVCells pins how values print in CSV cells.
func TestExportCSVCells(t *testing.T) {
	oid, _ := bson.ObjectIDFromHex("65a1b2c3d4e5f60718293a4b")
	doc, _ := bson.Marshal(bson.D{{Key: "s", Value: "x"}, {Key: "i", Value: int32(3)}, {Key: "d", Value: bson.DateTime(1704164645123)},
		{Key: "o", Value: oid}, {Key: "n", Value: nil}, {Key: "a", Value: bson.A{1, bson.D{{Key: "b", Value: true}}}}, {Key: "f", Value: 0.5}})
	for path, want := range map[string]string{
		"s": "x", "i": "3", "d": "2024-01-02T03:04:05.123Z", "o": "ObjectId(65a1b2c3d4e5f60718293a4b)", "n": "",
		"a": `[1,{"b":true}]`, "a.1.b": "true", "a.0": "1", "a.5": "", "missing": "", "f": "0.5",
	} {
		if got := csvCell(lookupPath(doc, path)); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}

// TestImportOptionsChecked pins the refusals of bad flag combinations.
func TestImportOptionsChecked(t *testing.T) {
	for name, o := range map[string]ImportOptions{
		"NoCollection":        {DB: "d"},
		"CSVWithoutFields":    {DB: "d", Collection: "c", Type: "csv"},
		"UpsertFieldsInsert":  {DB: "d", Collection: "c", UpsertFields: []string{"x"}},
		"UnknownMode":         {DB: "d", Collection: "c", Mode: "replace"},
		"UnknownType":         {DB: "d", Collection: "c", Type: "tsv"},
		"HeaderlineAndFields": {DB: "d", Collection: "c", Type: "csv", HeaderLine: true, Fields: []string{"a"}},
	} {
		if err := checkImport(&o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestImportJSONLinesParallelKeepsOrder reads many chunks' worth of lines with several
// parsers and checks that every document arrives in input order with its exact line
// number, and every bad line is rejected with its own, across chunk boundaries.
func TestImportJSONLinesParallelKeepsOrder(t *testing.T) {
	var in strings.Builder
	var wantDocs, wantRejected []int
	pad := strings.Repeat("x", 300)
	for line := 1; in.Len() < 5*chunkBytes; line++ {
		switch {
		case line%997 == 0:
			in.WriteString(`{"_id": ` + "\n") // broken
			wantRejected = append(wantRejected, line)
		case line%101 == 0:
			in.WriteString("   \n") // blank
		case line%2 == 0:
			fmt.Fprintf(&in, "{\"_id\":%d,\"pad\":%q}\n", line, pad)
			wantDocs = append(wantDocs, line)
		default: // the driver's path: canonical Extended JSON
			fmt.Fprintf(&in, "{\"_id\":{\"$numberInt\":\"%d\"},\"pad\":%q}\n", line, pad)
			wantDocs = append(wantDocs, line)
		}
	}
	in.WriteString(`{"_id":"last, no newline"}`)
	last := strings.Count(in.String(), "\n") + 1
	wantDocs = append(wantDocs, last)
	for _, parsers := range []int{1, 3} {
		var gotDocs, gotRejected []int
		add := func(line int, raw bson.Raw) error {
			if line != last && raw.Lookup("_id").AsInt64() != int64(line) {
				t.Fatalf("line %d holds _id %v", line, raw.Lookup("_id"))
			}
			gotDocs = append(gotDocs, line)
			return nil
		}
		err := readJSONLines(strings.NewReader(in.String()), parsers, add, func(line int, _ error) { gotRejected = append(gotRejected, line) })
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotDocs, wantDocs) || !reflect.DeepEqual(gotRejected, wantRejected) {
			t.Errorf("%d parsers: %d docs (want %d), rejected %v (want %v)", parsers, len(gotDocs), len(wantDocs), gotRejected, wantRejected)
		}
	}
}

// TestImportJSONLinesStopsOnAddError checks that a failing add stops the reading and
// returns its error, leaving no goroutine blocked.
func TestImportJSONLinesStopsOnAddError(t *testing.T) {
	in := strings.Repeat(`{"a":1}`+"\n", 100000)
	stop := errors.New("stop")
	n := 0
	err := readJSONLines(strings.NewReader(in), 2, func(int, bson.Raw) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	}, func(int, error) {})
	if !errors.Is(err, stop) || n != 10 {
		t.Errorf("err %v after %d documents, want stop after 10", err, n)
	}
}
