package colls

import (
	"bytes"
	"context"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// This file answers dataSize over a key range, as mongod's CmdDatasize does and as a chunk
// splitter asks it:
//
//	{dataSize: "db.c", keyPattern: {k: "hashed"}, min: {k: NumberLong(-4611686018427387902)},
//	 max: {k: NumberLong(0)}, estimate: false, maxSize: 0, maxObjects: 0}
//	→ {estimate: false, size: <bytes>, numObjects: <n>, millis: <ms>} (+ maxReached: true)
//
// On a sharded collection the keyPattern must be the shard key and the bounds shard keys in
// config.chunks' shape (the hashed field a NumberLong, MinKey or MaxKey; the other fields
// MinKey in min, MaxKey in max): the range is a hash range, read on the shards that own its
// partitions (exactly, or from the partitions' statistics with estimate). On an unsharded
// collection the range is one of an index whose key pattern starts with keyPattern (inferred
// from min when absent) and that is neither multikey, sparse, partial nor hashed, as
// findShardKeyPrefixedIndex requires; the documents with a key in [min, max) are read
// through the planner (find's min/max with the index as hint). maxSize and maxObjects stop
// the count once past them, with maxReached: true.

// dataSizeRange is a parsed dataSize with a key range.
type dataSizeRange struct {
	keyPattern, min, max bsoncore.Document
	estimate             bool
	maxSize, maxObjects  int64
}

// parseDataSizeRange reads the range arguments of a dataSize body.
func parseDataSizeRange(body bsoncore.Document) (*dataSizeRange, error) {
	const cmd = "dataSize"
	var a dataSizeRange
	err := args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "keyPattern":
			a.keyPattern, err = args.Doc(cmd, key, v)
		case "min":
			a.min, err = args.Doc(cmd, key, v)
		case "max":
			a.max, err = args.Doc(cmd, key, v)
		case "estimate":
			a.estimate, err = args.Bool(cmd, key, v)
		case "maxSize":
			a.maxSize, err = args.Int64(cmd, key, v)
		case "maxObjects":
			a.maxObjects, err = args.Int64(cmd, key, v)
		}
		return true, err // other fields are ignored, as before ranges were supported
	})
	return &a, err
}

// empty reports whether d is absent or {}.
func empty(d bsoncore.Document) bool { return len(d) <= 5 }

// dataSizeOfRange answers a dataSize whose body has keyPattern, min or max; numRecords and
// totalBytes are the collection's (ci, possibly nil).
func (h *Handlers) dataSizeOfRange(ctx context.Context, r *command.Request, ci *catalog.Coll, a *dataSizeRange, numRecords, totalBytes int64, start time.Time) error {
	sharded := ci != nil && ci.Hashed >= 0
	if sharded {
		if err := checkShardKeyBounds(ci, a); err != nil {
			return err
		}
	}
	if numRecords == 0 {
		return appendDataSize(r, nil, 0, 0, false, start)
	}
	if empty(a.min) != empty(a.max) {
		return mongoerr.New(mongoerr.BadValue, "Only one of min or max specified")
	}
	var size, n int64
	var reached bool
	var err error
	switch {
	case empty(a.min):
		size, n = totalBytes, numRecords
		reached = a.maxSize > 0 && size > a.maxSize || a.maxObjects > 0 && n > a.maxObjects
	case sharded:
		size, n, reached, err = h.dataSizeHashRange(ci, a)
	default:
		size, n, reached, err = h.dataSizeIndexRange(ctx, r, ci, a, totalBytes/numRecords)
	}
	if err != nil {
		return command.InterruptError(ctx, err)
	}
	return appendDataSize(r, &a.estimate, size, n, reached, start)
}

// appendDataSize appends dataSize's answer; estimate is nil when the collection is empty
// (mongod answers before it sets the field).
func appendDataSize(r *command.Request, estimate *bool, size, n int64, reached bool, start time.Time) error {
	out := r.Out
	if estimate != nil {
		out = bsoncore.AppendBooleanElement(out, "estimate", *estimate)
	}
	out = bsoncore.AppendInt64Element(out, "size", size)
	out = bsoncore.AppendInt64Element(out, "numObjects", n)
	out = bsoncore.AppendInt64Element(out, "millis", time.Since(start).Milliseconds())
	if reached {
		out = bsoncore.AppendBooleanElement(out, "maxReached", true)
	}
	r.Out = out
	return nil
}

