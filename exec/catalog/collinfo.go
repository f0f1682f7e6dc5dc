package catalog

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/collation"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Coll is a catalog record of a collection compiled for execution: its indexes as key
// generators, its shard key, its partition map. It is immutable and derived from exactly
// one catalog version, so it can be cached until the record changes.
type Coll struct {
	Meta    *store.Collection
	Indexes []*Index // ready indexes, _id first
	// ShardKey is the shard key pattern's fields; nil when unsharded. hashed is the index in
	// shardKey of the hashed field, whose value places the document.
	ShardKey []bsonx.IndexField
	Hashed   int
	// Levels, for a hierarchical key (two or three hashed fields, hier.go), are the indexes
	// in ShardKey of its levels, level 1 first; nil for a key of one hashed field.
	Levels []int
	// Ranged reports a ranged key (ranged.go): no hashed field, documents placed by the
	// range key of their values; Hashed is then 0.
	Ranged bool
	// Place are the fields of a ranged key that place a document: the key's first
	// Meta.PlaceFields fields after refineCollectionShardKey added carried suffix fields,
	// else all of them (PlaceFields).
	Place []bsonx.IndexField
	// IDIndexed reports that the _id index has entries: a document's location cannot be
	// derived from its _id alone (sharded on something else than _id), or _id is unique
	// under the _id index's collation, which the raw _id of the document key cannot check.
	IDIndexed bool
	Map       *shard.Map
	// Uniques lists the unique secondary indexes, whose keys writes lock and check.
	Uniques []*Index
	// WriteIndexes and writeUniques are indexes and uniques plus the indexes being built:
	// writers maintain (and check) those too, so that a build loses no concurrent write,
	// while the planner, which reads indexes, never uses an index that is incomplete.
	WriteIndexes []*Index
	WriteUniques []*Index
	// TS is set for a time-series collection (exec/ddl/timeseries.go); clustered reports a
	// clustered collection (exec/ddl/clustered.go).
	TS        *Timeseries
	Clustered bool
	// Capped is set for a capped collection (capped.go): documents at their record id.
	Capped *Capped
	// View is set for a view (view.go): a record with no data that reads resolve and
	// writes refuse.
	View *View
	// Validator is the collection's document validation (validator.go); nil when none.
	Validator *Validator
	// Collation is the collection's default collation (create's collation option), which
	// its indexes inherit and operations that name none use; nil: simple.
	Collation *collation.Collation
}

// Index is one index compiled for key generation and planning.
type Index struct {
	// Use holds the counter of the plans that read the index ($indexStats), found on first
	// use; a pointer so that copies of the Index share it.
	Use     *atomic.Pointer[IndexUse]
	Meta    *store.Index
	Fields  []bsonx.IndexField
	IsID    bool
	Unique  bool
	Sparse  bool
	Partial *match.Filter
	Hashed  bool // has a hashed component
	// Collation is the index's collation (its spec's collation); nil: simple. Its keys hold
	// the collation keys of strings (bsonx.Collate), as MongoDB's hold ICU sort keys.
	Collation *collation.Collation
	// Multikey[i] reports that some document has held an array on Fields[i]'s path
	// (store.Index.MultikeyPaths): bounds on it cannot be intersected, nor can the index
	// order on it stand for a sort under bounds.
	Multikey []bool
	// TTL is expireAfterSeconds for a TTL index; hasTTL reports whether there is one.
	TTL    int64
	HasTTL bool
	// Hidden indexes are maintained but not used by the planner; prepareUnique ones refuse
	// new duplicate keys but keep those they have (collMod, exec/ddl/collmod_unique.go).
	Hidden        bool
	PrepareUnique bool
	// Wildcard is set for a wildcard index ({"$**": 1}, wildcard.go), whose keys are
	// (path, value); Fields is then empty, so that no field-wise logic applies to it.
	Wildcard *Wildcard
	// Geo is set for a 2dsphere index (geoindex.go), whose keys start with S2 cells;
	// Fields is then empty, as for a wildcard index.
	Geo *GeoIndex
	// Text is set for a text index (textindex.go), whose keys hold terms; Fields is then
	// empty, as for a wildcard index.
	Text *TextIndex
}

// ChecksKeys reports whether writers check xi's keys for duplicates.
func (xi *Index) ChecksKeys() bool { return xi.Unique || xi.PrepareUnique }

// NS returns "db.coll".
func (ci *Coll) NS() string { return ci.Meta.DB + "." + ci.Meta.Name }

// collCache maps catalog records to their compiled Coll.
type collCache struct {
	mu sync.Mutex
	m  map[store.CollID]*Coll
}

