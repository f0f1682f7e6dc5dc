package exec

import (
	"context"
	"testing"

	"github.com/cleavedb/cleave/wire"
)

// TestFindByIDAllocations checks that a find by _id on a connection, as mbench's workload c
// sends it, allocates nothing once warm: its state comes back from the pool (findRun, with
// the filter it compiled), the connection keeps its cancellable context from request to
// request, and the document cache hashes the key on the stack. A garbage collection that
// empties the pools costs a few allocations, hence less than one per find on average rather
// than zero.
func TestFindByIDAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("-race: sync.Pool drops items at random")
	}
	e := benchExecutor(t)
	c := e.Connect(wire.ConnInfo{ID: 1})
	loadDocs(t, c, 10_000) // benchIDs range over 10,000
	bodies := findByIDBodies()
	req := &wire.Request{}
	i := 0
	find := func() {
		*req = wire.Request{Body: bodies[i%len(bodies)]}
		i++
		if _, err := c.Handle(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 * len(bodies) { // every document into the document cache
		find()
	}
	reply, err := c.Handle(context.Background(), &wire.Request{Body: bodies[0]})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(mustArray(t, reply.Lookup("cursor", "firstBatch"))); n != 1 {
		t.Fatalf("%d documents, want 1: %v", n, reply)
	}
	if n := testing.AllocsPerRun(1_000, find); n >= 1 {
		t.Fatalf("%.2f allocations per find by _id, want fewer than 1", n)
	}
}
