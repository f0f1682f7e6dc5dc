package sharding

import (
	"context"
	"testing"
)

// TestMoveFence: a fill waits while a move is in flight, and a move while a fill runs or
// waits; fills share the fence, as moves do.
func TestMoveFence(t *testing.T) {
	var f moveFence
	done, cancel := context.WithCancel(context.Background())
	cancel() // an ended context: enter fails where it would wait
	bg := context.Background()

	m1, err := f.enterMove(bg)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := f.enterMove(bg)
	if err != nil {
		t.Fatalf("a second move: %v", err)
	}
	if _, err := f.enterFill(done); err == nil {
		t.Fatal("a fill entered while moves were in flight")
	}
	m1()
	m2()
	f1, err := f.enterFill(bg)
	if err != nil {
		t.Fatalf("a fill once the moves ended: %v", err)
	}
	f2, err := f.enterFill(bg)
	if err != nil {
		t.Fatalf("a second fill: %v", err)
	}
	if _, err := f.enterMove(done); err == nil {
		t.Fatal("a move entered while fills ran")
	}
	f1()
	if _, err := f.enterMove(done); err == nil {
		t.Fatal("a move entered while a fill ran")
	}
	f2()
	m3, err := f.enterMove(done)
	if err != nil {
		t.Fatalf("a move once the fills ended: %v", err)
	}
	m3()
}