// info returns the compiled form of c, building it on first use of this version.
func (cc *collCache) info(c *store.Collection) (*Coll, error) {
	cc.mu.Lock()
	ci := cc.m[c.ID]
	cc.mu.Unlock()
	if ci != nil && ci.Meta == c {
		return ci, nil
	}
	ci, err := Compile(c)
	if err != nil {
		return nil, err
	}
	cc.mu.Lock()
	if cc.m == nil {
		cc.m = map[store.CollID]*Coll{}
	}
	cc.m[c.ID] = ci
	cc.mu.Unlock()
	return ci, nil
}

// Compile builds the Coll of catalog record c.
func Compile(c *store.Collection) (*Coll, error) {
	ci := &Coll{Meta: c, Hashed: -1, View: ViewOf(c.Options)}
	parts := make([]shard.Partition, len(c.Partitions))
	for i, p := range c.Partitions {
		parts[i] = shard.Partition{ID: p.ID, Lo: p.Lo, Shard: p.Shard}
	}
	m, err := shard.NewMap(parts)
	if err != nil {
		return nil, fmt.Errorf("collection %s.%s: %w", c.DB, c.Name, err)
	}
	ci.Map = m
	if d, ok := c.Options.Lookup("collation").DocumentOK(); ok {
		if ci.Collation, err = collation.Parse(d); err != nil {
			return nil, fmt.Errorf("collection %s.%s: collation: %w", c.DB, c.Name, err)
		}
	}
	if ci.Validator, err = compileValidator(c.Options); err != nil {
		return nil, fmt.Errorf("collection %s.%s: validator: %w", c.DB, c.Name, err)
	}
	if c.ShardKey != nil {
		ci.ShardKey, err = KeyPatternFields(c.ShardKey)
		if err != nil {
			return nil, err
		}
		ci.compileLevels()
		ci.compileRanged()
		ci.IDIndexed = !ci.shardedOnID()
	}
	var building []*Index
	for i := range c.Indexes {
		x := &c.Indexes[i]
		xi, err := CompileIndex(x)
		if err != nil {
			return nil, err
		}
		switch {
		case !x.Ready:
			building = append(building, xi)
		case xi.IsID:
			ci.Indexes = append([]*Index{xi}, ci.Indexes...)
		default:
			ci.Indexes = append(ci.Indexes, xi)
			if xi.ChecksKeys() {
				ci.Uniques = append(ci.Uniques, xi)
			}
		}
	}
	if len(ci.Indexes) > 0 && ci.Indexes[0].IsID && ci.Indexes[0].Collation != nil && !ci.shardedOnID() {
		// A collated _id index has entries keyed by the collation keys, where _id is
		// checked unique under the collation (the document key holds the raw _id).
		ci.IDIndexed = true
	}
	if t := TimeseriesOf(c.Options); t != nil {
		if err := ci.compileTimeseries(t); err != nil {
			return nil, err
		}
	} else if ClusteredOf(c.Options) != nil {
		ci.compileClustered()
	} else if cp := CappedOf(c.Options); cp != nil {
		ci.compileCapped(cp)
	}
	ci.WriteIndexes, ci.WriteUniques = ci.Indexes, ci.Uniques
	if len(building) > 0 {
		ci.WriteIndexes = append(append([]*Index(nil), ci.Indexes...), building...)
		ci.WriteUniques = append([]*Index(nil), ci.Uniques...)
		for _, xi := range building {
			if xi.ChecksKeys() {
				ci.WriteUniques = append(ci.WriteUniques, xi)
			}
		}
	}
	return ci, nil
}

// shardedOnID reports that the collection is sharded on _id alone: a document's place
// derives from its raw _id.
func (ci *Coll) shardedOnID() bool {
	return len(ci.ShardKey) == 1 && ci.ShardKey[0].Path == "_id"
}

// compileCollation parses an index spec's collation; nil when it has none (simple).
func compileCollation(spec bsoncore.Document) (*collation.Collation, error) {
	d, ok := spec.Lookup("collation").DocumentOK()
	if !ok {
		return nil, nil
	}
	return collation.Parse(d)
}

// IDIndexKey appends the key of _id value id in the _id index xi: its encoding, under xi's
// collation that of its collation key.
func (xi *Index) IDIndexKey(dst []byte, id bsoncore.Value) []byte {
	return bsonx.AppendKey(dst, bsonx.Collate(xi.Collation.Collator(), id))
}

