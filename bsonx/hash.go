package bsonx

import (
	"github.com/zeebo/xxh3"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// hashBufSize is the stack buffer Hash encodes small values into; an encoding is at most about
// twice the size of the value, so values up to hashStackData bytes fit.
const (
	hashBufSize   = 128
	hashStackData = 56
)

// Hash returns the shard-placement hash of v: xxh3 (seed 0) of AppendKey(nil, v). Values that
// Compare equal hash equal, so 1, 1.0, NumberLong(1) and NumberDecimal("1") land on the same
// partition. Data placement depends on this function: it must never change (hash_test.go
// freezes it). It does not allocate.
func Hash(v bsoncore.Value) uint64 {
	if len(v.Data) > hashStackData {
		e := encPool.Get().(*encBuf) // the pool only holds *encBuf
		e.b = AppendKey(e.b[:0], v)
		h := xxh3.Hash(e.b)
		if cap(e.b) <= maxPooledBuf {
			encPool.Put(e)
		}
		return h
	}
	var buf [hashBufSize]byte
	return xxh3.Hash(AppendKey(buf[:0], v))
}

// HashKey returns the hash of an already encoded key: Hash(v) == HashKey(AppendKey(nil, v)).
func HashKey(encoded []byte) uint64 {
	return xxh3.Hash(encoded)
}
