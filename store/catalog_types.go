package store

import (
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Database is a catalog record of one database.
type Database struct {
	Name    string
	Options bsoncore.Document // nil if none; e.g. shared throughput settings
}

// Collection is a catalog record of one collection. Values reachable from a CatalogState are
// shared and immutable: copy before changing anything (UpdateCollection hands out a copy).
type Collection struct {
	ID        CollID
	DB, Name  string
	UUID      [16]byte
	CreatedAt time.Time
	// Options are the create command's options as given (capped, validator, collation, ...),
	// nil if none.
	Options bsoncore.Document
	// ShardKey is the shard key pattern; nil means unsharded (all documents at hash 0).
	ShardKey bsoncore.Document
	// PlaceFields is how many leading fields of ShardKey place a document (its hash or range
	// key); 0 means all. refineCollectionShardKey adds suffix fields that are carried only,
	// so that refining is a catalog change and no document moves.
	PlaceFields int
	// Zones are the collection's zone ranges (updateZoneKeyRange), each {min, max, tag} with
	// bounds over the full shard key, sorted by min; nil if none.
	Zones []bsoncore.Document
	// Throughput is the provisioned RU/s, 0 if none.
	Throughput int64
	// Autoscale marks Throughput as an autoscale maximum (Cosmos DB's autoScaleSettings)
	// rather than manual throughput.
	Autoscale bool
	// BurstCapacity turns burst capacity on or off for this collection; ToggleDefault
	// follows its database, then the server (--burst-capacity).
	BurstCapacity Toggle
	// CustomBudgets marks the partitions' BudgetRU as set by hand (RedistributeThroughput):
	// the partition manager leaves them alone until they are reset.
	CustomBudgets bool
	// NoBalance keeps the balancer away from the collection (config.collections' noBalance:
	// mongosh's sh.disableBalancing); NoMigrations refuses every move of it, moveChunk's
	// too (setAllowMigrations: false; config.collections' permitMigrations: false). Splits go
	// on under both.
	NoBalance, NoMigrations bool
	// ReshardNode and ReshardOf mark a layout change's temporary collection in a cluster: the
	// node that runs the change (its coordinator) and the name of the collection it copies, in
	// the same database. Another node forwards abortReshardCollection to that node, and the
	// elected manager drops the temporary collection once that node is gone. A rename clears
	// both: the copy renamed over its source is the collection itself. Empty elsewhere.
	ReshardNode, ReshardOf string
	// ChunkSizeBytes is the size above which the collection's partitions split
	// (configureCollectionBalancing's chunkSize; config.collections' maxChunkSizeBytes); 0:
	// the server's --partition-max-bytes. NoAutoMerge keeps the partition manager from
	// merging its cold partitions (enableAutoMerger: false).
	ChunkSizeBytes int64
	NoAutoMerge    bool
	// ThrottleRetryMS is how long a request out of budget waits for it before 16500 (server-
	// side retry): 0 follows its database, then the server (--throttle-retry-ms); above 0,
	// that many milliseconds; ThrottleRetryNever, not at all.
	ThrottleRetryMS int64
	// SharedRU is the collection's share of its database's shared throughput, RU/s, when the
	// partition manager moved it by demand (0: an even share). The shares of a database's
	// collections are scaled to sum to its throughput.
	SharedRU float64
	Indexes  []Index
	// SearchIndexes are the collection's search indexes (createSearchIndexes), in creation
	// order: each {id, name, type, definition}; nil if none. exec/vecindex reads them.
	SearchIndexes []bsoncore.Document
	// Partitions are sorted by Lo; Partitions[0].Lo == 0; partition i covers
	// [Partitions[i].Lo, Partitions[i+1].Lo) and the last one up to 2^64.
	Partitions      []Partition
	NextIndexID     IndexID
	NextPartitionID uint64
	// Version is bumped by every change of the record (config.chunks' lastmod).
	Version uint64
}

// Index is one index of a collection, the implicit _id index included.
type Index struct {
	ID   IndexID
	Name string
	Key  bsoncore.Document // the key pattern, e.g. {a: 1, b: -1}
	// Spec is the full createIndexes spec (unique, sparse, partialFilterExpression,
	// expireAfterSeconds, ...), nil if nothing beyond Key and Name.
	Spec bsoncore.Document
	// Ready is false while the index is being built.
	Ready bool
	// Builder is the node running the build of a not-ready index (cluster mode; "" on a
	// single node): only it, or the partition manager once it is gone, aborts the build.
	Builder string
	// MultikeyPaths are the key pattern's fields that some document has held an array on
	// (the index is multikey on them). A path is added before the first write that needs it
	// commits and never removed, so a reader that sees the write sees the flag.
	MultikeyPaths []string
	// MultikeyUnknown marks a record written before multikey paths were tracked: any field
	// may hold arrays.
	MultikeyUnknown bool
}

// Partition is one hash range of a collection and the shard that holds it.
type Partition struct {
	ID    uint64
	Lo    uint64
	Shard int
	// BudgetRU is the partition's share of the collection's throughput, RU/s, when it is not
	// an even one (0: even). The shares are scaled to sum to the throughput.
	BudgetRU float64
}

// Toggle is a setting that is on, off, or left to the level above (the zero value).
type Toggle int8

// The values of a Toggle.
const (
	ToggleDefault Toggle = iota
	ToggleOn
	ToggleOff
)

// Resolve returns t as a bool, or def when t is ToggleDefault.
func (t Toggle) Resolve(def bool) bool {
	switch t {
	case ToggleOn:
		return true
	case ToggleOff:
		return false
	}
	return def
}

// IDIndexName is the name of the implicit _id index.
const IDIndexName = "_id_"

// idIndexKey is the key pattern {_id: 1} of the implicit _id index.
var idIndexKey = bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()

// Index returns the index named name, or nil.
func (c *Collection) Index(name string) *Index {
	for i := range c.Indexes {
		if c.Indexes[i].Name == name {
			return &c.Indexes[i]
		}
	}
	return nil
}

// IndexByID returns the index with id, or nil.
func (c *Collection) IndexByID(id IndexID) *Index {
	for i := range c.Indexes {
		if c.Indexes[i].ID == id {
			return &c.Indexes[i]
		}
	}
	return nil
}

// PartitionRange returns the hash range [lo, hi) of partition i (hi == 0 meaning 2^64).
func (c *Collection) PartitionRange(i int) (lo, hi uint64) {
	lo = c.Partitions[i].Lo
	if i+1 < len(c.Partitions) {
		hi = c.Partitions[i+1].Lo
	}
	return lo, hi
}

// Sharded reports whether the collection has a shard key.
func (c *Collection) Sharded() bool { return c.ShardKey != nil }

// clone returns a deep copy of c: nothing in the copy aliases c.
func (c *Collection) clone() *Collection {
	n := *c
	n.Options = cloneDoc(c.Options)
	n.ShardKey = cloneDoc(c.ShardKey)
	n.Indexes = make([]Index, len(c.Indexes))
	for i, x := range c.Indexes {
		x.Key = cloneDoc(x.Key)
		x.Spec = cloneDoc(x.Spec)
		x.MultikeyPaths = slices.Clone(x.MultikeyPaths)
		n.Indexes[i] = x
	}
	n.Partitions = slices.Clone(c.Partitions)
	if c.Zones != nil {
		n.Zones = make([]bsoncore.Document, len(c.Zones))
		for i, x := range c.Zones {
			n.Zones[i] = cloneDoc(x)
		}
	}
	if c.SearchIndexes != nil {
		n.SearchIndexes = make([]bsoncore.Document, len(c.SearchIndexes))
		for i, x := range c.SearchIndexes {
			n.SearchIndexes[i] = cloneDoc(x)
		}
	}
	return &n
}

// cloneDoc copies a document, keeping nil as nil.
func cloneDoc(d bsoncore.Document) bsoncore.Document {
	if d == nil {
		return nil
	}
	return slices.Clone(d)
}

// validate checks the invariants of a collection record.
func (c *Collection) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: collection %s.%s: %s", ErrInvalid, c.DB, c.Name, fmt.Sprintf(format, args...))
	}
	if c.DB == "" || c.Name == "" {
		return bad("empty database or collection name")
	}
	if len(c.Partitions) == 0 || c.Partitions[0].Lo != 0 {
		return bad("partitions must start at hash 0")
	}
	pids := make(map[uint64]bool, len(c.Partitions))
	for i, p := range c.Partitions {
		if i > 0 && p.Lo <= c.Partitions[i-1].Lo {
			return bad("partitions not sorted by Lo at %d", i)
		}
		if p.ID == 0 || pids[p.ID] || p.ID >= c.NextPartitionID {
			return bad("partition id %d is zero, duplicated or not below NextPartitionID %d", p.ID, c.NextPartitionID)
		}
		if p.Shard < 0 {
			return bad("partition %d has negative shard %d", p.ID, p.Shard)
		}
		pids[p.ID] = true
	}
	ids := make(map[IndexID]bool, len(c.Indexes))
	names := make(map[string]bool, len(c.Indexes))
	for _, x := range c.Indexes {
		if x.ID == 0 || ids[x.ID] || x.ID >= c.NextIndexID {
			return bad("index id %d is zero, duplicated or not below NextIndexID %d", x.ID, c.NextIndexID)
		}
		if x.Name == "" || names[x.Name] {
			return bad("index name %q empty or duplicated", x.Name)
		}
		ids[x.ID], names[x.Name] = true, true
	}
	return nil
}

// ThrottleRetryNever is a Collection's ThrottleRetryMS that turns server-side retry off, whatever
// its database and the server say.
const ThrottleRetryNever int64 = -1
