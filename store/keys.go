package store

import "encoding/binary"

// CollID identifies a collection in every shard's keys. The catalog assigns it from a
// persistent counter and never reuses it, so stale data of a dropped collection can never be
// mistaken for a new collection's.
type CollID uint32

// IndexID identifies an index within its collection; the implicit _id index is IDIndexID.
type IndexID uint32

// IDIndexID is the ID of every collection's implicit _id index.
const IDIndexID IndexID = 1

// Key kinds: the first byte of every Pebble key.
const (
	prefixCatalog byte = 'c' // catalog records (only in the catalog's DB)
	prefixDoc     byte = 'd' // 'd' | coll | hash | id → document
	prefixIndex   byte = 'i' // 'i' | coll | idx | key | hash | id | len(id) → empty
	prefixMeta    byte = 'm' // format version, counters, stats
	prefixTxn     byte = 't' // 't' | lsid → session transaction record (txnrec.go)
	// prefixChange: 'e' | ts | pos → change record, 'e' | ts → a batch's records, in changes.go;
	// prefixChangeRef: 'r' | docKey → the record referring to the document, in changes_ref.go.
	// prefixGraph: 'v' | coll | graph | node → vector search graph node, in vecgraph.go.
)

// Sub-kinds of meta keys (the byte after 'm').
const (
	metaVersion byte = 'v' // 'm' 'v' → format version, uint32 BE
	metaCounter byte = 'n' // 'm' 'n' name → counter, uint64 BE
	metaStats   byte = 's' // 'm' 's' | coll | bucket u16 → stats value
	metaTotal   byte = 't' // 'm' 't' | coll → stats value of the whole collection
	metaChanges byte = 'e' // 'm' 'e' 't' → time before which the change log was trimmed
	metaReplica byte = 'r' // 'm' 'r' 'a' → index and term of the last replicated entry applied (replicated.go)
)

const (
	docPrefixLen   = 1 + 4     // 'd' | coll
	indexPrefixLen = 1 + 4 + 4 // 'i' | coll | idx
	hashLen        = 8
)

// AppendDocKey appends the key of document id (its encoded _id) at hash in coll:
// 'd' | coll u32 BE | hash u64 BE | id. Keys sort by (coll, hash, id).
func AppendDocKey(dst []byte, coll CollID, hash uint64, id []byte) []byte {
	dst = appendDocHashPrefix(dst, coll, hash)
	return append(dst, id...)
}

// appendDocPrefix appends 'd' | coll, the prefix shared by all documents of coll.
func appendDocPrefix(dst []byte, coll CollID) []byte {
	dst = append(dst, prefixDoc)
	return binary.BigEndian.AppendUint32(dst, uint32(coll))
}

// appendDocHashPrefix appends 'd' | coll | hash: the first possible key at hash.
func appendDocHashPrefix(dst []byte, coll CollID, hash uint64) []byte {
	return binary.BigEndian.AppendUint64(appendDocPrefix(dst, coll), hash)
}

// DocKeyParts splits a document key into its collection, hash and id. The id aliases k.
// ok is false if k is not a document key.
func DocKeyParts(k []byte) (coll CollID, hash uint64, id []byte, ok bool) {
	if len(k) < docPrefixLen+hashLen || k[0] != prefixDoc {
		return 0, 0, nil, false
	}
	coll = CollID(binary.BigEndian.Uint32(k[1:]))
	hash = binary.BigEndian.Uint64(k[docPrefixLen:])
	return coll, hash, k[docPrefixLen+hashLen:], true
}

// DocKeyHashID returns the hash and id of a document key; the id aliases k.
func DocKeyHashID(k []byte) (hash uint64, id []byte, ok bool) {
	_, hash, id, ok = DocKeyParts(k)
	return hash, id, ok
}

// AppendIndexKey appends the key of one index entry:
//
//	'i' | coll u32 BE | idx u32 BE | key | hash u64 BE | id | len(id) as a reversed uvarint
//
// key is the encoded index key (one bsonx component per indexed field), id the encoded _id.
// The trailing length makes the key parseable from its end without knowing how key is built;
// it does not change the order, because encoded _ids are self-delimiting (no id is a proper
// prefix of another), so entries sort by (coll, idx, key, hash, id).
func AppendIndexKey(dst []byte, coll CollID, idx IndexID, key []byte, hash uint64, id []byte) []byte {
	dst = appendIndexPrefix(dst, coll, idx)
	dst = append(dst, key...)
	dst = binary.BigEndian.AppendUint64(dst, hash)
	dst = append(dst, id...)
	return appendRevUvarint(dst, uint64(len(id)))
}

// appendIndexPrefix appends 'i' | coll | idx, the prefix shared by all entries of one index.
func appendIndexPrefix(dst []byte, coll CollID, idx IndexID) []byte {
	dst = append(dst, prefixIndex)
	dst = binary.BigEndian.AppendUint32(dst, uint32(coll))
	return binary.BigEndian.AppendUint32(dst, uint32(idx))
}

