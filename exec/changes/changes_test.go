package changes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// doc builds a document from extended JSON.
func doc(t *testing.T, ext string) bsoncore.Document { return streamtest.ExtDoc(t, ext) }

func TestDiff(t *testing.T) {
	cases := []struct{ name, old, new, want string }{
		{"Set", `{"_id": 1, "a": 1}`, `{"_id": 1, "a": 2}`,
			`{"updatedFields": {"a": 2}, "removedFields": [], "truncatedArrays": [], "disambiguatedPaths": {}}`},
		{"NumberTypeChanged", `{"a": 1}`, `{"a": 1.0}`,
			`{"updatedFields": {"a": 1.0}, "removedFields": [], "truncatedArrays": [], "disambiguatedPaths": {}}`},
		{"NestedAndRemoved", `{"s": {"x": 1, "y": 2}, "z": 0}`, `{"s": {"x": 5}}`,
			`{"updatedFields": {"s.x": 5}, "removedFields": ["s.y", "z"], "truncatedArrays": [], "disambiguatedPaths": {}}`},
		{"AddedField", `{"a": 1}`, `{"a": 1, "b": {"c": 1}}`,
			`{"updatedFields": {"b": {"c": 1}}, "removedFields": [], "truncatedArrays": [], "disambiguatedPaths": {}}`},
		{"ArrayPushAndSet", `{"r": [1, 2]}`, `{"r": [1, 3, 4]}`,
			`{"updatedFields": {"r.1": 3, "r.2": 4}, "removedFields": [], "truncatedArrays": [], "disambiguatedPaths": {}}`},
		{"ArrayTruncated", `{"r": [1, 2, 3]}`, `{"r": [1]}`,
			`{"updatedFields": {}, "removedFields": [], "truncatedArrays": [{"field": "r", "newSize": 1}], "disambiguatedPaths": {}}`},
		{"TypeChangedWhole", `{"a": {"b": 1}}`, `{"a": [1]}`,
			`{"updatedFields": {"a": [1]}, "removedFields": [], "truncatedArrays": [], "disambiguatedPaths": {}}`},
		{"FieldOrderIsNoChange", `{"a": 1, "b": 2}`, `{"b": 2, "a": 1}`,
			`{"updatedFields": {}, "removedFields": [], "truncatedArrays": [], "disambiguatedPaths": {}}`},
		{"NumericFieldName", `{"a": {"1": 1}}`, `{"a": {"1": 2}}`,
			`{"updatedFields": {"a.1": 2}, "removedFields": [], "truncatedArrays": [], "disambiguatedPaths": {"a.1": ["a", "1"]}}`},
		{"IndexThenNumericField", `{"a": [{"1": 1}]}`, `{"a": [{"1": 2}]}`,
			`{"updatedFields": {"a.0.1": 2}, "removedFields": [], "truncatedArrays": [], "disambiguatedPaths": {"a.0.1": ["a", {"$numberInt": "0"}, "1"]}}`},
		{"RemovedAfterAligned", `{"a": 1, "b": 2, "c": {"d": 1}}`, `{"a": 1}`,
			`{"updatedFields": {}, "removedFields": ["b", "c"], "truncatedArrays": [], "disambiguatedPaths": {}}`},
		{"RemovedInTheMiddle", `{"a": 1, "b": 2, "c": 3}`, `{"a": 1, "c": 4}`,
			`{"updatedFields": {"c": 4}, "removedFields": ["b"], "truncatedArrays": [], "disambiguatedPaths": {}}`},
		{"AddedFirstAndChanged", `{"a": 1}`, `{"x": 0, "a": 2}`,
			`{"updatedFields": {"x": 0, "a": 2}, "removedFields": [], "truncatedArrays": [], "disambiguatedPaths": {}}`},
		{"DottedNameRemoved", `{"a": {"b.c": 1}}`, `{"a": {}}`,
			`{"updatedFields": {}, "removedFields": ["a.b.c"], "truncatedArrays": [], "disambiguatedPaths": {"a.b.c": ["a", "b.c"]}}`},
		{"NestedArrayTruncated", `{"a": {"r": [1, 2, 3]}}`, `{"a": {"r": [5]}}`,
			`{"updatedFields": {"a.r.0": 5}, "removedFields": [], "truncatedArrays": [{"field": "a.r", "newSize": 1}], "disambiguatedPaths": {}}`},
		{"IndexAloneIsNotAmbiguous", `{"a": [1]}`, `{"a": [2]}`,
			`{"updatedFields": {"a.0": 2}, "removedFields": [], "truncatedArrays": [], "disambiguatedPaths": {}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Diff(doc(t, c.old), doc(t, c.new))
			want := doc(t, c.want)
			if string(got) != string(want) {
				t.Fatalf("Diff(%s, %s)\n got %s\nwant %s", c.old, c.new, got, want)
			}
		})
	}
}

func TestTokenOrderAndRoundTrip(t *testing.T) {
	toks := []Token{
		{TS: 5, Shard: 0, Pos: 0}, {TS: 5, Shard: 0, Pos: 1}, {TS: 5, Shard: 0, Pos: 1, Invalidate: true},
		{TS: 5, Shard: 1, Pos: 0}, hwm(5), {TS: 6},
	}
	for i, tok := range toks {
		d := tok.AppendDoc(nil)
		got, err := ParseToken("resumeAfter", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
		if err != nil || got != tok {
			t.Fatalf("round trip of %+v: %+v, %v", tok, got, err)
		}
		if i == 0 {
			continue
		}
		prev := toks[i-1]
		if !prev.Less(tok) || tok.Less(prev) {
			t.Fatalf("%+v should sort before %+v", prev, tok)
		}
		// The hex strings sort as the tokens do.
		a, _ := bsoncore.Document(prev.AppendDoc(nil)).Lookup("_data").StringValueOK()
		b, _ := bsoncore.Document(d).Lookup("_data").StringValueOK()
		if a >= b {
			t.Fatalf("_data %s should sort before %s", a, b)
		}
	}
}

func TestParseSpecRefusals(t *testing.T) {
	tok := Token{TS: 7, Invalidate: true}.AppendDoc(nil)
	cases := []struct {
		name string
		spec bsoncore.Document
		code mongoerr.Code
	}{
		{"UnknownField", doc(t, `{"nope": 1}`), mongoerr.Location40415},
		{"BadFullDocument", doc(t, `{"fullDocument": "sometimes"}`), mongoerr.BadValue},
		{"FullDocumentType", doc(t, `{"fullDocument": 1}`), mongoerr.TypeMismatch},
		{"TwoResumeOptions", bsoncore.NewDocumentBuilder().AppendDocument("resumeAfter", Token{TS: 1}.AppendDoc(nil)).
			AppendTimestamp("startAtOperationTime", 1, 1).Build(), mongoerr.Location40674},
		{"ResumeAfterInvalidate", bsoncore.NewDocumentBuilder().AppendDocument("resumeAfter", tok).Build(), mongoerr.InvalidResumeToken},
		{"ForeignToken", doc(t, `{"resumeAfter": {"_data": "8263"}}`), mongoerr.FailedToParse},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseSpec(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: c.spec})
			var me *mongoerr.Error
			if !errors.As(err, &me) || me.Code != c.code {
				t.Fatalf("ParseSpec(%s): %v, want code %d", c.spec, err, c.code)
			}
		})
	}
	s, err := ParseSpec(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.NewDocumentBuilder().AppendDocument("startAfter", tok).Build()})
	if err != nil || s.StartAfter == nil || !s.StartAfter.Invalidate {
		t.Fatalf("startAfter an invalidate: %+v, %v", s, err)
	}
}

// stepClock is a ChangeClock whose seconds a test sets.
type stepClock struct{ t uint64 }

func (c *stepClock) Tick() uint64 { c.t++; return c.t }
func (c *stepClock) Now() uint64  { return c.t }
func (c *stepClock) Applied()     {}

// Records past the retention's age are trimmed, and a stream resuming before them fails
// with ChangeStreamHistoryLost, also after the store reopens.
func TestRetentionTrimsAndResumeFails(t *testing.T) {
	fs := vfs.NewMem()
	db, err := store.Open(store.Options{Dir: "db", FS: fs, CacheSize: 8 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	now := time.Unix(1_000_000, 0)
	clk := &stepClock{t: uint64(now.Add(-2*time.Hour).Unix()) << 32}
	db.SetChangeClock(clk)
	commit := func() uint64 {
		b := db.NewBatch()
		defer b.Close()
		b.AddChange(doc(t, `{"o": "insert", "db": "d", "c": "c"}`))
		if err := b.Commit(true); err != nil {
			t.Fatal(err)
		}
		return b.ChangeTime
	}
	old := commit()
	clk.t = uint64(now.Unix()) << 32
	recent := commit()
	if err := (Retention{Age: time.Hour}).Trim(db, now); err != nil {
		t.Fatal(err)
	}
	src := []Source{{Shard: 0, Log: LocalLog(db)}}
	ctx := context.Background()
	if _, err := Open(ctx, src, Options{Start: Token{TS: old}, Resumed: true}); mongoerr.From(err).Code != mongoerr.ChangeStreamHistoryLost {
		t.Fatalf("resuming at a trimmed record: %v, want ChangeStreamHistoryLost", err)
	}
	if _, err := Open(ctx, src, Options{Start: Token{TS: recent}, Resumed: true}); err != nil {
		t.Fatalf("resuming at a kept record: %v", err)
	}
}
