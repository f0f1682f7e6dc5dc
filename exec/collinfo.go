package exec

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Storage is what the executor reads and writes: one store per shard and the catalog, which
// lives in shard 0.
type Storage struct {
	Shards  []catalog.Shard
	Catalog *store.Catalog
	// Temp is where blocking sorts and $group spill under allowDiskUse (mongod's
	// <dbpath>/_tmp); nil: a private store under os.TempDir().
	Temp *store.TempStore
}

// collInfo is a catalog record of a collection compiled for execution: its indexes as key
// generators, its shard key, its partition map. It is immutable and derived from exactly
// one catalog version, so it can be cached until the record changes.
type collInfo struct {
	meta    *store.Collection
	indexes []*indexInfo // ready indexes, _id first
	// shardKey is the shard key pattern's fields; nil when unsharded. hashed is the index in
	// shardKey of the hashed field, whose value places the document.
	shardKey []bsonx.IndexField
	hashed   int
	// idIndexed reports that the _id index has entries: a document's location cannot be
	// derived from its _id alone (sharded on something else than _id).
	idIndexed bool
	pmap      *shard.Map
	// uniques lists the unique secondary indexes, whose keys writes lock and check.
	uniques []*indexInfo
	// writeIndexes and writeUniques are indexes and uniques plus the indexes being built:
	// writers maintain (and check) those too, so that a build loses no concurrent write,
	// while the planner, which reads indexes, never uses an index that is incomplete.
	writeIndexes []*indexInfo
	writeUniques []*indexInfo
	// ts is set for a time-series collection (ddl_timeseries.go); clustered reports a
	// clustered collection (ddl_clustered.go).
	ts        *tsOptions
	clustered bool
}

// indexInfo is one index compiled for key generation and planning.
type indexInfo struct {
	// use holds the counter of the plans that read the index ($indexStats), found on first
	// use; a pointer so that copies of the indexInfo share it.
	use     *atomic.Pointer[indexUse]
	meta    *store.Index
	fields  []bsonx.IndexField
	isID    bool
	unique  bool
	sparse  bool
	partial *match.Filter
	hashed  bool // has a hashed component
	// ttl is expireAfterSeconds for a TTL index; hasTTL reports whether there is one.
	ttl    int64
	hasTTL bool
	// hidden indexes are maintained but not used by the planner; prepareUnique ones refuse
	// new duplicate keys but keep those they have (collMod, cmd_collmod.go).
	hidden        bool
	prepareUnique bool
}

// checksKeys reports whether writers check xi's keys for duplicates.
func (xi *indexInfo) checksKeys() bool { return xi.unique || xi.prepareUnique }

// ns returns "db.coll".
func (ci *collInfo) ns() string { return ci.meta.DB + "." + ci.meta.Name }

// collCache maps catalog records to their compiled collInfo.
type collCache struct {
	mu sync.Mutex
	m  map[store.CollID]*collInfo
}

// info returns the compiled form of c, building it on first use of this version.
func (cc *collCache) info(c *store.Collection) (*collInfo, error) {
	cc.mu.Lock()
	ci := cc.m[c.ID]
	cc.mu.Unlock()
	if ci != nil && ci.meta == c {
		return ci, nil
	}
	ci, err := compileCollection(c)
	if err != nil {
		return nil, err
	}
	cc.mu.Lock()
	if cc.m == nil {
		cc.m = map[store.CollID]*collInfo{}
	}
	cc.m[c.ID] = ci
	cc.mu.Unlock()
	return ci, nil
}

// compileCollection builds the collInfo of catalog record c.
func compileCollection(c *store.Collection) (*collInfo, error) {
	ci := &collInfo{meta: c, hashed: -1}
	parts := make([]shard.Partition, len(c.Partitions))
	for i, p := range c.Partitions {
		parts[i] = shard.Partition{ID: p.ID, Lo: p.Lo, Shard: p.Shard}
	}
	m, err := shard.NewMap(parts)
	if err != nil {
		return nil, fmt.Errorf("collection %s.%s: %w", c.DB, c.Name, err)
	}
	ci.pmap = m
	if c.ShardKey != nil {
		ci.shardKey, err = keyPatternFields(c.ShardKey)
		if err != nil {
			return nil, err
		}
		for i, f := range ci.shardKey {
			if f.Hashed {
				ci.hashed = i
			}
		}
		ci.idIndexed = !(len(ci.shardKey) == 1 && ci.shardKey[0].Path == "_id")
	}
	var building []*indexInfo
	for i := range c.Indexes {
		x := &c.Indexes[i]
		xi, err := compileIndex(x)
		if err != nil {
			return nil, err
		}
		switch {
		case !x.Ready:
			building = append(building, xi)
		case xi.isID:
			ci.indexes = append([]*indexInfo{xi}, ci.indexes...)
		default:
			ci.indexes = append(ci.indexes, xi)
			if xi.checksKeys() {
				ci.uniques = append(ci.uniques, xi)
			}
		}
	}
	if t := timeseriesOf(c.Options); t != nil {
		if err := ci.compileTimeseries(t); err != nil {
			return nil, err
		}
	} else if clusteredOf(c.Options) != nil {
		ci.compileClustered()
	}
	ci.writeIndexes, ci.writeUniques = ci.indexes, ci.uniques
	if len(building) > 0 {
		ci.writeIndexes = append(append([]*indexInfo(nil), ci.indexes...), building...)
		ci.writeUniques = append([]*indexInfo(nil), ci.uniques...)
		for _, xi := range building {
			if xi.checksKeys() {
				ci.writeUniques = append(ci.writeUniques, xi)
			}
		}
	}
	return ci, nil
}

