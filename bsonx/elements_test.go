package bsonx

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestAppendElements checks that AppendElements finds what bsoncore.Document.Elements
// finds, and fails where it fails: a document cut short, an element whose value is cut.
func TestAppendElements(t *testing.T) {
	doc := bsoncore.NewDocumentBuilder().AppendInt32("a", 1).AppendString("b", "x").
		AppendDocument("c", bsoncore.NewDocumentBuilder().AppendBoolean("d", true).Build()).Build()
	bad := append(bsoncore.Document(nil), doc...)
	bad[4+3+4] = 0x7f // a's successor's type byte ("b"): an unknown type
	for name, d := range map[string]bsoncore.Document{
		"Valid": doc, "Empty": bsoncore.NewDocumentBuilder().Build(), "Short": doc[:3],
		"Cut": doc[:len(doc)-6], "BadType": bad,
	} {
		want, wantErr := d.Elements()
		var buf [2]bsoncore.Element
		got, err := AppendElements(buf[:0], d)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("%s: error %v, want %v", name, err, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d elements, want %d", name, len(got), len(want))
		}
		for i := range got {
			if string(got[i]) != string(want[i]) {
				t.Fatalf("%s: element %d is %v, want %v", name, i, got[i], want[i])
			}
		}
	}
}
