package project

import (
	"fmt"
	"strings"
	"testing"
)

// benchDoc is a ~1 KiB document.
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
	sb.WriteString(`"last": true}`)
	d := doc(tb, sb.String())
	if len(d) < 900 || len(d) > 1200 {
		tb.Fatalf("bench document is %d bytes", len(d))
	}
	return d
}

func BenchmarkApply(b *testing.B) {
	d := benchDoc(b)
	for _, bc := range []struct{ name, spec string }{
		{"IncludeThree", `{"name": 1, "n": 1, "a.b": 1}`},
		{"ExcludeOne", `{"tags": 0}`},
		{"Slice", `{"tags": {"$slice": 2}}`},
	} {
		p, err := Compile(doc(b, bc.spec), nil)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 0, 2048)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if buf, err = p.Apply(buf[:0], d, -1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
