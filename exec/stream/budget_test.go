package stream_test

import (
	"bytes"
	"testing"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
)

// TestBudgetReservations checks the account: grants within the limit, refusals past it,
// forced charges counted as overdrawn, the peak, and releases.
func TestBudgetReservations(t *testing.T) {
	b := stream.NewBudget(100)
	r1, r2 := b.NewReservation(), b.NewReservation()
	if !r1.Grow(60) || !r2.Grow(40) {
		t.Fatal("reservations within the limit refused")
	}
	if r2.Grow(1) {
		t.Fatal("a reservation past the limit granted")
	}
	r2.Force(10)
	if s := b.Stats(); s.Used != 110 || s.Peak != 110 || s.Refused != 1 || s.Overdrawn != 1 || s.Limit != 100 {
		t.Fatalf("stats %+v", s)
	}
	r1.Shrink(20)
	if r1.Held() != 40 || b.Stats().Used != 90 {
		t.Fatalf("after shrink: held %d, used %d", r1.Held(), b.Stats().Used)
	}
	r1.Release()
	r2.Release()
	r2.Release() // twice: nothing more
	if s := b.Stats(); s.Used != 0 || s.Peak != 110 {
		t.Fatalf("after release %+v", s)
	}
	var none *stream.Budget // no account: everything granted, nothing counted
	r := none.NewReservation()
	if !r.Grow(1<<40) || r.Held() != 0 || none.Stats() != (stream.BudgetStats{}) || stream.NewBudget(0) != nil {
		t.Fatal("a nil budget counted something")
	}
}

// TestSortSpillsForBudget checks that a blocking sort spills when the server's budget is
// spent by others, well under its own bound, with allowDiskUse; that without it the sort
// keeps its documents, charged past the budget; and that the answer is the same either way
// and the budget is whole again after Close.
func TestSortSpillsForBudget(t *testing.T) {
	b := stream.NewBudget(4 << 20)
	temp, dir := streamtest.TempBudget(t, b)
	docs := streamtest.Docs(30000) // about 3 MiB
	spec := []bsonx.SortField{{Path: "a"}, {Path: "b", Desc: true}}
	want, err := streamtest.Drain(t, &stream.Sort{In: &stream.Slice{Docs: docs}, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	other := b.NewReservation()
	other.Force(3 << 20) // another query holds most of the budget
	for _, disk := range []bool{true, false} {
		s := &stream.Sort{In: &stream.Slice{Docs: docs}, Spec: spec, AllowDiskUse: disk, Temp: temp}
		got, err := streamtest.Drain(t, s)
		if err != nil {
			t.Fatal(err)
		}
		if disk && s.Spills() == 0 || !disk && s.Spills() != 0 {
			t.Errorf("allowDiskUse %v: %d spills", disk, s.Spills())
		}
		if len(got) != len(want) {
			t.Fatalf("allowDiskUse %v: %d documents, want %d", disk, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("allowDiskUse %v: document %d is %v, want %v", disk, i, got[i], want[i])
			}
		}
		if u := b.Stats().Used; u != 3<<20 {
			t.Errorf("allowDiskUse %v: %d bytes used after Close, want the other query's %d", disk, u, 3<<20)
		}
	}
	if s := b.Stats(); s.Refused == 0 || s.Overdrawn == 0 {
		t.Errorf("stats %+v: want refusals (the spilling sort) and overdrafts (the other)", s)
	}
	other.Release()
	streamtest.CheckEmpty(t, dir)
}
