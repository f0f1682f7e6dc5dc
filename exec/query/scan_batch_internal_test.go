package query

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
)

// batchKey is an entry of a fetch batch as the sort must order it: hash, then _id's bytes.
type batchKey struct {
	hash uint64
	id   string
}

// TestFetchBatchSort checks that a fetch batch sorts its entries by (hash, _id key) whatever
// the _ids: short ones, ones that share their first 8 bytes, ones that are prefixes of
// others, zero bytes past their end (the entry's prefix pads with zeros), numbers and strings.
func TestFetchBatchSort(t *testing.T) {
	ids := [][]byte{{}, {0}, {0, 0}, {1}, []byte("abcdefgh"), []byte("abcdefgh\x00"), []byte("abcdefghi"),
		[]byte("abcdefgg\xff"), []byte("abcdefg"), []byte("abcdefg\x00"), {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	for i := range 200 {
		ids = append(ids, bsonx.AppendKey(nil, bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, int64(i*997))}))
		ids = append(ids, bsonx.AppendKey(nil, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, string(rune('a'+i%26))+"long-string-id")}))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name          string
		entries       int
		hashes        int // distinct hashes: few make long runs that share one, many short ones
		hashesBetween uint64
	}{
		{"Empty", 0, 1, 0},
		{"One", 1, 1, 0},
		{"Unsharded", 3000, 1, 0},
		{"LongRuns", 3000, 4, 1 << 62},
		{"ShortRuns", 3000, 1000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hashes := make([]uint64, tc.hashes)
			for i := range hashes {
				hashes[i] = uint64(i) * tc.hashesBetween
				if tc.hashesBetween == 0 && tc.hashes > 1 {
					hashes[i] = rng.Uint64()
				}
			}
			var b fetchBatch
			var want []batchKey
			for range tc.entries {
				k := batchKey{hash: hashes[rng.IntN(len(hashes))], id: string(ids[rng.IntN(len(ids))])}
				b.add(k.hash, []byte(k.id))
				want = append(want, k)
			}
			b.sort()
			slices.SortFunc(want, func(x, y batchKey) int {
				return cmp.Or(cmp.Compare(x.hash, y.hash), cmp.Compare(x.id, y.id))
			})
			if len(b.ents) != len(want) {
				t.Fatalf("%d entries, want %d", len(b.ents), len(want))
			}
			for i, e := range b.ents {
				if e.hash != want[i].hash || !bytes.Equal(b.ids[e.start:e.end], []byte(want[i].id)) {
					t.Fatalf("entry %d is (%x, %q), want (%x, %q)", i, e.hash, b.ids[e.start:e.end], want[i].hash, want[i].id)
				}
			}
		})
	}
}

// BenchmarkFetchBatchSort sorts a full fetch batch as the agg workload's 2-shard read fills
// it: 4,096 readings of a window on readingTime, their int64 _ids consecutive, their hashes
// those of about 500 devices (one shard's half of 1,000).
//
//	go test ./exec/query -run '^$' -bench BenchmarkFetchBatchSort -count 10
func BenchmarkFetchBatchSort(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	devices := make([]uint64, 500)
	for i := range devices {
		devices[i] = rng.Uint64()
	}
	type ent struct {
		hash uint64
		id   []byte
	}
	ents := make([]ent, 4096)
	for i := range ents {
		id := bsonx.AppendKey(nil, bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, int64(40_000+i))})
		ents[i] = ent{hash: devices[rng.IntN(len(devices))], id: id}
	}
	var fb fetchBatch
	b.ReportAllocs()
	for b.Loop() {
		fb.ids, fb.ents = fb.ids[:0], fb.ents[:0]
		for _, e := range ents {
			fb.add(e.hash, e.id)
		}
		fb.sort()
	}
}
