// Package streamtest holds what tests of documents and streams share: Extended JSON
// documents, a temporary spill store
// per test, draining a stream, documents that sort with many ties.
package streamtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/store"
)

// Temp opens a temporary store in a test directory, closed when the test ends, and returns
// it with its directory, which must be empty whenever no spill is open.
func Temp(t *testing.T) (*stream.Temp, string) {
	t.Helper()
	return TempBudget(t, nil)
}

// TempBudget is Temp whose stages reserve their memory from b.
func TempBudget(t *testing.T, b *stream.Budget) (*stream.Temp, string) {
	t.Helper()
	dir := t.TempDir() + "/_tmp"
	tmp, err := store.NewTempStore(store.TempOptions{Dir: dir, MemTableSize: 1 << 20, CacheSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tmp.Close(); err != nil {
			t.Errorf("temp store Close: %v", err)
		}
	})
	return stream.NewTemp(tmp, b), dir
}

// CheckEmpty fails the test if dir holds anything.
func CheckEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		t.Errorf("spill directory %s holds %d files after the query", dir, len(ents))
	}
}

// Docs returns n documents with few distinct sort values of mixed types in "a" and "b"
// (many ties, so that stability shows) and padding.
func Docs(n int) []bsoncore.Document {
	rng := rand.New(rand.NewPCG(1, 2))
	docs := make([]bsoncore.Document, n)
	for i := range docs {
		b := bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i))
		switch k := rng.IntN(40); {
		case k < 15:
			b.AppendInt32("a", int32(k))
		case k < 25:
			b.AppendDouble("a", float64(k)/2)
		case k < 35:
			b.AppendString("a", fmt.Sprintf("s%02d", k))
		case k < 37:
			b.AppendArray("a", bsoncore.NewArrayBuilder().AppendInt32(int32(k)).AppendInt32(3).Build())
		default: // a missing: sorts as null
		}
		b.AppendInt64("b", int64(rng.IntN(5)))
		b.AppendString("pad", strings.Repeat("x", rng.IntN(200)))
		docs[i] = b.Build()
	}
	return docs
}

// Drain reads s to its end, copying the documents, and closes it.
func Drain(t *testing.T, s stream.Stream) ([]bsoncore.Document, error) {
	t.Helper()
	defer s.Close()
	var out []bsoncore.Document
	for {
		d, err := s.Next(context.Background())
		if err != nil || d == nil {
			return out, err
		}
		out = append(out, append(bsoncore.Document(nil), d...))
	}
}

// ExtDoc parses relaxed Extended JSON (1 is int32, 1.0 a double, {"$numberLong": "1"} an
// int64) into BSON, keeping field order.
func ExtDoc(tb testing.TB, s string) bsoncore.Document {
	tb.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		tb.Fatalf("bad extended JSON %s: %v", s, err)
	}
	raw, err := bson.Marshal(d)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// ExtArray parses a JSON array of documents into a BSON array.
func ExtArray(tb testing.TB, s string) bsoncore.Array {
	tb.Helper()
	return ExtDoc(tb, `{"a": `+s+`}`).Lookup("a").Array()
}

// CheckDocs fails the test unless got are the documents want (Extended JSON), byte for byte.
func CheckDocs(t *testing.T, got []bsoncore.Document, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d documents %v, want %d %v", len(got), got, len(want), strings.Join(want, " "))
	}
	for i, w := range want {
		if wd := ExtDoc(t, w); !bytes.Equal(got[i], wd) {
			t.Errorf("document %d:\n got %s\nwant %s", i, got[i], bsoncore.Document(wd))
		}
	}
}
