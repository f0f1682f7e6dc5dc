package update

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// runApplyCase compiles and applies one case, returning the output after prefix.
func runApplyCase(t *testing.T, tc applyCase, prefix []byte) ([]byte, bool) {
	t.Helper()
	u, err := Compile(docOf(t, tc.update), testOptions(t, tc.filters))
	if err != nil {
		t.Fatalf("Compile(%s): %v", tc.update, err)
	}
	pos := -1
	if tc.pos != nil {
		pos = *tc.pos
	}
	out, changed, err := u.Apply(append([]byte(nil), prefix...), docOf(t, tc.doc), pos, tc.insert)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if !bytes.HasPrefix(out, prefix) {
		t.Fatalf("Apply did not append to dst")
	}
	return out[len(prefix):], changed
}

func TestUpdateApply(t *testing.T) {
	for _, tc := range allApplyCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := runApplyCase(t, tc, []byte("prefix"))
			want := docOf(t, tc.want)
			if !bytes.Equal(got, want) {
				t.Errorf("doc %s\nupdate %s\ngot  %s\nwant %s", tc.doc, tc.update, show(got), show(want))
			}
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if err := bsoncore.Document(got).Validate(); err != nil {
				t.Errorf("invalid output: %v", err)
			}
			if !changed && !bytes.Equal(got, docOf(t, tc.doc)) {
				t.Errorf("unchanged document was rewritten: %s", show(got))
			}
		})
	}
}

// TestUpdateApplyConcurrent applies one compiled update from several goroutines, as shards
// do, to catch shared scratch state (run with -race).
func TestUpdateApplyConcurrent(t *testing.T) {
	u, err := Compile(docOf(t, `{$set: {"a.$[i]": 0}, $push: {b: {$each: [3, 1], $sort: 1}}, $inc: {"c.$": 1}}`),
		testOptions(t, []string{`{i: {$gt: 1}}`}))
	if err != nil {
		t.Fatal(err)
	}
	doc := docOf(t, `{_id: 1, a: [1, 2, 3], b: [2], c: [5, 6]}`)
	want := docOf(t, `{_id: 1, a: [1, 0, 0], b: [1, 2, 3], c: [5, 7]}`)
	done := make(chan error, 8)
	for range 8 {
		go func() {
			var buf []byte
			for range 200 {
				out, _, err := u.Apply(buf[:0], doc, 1, false)
				if err != nil || !bytes.Equal(out, want) {
					done <- err
					return
				}
				buf = out
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestUpdateModifiedPaths(t *testing.T) {
	cases := []struct {
		name, update string
		filters      []string
		want         []string
	}{
		{"Plain", `{$set: {b: 1, "a.c": 1}, $inc: {"a.d": 1}}`, nil, []string{"a.c", "a.d", "b"}},
		{"Covered", `{$set: {a: 1}, $unset: {"ab.c": 1}, $push: {"a0": 1}}`, nil, []string{"a", "a0", "ab.c"}},
		{"Dynamic", `{$set: {"a.$.b": 1, "c.$[].d": 1, "e.$[i]": 1, "f.2.g": 1}}`, []string{`{i: 1}`},
			[]string{"a", "c", "e", "f.2.g"}},
		{"Rename", `{$rename: {"x.y": "z"}}`, nil, []string{"x.y", "z"}},
		{"PrefixSortsAfterOther", `{$set: {"a.b": 1, "a-c": 1, a: 1}}`, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := Compile(docOf(t, tc.update), testOptions(t, tc.filters))
			if tc.name == "PrefixSortsAfterOther" {
				if err == nil {
					t.Fatal("conflicting paths compiled")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := u.ModifiedPaths()
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
			}
		})
	}
	u, err := Compile(docOf(t, `{a: 1}`), nil)
	if err != nil || !u.IsReplacement() || u.ModifiedPaths() != nil {
		t.Fatalf("replacement: %v %v %v", err, u.IsReplacement(), u.ModifiedPaths())
	}
}

func TestUpdateNeedsPosition(t *testing.T) {
	for update, want := range map[string]bool{
		`{$set: {"a.$": 1}}`:             true,
		`{$set: {"a.$.b": 1, c: 1}}`:     true,
		`{$set: {"a.$[]": 1, "b.0": 1}}`: false,
		`{a: 1}`:                         false,
	} {
		u, err := Compile(docOf(t, update), nil)
		if err != nil {
			t.Fatal(err)
		}
		if u.NeedsPosition() != want {
			t.Errorf("%s: NeedsPosition = %v", update, !want)
		}
	}
}
