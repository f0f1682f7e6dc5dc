package update

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The fuzzers take the table cases as seeds; testdata/fuzz holds the inputs earlier runs
// found interesting. Run them with
//
//	go test ./exec/update -run '^$' -fuzz '^FuzzApply$' -fuzztime 2m

// fuzzDocs are documents every compiled update is also applied to.
var fuzzDocs = []string{
	`{_id: 1}`,
	`{_id: 1, a: 1, b: [1, {c: 2}], d: {e: "x", f: [[1], {g: null}]}}`,
	`{_id: {a: 1}, a: [1, 2, 3], "0": {a: 1}, $x: 1}`,
}

// checkApply applies u to doc and checks the invariants: no panic (the fuzzer catches
// those), valid output for valid input, an unchanged document copied as is, and dst kept
// on error.
func checkApply(t *testing.T, u *Update, doc []byte, pos int, inserting bool) {
	prefix := []byte{0xAB}
	out, changed, err := u.Apply(append([]byte(nil), prefix...), doc, pos, inserting)
	if !bytes.HasPrefix(out, prefix) {
		t.Fatalf("dst prefix lost")
	}
	if bsoncore.Document(doc).Validate() != nil {
		return // garbage in: only the absence of panics is promised
	}
	got := out[1:]
	if err != nil {
		if len(got) != 0 {
			t.Fatalf("dst changed on error %v", err)
		}
		return
	}
	if verr := bsoncore.Document(got).Validate(); verr != nil {
		t.Fatalf("invalid output %x: %v", got, verr)
	}
	if !changed && !bytes.Equal(got, doc) {
		t.Fatalf("unchanged document rewritten:\n%x\n%x", doc, got)
	}
}

// checkUpsert runs Upsert with doc as the query and checks its output.
func checkUpsert(t *testing.T, u *Update, query []byte) {
	out, err := Upsert(nil, query, u)
	if err != nil || bsoncore.Document(query).Validate() != nil {
		return
	}
	if verr := bsoncore.Document(out).Validate(); verr != nil {
		t.Fatalf("invalid upsert output %x: %v", out, verr)
	}
}

func FuzzCompile(f *testing.F) {
	for _, tc := range allApplyCases() {
		var filter []byte
		if len(tc.filters) > 0 {
			filter = docOf(f, tc.filters[0])
		}
		f.Add([]byte(docOf(f, tc.update)), filter)
	}
	for _, tc := range append(append([]errorCase(nil), compileErrorCases...), applyErrorCases...) {
		f.Add([]byte(docOf(f, tc.update)), []byte(nil))
	}
	docs := docsOf(f, fuzzDocs)
	f.Fuzz(func(t *testing.T, update, filter []byte) {
		opts := &Options{}
		if filter != nil {
			opts.ArrayFilters = []bsoncore.Document{filter}
		}
		u, err := Compile(update, opts)
		if err != nil {
			return
		}
		for _, d := range docs {
			checkApply(t, u, d, 0, false)
			checkApply(t, u, d, -1, true)
		}
		checkUpsert(t, u, docs[1])
	})
}

func FuzzApply(f *testing.F) {
	for _, tc := range allApplyCases() {
		pos := -1
		if tc.pos != nil {
			pos = *tc.pos
		}
		if len(tc.filters) == 0 {
			f.Add([]byte(docOf(f, tc.update)), []byte(docOf(f, tc.doc)), pos, tc.insert)
		}
	}
	for _, tc := range applyErrorCases {
		if len(tc.filters) == 0 {
			f.Add([]byte(docOf(f, tc.update)), []byte(docOf(f, tc.doc)), 0, false)
		}
	}
	f.Fuzz(func(t *testing.T, update, doc []byte, pos int, inserting bool) {
		u, err := Compile(update, nil)
		if err != nil {
			return
		}
		checkApply(t, u, doc, pos, inserting)
		checkUpsert(t, u, doc)
	})
}
