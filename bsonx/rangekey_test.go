package bsonx

import (
	"math/rand/v2"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestRangeKeyOrder checks over random values, single and paired as a compound key's, that
// range keys keep Compare's order (a < b gives RangeKey(a) <= RangeKey(b)), that equal values
// share one, and that RangeKeyHi bounds every key with the same first component.
func TestRangeKeyOrder(t *testing.T) {
	n := 800
	if testing.Short() || raceEnabled {
		n = 250
	}
	g := gen{randEntropy{rand.New(rand.NewPCG(5, 6))}}
	type pair struct{ a, b bsoncore.Value }
	ps := make([]pair, n)
	for i := range ps {
		ps[i] = pair{g.value(2), g.value(1)}
	}
	for i := range ps {
		for j := range ps {
			x, y := ps[i], ps[j]
			c := Compare(x.a, y.a)
			kx, ky := RangeKey(x.a), RangeKey(y.a)
			switch {
			case c < 0 && kx > ky, c > 0 && kx < ky, c == 0 && kx != ky:
				t.Fatalf("Compare(%s, %s) = %d but range keys %x, %x", show(x.a), show(y.a), c, kx, ky)
			}
			if c == 0 {
				c = Compare(x.b, y.b)
			}
			kx, ky = RangeKey(x.a, x.b), RangeKey(y.a, y.b)
			switch {
			case c < 0 && kx > ky, c > 0 && kx < ky, c == 0 && kx != ky:
				t.Fatalf("compound (%s, %s) vs (%s, %s): compare %d but range keys %x, %x",
					show(x.a), show(x.b), show(y.a), show(y.b), c, kx, ky)
			}
		}
		x := ps[i]
		if k, lo, hi := RangeKey(x.a, x.b), RangeKey(x.a), RangeKeyHi(x.a); k < lo || k > hi {
			t.Fatalf("RangeKey(%s, %s) = %x outside [%x, %x]", show(x.a), show(x.b), k, lo, hi)
		}
	}
}

// TestRangeBound checks that a bound at the range key of a value shows that value when its
// encoding fits the key, and that it is the smallest value at or above the bound for the
// types cut short exactly (strings, ObjectIds, dates): v >= bound exactly when
// RangeKey(v) >= the key.
func TestRangeBound(t *testing.T) {
	g := gen{randEntropy{rand.New(rand.NewPCG(7, 8))}}
	vals := make([]bsoncore.Value, 400)
	for i := range vals {
		vals[i] = g.value(1)
	}
	vals = append(vals, str("device-000123"), str("device-000124"), oid("0123456789ab0123456789ab"),
		date(1700000000123), i64(1<<40+3), i32(-5))
	for _, w := range vals {
		u := RangeKey(w)
		bound := RangeBound(u, 1)[0]
		enc := AppendKey(nil, w)
		exact := len(enc) <= rangeKeySize
		switch w.Type {
		case bsoncore.TypeString, bsoncore.TypeObjectID, bsoncore.TypeDateTime:
			exact = true
		}
		if !exact {
			continue
		}
		if len(enc) <= rangeKeySize && Compare(bound, w) != 0 {
			t.Fatalf("RangeBound(RangeKey(%s)) = %s", show(w), show(bound))
		}
		for _, v := range vals {
			if (RangeKey(v) >= u) != (Compare(v, bound) >= 0) {
				t.Fatalf("bound %s of %s: value %s has range key %x against %x", show(bound), show(w), show(v), RangeKey(v), u)
			}
		}
	}
	if got := RangeBound(0, 2); got[0].Type != bsoncore.TypeMinKey || got[1].Type != bsoncore.TypeMinKey {
		t.Fatalf("RangeBound(0, 2) = %v", got)
	}
	two := RangeBound(RangeKey(i32(7), str("a")), 2)
	if Compare(two[0], i32(7)) != 0 || Compare(two[1], str("a")) != 0 {
		t.Fatalf("compound bound = %s, %s", show(two[0]), show(two[1]))
	}
}

// TestRangeKeyFits checks RangeKeyFits' promise over random pairs: a value below one whose
// encoding fits has a range key below it, alone or followed by a second component.
func TestRangeKeyFits(t *testing.T) {
	g := gen{randEntropy{rand.New(rand.NewPCG(9, 10))}}
	vals := make([]bsoncore.Value, 500)
	for i := range vals {
		vals[i] = g.value(1)
	}
	fits := 0
	for _, hi := range vals {
		if !RangeKeyFits(hi) {
			continue
		}
		fits++
		for _, v := range vals {
			if Compare(v, hi) < 0 && (RangeKey(v) >= RangeKey(hi) || RangeKey(v, maxKey()) >= RangeKey(hi)) {
				t.Fatalf("%s < %s but range keys %x >= %x", show(v), show(hi), RangeKey(v), RangeKey(hi))
			}
		}
	}
	if fits < 50 {
		t.Fatalf("only %d of %d values fit a range key", fits, len(vals))
	}
}