// checkShardKeyBounds applies mongod's rules for a sharded collection: keyPattern empty or
// the shard key, min and max empty or shard keys.
func checkShardKeyBounds(ci *catalog.Coll, a *dataSizeRange) error {
	if !empty(a.keyPattern) && !bytes.Equal(a.keyPattern, ci.Meta.ShardKey) {
		return mongoerr.New(mongoerr.BadValue, "keyPattern must be empty or must be an object that equals the shard key")
	}
	for _, b := range []struct {
		name string
		doc  bsoncore.Document
	}{{"min", a.min}, {"max", a.max}} {
		if !empty(b.doc) && !hasFields(b.doc, ci.ShardKey) {
			return mongoerr.New(mongoerr.BadValue, "%s value %s does not have shard key", b.name,
				bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: b.doc}))
		}
	}
	return nil
}

// hasFields reports whether d has exactly the top-level fields of the key pattern fields.
func hasFields(d bsoncore.Document, fields []bsonx.IndexField) bool {
	elems, err := d.Elements()
	if err != nil || len(elems) != len(fields) {
		return false
	}
	for _, f := range fields {
		if _, err := d.LookupErr(f.Path); err != nil {
			return false
		}
	}
	return true
}

// dataSizeHashRange measures the documents of a sharded collection in the hash range the
// bounds give, on the shard of each partition the range overlaps.
func (h *Handlers) dataSizeHashRange(ci *catalog.Coll, a *dataSizeRange) (size, n int64, reached bool, err error) {
	lo, loEnd, err := boundHash(ci, a.min, false)
	if err != nil {
		return 0, 0, false, err
	}
	hi, hiEnd, err := boundHash(ci, a.max, true)
	if err != nil || loEnd || !hiEnd && hi <= lo {
		return 0, 0, false, err // an empty range
	}
	if hiEnd {
		hi = 0 // 2^64, the store's convention
	}
	over := func() bool {
		return a.maxSize > 0 && size > a.maxSize || a.maxObjects > 0 && n > a.maxObjects
	}
	m := ci.Map
	for i := m.Locate(lo); i < m.Len(); i++ {
		plo, phi := m.Range(i)
		if hi != 0 && plo >= hi {
			break
		}
		clo, chi := max(plo, lo), phi
		if hi != 0 && (chi == 0 || chi > hi) {
			chi = hi
		}
		sh := h.Storage.Shards[m.Partition(i).Shard]
		if a.estimate {
			d, b, err := sh.Stats(ci.Meta.ID, clo, chi)
			if err != nil {
				return 0, 0, false, catalog.StoreError(err)
			}
			size, n = size+b, n+d
			if over() {
				return size, n, true, nil
			}
			continue
		}
		it, err := sh.NewDocIter(ci.Meta.ID, clo, chi)
		if err != nil {
			return 0, 0, false, catalog.StoreError(err)
		}
		for it.Next() {
			size += int64(len(it.Doc()))
			n++
			if over() {
				return size, n, true, it.Close()
			}
		}
		if err := it.Err(); err != nil {
			_ = it.Close()
			return 0, 0, false, catalog.StoreError(err)
		}
		if err := it.Close(); err != nil {
			return 0, 0, false, catalog.StoreError(err)
		}
	}
	return size, n, false, nil
}

