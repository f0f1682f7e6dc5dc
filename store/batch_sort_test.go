package store

import (
	"errors"
	"testing"
)

// TestBatchKeyOrderKeepsSemantics checks that entering a batch's point writes in key order
// (batch_sort.go) changes no outcome: writes of one key keep their order, and writes before
// and after a range deletion stay on their side of it.
func TestBatchKeyOrderKeepsSemantics(t *testing.T) {
	cases := []struct {
		name  string
		write func(b *Batch)
		want  string // the document (1, 7, idN(1)) after the commit; "" for none
	}{
		{"SetThenDelete", func(b *Batch) {
			b.SetDoc(1, 7, idN(1), []byte("a"))
			b.SetDoc(1, 7, idN(9), []byte("z")) // sorts after idN(1), written between
			b.DeleteDoc(1, 7, idN(1))
		}, ""},
		{"DeleteThenSet", func(b *Batch) {
			b.DeleteDoc(1, 7, idN(1))
			b.SetDoc(1, 7, idN(0), []byte("z"))
			b.SetDoc(1, 7, idN(1), []byte("b"))
		}, "b"},
		{"LastSetWins", func(b *Batch) {
			b.SetDoc(1, 7, idN(1), []byte("a"))
			b.SetIndex(1, 2, encKey([]byte("k")), 7, idN(1))
			b.SetDoc(1, 7, idN(1), []byte("c"))
		}, "c"},
		{"SetThenDropCollection", func(b *Batch) {
			b.SetDoc(1, 7, idN(1), []byte("a"))
			_ = b.DeleteCollectionData(1) // no change records: cannot fail
		}, ""},
		{"DropCollectionThenSet", func(b *Batch) {
			_ = b.DeleteCollectionData(1) // no change records: cannot fail
			b.SetDoc(1, 7, idN(1), []byte("d"))
		}, "d"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := openMem(t)
			b := db.NewBatch()
			b.SetDoc(1, 7, idN(1), []byte("old"))
			mustCommit(t, b)
			b = db.NewBatch()
			tc.write(b)
			mustCommit(t, b)
			got, err := db.GetDoc(1, 7, idN(1), nil)
			switch {
			case tc.want == "" && !errors.Is(err, ErrNotFound):
				t.Fatalf("GetDoc = %q, %v; want ErrNotFound", got, err)
			case tc.want != "" && (err != nil || string(got) != tc.want):
				t.Fatalf("GetDoc = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestBatchLenCountPending checks that Len and Count include the buffered writes: Len is
// what the Pebble batch holds once they enter it.
func TestBatchLenCountPending(t *testing.T) {
	db := openMem(t)
	b := db.NewBatch()
	defer b.Close()
	b.SetDoc(1, 7, idN(1), make([]byte, 300))
	b.SetIndex(1, 2, encKey([]byte("k")), 7, idN(1))
	b.DeleteDoc(1, 7, idN(2))
	n, c := b.Len(), b.Count()
	if c != 3 {
		t.Fatalf("Count = %d, want 3", c)
	}
	b.flushPending()
	if b.Len() != n || b.Count() != c {
		t.Fatalf("Len, Count = %d, %d before entering the batch, %d, %d after", n, c, b.Len(), b.Count())
	}
}
