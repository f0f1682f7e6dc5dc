package colls

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// analyzeShardKey answers MongoDB 7.0's {analyzeShardKey: ns, key, keyCharacteristics?,
// readWriteDistribution?, sampleRate?, sampleSize?} on a sample of the collection's documents
// (every k-th one, up to sampleSize, 10,000 by default, or the sampleRate share):
// keyCharacteristics has the key's cardinality (numDistinctValues), frequency
// (mostCommonValues, the 5 most frequent) and monotonicity (the rank correlation of the key's
// values with the documents' insertion order, read from ObjectId _ids: "monotonic" at 0.7 or
// more, as MongoDB's threshold; a hashed key is "not monotonic"; without ObjectId _ids
// "unknown"). cleave samples no queries (MongoDB's configureQueryAnalyzer), so
// readWriteDistribution has MongoDB's answer for a collection that was never sampled: zeros.
func (h *Handlers) analyzeShardKey(_ context.Context, r *command.Request) error {
	const cmd = "analyzeShardKey"
	first, _ := bsonx.FirstElement(r.Body)
	ns, err := args.String(cmd, cmd, first.Value())
	if err != nil {
		return err
	}
	db, coll, err := parseNamespace(ns)
	if err != nil {
		return err
	}
	var key bsoncore.Document
	chars, rw := true, true
	var rate float64
	var size int64
	err = args.ForEach(cmd, r.Body, func(k string, v bsoncore.Value) (bool, error) {
		var err error
		switch k {
		case "key":
			key, err = args.Doc(cmd, k, v)
		case "keyCharacteristics":
			chars, err = args.Bool(cmd, k, v)
		case "readWriteDistribution":
			rw, err = args.Bool(cmd, k, v)
		case "sampleRate":
			rate, _ = bsonx.NumberAsFloat64(v)
			if rate <= 0 || rate > 1 {
				err = mongoerr.New(mongoerr.BadValue, "BSON field 'sampleRate' value must be > 0 and <= 1, actual value: %s", bsonx.ShellString(v))
			}
		case "sampleSize":
			if size, err = args.Int64(cmd, k, v); err == nil && size <= 0 {
				err = mongoerr.New(mongoerr.BadValue, "BSON field 'sampleSize' value must be > 0, actual value: %d", size)
			}
		default:
			return false, nil
		}
		return true, err
	})
	switch {
	case err != nil:
		return err
	case key == nil:
		return args.Missing(cmd, "key")
	case rate > 0 && size > 0:
		return mongoerr.New(mongoerr.InvalidOptions, "Cannot specify both 'sampleRate' and 'sampleSize'")
	}
	paths, hashed, err := analyzedKey(key)
	if err != nil {
		return err
	}
	c := h.Storage.Catalog.State().Collection(db, coll)
	if c == nil || h.CRUD.IsView(db, coll) {
		return mongoerr.New(mongoerr.NamespaceNotFound, "Cannot analyze a shard key for a non-existing collection")
	}
	out := r.Out
	if chars {
		s := h.sampleKeys(c.ID, paths, rate, size)
		out = bsoncore.AppendDocumentElement(out, "keyCharacteristics", s.characteristics(hashed, paths))
	}
	if rw {
		out = bsoncore.AppendDocumentElement(out, "readWriteDistribution", emptyReadWrite())
	}
	r.Out = out
	return nil
}

// analyzedKey returns the paths of key pattern key ({f: 1 | "hashed", ...}) and whether a
// field is hashed, or MongoDB's refusal.
func analyzedKey(key bsoncore.Document) (paths []string, hashed bool, err error) {
	elems, _ := key.Elements()
	for _, el := range elems {
		v := el.Value()
		s, isStr := v.StringValueOK()
		n, isNum := bsonx.NumberAsFloat64(v)
		if el.Key() == "" || strings.HasPrefix(el.Key(), "$") || !(isStr && s == "hashed" || isNum && n == 1) {
			return nil, false, mongoerr.New(mongoerr.BadValue, "Unsupported shard key pattern %s. Pattern must either be a single hashed field, or a list of ascending fields",
				bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: key}))
		}
		hashed = hashed || isStr
		paths = append(paths, el.Key())
	}
	if len(paths) == 0 {
		return nil, false, mongoerr.New(mongoerr.BadValue, "Shard key pattern must not be empty")
	}
	return paths, hashed, nil
}

// keySample is the key values of a sample of documents, in the order they were read.
type keySample struct {
	total, bytes int64
	keys         []string // each document's encoded key values (bsonx.AppendKey, in key order)
	values       map[string]bsoncore.Document
	ids          [][]byte // each document's ObjectId _id, nil if another type
}