// CompileIndex builds the Index of catalog index x.
func CompileIndex(x *store.Index) (*Index, error) {
	if IsWildcardKey(x.Key) {
		return compileWildcardIndex(x)
	}
	if Is2dsphere(x.Key) || Is2d(x.Key) {
		return compileGeoIndex(x)
	}
	if IsText(x.Key) {
		return compileTextIndex(x)
	}
	fields, err := KeyPatternFields(x.Key)
	if err != nil {
		return nil, err
	}
	xi := &Index{Meta: x, Fields: fields, IsID: x.Name == store.IDIndexName, Use: new(atomic.Pointer[IndexUse])}
	xi.Multikey = make([]bool, len(fields))
	for i, f := range fields {
		xi.Hashed = xi.Hashed || f.Hashed
		xi.Multikey[i] = x.MultikeyUnknown || slices.Contains(x.MultikeyPaths, f.Path)
	}
	if x.Spec == nil {
		xi.Unique = xi.IsID
		return xi, nil
	}
	if xi.IsID { // unique by nature; a collection's default collation is its only option
		xi.Unique = true
		xi.Collation, err = compileCollation(x.Spec)
		return xi, err
	}
	xi.Unique, _ = x.Spec.Lookup("unique").BooleanOK()
	xi.Sparse, _ = x.Spec.Lookup("sparse").BooleanOK()
	xi.Hidden = SpecBool(x.Spec, "hidden")
	xi.PrepareUnique = !xi.Unique && SpecBool(x.Spec, "prepareUnique")
	if xi.Collation, err = compileCollation(x.Spec); err != nil {
		return nil, err
	}
	if pf, ok := x.Spec.Lookup("partialFilterExpression").DocumentOK(); ok {
		xi.Partial, err = match.Compile(pf, nil)
		if err != nil {
			return nil, err
		}
	}
	if v, err := x.Spec.LookupErr("expireAfterSeconds"); err == nil {
		if n, ok := bsonx.NumberAsInt64(v); ok {
			xi.TTL, xi.HasTTL = n, true
		}
	}
	return xi, nil
}

