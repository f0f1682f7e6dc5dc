package match

import (
	"fmt"
	"strings"
	"testing"
)

// benchDoc is a ~1 KiB document: _id first, the predicates' fields scattered through it.
func benchDoc(tb testing.TB) []byte {
	var sb strings.Builder
	sb.WriteString(`{"_id": {"$oid": "5f0c1b2a3d4e5f6a7b8c9d0e"}, "name": "benchmark document", `)
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&sb, `"f%02d": "padding value number %02d", `, i, i)
	}
	sb.WriteString(`"a": {"b": "k42", "c": 7}, "n": 6, "tags": ["x", "y", "z"], `)
	for i := 20; i < 32; i++ {
		fmt.Fprintf(&sb, `"f%02d": %d.5, `, i, i)
	}
	sb.WriteString(`"s": "prefix-then-some-text", "last": true}`)
	d := doc(tb, sb.String())
	if len(d) < 900 || len(d) > 1200 {
		tb.Fatalf("bench document is %d bytes", len(d))
	}
	return d
}

var benchFilters = []struct{ name, filter string }{
	{"ID", `{"_id": {"$oid": "5f0c1b2a3d4e5f6a7b8c9d0e"}}`},
	{"Gt", `{"n": {"$gt": 5}}`},
	{"DottedIn", `{"a.b": {"$in": ["k1", "k7", "k13", "k21", "k29", "k33", "k42", "k50", "k64", "k77"]}}`},
	{"Or", `{"$or": [{"n": 1}, {"a.c": {"$lt": 3}}, {"tags": "z"}]}`},
	{"Regex", `{"s": {"$regex": "then-.*text$"}}`},
	{"RegexPrefix", `{"s": {"$regex": "^prefix"}}`},
	{"ElemMatch", `{"tags": {"$elemMatch": {"$gte": "y"}}}`},
}

func BenchmarkMatch(b *testing.B) {
	d := benchDoc(b)
	for _, bf := range benchFilters {
		f, err := Compile(doc(b, bf.filter), nil)
		if err != nil {
			b.Fatal(err)
		}
		if !f.Match(d) {
			b.Fatalf("%s does not match the bench document", bf.name)
		}
		b.Run(bf.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f.Match(d)
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	fd := doc(b, `{"a.b": {"$in": [1, 2, 3]}, "n": {"$gt": 5, "$lt": 10}, "$or": [{"x": 1}, {"y": {"$exists": true}}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(fd, nil); err != nil {
			b.Fatal(err)
		}
	}
}
