package bsonx

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestCarryScores: the scores a read appended to a document pass to a new document built
// from it, once, whichever of the two it carries.
func TestCarryScores(t *testing.T) {
	doc := bsoncore.NewDocumentBuilder().AppendInt32("a", 1).AppendString("b", "x").Build()
	if s := TrailingScores(doc); s != nil {
		t.Fatalf("a document without scores: %v", s)
	}
	text := WithScore(doc, TextScoreField, 0.75)
	both := WithScore(text, VectorScoreField, 0.5)
	for _, in := range []bsoncore.Document{text, both, WithScore(doc, VectorScoreField, 0.5)} {
		scores := TrailingScores(in)
		out := bsoncore.NewDocumentBuilder().AppendInt32("c", 2).Build()
		prefix := []byte("xyz")
		got := CarryScores(append(prefix, out...), len(prefix), scores)
		nd := bsoncore.Document(got[len(prefix):])
		if err := nd.Validate(); err != nil {
			t.Fatalf("%v: %v", nd, err)
		}
		for _, f := range []string{TextScoreField, VectorScoreField} {
			want, wok := Score(in, f)
			if s, ok := Score(nd, f); s != want || ok != wok {
				t.Errorf("%s of %v: %v %v, want %v %v", f, nd, s, ok, want, wok)
			}
		}
		// Carried again, nothing doubles.
		if again := CarryScores(got, len(prefix), scores); len(again) != len(got) {
			t.Errorf("carried twice: %v", bsoncore.Document(again[len(prefix):]))
		}
	}
	// A user's value that merely ends like a score is a field, not a score.
	fake := bsoncore.NewDocumentBuilder().AppendString("s", TextScoreField).Build()
	if s := TrailingScores(fake); s != nil {
		t.Errorf("%v has no score, got %v", fake, s)
	}
}