// KeyPatternFields turns a key pattern ({a: 1, b: -1, c: "hashed"}) into index fields.
func KeyPatternFields(pattern bsoncore.Document) ([]bsonx.IndexField, error) {
	elems, err := pattern.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid key pattern")
	}
	fields := make([]bsonx.IndexField, 0, len(elems))
	for _, el := range elems {
		f := bsonx.IndexField{Path: el.Key()}
		v := el.Value()
		if s, ok := v.StringValueOK(); ok {
			if s != "hashed" {
				return nil, mongoerr.New(mongoerr.CannotCreateIndex, "Unknown index plugin '%s'", s)
			}
			f.Hashed = true
		} else if n, ok := bsonx.NumberAsFloat64(v); ok && n < 0 {
			f.Desc = true
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// ValidateCollName applies MongoDB's rules for collection names.
func ValidateCollName(db, name string) error {
	if name == "" {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s.'", db)
	}
	if len(db)+1+len(name) > 255 {
		return mongoerr.New(mongoerr.InvalidNamespace, "Fully qualified namespace is too long. Namespace: %s.%s Max: 255", db, name)
	}
	for i := 0; i < len(name); i++ {
		if name[i] == 0 || name[i] == '$' {
			return mongoerr.New(mongoerr.InvalidNamespace, "Invalid collection name: %s", name)
		}
	}
	if name[0] == '.' {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid collection name: %s", name)
	}
	if len(name) >= 7 && name[:7] == "system." {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid system namespace: %s.%s", db, name)
	}
	return nil
}

// StoreError maps a store sentinel to the client's error: a write refused under the disk
// reserve answers OutOfDiskSpace 14031 in the words of MongoDB's disk space monitor, a
// failed commit OutOfDiskSpace when the disk was full (ENOSPC) and InternalError otherwise,
// with the store's explanation.
func StoreError(err error) error {
	if err == nil || mongoerr.As(err) != nil {
		return err
	}
	return storeError(err)
}

// storeError is StoreError for an error that is not MongoDB's. NB: apart, because dfe
// escapes (errors.As) and would otherwise cost an allocation on every StoreError call,
// which runs after every command.
func storeError(err error) error {
	var dfe *store.DiskFullError
	switch {
	case errors.Is(err, store.ErrClosed):
		return mongoerr.Wrap(err, mongoerr.ShutdownInProgress, "The server is in quiesce mode and will shut down")
	case errors.As(err, &dfe):
		return mongoerr.Wrap(err, mongoerr.OutOfDiskSpace, "available disk space of %d bytes is less than required minimum of %d",
			dfe.Available, dfe.Required)
	case errors.Is(err, store.ErrIO) && errors.Is(err, syscall.ENOSPC):
		return mongoerr.Wrap(err, mongoerr.OutOfDiskSpace, "%s", err)
	case errors.Is(err, store.ErrIO):
		return mongoerr.Wrap(err, mongoerr.InternalError, "%s", err)
	}
	return err
}

// SpecBool returns a boolean (or numeric) option of a spec; absent is false.
func SpecBool(spec bsoncore.Document, key string) bool {
	if spec == nil {
		return false
	}
	v, err := spec.LookupErr(key)
	if err != nil {
		return false
	}
	if b, ok := v.BooleanOK(); ok {
		return b
	}
	f, _ := bsonx.NumberAsFloat64(v)
	return f != 0
}

// Applies reports whether doc has entries in index xi (partial and sparse indexes
// skip some documents).
func (xi *Index) Applies(doc bsoncore.Document) bool {
	if xi.Partial != nil && !xi.Partial.Match(doc) {
		return false
	}
	if xi.Sparse && xi.Geo == nil { // a 2dsphere index is sparse on its geo field anyway
		for _, f := range xi.Fields {
			if _, ok := bsonx.Lookup(doc, f.Path); ok {
				return true
			}
		}
		return false
	}
	return true
}

// Keys calls fn with every key doc has in xi (none if the index skips doc).
func (xi *Index) Keys(doc bsoncore.Document, fn func(key []byte) error) error {
	if !xi.Applies(doc) {
		return nil
	}
	doc = bsonx.CollateDocument(xi.Collation.Collator(), doc)
	if xi.Wildcard != nil {
		return xi.Wildcard.keys(doc, fn)
	}
	if xi.Geo != nil {
		return xi.Geo.keys(doc, fn)
	}
	if xi.Text != nil {
		return xi.Text.keys(doc, fn)
	}
	_, err := bsonx.AppendIndexKeys(doc, xi.Fields, fn)
	return keyError(err)
}

// KeysArrays is Keys that also reports whether doc may hold an array on the path of one of
// xi's fields: false only when generating the keys met none, so that the caller can skip
// NewMultikeyPaths (which walks every field's path again). It reports true whenever it
// cannot tell: xi skips doc, or is a wildcard, 2dsphere or hashed index.
func (xi *Index) KeysArrays(doc bsoncore.Document, fn func(key []byte) error) (arrays bool, err error) {
	if xi.Wildcard != nil || xi.Geo != nil || xi.Text != nil || xi.Hashed {
		return true, xi.Keys(doc, fn)
	}
	if !xi.Applies(doc) {
		return true, nil
	}
	doc = bsonx.CollateDocument(xi.Collation.Collator(), doc)
	_, arrays, err = bsonx.AppendIndexKeysArrays(doc, xi.Fields, fn)
	return arrays, keyError(err)
}

// keyError maps bsonx's key-generation errors to MongoDB's.
func keyError(err error) error {
	if err == nil {
		return nil
	}
	var pe *bsonx.ParallelArraysError
	if errors.As(err, &pe) {
		// MongoDB's words and order: the array met second, then the one met first.
		return mongoerr.New(mongoerr.CannotIndexParallelArrays, "%s", pe.Error())
	}
	var he *bsonx.HashedArrayError
	if errors.As(err, &he) {
		return mongoerr.New(mongoerr.Location16766, "Error: hashed indexes do not currently support array values. Found array at path: %s", he.Path)
	}
	if mongoerr.As(err) != nil {
		return err
	}
	return mongoerr.Wrap(err, mongoerr.CannotBuildIndexKeys, "cannot build index keys: %v", err)
}

// NewMultikeyPaths returns the fields of xi on whose path doc holds an array and that xi
// is not yet multikey on (none for the _id index, which refuses arrays).
func (xi *Index) NewMultikeyPaths(doc bsoncore.Document) []string {
	var out []string
	for i, f := range xi.Fields {
		if !xi.IsMultikey(i) && !xi.IsID && arrayOnPath(doc, f.Path) {
			out = append(out, f.Path)
		}
	}
	return out
}

// arrayOnPath reports whether path passes through or ends at an array in doc.
func arrayOnPath(doc bsoncore.Document, path string) bool {
	found := false
	bsonx.WalkPath(doc, path, func(m bsonx.PathMatch) bool {
		found = m.InLeafArray || m.ArrayIndex >= 0 || m.Value.Type == bsoncore.TypeArray
		return !found
	})
	return found
}

// OneEntryPerDoc reports whether xi holds at most one entry per document: an ordered or
// hashed index none of whose fields has held an array. A wildcard or 2dsphere index may hold
// several, as a multikey index does one per element.
func (xi *Index) OneEntryPerDoc() bool {
	if xi.Wildcard != nil || xi.Geo != nil || xi.Text != nil || len(xi.Fields) == 0 {
		return false
	}
	for i := range xi.Fields {
		if xi.IsMultikey(i) {
			return false
		}
	}
	return true
}

// IsMultikey reports whether field i of xi may hold arrays (true for an index compiled
// without the flags, such as a time-series collection's time index).
func (xi *Index) IsMultikey(i int) bool { return i >= len(xi.Multikey) || xi.Multikey[i] }
