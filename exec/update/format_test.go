package update

import (
	"strings"
	"testing"

	"github.com/cleavedb/cleave/bsonx"
)

// TestUpdateFormat checks the BSONElement::toString rendering used in messages.
func TestUpdateFormat(t *testing.T) {
	cases := []struct{ doc, want string }{
		{`{a: 1}`, "a: 1"},
		{`{a: L(5)}`, "a: 5"},
		{`{a: 1.0}`, "a: 1.0"},
		{`{a: 1.5}`, "a: 1.5"},
		{`{a: F(1e20)}`, "a: 1e+20.0"},
		{`{a: F(-0.0)}`, "a: -0.0"},
		{`{a: F(NaN)}`, "a: nan.0"},
		{`{a: F(-Infinity)}`, "a: -inf.0"},
		{`{a: D("1.50")}`, "a: 1.50"},
		{`{a: "x"}`, `a: "x"`},
		{`{a: true}`, "a: true"},
		{`{a: null}`, "a: null"},
		{`{a: {}}`, "a: {}"},
		{`{a: []}`, "a: []"},
		{`{a: {b: 1, c: [1, "x", {d: null}]}}`, `a: { b: 1, c: [ 1, "x", { d: null } ] }`},
		{`{a: Date(1380067200000)}`, "a: new Date(1380067200000)"},
		{`{a: TS(5, 1)}`, "a: Timestamp(5, 1)"},
		{`{a: OID(64b7f1a2c3d4e5f601234567)}`, "a: ObjectId('64b7f1a2c3d4e5f601234567')"},
		{`{a: RE("^x", "i")}`, "a: /^x/i"},
		{`{a: {"$binary": {"base64": "AQID", "subType": "00"}}}`, "a: BinData(0, 010203)"},
		{`{a: {"$binary": {"base64": "AAECAwQFBgcICQoLDA0ODw==", "subType": "04"}}}`,
			`a: UUID("00010203-0405-0607-0809-0a0b0c0d0e0f")`},
		{`{a: {"$minKey": 1}, b: {"$maxKey": 1}, c: {"$undefined": true}}`, "a: MinKey"},
	}
	for _, tc := range cases {
		body, _ := docBody(docOf(t, tc.doc))
		e, _, ok := readElem(body)
		if !ok {
			t.Fatalf("bad case %s", tc.doc)
		}
		if got := bsonx.ShellElement(e.key, e.t, e.val); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.doc, got, tc.want)
		}
	}
	long := `{a: "` + strings.Repeat("x", 200) + `"}`
	body, _ := docBody(docOf(t, long))
	e, _, _ := readElem(body)
	if got := bsonx.ShellElement(e.key, e.t, e.val); got != `a: "`+strings.Repeat("x", 150)+`..."` {
		t.Errorf("long string: %q", got)
	}
	if got := bsonx.ShellDoc(docOf(t, `{a: {"$undefined": true}, b: {"$maxKey": 1}}`)); got != "{ a: undefined, b: MaxKey }" {
		t.Errorf("formatDoc: %q", got)
	}
}
