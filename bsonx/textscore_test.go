package bsonx

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestStripTextScore: the score comes off wherever it stands, and a document without one is
// returned as it is.
func TestStripTextScore(t *testing.T) {
	doc := bsoncore.NewDocumentBuilder().AppendInt32("a", 1).AppendString("b", "x").Build()
	scored := WithTextScore(doc, 1.5)
	if s, ok := TextScore(scored); !ok || s != 1.5 {
		t.Fatalf("TextScore %v %v", s, ok)
	}
	if got := StripTextScore(scored); !bytes.Equal(got, doc) {
		t.Fatalf("stripped %v, want %v", got, doc)
	}
	middle := bsoncore.NewDocumentBuilder().AppendInt32("a", 1).AppendDouble(TextScoreField, 2).AppendString("b", "x").Build()
	if got := StripTextScore(middle); !bytes.Equal(got, doc) {
		t.Fatalf("stripped from the middle %v, want %v", got, doc)
	}
	if got := StripTextScore(doc); &got[0] != &doc[0] {
		t.Fatal("a document without a score was copied")
	}
}
