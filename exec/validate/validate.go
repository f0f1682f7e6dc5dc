// Package validate checks one collection's stored data against itself, as MongoDB's validate
// command does: every document against every ready index, every document against the
// partition map, and the per-bucket statistics against a count.
//
// What is checked, on a consistent snapshot of every shard (taken while all key locks are
// held, so no write is half-committed in it):
//   - each document's _id matches its storage key, and with Full its BSON is well formed;
//   - each document lies in a partition the catalog assigns to the shard holding it (a
//     range being moved may be held by both shards: InFlight says which), and in a sharded
//     collection its hash is that of its shard key;
//   - each key a document has in an index is an entry of that index on the same shard, and
//     each index entry is a key of the document it points to (missing and extra entries);
//   - each statistics bucket's documents and bytes equal those counted in its hash range.
//
// Memory: the index check keeps a 64-bit hash of every expected entry of one shard (all its
// indexes at once), about 40 bytes per entry; validate is an administrator's command.
//
// Usage:
//
//	res, err := validate.Run(ctx, cat, ci, validate.Options{Full: true})
//	res.Valid() // no error found
package validate

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/zeebo/xxh3"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
)

// maxReported bounds the errors reported per kind, as MongoDB caps its lists.
const maxReported = 20

// Options configures Run.
type Options struct {
	// Full also checks every document's BSON structure (MongoDB's full: true).
	Full bool
	// InFlight returns, as of its call, whether shard may hold hash outside the ranges it owns
	// because a move of the collection is under way (its copy before the flip, its source
	// after); nil: none. Run calls it under the DDL lock together with taking its snapshots,
	// so the moves it knows are those the snapshots see: a range deleted while validate reads
	// its snapshot is still known as in flight.
	InFlight func() func(shard int, hash uint64) bool
	inFlight func(shard int, hash uint64) bool // InFlight's answer, fixed with the snapshots
}

// IndexResult is the outcome for one index.
type IndexResult struct {
	Name    string
	Keys    int64 // entries, over all shards (for an _id index without entries: documents)
	Missing int64 // keys of documents absent from the index
	Extra   int64 // entries that are no key of the document they point to
}

// Valid reports whether the index agrees with the documents.
func (r *IndexResult) Valid() bool { return r.Missing == 0 && r.Extra == 0 }

// Entry names one index entry that is extra (no document has its key) or missing (a
// document has the key, the index has no entry for it): MongoDB's extraIndexEntries and
// missingIndexEntries.
type Entry struct {
	Index string
	Shard int
	Hash  uint64         // the partitioning hash of the entry or document
	ID    bsoncore.Value // the _id it points to (Type 0 when its encoding cannot be read)
	// Key is the index key, a value per key pattern field named by its path (as
	// MongoDB's validate rehydrates it; a hashed field's value is its hash); nil for an index whose key has no fields to decode (hashed,
	// wildcard, 2dsphere): RawKey then holds the encoded key.
	Key    bsoncore.Document
	RawKey []byte
}

// Result is the outcome of Run.
type Result struct {
	NS               string
	Records          int64 // documents
	InvalidDocuments int64 // documents with a problem (place, _id, BSON, index entries)
	Indexes          []IndexResult
	Warnings, Errors []string
	// ExtraEntries and MissingEntries name up to maxReported entries each.
	ExtraEntries, MissingEntries []Entry
}

// Valid reports whether nothing is wrong.
func (r *Result) Valid() bool { return len(r.Errors) == 0 }

// errorf records an error, up to maxReported of each call site's kind.
func (r *Result) errorf(format string, args ...any) {
	if len(r.Errors) < 4*maxReported {
		r.Errors = append(r.Errors, fmt.Sprintf(format, args...))
	}
}

