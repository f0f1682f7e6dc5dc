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
package bsonx