// appendIndexCollPrefix appends 'i' | coll, the prefix shared by all indexes of coll.
func appendIndexCollPrefix(dst []byte, coll CollID) []byte {
	dst = append(dst, prefixIndex)
	return binary.BigEndian.AppendUint32(dst, uint32(coll))
}

// IndexEntry is a decoded index key. Key and ID alias the key they were parsed from.
type IndexEntry struct {
	Coll  CollID
	Index IndexID
	Key   []byte // the encoded index key, as given to AppendIndexKey
	Hash  uint64
	ID    []byte // the encoded _id
}

// ParseIndexKey is the inverse of AppendIndexKey. ok is false if k is not a well-formed
// index key.
func ParseIndexKey(k []byte) (e IndexEntry, ok bool) {
	if len(k) < indexPrefixLen+hashLen+1 || k[0] != prefixIndex {
		return IndexEntry{}, false
	}
	e.Coll = CollID(binary.BigEndian.Uint32(k[1:]))
	e.Index = IndexID(binary.BigEndian.Uint32(k[5:]))
	var good bool
	e.Key, e.Hash, e.ID, good = splitIndexSuffix(k[indexPrefixLen:])
	return e, good
}

// splitIndexSuffix splits key | hash | id | len(id), the part of an index key after its
// 'i' | coll | idx prefix.
func splitIndexSuffix(s []byte) (key []byte, hash uint64, id []byte, ok bool) {
	idLen, n := readRevUvarint(s)
	if n == 0 || idLen > uint64(len(s)-n) {
		return nil, 0, nil, false
	}
	end := len(s) - n
	idStart := end - int(idLen)
	if idStart < hashLen {
		return nil, 0, nil, false
	}
	hash = binary.BigEndian.Uint64(s[idStart-hashLen:])
	return s[:idStart-hashLen], hash, s[idStart:end], true
}

// appendRevUvarint appends v as a uvarint whose bytes are reversed, so that it can be read
// backwards from the end of a key: the last byte holds the lowest 7 bits.
func appendRevUvarint(dst []byte, v uint64) []byte {
	var tmp [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(tmp[:], v)
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, tmp[i])
	}
	return dst
}

// readRevUvarint reads a value written by appendRevUvarint at the end of b. n is the number of
// bytes it took, 0 if b does not end with a valid, minimal one (so that parsing is the exact
// inverse of encoding).
func readRevUvarint(b []byte) (v uint64, n int) {
	var shift uint
	for i := len(b) - 1; i >= 0 && n < binary.MaxVarintLen64; i-- {
		c := b[i]
		n++
		if n == binary.MaxVarintLen64 && c > 1 {
			return 0, 0 // past 64 bits: the tenth byte holds the top bit only
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if c == 0 && n > 1 {
				return 0, 0 // non-minimal: a zero top group
			}
			return v, n
		}
		shift += 7
	}
	return 0, 0
}

// KeyPrefixEnd returns the smallest byte string greater than every string that starts with
// p, or nil if there is none (p is empty or all 0xff): use it as an exclusive upper bound to
// take all index keys that start with p. It does not modify p.
func KeyPrefixEnd(p []byte) []byte { return AppendKeyPrefixEnd(nil, p) }

// AppendKeyPrefixEnd appends KeyPrefixEnd(p) to dst and returns it: nil when p is all 0xff
// (no key follows them all), which our key prefixes never are (they start with a kind byte
// below 0xff). dst may be p's own buffer (p then a prefix of it).
func AppendKeyPrefixEnd(dst, p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xff {
			dst = append(dst, p[:i+1]...)
			dst[len(dst)-1]++
			return dst
		}
	}
	return nil
}

// InRange reports whether hash h lies in the range [lo, hi), where hi == 0 stands for 2^64
// (the end of the hash space). This is the range convention of the whole store and of the
// shard package: [0, 0) is the whole space, and a range never wraps around.
func InRange(h, lo, hi uint64) bool {
	return h >= lo && (hi == 0 || h < hi)
}

// appendDocRangeBounds appends the lower and upper Pebble bounds of the documents of coll with
// hash in [lo, hi) to buf and returns both (sub-slices of the result).
func appendDocRangeBounds(buf []byte, coll CollID, lo, hi uint64) (lower, upper []byte) {
	buf = appendDocHashPrefix(buf, coll, lo)
	n := len(buf)
	if hi == 0 {
		buf = AppendKeyPrefixEnd(buf, buf[:docPrefixLen])
	} else {
		buf = appendDocHashPrefix(buf, coll, hi)
	}
	return buf[:n:n], buf[n:]
}

// bucketBits is the number of hash bits below a stats bucket: bucket = hash >> bucketBits.
const bucketBits = 48

// bucketOf returns the stats bucket of a hash: its top 16 bits.
func bucketOf(h uint64) uint16 { return uint16(h >> bucketBits) }
