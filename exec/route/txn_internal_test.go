package route

import (
	"slices"
	"testing"
	"time"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestTxnPins checks the pins of forwarded transactions: a pin answers its session's
// transaction only, a statement of a later transaction or starting one (a new one, or the
// same number again) forgets the session's pin while a late one of an earlier does not, and idle pins are forgotten when another is made.
func TestTxnPins(t *testing.T) {
	var p txnPins
	p.pin("s1", 5, 2, [32]byte{})
	if s, ok := p.lookup("s1", 5, false); !ok || s != 2 {
		t.Fatalf("the pinned transaction: %d, %v", s, ok)
	}
	if _, ok := p.lookup("s2", 5, false); ok {
		t.Fatal("another session's statement was pinned")
	}
	if _, ok := p.lookup("s1", 4, false); ok {
		t.Fatal("an earlier transaction of the session was pinned")
	}
	if s, ok := p.lookup("s1", 5, false); !ok || s != 2 {
		t.Fatal("a late statement of an earlier transaction unpinned the session's")
	}
	if _, ok := p.lookup("s1", 6, false); ok {
		t.Fatal("a later transaction of the session was pinned")
	}
	if _, ok := p.lookup("s1", 5, false); ok {
		t.Fatal("the pin outlived a statement of a later transaction")
	}
	p.pin("s1", 7, 1, [32]byte{})
	if _, ok := p.lookup("s1", 7, true); ok {
		t.Fatal("a statement starting a transaction used the session's pin")
	}
	p.pin("old", 1, 0, [32]byte{})
	p.m["old"].used = time.Now().Add(-2 * pinIdle)
	p.swept = time.Time{}
	p.pin("new", 1, 0, [32]byte{})
	if _, ok := p.m["old"]; ok {
		t.Error("an idle pin was kept")
	}
	if _, ok := p.m["new"]; !ok {
		t.Error("the new pin is missing")
	}
}

// TestTxnUnreachable checks the labels of a forwarded statement's errors when its node cannot
// be reached: a commit's result is unknown, another statement's transaction is transient;
// the node's own errors pass as they are.
func TestTxnUnreachable(t *testing.T) {
	down := func() error { return mongoerr.New(mongoerr.HostUnreachable, "node down") }
	if me := mongoerr.As(txnUnreachable(down(), "commitTransaction")); !slices.Contains(me.Labels, "UnknownTransactionCommitResult") {
		t.Errorf("commit: %v", me.Labels)
	}
	if me := mongoerr.As(txnUnreachable(down(), "insert")); !slices.Contains(me.Labels, "TransientTransactionError") {
		t.Errorf("insert: %v", me.Labels)
	}
	dup := mongoerr.New(mongoerr.DuplicateKey, "E11000")
	if me := mongoerr.As(txnUnreachable(dup, "insert")); len(me.Labels) != 0 {
		t.Errorf("the node's own error was labelled: %v", me.Labels)
	}
	if txnUnreachable(nil, "insert") != nil {
		t.Error("no error became one")
	}
}

// TestTxnPinsTakeMatching checks that a kill takes the pins it selects, by session id and
// owner, and leaves the others (and pins keyed by an lsid without a 16-byte id).
func TestTxnPinsTakeMatching(t *testing.T) {
	var p txnPins
	alice, bob := [32]byte{1}, [32]byte{2}
	id := func(b byte) [16]byte { return [16]byte{b} }
	key := func(b byte) string { k := id(b); return string(k[:]) }
	p.pin(key(1), 1, 3, alice)
	p.pin(key(2), 1, 4, bob)
	p.pin(key(3), 1, 3, alice)
	p.pin("no-id", 1, 3, alice)
	got := p.takeMatching(func(_ [16]byte, owner [32]byte) bool { return owner == alice })
	if len(got) != 1 || len(got[3]) != 2 || !slices.Contains(got[3], id(1)) || !slices.Contains(got[3], id(3)) {
		t.Fatalf("alice's pins by shard: %v", got)
	}
	if _, ok := p.m[key(2)]; !ok {
		t.Error("bob's pin was taken")
	}
	if _, ok := p.m["no-id"]; !ok {
		t.Error("a pin without an id was taken")
	}
	if got := p.takeMatching(func(i [16]byte, _ [32]byte) bool { return i == id(1) }); got != nil {
		t.Errorf("a taken pin was taken again: %v", got)
	}
}