// Run validates collection ci of cat. It waits for the DDL lock and the key locks (ctx bounds
// the waits), snapshots every shard of this node (in cluster mode, each node validates its
// own: exec merges their results), releases the locks and checks the snapshots.
func Run(ctx context.Context, cat *catalog.Catalog, ci *catalog.Coll, opts Options) (*Result, error) {
	// No move flips and no retired range is deleted meanwhile. A move into this node holds
	// the lock from its begin to its commit: ctx bounds the wait (maxTimeMS, killOp, the
	// client gone, the node's shutdown).
	unlockDDL, err := cat.LockDDLCtx(ctx)
	if err != nil {
		return nil, err
	}
	unlock, err := cat.Locks().LockAllCtx(ctx)
	if err != nil {
		unlockDDL()
		return nil, err
	}
	ci = cat.Refresh(ci)
	snaps := make([]catalog.Snapshot, 0, len(cat.Shards()))
	defer func() {
		for _, s := range snaps {
			if s != nil {
				_ = s.Close()
			}
		}
	}()
	for _, sh := range cat.Shards() {
		if _, remote := sh.Node(); remote {
			snaps = append(snaps, nil) // its node validates it (cluster mode)
			continue
		}
		s, err := sh.NewSnapshot()
		if err != nil {
			unlock()
			unlockDDL()
			return nil, catalog.StoreError(err)
		}
		snaps = append(snaps, s)
	}
	unlock()
	if opts.InFlight != nil {
		opts.inFlight = opts.InFlight()
	}
	unlockDDL()
	res := &Result{NS: ci.NS(), Indexes: make([]IndexResult, len(ci.Indexes))}
	for i, xi := range ci.Indexes {
		res.Indexes[i].Name = xi.Meta.Name
	}
	for s, snap := range snaps {
		if snap == nil {
			continue
		}
		v := &shardCheck{ci: ci, s: s, r: snap, opts: &opts, res: res}
		if err := v.run(ctx); err != nil {
			return nil, err
		}
	}
	for i, xi := range ci.Indexes {
		if xi.IsID && !ci.IDIndexed {
			res.Indexes[i].Keys = res.Records // the document keys are the _id index
		}
		if ir := &res.Indexes[i]; !ir.Valid() {
			res.errorf("index %s: %d keys of documents are missing from it and %d of its entries match no document's key",
				ir.Name, ir.Missing, ir.Extra)
		}
	}
	return res, nil
}

// shardCheck validates the part of one collection that one shard's snapshot holds.
type shardCheck struct {
	ci   *catalog.Coll
	s    int
	r    catalog.Reader
	opts *Options
	res  *Result
	// expected counts, per index, the entries the documents call for, by entryHash.
	expected []map[uint64]int32
	buckets  map[uint64]*store.BucketStat // counted, by bucket start
	invalid  map[string]bool              // documents already counted invalid, by hash|id
	keybuf   []byte
}

// run checks the shard's documents, then its index entries, then its statistics.
func (v *shardCheck) run(ctx context.Context) error {
	v.expected = make([]map[uint64]int32, len(v.ci.Indexes))
	for i := range v.expected {
		v.expected[i] = map[uint64]int32{}
	}
	v.buckets = map[uint64]*store.BucketStat{}
	v.invalid = map[string]bool{}
	if err := v.docs(ctx, v.checkDoc); err != nil {
		return err
	}
	missing := false
	for i, xi := range v.ci.Indexes {
		if xi.IsID && !v.ci.IDIndexed {
			continue
		}
		if err := v.indexEntries(ctx, i, xi); err != nil {
			return err
		}
		missing = missing || len(v.expected[i]) > 0
	}
	if missing { // a second pass names the documents whose entries are missing
		if err := v.docs(ctx, v.markMissing); err != nil {
			return err
		}
	}
	return v.stats()
}

// docs calls fn for every document of the shard.
func (v *shardCheck) docs(ctx context.Context, fn func(hash uint64, id []byte, doc bsoncore.Document)) error {
	it, err := v.r.NewDocIter(v.ci.Meta.ID, 0, 0)
	if err != nil {
		return catalog.StoreError(err)
	}
	defer func() { _ = it.Close() }()
	for n := 0; it.Next(); n++ {
		if n%256 == 255 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		fn(it.Hash(), it.ID(), it.Doc())
	}
	return catalog.StoreError(it.Err())
}

