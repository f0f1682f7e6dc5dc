package query

import (
	"bytes"
	"cmp"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
)

// idTargets turns _id equality values into point reads.
func idTargets(ci *catalog.Coll, ids []bsoncore.Value, p *Plan) []idTarget {
	out := p.idsBuf[:0]
	if len(ids) > len(p.idsBuf) {
		out = make([]idTarget, 0, len(ids))
	}
	for _, v := range ids {
		h, ok := ci.IDHash(v)
		t := idTarget{id: p.appendKey(v, bsonx.AppendKey), hash: h, hashSet: ok}
		t.ixKey = t.id
		if !ok && len(ci.Indexes) > 0 && ci.Indexes[0].IsID && ci.Indexes[0].Collation != nil {
			t.ixKey = ci.Indexes[0].IDIndexKey(nil, v)
		}
		out = append(out, t)
	}
	if len(out) < 2 { // a point read: nothing to sort or deduplicate
		return out
	}
	slices.SortFunc(out, func(a, b idTarget) int { return bytes.Compare(a.id, b.id) })
	return slices.CompactFunc(out, func(a, b idTarget) bool { return bytes.Equal(a.id, b.id) })
}

// TargetPartitions returns the partitions that may hold matches: those of the shard-key
// values an equality or $in fixes (null included: documents missing the key are placed
// as null), else all.
func TargetPartitions(ci *catalog.Coll, f *match.Filter) []int {
	t, _ := targets(ci, f, nil)
	return t
}

// appendKey returns add(v) (an encoding appended to its argument), in p's keysBuf while it
// has room: its slices never overlap, as each is capped at its length.
func (p *Plan) appendKey(v bsoncore.Value, add func([]byte, bsoncore.Value) []byte) []byte {
	if p == nil || p.keysUsed >= len(p.keysBuf) {
		return add(nil, v)
	}
	used := p.keysUsed
	k := add(p.keysBuf[used:used:len(p.keysBuf)], v)
	if len(k) > 0 && &k[0] == &p.keysBuf[used] { // it fit
		p.keysUsed += len(k)
	}
	return k[:len(k):len(k)]
}

// targets returns the partitions that may hold matches and, when an equality or $in fixes
// the shard key, its hashes (sorted, each once). For a hierarchical key that fixes only a
// prefix of the levels, p.spans are the hash ranges of that prefix (plan_hier.go); for a
// ranged key bounded on its first field, the range keys of those bounds (plan_ranged.go).
// p, when not nil, is the plan whose buffers the slices may use.
func targets(ci *catalog.Coll, f *match.Filter, p *Plan) ([]int, []hashTarget) {
	var dst []int
	if p != nil {
		dst = p.targetsBuf[:0]
	}
	switch {
	case ci.Levels != nil:
		if t, ht, ok := hierTargets(ci, f, p, dst); ok {
			return t, ht
		}
	case ci.Ranged:
		if t, ht, ok := rangedTargets(ci, f, p, dst); ok {
			return t, ht
		}
	case ci.Hashed >= 0:
		if vals, ok := f.KeyEqualities(ci.ShardKey[ci.Hashed].Path); ok && !collatedStrings(f, vals) {
			var ht []hashTarget // not nil: a nil hashes is "the filter does not fix the key"
			if p != nil && len(vals) <= len(p.hashesBuf) {
				ht = p.hashesBuf[:0]
			} else {
				ht = make([]hashTarget, 0, len(vals))
			}
			var hb [4]uint64
			hashes := hb[:0]
			for _, v := range vals {
				h := bsonx.Hash(v)
				ht = append(ht, hashTarget{hash: h, label: p.appendKey(v, catalog.ValueLabel)})
				hashes = append(hashes, h)
			}
			if len(ht) > 1 {
				slices.SortFunc(ht, func(a, b hashTarget) int { return cmp.Compare(a.hash, b.hash) })
			}
			ht = slices.CompactFunc(ht, func(a, b hashTarget) bool { return a.hash == b.hash })
			return ci.Map.AppendTargets(dst, hashes), ht
		}
	}
	all := slices.Grow(dst, ci.Map.Len())[:ci.Map.Len()]
	for i := range all {
		all[i] = i
	}
	return all, nil
}

// collatedStrings reports whether f compares with a collation and one of vals holds a
// string: such values match strings that are not equal to them byte for byte, so they
// cannot be looked up where raw values are stored (the shard-key hash, _id, an index
// with another collation).
func collatedStrings(f *match.Filter, vals []bsoncore.Value) bool {
	if f.Collator() == nil {
		return false
	}
	for _, v := range vals {
		if bsonx.HasString(v) {
			return true
		}
	}
	return false
}
