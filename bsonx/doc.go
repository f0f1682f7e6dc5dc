// Package bsonx holds pure functions over BSON values (bsoncore) with MongoDB's semantics:
//
//   - Compare: MongoDB's total order of BSON values (MinKey < null < numbers < strings/symbols <
//     objects < arrays < binData < ObjectId < bool < date < timestamp < regex < ... < MaxKey),
//     numbers of all four types compared by value, NaN below every other number.
//   - AppendKey / AppendKeyDesc: an order-preserving, self-delimiting byte encoding of a value,
//     so that compound keys are plain concatenations and Pebble's byte order is query order.
//   - Hash: xxh3 over AppendKey, so values MongoDB calls equal (1, 1.0, NumberLong(1),
//     NumberDecimal("1.0")) hash equal. Data placement depends on it: golden-tested, frozen.
//   - dotted-path traversal with MongoDB's array semantics, and sort keys.
//
// Invariants, checked by property tests and fuzzing:
//
//	sign(Compare(a, b)) == sign(bytes.Compare(AppendKey(nil, a), AppendKey(nil, b)))
//	sign(Compare(a, b)) == -sign(bytes.Compare(AppendKeyDesc(nil, a), AppendKeyDesc(nil, b)))
//	Compare(a, b) == 0  =>  Hash(a) == Hash(b)
//
// No I/O, no logging, no MongoDB error codes.
//
// # What it owns
//
//   - The order (order.go, number.go; decimal128/ for decimals): Compare, CompareDocuments, Equal,
//     CanonicalRank (MongoDB's canonicalizeBSONType; undefined ranks 0, between MinKey and
//     null). int32, int64, double and decimal128 compare by exact value: int64 against double
//     without rounding (2^63-1 < 9.223372036854775807e18), decimal against double exactly
//     (NumberDecimal("0.1") < 0.1), -0 == 0, NaN == NaN below -Infinity. Strings by bytes (no
//     collation); objects by element (type rank, then field name, then value); arrays by element.
//   - The key encoding (key.go, keynum.go, keydecode.go): AppendKey, AppendKeyDesc, KeyLen,
//     KeyLenDesc, DecodeKey, DecodeKeyDesc. The byte layout is described in key.go and
//     keynum.go; it is stored on disk and hashed for placement, so it is frozen by
//     TestHashGolden. Values that compare equal encode to identical bytes; a small int takes
//     2 bytes, an ObjectId 13, a string its length plus 3. No encoding starts with 0x00 or
//     0xFF in either direction, so those bytes bound key ranges.
//   - Hash and HashKey (hash.go): xxh3 of the encoding, frozen.
//   - Paths (path.go): Lookup (plain: field names, numeric components index arrays, no
//     fan-out) for shard keys and simple projections; WalkPath, the query matcher's traversal
//     (MongoDB's BSONElementIterator), reporting missing values and the positional array index.
//   - Index and sort keys (indexkeys.go, sortkey.go): AppendIndexKeys follows MongoDB's
//     BtreeKeyGenerator (multikey, parallel arrays, positional paths, empty array as
//     undefined, hashed components); AppendSortKey is the smallest index key of the sort
//     pattern, as MongoDB's SortKeyGenerator computes it.
//   - Collations (collate.go): Collate and CollateDocument replace every string by its key
//     under a Collator (exec/collation implements it), so that Compare, the key encoding and
//     the sort keys of collated values follow the collation; AppendSortKeyCollated.
//   - Helpers: IsNumber, NumberAsFloat64, NumberAsInt64, ArrayKey.
//
// # Decisions worth knowing
//
//   - WalkPath has the null semantics of MongoDB 8 and earlier: scalars inside an array on a
//     dotted path yield nothing (SERVER-36681 changes this in 9.0).
//   - The multikey result of AppendIndexKeys is conservative: any expanded array, even with one
//     element or none, makes it true. MongoDB's multikey paths are finer; true is always safe.
//   - Array elements compare by position; their field names ("0", "1", …) are ignored.
//   - Malformed input never panics: a value whose bytes do not fit its type reads as the
//     type's empty value, and a document ends at its first malformed element. Compare, the key
//     encoding and the path functions agree on this, so the invariants hold even then. A type
//     byte that is no BSON type sorts after MaxKey. Nesting is followed recursively: callers
//     must bound the depth of the documents they accept (MongoDB allows 100 levels), and
//     DecodeKey refuses keys nested more than 1024 deep.
//   - Hot paths (Compare, Equal, AppendKey and Hash of scalars and documents, WalkPath,
//     Lookup, AppendSortKey, AppendIndexKeys) do not allocate once warm. Decimals beyond ±1e19
//     scale compute a power of ten once per exponent and cache it; DecodeKey allocates the
//     value it returns.
//
// # Example
//
//	doc := bsoncore.NewDocumentBuilder().AppendString("deviceId", "d-17").AppendInt32("n", 3).Build()
//	v, _ := bsonx.Lookup(doc, "deviceId")   // the shard-key value
//	placement := bsonx.Hash(v)               // its partition
//	key := bsonx.AppendKey(nil, v)           // a compound key: deviceId ascending,
//	n, _ := bsonx.Lookup(doc, "n")
//	key = bsonx.AppendKeyDesc(key, n)        // then n descending
//	first, _ := bsonx.KeyLen(key)            // 7: where the first component ends
//	id, rest, _ := bsonx.DecodeKey(key)      // "d-17", and the bytes of n
package bsonx
