package store

import (
	"sync"
	"sync/atomic"

	"github.com/zeebo/xxh3"
)

// Finding an _id without its hash (issue 13). A collection sharded on another field keys its
// documents by (hash of the shard key, _id), so a find by _id alone reads the _id index of
// every shard first, to learn which hashes hold that _id. That read is a Pebble iterator: it is
// opened, seeks every memtable and level (bloom filters cannot help: they hold whole keys, and
// an entry's key goes on with the hash and the _id), and is closed. It cost as much as the Get
// of the document that follows: in workload c on 2 shards, 5.1 µs of the 28.7 of each read,
// the Get 4.8.
//
// idCache keeps the answers: the hashes under which this DB's _id index holds an _id, none
// included (most shards hold none of a given _id). An answer is exact, never a hint:
//   - every write of an _id index entry goes through a Batch (SetIndex, DeleteIndex), which
//     notes the entry's stripe; the range deletions that may cover _id entries note all;
//   - once Pebble has applied the batch (its writes are visible), Apply bumps the generation
//     of each noted stripe, or the generation of all;
//   - a reader loads the generations before it reads the index and stores its answer with
//     them; an answer is used only while both are unchanged.
//
// So an answer read before a write became visible carries an older generation than the one
// the write leaves, and a write is acknowledged only after its bump. Only reads of the latest
// state use the cache (DB.IDIndexHashes); snapshots and transactions read the index.
type idCache struct {
	all    atomic.Uint64
	gens   [idCacheStripes]atomic.Uint64
	shards [idCacheShards]idCacheShard
	// hits and misses count the lookups answered from the cache and by reading the index.
	hits, misses atomic.Int64
}

const (
	// idCacheStripes is how many generations split the _ids: a write invalidates the answers
	// of its stripe, a 4,096th of them.
	idCacheStripes = 1 << 12
	// idCacheShards is how many locks split the answers.
	idCacheShards = 16
	// idCachePerShard bounds the answers of a shard: 128 Ki answers per DB, about 7 MiB of
	// heap. A full shard forgets a random answer for each it learns.
	idCachePerShard = 8192
)

// idCacheShard is one lock's part of the answers. They are keyed by a 128-bit hash of (coll,
// the _id's index key): two keys share one with a probability of about n²/2¹²⁹ for n answers,
// below that of a memory error, and a fixed-size key keeps an answer at 40 bytes.
type idCacheShard struct {
	mu sync.Mutex
	m  map[idKey]idAnswer
}

// idAnswer is the hash of one _id, if found, and the version (idCache.version) it was read
// at. Only answers of at most one hash are kept: an _id in several partitions of a collection
// is rare and read from the index.
type idAnswer struct {
	version uint64
	hash    uint64
	found   bool
}

// idKey is the cache key of an _id's index key in a collection.
type idKey xxh3.Uint128

// idCacheKey is the cache key of an _id's index key in coll.
func idKeyOf(coll CollID, key []byte) idKey { return idKey(xxh3.Hash128Seed(key, uint64(coll))) }

// stripe is the stripe of cache key k.
func (k idKey) stripe() uint64 { return k.Lo % idCacheStripes }

// note records that a batch writes or deletes an _id index entry of coll with index key key.
func (b *Batch) noteID(coll CollID, key []byte) {
	b.idStripes = append(b.idStripes, uint32(idKeyOf(coll, key).stripe()))
}

// invalidate bumps the generations of stripes, and of all with all: after a batch is applied.
func (c *idCache) invalidate(stripes []uint32, all bool) {
	if all {
		c.all.Add(1)
	}
	for _, s := range stripes {
		c.gens[s].Add(1)
	}
}

// version is the sum of the generations of k's stripe and of all. Both only grow, so an
// unchanged sum means both are unchanged.
func (c *idCache) version(k idKey) uint64 {
	return c.gens[k.stripe()].Load() + c.all.Load()
}

// shard is the shard of cache key k.
func (c *idCache) shard(k idKey) *idCacheShard { return &c.shards[k.Hi%idCacheShards] }

// get returns the current answer for cache key k, if the cache has one.
func (c *idCache) get(k idKey) (idAnswer, bool) {
	s := c.shard(k)
	s.mu.Lock()
	a, ok := s.m[k]
	s.mu.Unlock()
	if !ok || a.version != c.version(k) {
		c.misses.Add(1)
		return idAnswer{}, false
	}
	c.hits.Add(1)
	return a, true
}

// put stores answer a for cache key k. An answer already stale is dropped; a stale one that
// replaces a current one only costs a miss.
func (c *idCache) put(k idKey, a idAnswer) {
	if a.version != c.version(k) {
		return
	}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[idKey]idAnswer)
	}
	if _, known := s.m[k]; !known && len(s.m) >= idCachePerShard {
		for old := range s.m { // iteration starts at a random place: a random victim
			delete(s.m, old)
			break
		}
	}
	s.m[k] = a
}

// IDIndexHashes appends to dst the hashes under which coll's _id index has an entry of index
// key key (an _id, encoded as the _id index encodes it), in the DB's latest committed state and
// in index order. It reads the index once per _id and keeps the answer until a write of that
// _id's entries (idCache); found is how many entries the answer holds.
func (db *DB) IDIndexHashes(coll CollID, key []byte, dst []uint64) ([]uint64, error) {
	if db.closed.Load() {
		return dst, ErrClosed
	}
	k := idKeyOf(coll, key)
	if a, ok := db.ids.get(k); ok {
		if a.found {
			dst = append(dst, a.hash)
		}
		return dst, nil
	}
	version := db.ids.version(k) // before the read: see idCache
	var eb [64]byte
	it, err := newIndexIter(db.pdb, coll, IDIndexID, key, AppendKeyPrefixEnd(eb[:0], key), false)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	for it.Next() {
		dst = append(dst, it.Hash())
	}
	err = it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return dst[:start], err
	}
	if n := len(dst) - start; n <= 1 {
		db.ids.put(k, idAnswer{version: version, hash: firstOr(dst[start:]), found: n == 1})
	}
	return dst, nil
}

// firstOr returns hs[0], or 0 when hs is empty.
func firstOr(hs []uint64) uint64 {
	if len(hs) == 0 {
		return 0
	}
	return hs[0]
}
