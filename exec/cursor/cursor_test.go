package cursor

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// closeCount is a stream of n small documents that counts its Close calls.
type closeCount struct {
	stream.Slice
	closed int
}

// Close implements stream.Stream.
func (s *closeCount) Close() { s.closed++ }

// newCountedCursor returns a cursor over n documents {i: k}.
func newCountedCursor(t *testing.T, n int) (*Cursor, *closeCount) {
	t.Helper()
	s := &closeCount{}
	for i := range n {
		s.Docs = append(s.Docs, streamtest.ExtDoc(t, fmt.Sprintf(`{"i": %d}`, i)))
	}
	return &Cursor{Ns: "db.c", Stream: s}, s
}

// TestCursorBatches: batches honour their size and the cursor's limit, and report the end.
func TestCursorBatches(t *testing.T) {
	ctx := context.Background()
	c, _ := newCountedCursor(t, 5)
	c.Limit = 4
	batch := func(n int64) (int, bool) {
		idx, b := bsoncore.AppendArrayStart(nil)
		b, done, err := c.FillBatch(ctx, b, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ = bsoncore.AppendArrayEnd(b, idx)
		vals, _ := bsoncore.Array(b).Values()
		return len(vals), done
	}
	if n, done := batch(3); n != 3 || done {
		t.Errorf("first batch: %d documents, done %v; want 3, false", n, done)
	}
	if n, done := batch(3); n != 1 || !done {
		t.Errorf("second batch: %d documents, done %v; want the 1 the limit leaves, done", n, done)
	}
}

// TestCursorBatchBudget: a batch ends early once the server's memory account is spent (the
// first document is charged anyway, so every batch makes progress), the rest comes in later
// batches in order, and a batch's reservation holds its documents' bytes until released.
func TestCursorBatchBudget(t *testing.T) {
	ctx := context.Background()
	c, _ := newCountedCursor(t, 10)
	doc := int64(len(c.Stream.(*closeCount).Docs[0]))
	b := stream.NewBudget(3 * doc)
	other := b.NewReservation()
	other.Force(2 * doc) // another reply holds most of the account
	mem := b.NewReservation()
	var got []int32
	for batches := 1; ; batches++ {
		idx, out := bsoncore.AppendArrayStart(nil)
		out, done, err := c.FillBatch(ctx, out, 0, mem)
		if err != nil {
			t.Fatal(err)
		}
		out, _ = bsoncore.AppendArrayEnd(out, idx)
		vals, _ := bsoncore.Array(out).Values()
		if !done && len(vals) != 1 {
			t.Fatalf("batch %d: %d documents with one document of the account left, want 1", batches, len(vals))
		}
		if mem.Held() != int64(len(vals))*doc {
			t.Fatalf("batch %d: %d bytes held for %d documents of %d", batches, mem.Held(), len(vals), doc)
		}
		for _, v := range vals {
			got = append(got, v.Document().Lookup("i").Int32())
		}
		mem.Release() // the reply is sent
		if done {
			break
		}
		if batches > 20 {
			t.Fatal("no end")
		}
	}
	for i, v := range got {
		if v != int32(i) {
			t.Fatalf("documents %v, want 0..9 in order", got)
		}
	}
	if len(got) != 10 {
		t.Fatalf("documents %v, want 0..9", got)
	}
}

// TestCursorRegistry: one getMore at a time, removal closes, idle cursors expire unless
// noCursorTimeout, and closeAll closes the rest.
func TestCursorRegistry(t *testing.T) {
	r := NewRegistry(time.Hour, nil)
	c, s := newCountedCursor(t, 1)
	id := r.Add(c)
	if _, err := r.Acquire(id); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Acquire(id); mongoerr.As(err) == nil || mongoerr.As(err).Code != mongoerr.CursorInUse {
		t.Errorf("a second acquire: %v, want CursorInUse", err)
	}
	r.Done(c, false)
	if !r.Remove(id) || s.closed != 1 {
		t.Errorf("remove: closed %d times", s.closed)
	}
	if _, err := r.Acquire(id); mongoerr.As(err) == nil || mongoerr.As(err).Code != mongoerr.CursorNotFound {
		t.Errorf("acquire after remove: %v, want CursorNotFound", err)
	}

	idle, si := newCountedCursor(t, 1)
	kept, sk := newCountedCursor(t, 1)
	kept.NoTimeout = true
	r.Add(idle)
	r.Add(kept)
	r.Expire(time.Now().Add(Timeout + time.Second))
	if si.closed != 1 || sk.closed != 0 {
		t.Errorf("expire: idle closed %d times, noCursorTimeout one %d; want 1, 0", si.closed, sk.closed)
	}
	r.CloseAll()
	if sk.closed != 1 {
		t.Errorf("closeAll left the noCursorTimeout cursor open")
	}
}

// A cursor killed while a getMore uses it (killCursors during an awaitData wait) is closed by
// that getMore's Done, not under it, and cannot be acquired again.
func TestCursorRemovedWhileInUse(t *testing.T) {
	r := NewRegistry(time.Hour, nil)
	defer r.CloseAll()
	c, s := newCountedCursor(t, 3)
	id := r.Add(c)
	got, err := r.Acquire(id)
	if err != nil || got != c {
		t.Fatalf("Acquire: %v", err)
	}
	if _, err := r.RemoveInIf(id, "db.c", func(*Cursor) error { return errors.New("refused") }); err == nil {
		t.Fatal("RemoveInIf removed a cursor its caller may not kill")
	}
	if ok, err := r.RemoveInIf(id, "db.c", func(*Cursor) error { return nil }); !ok || err != nil {
		t.Fatalf("RemoveInIf did not find the cursor: %v", err)
	}
	if s.closed != 0 {
		t.Fatal("the cursor's stream was closed under the getMore that uses it")
	}
	r.Done(c, false)
	if s.closed != 1 {
		t.Fatalf("stream closed %d times after Done, want 1", s.closed)
	}
	if _, err := r.Acquire(id); mongoerr.From(err).Code != mongoerr.CursorNotFound {
		t.Fatalf("Acquire after the kill: %v, want CursorNotFound", err)
	}
}