// invalidate counts the document (hash, id) invalid once.
func (v *shardCheck) invalidate(hash uint64, id []byte) {
	k := string(binary.BigEndian.AppendUint64(nil, hash)) + string(id)
	if !v.invalid[k] {
		v.invalid[k] = true
		v.res.InvalidDocuments++
	}
}

// checkDoc checks one document's identity, place and statistics bucket, and records the
// index entries it calls for.
func (v *shardCheck) checkDoc(hash uint64, id []byte, doc bsoncore.Document) {
	ci := v.ci
	v.res.Records++
	b := v.buckets[hash&^(1<<48-1)]
	if b == nil {
		b = &store.BucketStat{Lo: hash &^ (1<<48 - 1)}
		v.buckets[b.Lo] = b
	}
	b.Docs++
	b.Bytes += int64(len(doc))
	if v.opts.Full {
		if err := doc.Validate(); err != nil {
			v.invalidate(hash, id)
			v.res.errorf("shard %d: document at hash %#x is not valid BSON: %v", v.s, hash, err)
			return
		}
	}
	if _, key := catalog.DocID(doc, v.keybuf[:0]); !bytes.Equal(key, id) {
		v.invalidate(hash, id)
		v.res.errorf("shard %d: document %s is stored under another _id", v.s, doc.Lookup("_id"))
	}
	if owner := ci.Map.Partition(ci.Map.Locate(hash)).Shard; owner != v.s {
		if v.opts.inFlight != nil && v.opts.inFlight(v.s, hash) {
			v.res.Warnings = appendCapped(v.res.Warnings, fmt.Sprintf("shard %d holds documents of a partition being moved", v.s))
		} else {
			v.invalidate(hash, id)
			v.res.errorf("shard %d: document %s lies in a partition owned by shard %d", v.s, doc.Lookup("_id"), owner)
		}
	}
	if ci.ShardKey != nil && ci.TS == nil {
		if h, err := ci.ShardHash(doc); err != nil || h != hash {
			v.invalidate(hash, id)
			v.res.errorf("shard %d: document %s is stored at hash %#x, not its shard key's", v.s, doc.Lookup("_id"), hash)
		}
	}
	for i, xi := range ci.Indexes {
		if xi.IsID && !ci.IDIndexed {
			continue
		}
		err := xi.Keys(doc, func(key []byte) error {
			v.expected[i][entryHash(key, hash, id)]++
			return nil
		})
		if err != nil {
			v.invalidate(hash, id)
			v.res.errorf("shard %d: document %s has no keys in index %s: %v", v.s, doc.Lookup("_id"), xi.Meta.Name, err)
		}
	}
}

// markMissing counts invalid the documents some of whose index entries are missing.
func (v *shardCheck) markMissing(hash uint64, id []byte, doc bsoncore.Document) {
	for i, xi := range v.ci.Indexes {
		if xi.IsID && !v.ci.IDIndexed {
			continue
		}
		_ = xi.Keys(doc, func(key []byte) error {
			if v.expected[i][entryHash(key, hash, id)] > 0 {
				v.invalidate(hash, id)
				if len(v.res.MissingEntries) < maxReported {
					v.res.MissingEntries = append(v.res.MissingEntries, v.entry(xi, key, hash, id))
				}
			}
			return nil
		})
	}
}