// sampleKeys reads every k-th document of collection coll on every shard (k from rate, or
// from size against the documents there are).
func (h *Handlers) sampleKeys(coll store.CollID, paths []string, rate float64, size int64) *keySample {
	s := &keySample{values: map[string]bsoncore.Document{}}
	shards := h.Cat.Shards()
	for _, sh := range shards {
		d, b := sh.CollStats(coll)
		s.total += d
		s.bytes += b
	}
	want := size
	switch {
	case rate > 0:
		want = int64(math.Ceil(rate * float64(s.total)))
	case want == 0:
		want = 10000
	}
	stride := max(1, s.total/max(1, want))
	n := int64(0)
	for _, sh := range shards {
		it, err := sh.NewDocIter(coll, 0, 0)
		if err != nil {
			continue
		}
		for it.Next() && int64(len(s.keys)) < want {
			if n++; (n-1)%stride == 0 {
				s.add(bsoncore.Document(it.Doc()), paths)
			}
		}
		_ = it.Close()
	}
	return s
}

// add records doc's key values.
func (s *keySample) add(doc bsoncore.Document, paths []string) {
	var enc []byte
	b := bsoncore.NewDocumentBuilder()
	for _, p := range paths {
		v := catalog.KeyValue(doc, p)
		enc = bsonx.AppendKey(enc, v)
		b.AppendValue(p, v)
	}
	k := string(enc)
	if _, ok := s.values[k]; !ok {
		s.values[k] = b.Build()
	}
	s.keys = append(s.keys, k)
	var id []byte
	if v, err := doc.LookupErr("_id"); err == nil && v.Type == bsoncore.TypeObjectID {
		id = v.Data
	}
	s.ids = append(s.ids, id)
}

// characteristics builds keyCharacteristics from the sample.
func (s *keySample) characteristics(hashed bool, paths []string) bsoncore.Document {
	freq := map[string]int64{}
	for _, k := range s.keys {
		freq[k]++
	}
	distinct := make([]string, 0, len(freq))
	for k := range freq {
		distinct = append(distinct, k)
	}
	slices.SortFunc(distinct, func(a, b string) int {
		if c := int(freq[b] - freq[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	b := bsoncore.NewDocumentBuilder().AppendInt64("numDocsTotal", s.total)
	if s.total > 0 {
		b.AppendInt64("avgDocSizeBytes", s.bytes/s.total)
	}
	b.AppendInt64("numDocsSampled", int64(len(s.keys))).
		AppendBoolean("isUnique", len(paths) == 1 && paths[0] == "_id").
		AppendInt64("numDistinctValues", int64(len(freq)))
	arr := bsoncore.NewArrayBuilder()
	for _, k := range distinct[:min(5, len(distinct))] {
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendDocument("value", s.values[k]).AppendInt64("frequency", freq[k]).Build())
	}
	b.AppendArray("mostCommonValues", arr.Build())
	b.AppendDocument("monotonicity", s.monotonicity(hashed))
	return b.Build()
}

// monotonicity is the monotonicity document: the rank correlation of the key's values with
// the order of the documents' ObjectId _ids.
func (s *keySample) monotonicity(hashed bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	if hashed {
		return b.AppendString("type", "not monotonic").Build()
	}
	idx := make([]int, 0, len(s.keys))
	for i, id := range s.ids {
		if id == nil {
			return b.AppendString("type", "unknown").Build()
		}
		idx = append(idx, i)
	}
	if len(idx) < 2 {
		return b.AppendString("type", "unknown").Build()
	}
	byID := slices.Clone(idx)
	slices.SortStableFunc(byID, func(a, c int) int { return bytes.Compare(s.ids[a], s.ids[c]) })
	byKey := slices.Clone(idx)
	slices.SortStableFunc(byKey, func(a, c int) int { return strings.Compare(s.keys[a], s.keys[c]) })
	coef := spearman(byID, byKey)
	typ := "not monotonic"
	if math.Abs(coef) >= 0.7 {
		typ = "monotonic"
	}
	return b.AppendDouble("recordIdCorrelationCoefficient", math.Round(coef*1e4)/1e4).AppendString("type", typ).Build()
}

// spearman is the rank correlation of two orders of the same n items (each lists the items
// from first to last).
func spearman(a, b []int) float64 {
	n := len(a)
	rank := make([]int, n)
	for r, i := range b {
		rank[i] = r
	}
	var d2 float64
	for r, i := range a {
		d := float64(r - rank[i])
		d2 += d * d
	}
	fn := float64(n)
	return 1 - 6*d2/(fn*(fn*fn-1))
}

// emptyReadWrite is readWriteDistribution without sampled queries (MongoDB's answer before
// configureQueryAnalyzer).
func emptyReadWrite() bsoncore.Document {
	reads := bsoncore.NewDocumentBuilder().AppendDocument("sampleSize", bsoncore.NewDocumentBuilder().
		AppendInt64("total", 0).AppendInt64("find", 0).AppendInt64("aggregate", 0).AppendInt64("count", 0).AppendInt64("distinct", 0).Build()).Build()
	writes := bsoncore.NewDocumentBuilder().AppendDocument("sampleSize", bsoncore.NewDocumentBuilder().
		AppendInt64("total", 0).AppendInt64("update", 0).AppendInt64("delete", 0).AppendInt64("findAndModify", 0).Build()).Build()
	return bsoncore.NewDocumentBuilder().AppendDocument("readDistribution", reads).AppendDocument("writeDistribution", writes).Build()
}
