package failpoint_test

import (
	"testing"
	"time"

	"github.com/cleavedb/cleave/exec/failpoint"
)

// passers starts n goroutines that pass g and returns the channel each reports on once
// through.
func passers(g *failpoint.Gate, n int) <-chan struct{} {
	through := make(chan struct{}, n)
	for range n {
		go func() {
			g.Pass()
			through <- struct{}{}
		}()
	}
	return through
}

// waitEntered waits until g was entered n times (read through Set(true), which keeps it on).
func waitEntered(t *testing.T, g *failpoint.Gate, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for g.Set(true) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the gate was entered %d times, want %d", g.Set(true), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGateOff checks that a gate that is off, never set or set off again, holds nobody and
// counts nobody.
func TestGateOff(t *testing.T) {
	var g failpoint.Gate
	through := passers(&g, 3)
	for range 3 {
		select {
		case <-through:
		case <-time.After(5 * time.Second):
			t.Fatal("a gate never set held a passer")
		}
	}
	if n := g.Set(false); n != 0 {
		t.Fatalf("passing an off gate counted %d", n)
	}
}

// TestGateHoldsAndReleases checks that a gate that is on holds every passer, counts each,
// stays on when set on again, and releases them all at Set(false); a passer after that goes
// through, and a gate set on again holds again.
func TestGateHoldsAndReleases(t *testing.T) {
	var g failpoint.Gate
	if n := g.Set(true); n != 0 {
		t.Fatalf("Set(true) of a new gate returned %d", n)
	}
	through := passers(&g, 3)
	waitEntered(t, &g, 3)
	select {
	case <-through:
		t.Fatal("a passer went through a gate that is on")
	case <-time.After(20 * time.Millisecond):
	}
	if n := g.Set(false); n != 3 {
		t.Fatalf("Set(false) returned %d, want 3", n)
	}
	for range 3 {
		select {
		case <-through:
		case <-time.After(5 * time.Second):
			t.Fatal("Set(false) did not release every passer")
		}
	}
	g.Pass() // off again: goes through, uncounted
	if n := g.Set(false); n != 3 {
		t.Fatalf("a pass while off was counted: %d", n)
	}
	g.Set(true)
	again := passers(&g, 1)
	waitEntered(t, &g, 4)
	select {
	case <-again:
		t.Fatal("a gate set on again let a passer through")
	case <-time.After(20 * time.Millisecond):
	}
	g.Set(false)
	select {
	case <-again:
	case <-time.After(5 * time.Second):
		t.Fatal("the second Set(false) did not release the passer")
	}
}