// boundHash reads the hash a min or max bound stands for: its hashed field as a NumberLong
// (config.chunks' shape), MinKey for the start of the space, MaxKey for its end (end set).
// The other fields must be MinKey in min and MaxKey in max: partitions are hash ranges. A
// ranged key's bound holds values (catalog.Coll.BoundHash).
func boundHash(ci *catalog.Coll, d bsoncore.Document, isMax bool) (h uint64, end bool, err error) {
	if ci.Ranged { // a ranged key's bound is its values ({x: 42}), its range key
		if v, _ := d.LookupErr(ci.ShardKey[0].Path); v.Type == bsoncore.TypeMaxKey {
			return 0, true, nil
		}
		h, _ = ci.BoundHash(d)
		return h, false, nil
	}
	for i, f := range ci.ShardKey {
		v, _ := d.LookupErr(f.Path)
		if i != ci.Hashed {
			want := bsoncore.TypeMinKey
			if isMax {
				want = bsoncore.TypeMaxKey
			}
			if v.Type != want {
				return 0, false, mongoerr.New(mongoerr.NotImplemented,
					"dataSize over a range of the shard key's field %s is not supported by cleave: its partitions are ranges of the hashed field only", f.Path)
			}
			continue
		}
		switch v.Type {
		case bsoncore.TypeMinKey:
			h = 0
		case bsoncore.TypeMaxKey:
			end = true
		default:
			x, err := args.Int64("dataSize", f.Path, v)
			if err != nil {
				return 0, false, err
			}
			h = shard.Int64ToHash(x)
		}
	}
	return h, end, nil
}

// dataSizeIndexRange measures the documents of an unsharded collection with a key in
// [min, max) of the index that keyPattern prefixes.
func (h *Handlers) dataSizeIndexRange(ctx context.Context, r *command.Request, ci *catalog.Coll, a *dataSizeRange, avgObjSize int64) (size, n int64, reached bool, err error) {
	kp := a.keyPattern
	if empty(kp) {
		kp = inferKeyPattern(a.min)
	}
	xi := prefixedIndex(ci, kp)
	if xi == nil {
		return 0, 0, false, mongoerr.New(mongoerr.OperationFailed, "Couldn't find valid index containing key pattern")
	}
	q := &query.Query{CI: ci, Filter: match0, Hint: bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: xi.Meta.Key}}
	s, _, err := h.QueryFor(r).OpenFind(q, query.FindKeys{Min: extendBound(xi, a.min), Max: extendBound(xi, a.max)})
	if me := mongoerr.As(err); me != nil && me.Code == 51175 {
		return 0, 0, false, nil // max does not come after min: an empty range
	}
	if err != nil {
		return 0, 0, false, err
	}
	defer s.Close()
	for {
		d, err := s.Next(ctx)
		if err != nil {
			return 0, 0, false, err
		}
		if d == nil {
			return size, n, false, nil
		}
		if a.estimate {
			size += avgObjSize
		} else {
			size += int64(len(d))
		}
		n++
		if a.maxSize > 0 && size > a.maxSize || a.maxObjects > 0 && n > a.maxObjects {
			return size, n, true, nil
		}
	}
}

// match0 is the empty filter.
var match0, _ = query.CompileFilter(nil)

// inferKeyPattern is mongod's Helpers::inferKeyPattern: {f: 1} for each field of min.
func inferKeyPattern(lo bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	elems, _ := lo.Elements()
	for _, el := range elems {
		b.AppendInt32(el.Key(), 1)
	}
	return b.Build()
}

// prefixedIndex returns an index of ci whose key pattern starts with kp (same fields, same
// directions) and that holds one key per document (not multikey, sparse, partial or
// hashed), nil if none.
func prefixedIndex(ci *catalog.Coll, kp bsoncore.Document) *catalog.Index {
	want, err := catalog.KeyPatternFields(kp)
	if err != nil || len(want) == 0 {
		return nil
	}
	for _, xi := range ci.Indexes {
		if xi.Sparse || xi.Partial != nil || xi.Hashed || len(xi.Fields) < len(want) ||
			slices.Contains(xi.Multikey, true) {
			continue
		}
		ok := true
		for i, f := range want {
			ok = ok && xi.Fields[i] == f
		}
		if ok {
			return xi
		}
	}
	return nil
}

// extendBound is mongod's KeyPattern::extendRangeBound(bound, false): bound's values in the
// index's field order, the fields it lacks at the lowest key (MinKey ascending, MaxKey
// descending).
func extendBound(xi *catalog.Index, bound bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	for _, f := range xi.Fields {
		v, err := bound.LookupErr(f.Path)
		switch {
		case err == nil:
			b.AppendValue(f.Path, v)
		case f.Desc:
			b.AppendMaxKey(f.Path)
		default:
			b.AppendMinKey(f.Path)
		}
	}
	return b.Build()
}