// indexEntries matches the entries of index i on the shard with the expected ones: what
// is left of expected afterwards is missing.
func (v *shardCheck) indexEntries(ctx context.Context, i int, xi *catalog.Index) error {
	it, err := v.r.NewIndexIter(v.ci.Meta.ID, xi.Meta.ID, nil, nil, false)
	if err != nil {
		return catalog.StoreError(err)
	}
	defer func() { _ = it.Close() }()
	ir := &v.res.Indexes[i]
	exp := v.expected[i]
	for n := 0; it.Next(); n++ {
		if n%256 == 255 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		ir.Keys++
		h := entryHash(it.Key(), it.Hash(), it.ID())
		switch c := exp[h]; {
		case c > 1:
			exp[h] = c - 1
		case c == 1:
			delete(exp, h)
		default:
			ir.Extra++
			if len(v.res.ExtraEntries) < maxReported {
				v.res.ExtraEntries = append(v.res.ExtraEntries, v.entry(xi, it.Key(), it.Hash(), it.ID()))
			}
		}
	}
	if err := it.Err(); err != nil {
		return catalog.StoreError(err)
	}
	for _, c := range exp {
		ir.Missing += int64(c)
	}
	return nil
}

// entry describes the entry (key, hash, id) of index xi on the shard.
func (v *shardCheck) entry(xi *catalog.Index, key []byte, hash uint64, id []byte) Entry {
	e := Entry{Index: xi.Meta.Name, Shard: v.s, Hash: hash}
	if val, _, ok := bsonx.DecodeKey(id); ok {
		e.ID = val
	}
	if len(xi.Fields) == 0 {
		e.RawKey = bytes.Clone(key)
		return e
	}
	idx, doc := bsoncore.AppendDocumentStart(nil)
	rem := key
	for _, f := range xi.Fields {
		var val bsoncore.Value
		ok := false
		if f.Desc { // a hashed component is an int64 encoded the same ways
			val, rem, ok = bsonx.DecodeKeyDesc(rem)
		} else {
			val, rem, ok = bsonx.DecodeKey(rem)
		}
		if !ok {
			e.RawKey = bytes.Clone(key)
			return e
		}
		doc = bsoncore.AppendValueElement(doc, f.Path, val)
	}
	e.Key, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return e
}

// stats compares the shard's statistics buckets with the documents counted.
func (v *shardCheck) stats() error {
	hist, err := v.r.Histogram(v.ci.Meta.ID, 0, 0)
	if err != nil {
		return catalog.StoreError(err)
	}
	for _, b := range hist {
		got := v.buckets[b.Lo]
		if got == nil {
			got = &store.BucketStat{Lo: b.Lo}
		}
		switch {
		case got.Docs == b.Docs && got.Bytes == b.Bytes:
		case v.opts.inFlight != nil && v.opts.inFlight(v.s, b.Lo):
			v.res.Warnings = appendCapped(v.res.Warnings, fmt.Sprintf("shard %d: statistics of a partition being moved not checked", v.s))
		default:
			v.res.errorf("shard %d: statistics of hash range %#x say %d documents of %d bytes, the range holds %d of %d",
				v.s, b.Lo, b.Docs, b.Bytes, got.Docs, got.Bytes)
		}
		delete(v.buckets, b.Lo)
	}
	for _, got := range v.buckets {
		v.res.errorf("shard %d: statistics of hash range %#x are missing, the range holds %d documents of %d bytes",
			v.s, got.Lo, got.Docs, got.Bytes)
	}
	return nil
}

// entryHash identifies an index entry (key, hash, id) in the expected sets.
func entryHash(key []byte, hash uint64, id []byte) uint64 {
	var h xxh3.Hasher
	var n [12]byte
	binary.BigEndian.PutUint32(n[:4], uint32(len(key)))
	binary.BigEndian.PutUint64(n[4:], hash)
	_, _ = h.Write(n[:])
	_, _ = h.Write(key)
	_, _ = h.Write(id)
	return h.Sum64()
}

// appendCapped appends w to ws unless it is there already or ws is full.
func appendCapped(ws []string, w string) []string {
	if len(ws) >= maxReported {
		return ws
	}
	for _, x := range ws {
		if x == w {
			return ws
		}
	}
	return append(ws, w)
}
