package update

import (
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ycsbDoc is a YCSB record: an _id and ten 100-byte fields, about 1.1 KiB.
func ycsbDoc() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("_id", "user6284781860667377211")
	for i := range 10 {
		b.AppendString("field"+strconv.Itoa(i), strings.Repeat(string(rune('a'+i)), 100))
	}
	return b.Build()
}

// benchApply measures Apply of one compiled update to one document.
func benchApply(b *testing.B, update, doc bsoncore.Document, pos int) {
	u, err := Compile(update, nil)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 2*len(doc)+256)
	if _, _, err := u.Apply(buf, doc, pos, false); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		out, _, err := u.Apply(buf[:0], doc, pos, false)
		if err != nil {
			b.Fatal(err)
		}
		buf = out
	}
}

// BenchmarkApplySetYCSB is the YCSB update: $set of one top-level field of a 1 KiB record.
func BenchmarkApplySetYCSB(b *testing.B) {
	update := bsoncore.NewDocumentBuilder().AppendDocument("$set",
		bsoncore.NewDocumentBuilder().AppendString("field3", strings.Repeat("z", 100)).Build()).Build()
	benchApply(b, update, ycsbDoc(), -1)
}

func BenchmarkApplyInc(b *testing.B) {
	benchApply(b, docOf(b, `{$inc: {views: 1, "stats.clicks": L(2)}}`),
		docOf(b, `{_id: 1, name: "page", views: 41, stats: {clicks: L(7), shares: 3}, tags: ["a", "b"]}`), -1)
}

// BenchmarkApplyIncDecimal is $inc and $mul on decimals, by a decimal and by a double.
func BenchmarkApplyIncDecimal(b *testing.B) {
	doc := `{_id: 1, name: "item", price: D("19.99"), qty: 3}`
	for _, bc := range []struct{ name, update string }{
		{"ByDecimal", `{$inc: {price: D("0.01")}}`},
		{"ByDouble", `{$inc: {price: 0.25}}`},
		{"MulByDecimal", `{$mul: {price: D("1.075")}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchApply(b, docOf(b, bc.update), docOf(b, doc), -1)
		})
	}
}

func BenchmarkApplyPushEachSlice(b *testing.B) {
	var sb strings.Builder
	for i := range 50 {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.Itoa(i))
	}
	benchApply(b, docOf(b, `{$push: {recent: {$each: [100, 101], $slice: -50}}}`),
		docOf(b, `{_id: 1, recent: [`+sb.String()+`]}`), -1)
}

func BenchmarkApplyPositional(b *testing.B) {
	benchApply(b, docOf(b, `{$inc: {"items.$.qty": 1}}`),
		docOf(b, `{_id: 1, items: [{sku: "a", qty: 1}, {sku: "b", qty: 2}, {sku: "c", qty: 3}]}`), 1)
}

func BenchmarkApplyReplacement(b *testing.B) {
	doc := ycsbDoc()
	body, _ := docBody(doc)
	_, rest, _ := readElem(body) // drop _id: the replacement keeps the document's
	repl, at := startDoc(nil, 0, nil, true)
	repl = endDoc(append(repl, rest...), at)
	repl[len(repl)-2] = 'Z' // change the last byte of the last string
	benchApply(b, repl, doc, -1)
}

func BenchmarkCompileSet(b *testing.B) {
	update := docOf(b, `{$set: {a: 1, "b.c": "x"}, $inc: {n: 1}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(update, nil); err != nil {
			b.Fatal(err)
		}
	}
}
