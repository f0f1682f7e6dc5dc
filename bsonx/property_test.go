package bsonx

import (
	"bytes"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// keyed is a value with its keys and hash, computed once.
type keyed struct {
	v         bsoncore.Value
	asc, desc []byte
	hash      uint64
}

// newKeyed computes the keys and hash of v.
func newKeyed(v bsoncore.Value) keyed {
	return keyed{v: v, asc: AppendKey(nil, v), desc: AppendKeyDesc(nil, v), hash: Hash(v)}
}

// checkPair checks the invariants of doc.go on one pair of values.
func checkPair(t *testing.T, a, b keyed) {
	t.Helper()
	c := Compare(a.v, b.v)
	if c != -Compare(b.v, a.v) {
		t.Fatalf("Compare is not antisymmetric on %s, %s", show(a.v), show(b.v))
	}
	if got := sign(bytes.Compare(a.asc, b.asc)); got != c {
		t.Fatalf("Compare(%s, %s) = %d but ascending keys compare %d\n%x\n%x",
			show(a.v), show(b.v), c, got, a.asc, b.asc)
	}
	if got := sign(bytes.Compare(a.desc, b.desc)); got != -c {
		t.Fatalf("Compare(%s, %s) = %d but descending keys compare %d", show(a.v), show(b.v), c, got)
	}
	if Equal(a.v, b.v) != (c == 0) {
		t.Fatalf("Equal(%s, %s) = %v but Compare = %d", show(a.v), show(b.v), Equal(a.v, b.v), c)
	}
	if c == 0 && a.hash != b.hash {
		t.Fatalf("equal values %s, %s hash differently", show(a.v), show(b.v))
	}
}

// TestPropertyRandomValues checks, over random values of every type and nesting, that the key
// order is Compare's order (both directions), that equal values hash equal, that numbers
// compare as their exact values, and that keys decode back.
func TestPropertyRandomValues(t *testing.T) {
	n := 1200
	if testing.Short() || raceEnabled {
		n = 300
	}
	g := gen{randEntropy{rand.New(rand.NewPCG(1, 2))}}
	vals := make([]bsoncore.Value, n)
	ks := make([]keyed, n)
	for i := range vals {
		vals[i] = g.value(3)
		ks[i] = newKeyed(vals[i])
		checkRoundTrip(t, vals[i])
	}
	for i := range ks {
		for j := i; j < len(ks); j++ {
			checkPair(t, ks[i], ks[j])
		}
	}

	// Sorting by Compare and by key gives the same order (Compare is a total order).
	byCompare := slices.Clone(vals)
	slices.SortStableFunc(byCompare, Compare)
	for i := 1; i < len(byCompare); i++ {
		if Compare(byCompare[i-1], byCompare[i]) > 0 {
			t.Fatalf("sort by Compare is not ordered at %d", i)
		}
	}
}

// TestPropertyNumbers checks many more pairs of numbers against the big.Rat oracle.
func TestPropertyNumbers(t *testing.T) {
	n := 3000
	if testing.Short() || raceEnabled {
		n = 600
	}
	g := gen{randEntropy{rand.New(rand.NewPCG(3, 4))}}
	vals := make([]bsoncore.Value, n)
	for i := range vals {
		vals[i] = g.number()
		checkRoundTrip(t, vals[i])
	}
	keys := make([][]byte, n)
	for i, v := range vals {
		keys[i] = AppendKey(nil, v)
	}
	type exact struct {
		r     *big.Rat
		class int
	}
	exacts := make([]exact, n)
	for i, v := range vals {
		exacts[i].r, exacts[i].class = exactRat(v)
	}
	for i := range vals {
		for j := i; j < len(vals); j++ {
			want := cmpExact(exacts[i].r, exacts[i].class, exacts[j].r, exacts[j].class)
			if got := Compare(vals[i], vals[j]); got != want {
				t.Fatalf("Compare(%s, %s) = %d, want %d", show(vals[i]), show(vals[j]), got, want)
			}
			if got := sign(bytes.Compare(keys[i], keys[j])); got != want {
				t.Fatalf("keys of %s, %s compare %d, want %d\n%x\n%x",
					show(vals[i]), show(vals[j]), got, want, keys[i], keys[j])
			}
		}
	}
}
