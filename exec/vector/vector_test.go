package vector

import (
	"math"
	"math/rand/v2"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// randomVectors returns n random vectors of dims dimensions, uniform in [-1, 1).
func randomVectors(n, dims int, seed uint64) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dims)
		for j := range v {
			v[j] = r.Float32()*2 - 1
		}
		out[i] = v
	}
	return out
}

// recall is the share of want's nodes that got holds.
func recall(got, want []Result) float64 {
	if len(want) == 0 {
		return 1
	}
	in := map[int32]bool{}
	for _, r := range got {
		in[r.Node] = true
	}
	hit := 0
	for _, r := range want {
		if in[r.Node] {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}

// TestGraphRecall measures recall@10 at ef 100 against the exact search, for each
// similarity, with and without a filter that takes half of the nodes.
func TestGraphRecall(t *testing.T) {
	n := 3000 // TestGraphQuality measures 20,000 and 100,000 (CLEAVE_LONG=1)
	if testing.Short() {
		n = 1000
	}
	for _, sim := range []Similarity{Euclidean, Cosine, DotProduct} {
		g := NewGraph(sim, DefaultM, DefaultEFBuild, 7)
		for _, v := range randomVectors(n, 32, 1) {
			g.Add(v)
		}
		for _, quant := range []Quantization{QuantNone, QuantScalar} {
			t.Run(sim.String()+"_"+quant.String(), func(t *testing.T) {
				g.SetQuantization(quant)
				checkRecall(t, g)
			})
		}
	}
}

// checkRecall checks recall@10 at ef 100 with and without a filter, and that every distance
// returned is the float32 one, even from a quantized walk.
func checkRecall(t *testing.T, g *Graph) {
	t.Helper()
	even := func(n int32) bool { return n%2 == 0 }
	for _, accept := range []func(int32) bool{nil, even} {
		var sum float64
		queries := randomVectors(30, 32, 2)
		for _, q := range queries {
			got, _ := g.Search(q, 10, 100, accept)
			sum += recall(got, g.Exact(q, 10, accept))
			pq := g.sim.prepare(q)
			for i, r := range got {
				if accept != nil && !accept(r.Node) {
					t.Fatalf("node %d does not pass the filter", r.Node)
				}
				if want := g.dist(pq, r.Node); r.Dist != want {
					t.Fatalf("node %d at distance %v, want the float32 distance %v", r.Node, r.Dist, want)
				}
				if i > 0 && got[i-1].Dist > r.Dist {
					t.Fatalf("results out of order: %v", got)
				}
			}
		}
		if r := sum / float64(len(queries)); r < 0.95 {
			t.Errorf("recall@10 = %.3f (filter %v), want ≥ 0.95", r, accept != nil)
		}
	}
}

// TestGraphQuantizedAfterGrowth checks that a graph quantized while empty chooses its
// interval again as it grows, and that its codes stay one per node.
func TestGraphQuantizedAfterGrowth(t *testing.T) {
	g := NewGraph(Euclidean, 8, 32, 7)
	g.SetQuantization(QuantScalar)
	vecs := randomVectors(2000, 16, 3)
	for _, v := range vecs {
		g.Add(v)
	}
	if g.quant.at < 1024 || len(g.quant.codes) != 16*g.Len() || len(g.quant.sums) != g.Len() {
		t.Fatalf("interval chosen at %d nodes, %d codes, %d sums for %d nodes", g.quant.at, len(g.quant.codes), len(g.quant.sums), g.Len())
	}
	for i, v := range vecs[:50] {
		if got, _ := g.Search(v, 1, 50, nil); len(got) != 1 || got[0].Node != int32(i) {
			t.Fatalf("query of node %d found %v", i, got)
		}
	}
}

// TestGraphDelete checks that a deleted node is never returned and that the rest stay found.
func TestGraphDelete(t *testing.T) {
	g := NewGraph(Euclidean, 8, 50, 1)
	vecs := randomVectors(500, 8, 3)
	for _, v := range vecs {
		g.Add(v)
	}
	for i := int32(0); i < 500; i += 3 {
		g.Delete(i)
	}
	if g.Live() != 500-167 {
		t.Fatalf("Live = %d", g.Live())
	}
	for i, v := range vecs {
		res, _ := g.Search(v, 1, 50, nil)
		if len(res) == 0 {
			t.Fatal("no result")
		}
		if g.Deleted(res[0].Node) {
			t.Fatalf("deleted node %d returned", res[0].Node)
		}
		if i%3 != 0 && res[0].Node != int32(i) {
			t.Errorf("vector %d: nearest is %d", i, res[0].Node)
		}
	}
}

// TestSimilarityScore checks MongoDB's scores on small vectors.
func TestSimilarityScore(t *testing.T) {
	cases := []struct {
		name string
		sim  Similarity
		a, b []float32
		want float64
	}{
		{"EuclideanSame", Euclidean, []float32{1, 2}, []float32{1, 2}, 1},
		{"EuclideanTwoApart", Euclidean, []float32{0, 0}, []float32{0, 2}, 1.0 / 5},
		{"CosineSame", Cosine, []float32{1, 0}, []float32{3, 0}, 1},
		{"CosineOrthogonal", Cosine, []float32{1, 0}, []float32{0, 5}, 0.5},
		{"CosineOpposite", Cosine, []float32{1, 0}, []float32{-1, 0}, 0},
		{"DotProductUnit", DotProduct, []float32{0.6, 0.8}, []float32{0.6, 0.8}, 1},
		{"DotProductOrthogonal", DotProduct, []float32{1, 0}, []float32{0, 1}, 0.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.sim.Score(tc.sim.dist(tc.sim.prepare(tc.a), tc.sim.prepare(tc.b)))
			if math.Abs(got-tc.want) > 1e-6 {
				t.Errorf("score = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestParseDef checks definitions and MongoDB-shaped refusals.
func TestParseDef(t *testing.T) {
	doc := func(b *bsoncore.DocumentBuilder) bsoncore.Document { return b.Build() }
	vec := func(path string, dims int32, sim string) bsoncore.Document {
		return doc(bsoncore.NewDocumentBuilder().AppendString("type", "vector").AppendString("path", path).
			AppendInt32("numDimensions", dims).AppendString("similarity", sim))
	}
	filter := doc(bsoncore.NewDocumentBuilder().AppendString("type", "filter").AppendString("path", "year"))
	def := func(fields ...bsoncore.Document) bsoncore.Document {
		a := bsoncore.NewArrayBuilder()
		for _, f := range fields {
			a.AppendDocument(f)
		}
		return doc(bsoncore.NewDocumentBuilder().AppendArray("fields", a.Build()))
	}
	d, err := ParseDef(def(vec("emb", 3, "cosine"), filter))
	if err != nil {
		t.Fatal(err)
	}
	if f := d.Vector("emb"); f == nil || f.Dims != 3 || f.Sim != Cosine || f.Quant != QuantNone || !d.IsFilter("year") {
		t.Fatalf("parsed %+v", d)
	}
	quant := func(q string) bsoncore.Document {
		return doc(bsoncore.NewDocumentBuilder().AppendString("type", "vector").AppendString("path", "v").
			AppendInt32("numDimensions", 3).AppendString("similarity", "euclidean").AppendString("quantization", q))
	}
	for q, want := range map[string]Quantization{"none": QuantNone, "scalar": QuantScalar, "binary": QuantBinary} {
		if d, err := ParseDef(def(quant(q))); err != nil || d.Vectors[0].Quant != want {
			t.Fatalf("quantization %q: %+v, %v", q, d, err)
		}
	}
	for name, bad := range map[string]bsoncore.Document{
		"NoFields":       doc(bsoncore.NewDocumentBuilder()),
		"NoVector":       def(filter),
		"ZeroDims":       def(vec("emb", 0, "cosine")),
		"TooManyDims":    def(vec("emb", MaxDims+1, "cosine")),
		"BadSimilarity":  def(vec("emb", 3, "manhattan")),
		"PathTwice":      def(vec("emb", 3, "cosine"), vec("emb", 3, "euclidean")),
		"UnknownTopKey":  doc(bsoncore.NewDocumentBuilder().AppendArray("fields", bsoncore.NewArrayBuilder().Build()).AppendInt32("x", 1)),
		"UnknownFieldKy": def(doc(bsoncore.NewDocumentBuilder().AppendString("type", "filter").AppendString("path", "a").AppendInt32("x", 1))),
		"BadQuantizaton": def(quant("int4")),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseDef(bad)
			var me *mongoerr.Error
			if !asMongo(err, &me) || me.Code != mongoerr.BadValue {
				t.Fatalf("err = %v, want BadValue", err)
			}
		})
	}
}

// asMongo reports whether err is a *mongoerr.Error, setting *me.
func asMongo(err error, me **mongoerr.Error) bool {
	e, ok := err.(*mongoerr.Error) //nolint:errorlint // ParseDef returns the error itself
	*me = e
	return ok
}

// TestDistances checks the assembly distances against plain Go on every length to 70.
func TestDistances(t *testing.T) {
	t.Logf("AVX2: %v", useAVX2)
	for n := 0; n <= 70; n++ {
		v := randomVectors(2, n, uint64(n))
		a, b := v[0], v[1]
		if got, want := l2sq(a, b), l2sqGeneric(a, b); math.Abs(float64(got-want)) > 1e-4*(1+float64(want)) {
			t.Errorf("l2sq on %d = %v, want %v", n, got, want)
		}
		if got, want := dot(a, b), dotGeneric(a, b); math.Abs(float64(got-want)) > 1e-4*(1+math.Abs(float64(want))) {
			t.Errorf("dot on %d = %v, want %v", n, got, want)
		}
	}
}

// TestCodeDistances checks the assembly distances of quantized vectors against plain Go on
// every length to 70 and on the extreme codes, where a lane could overflow.
func TestCodeDistances(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for n := 0; n <= 70; n++ {
		a, b := make([]uint8, n), make([]uint8, n)
		for i := range a {
			a[i], b[i] = uint8(r.IntN(256)), uint8(r.IntN(256))
		}
		checkCodes(t, a, b)
	}
	a, b := make([]uint8, MaxDims), make([]uint8, MaxDims)
	for i := range a {
		a[i] = 255
	}
	checkCodes(t, a, b)
	checkCodes(t, a, a)
}

// checkCodes compares l2U8 and dotU8 with plain loops.
func checkCodes(t *testing.T, a, b []uint8) {
	t.Helper()
	var l2, d int64
	for i := range a {
		x := int64(a[i]) - int64(b[i])
		l2 += x * x
		d += int64(a[i]) * int64(b[i])
	}
	if got := l2U8(a, b); int64(got) != l2 {
		t.Errorf("l2U8 on %d = %d, want %d", len(a), got, l2)
	}
	if got := dotU8(a, b); int64(got) != d {
		t.Errorf("dotU8 on %d = %d, want %d", len(a), got, d)
	}
}
