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
// The DB's idCache keeps the answers: the hash under which its _id index holds an _id, or none
// (most shards hold none of a given _id). An _id held under several hashes (in several
// partitions of a collection) is rare, and read from the index each time.

// idAnswer is the hash of one _id, if found.
type idAnswer struct {
	hash  uint64
	found bool
}

// idCacheAnswers bounds the answers of a DB's idCache: about 3.5 MiB of heap (a map entry
// takes about 110 bytes with its share of the table), which the --gc-percent heap may grow
// to 5 times.
const idCacheAnswers = 32 << 10

// noteID records that a batch writes or deletes an index entry whose key starts with
// prefix ('i' | coll | idx | key) when idx is the _id index.
func (b *Batch) noteID(idx IndexID, prefix []byte) {
	if idx == IDIndexID {
		b.idStripes = append(b.idStripes, idKeyOf(prefix).stripe())
	}
}

// IDIndexHashes appends to dst the hashes under which coll's _id index has an entry of index
// key key (an _id, encoded as the _id index encodes it), in the DB's latest committed state and
// in index order. It reads the index once per _id and keeps the answer until a write of that
// _id's entries (idCache).
func (db *DB) IDIndexHashes(coll CollID, key []byte, dst []uint64) ([]uint64, error) {
	if db.closed.Load() {
		return dst, ErrClosed
	}
	var pb [96]byte
	k := idKeyOf(append(appendIndexPrefix(pb[:0], coll, IDIndexID), key...))
	if a, ok := db.ids.get(k); ok {
		if a.found {
			dst = append(dst, a.hash)
		}
		return dst, nil
	}
	w, idle := db.ids.load(k) // before the read: see idCache
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
	switch n := len(dst) - start; {
	case !idle || n > 1:
	case n == 1:
		db.ids.put(k, w, idAnswer{hash: dst[start], found: true})
	default:
		db.ids.put(k, w, idAnswer{})
	}
	return dst, nil
}

// idCache keeps the answers of _id lookups in a DB's latest state (the hash under which its _id
// index holds an _id, or none), so that the next lookup of the same _id reads no index. An
// answer is exact, never a hint: it is used only if no write of its _id's entries became
// visible since it was read, and no read sees one batch's _ids half old, half new.
//
//   - Every write of an _id index entry goes through a Batch (SetIndex, DeleteIndex), which
//     notes its stripe (one of idCacheStripes); a range deletion that may cover such entries
//     notes all.
//   - Around Pebble's apply of the batch (the moment all its writes become visible at once),
//     Apply marks each noted stripe as being written (begin) and then bumps its generation and
//     clears the mark (end). Each stripe's word holds both: the count of writes under way in
//     its low 20 bits (a batch counts once per stripe, a connection applies one batch at a
//     time, and a server takes at most --max-conns, 100,000, connections), the generation in
//     the 44 above (they would wrap after 2⁴⁴ writes of one stripe's _ids, centuries).
//   - A reader loads the words of the key's stripe and of all before it reads Pebble. It
//     stores its answer with them only if no write was under way in either and neither word
//     has changed since; it uses an answer only while no write is under way and both words
//     are those the answer holds.
//
// So an answer read before a write became visible carries words older than those the write
// leaves, and a reader that saw any key of a batch new finds the stripes of its other keys
// either under way or moved on, and reads them from Pebble: new too. Writes are acknowledged
// after Apply returns. Only lookups in the DB's latest state use the cache (DB.IDIndexHashes);
// snapshots and transactions read the index.
type idCache struct {
	all    atomic.Uint64
	words  [idCacheStripes]atomic.Uint64
	shards [idCacheShards]idShard
	// hits and misses count the reads answered from the cache and from Pebble.
	hits, misses atomic.Int64
}