// refreshColl returns the current compiled version of collection ci, or ci itself when
// it is current or no longer exists (a writer of a dropped collection writes orphan data,
// which the drop's cleanup or the next start removes). Writers call it once they hold
// their key locks, so that indexes created or dropped meanwhile are maintained or skipped.
func (e *Executor) refreshColl(ci *collInfo) *collInfo {
	c := e.st.Catalog.State().CollectionByID(ci.meta.ID)
	if c == nil || c == ci.meta {
		return ci
	}
	fresh, err := e.colls.info(c)
	if err != nil {
		return ci
	}
	return fresh
}

// compileIndex builds the indexInfo of catalog index x.
func compileIndex(x *store.Index) (*indexInfo, error) {
	fields, err := keyPatternFields(x.Key)
	if err != nil {
		return nil, err
	}
	xi := &indexInfo{meta: x, fields: fields, isID: x.Name == store.IDIndexName, use: new(atomic.Pointer[indexUse])}
	for _, f := range fields {
		xi.hashed = xi.hashed || f.Hashed
	}
	if xi.isID {
		xi.unique = true
		return xi, nil
	}
	if x.Spec == nil {
		return xi, nil
	}
	xi.unique, _ = x.Spec.Lookup("unique").BooleanOK()
	xi.sparse, _ = x.Spec.Lookup("sparse").BooleanOK()
	xi.hidden = specBool(x.Spec, "hidden")
	xi.prepareUnique = !xi.unique && specBool(x.Spec, "prepareUnique")
	if pf, ok := x.Spec.Lookup("partialFilterExpression").DocumentOK(); ok {
		xi.partial, err = match.Compile(pf, nil)
		if err != nil {
			return nil, err
		}
	}
	if v, err := x.Spec.LookupErr("expireAfterSeconds"); err == nil {
		if n, ok := bsonx.NumberAsInt64(v); ok {
			xi.ttl, xi.hasTTL = n, true
		}
	}
	return xi, nil
}

// keyPatternFields turns a key pattern ({a: 1, b: -1, c: "hashed"}) into index fields.
func keyPatternFields(pattern bsoncore.Document) ([]bsonx.IndexField, error) {
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

// lookupColl returns the compiled collection db.name, or nil if it does not exist.
func (e *Executor) lookupColl(db, name string) (*collInfo, error) {
	c := e.st.Catalog.State().Collection(db, name)
	if c == nil {
		return nil, nil
	}
	return e.colls.info(c)
}

// collForWrite returns collection db.name, creating it as MongoDB does on a first insert.
func (e *Executor) collForWrite(db, name string) (*collInfo, error) {
	if ci, err := e.lookupColl(db, name); ci != nil || err != nil {
		return ci, err
	}
	if err := validateCollName(db, name); err != nil {
		return nil, err
	}
	c, err := e.st.Catalog.CreateCollection(store.Collection{DB: db, Name: name})
	if errors.Is(err, store.ErrExists) {
		return e.lookupColl(db, name)
	}
	if err != nil {
		return nil, err
	}
	e.log.Info("created collection", zap.String("ns", db+"."+name))
	return e.colls.info(c)
}

// validateCollName applies MongoDB's rules for collection names.
func validateCollName(db, name string) error {
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

// storeError maps a store sentinel to the client's error.
func storeError(err error) error {
	switch {
	case err == nil:
		return nil
	case mongoerr.As(err) != nil:
		return err
	case errors.Is(err, store.ErrClosed):
		return mongoerr.Wrap(err, mongoerr.ShutdownInProgress, "The server is in quiesce mode and will shut down")
	}
	return err
}