const (
	// idCacheStripes is how many words split the keys: a write invalidates the answers and
	// documents of its stripe, a 65,536th of them, and the words take 512 KiB a DB. With
	// 4,096, workload a's updates (some 4,000 a second on one shard) moved every stripe about
	// once a second, and the document cache answered 63% of its point reads; with 65,536, 70%
	// (issue 43, docs/benchmarks.md).
	idCacheStripes = 1 << 16
	// idCacheShards is how many locks split the answers.
	idCacheShards = 16
	// writing is one write under way in a stripe's word; generation is one generation.
	writing    = 1
	generation = 1 << 20
	underWay   = generation - 1
)

// idKey is the cache key of an _id (its index key prefix): a 128-bit hash. Two keys share one with a
// probability of about n²/2¹²⁹ for n answers, far below that of a memory error, and a
// fixed-size key keeps the map's entries small and its lookups free of allocations.
type idKey xxh3.Uint128

// idKeyOf is the cache key of Pebble key k.
func idKeyOf(k []byte) idKey { return idKey(xxh3.Hash128(k)) }

// stripe is the stripe of cache key k.
func (k idKey) stripe() uint32 { return uint32(k.Lo % idCacheStripes) }

// idShard is one lock's part of the answers.
type idShard struct {
	mu sync.Mutex
	m  map[idKey]idEntry
}

// idEntry is an answer and the words it was read at.
type idEntry struct {
	word, all uint64
	v         idAnswer
}

// idWords are the words a reader loaded before it read Pebble.
type idWords struct{ word, all uint64 }

// begin marks the noted stripes (and all, with all) as being written: before Pebble applies
// the batch that noted them. It appends to began the word it left in each stripe.
func (c *idCache) begin(stripes []uint32, all bool, began []uint64) []uint64 {
	if all {
		c.all.Add(writing)
	}
	for _, s := range stripes {
		began = append(began, c.words[s].Add(writing))
	}
	return began
}

// end bumps the generations of the stripes begin marked and clears their marks: after Pebble
// applied the batch, or failed to. It replaces each word of began (begin's) by the word it
// left when the batch was the only write of that stripe from its begin to its end, or by
// notIdle (doccache.go).
func (c *idCache) end(stripes []uint32, all bool, began []uint64) {
	for i, s := range stripes {
		w := c.words[s].Add(generation - writing)
		if b := began[i]; b&underWay != writing || w != b+generation-writing {
			began[i] = notIdle
		} else {
			began[i] = w
		}
	}
	if all {
		c.all.Add(generation - writing)
	}
}

// load returns the words of k's stripe and of all, and whether no write is under way in
// either: an answer read now may be stored.
func (c *idCache) load(k idKey) (idWords, bool) {
	w := idWords{c.words[k.stripe()].Load(), c.all.Load()}
	return w, w.word&underWay == 0 && w.all&underWay == 0
}

// shard is the shard of cache key k.
func (c *idCache) shard(k idKey) *idShard { return &c.shards[k.Hi%idCacheShards] }

// get returns the current answer for cache key k, if the cache has one.
func (c *idCache) get(k idKey) (v idAnswer, ok bool) {
	s := c.shard(k)
	s.mu.Lock()
	a, ok := s.m[k]
	s.mu.Unlock()
	if !ok {
		c.misses.Add(1)
		return v, false
	}
	if w, idle := c.load(k); !idle || w.word != a.word || w.all != a.all {
		c.misses.Add(1)
		return v, false
	}
	c.hits.Add(1)
	return a.v, true
}

// put stores v as the answer for cache key k, read by Pebble after words w were loaded (and
// found idle). An answer already stale is dropped; a stale one that replaces a current one
// only costs a miss. A full shard forgets a random answer for each it learns.
func (c *idCache) put(k idKey, w idWords, v idAnswer) {
	if now, idle := c.load(k); !idle || now != w {
		return
	}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[idKey]idEntry)
	}
	if _, known := s.m[k]; !known && len(s.m) >= idCacheAnswers/idCacheShards {
		for old := range s.m { // iteration starts at a random place: a random victim
			delete(s.m, old)
			break
		}
	}
	s.m[k] = idEntry{word: w.word, all: w.all, v: v}
}
