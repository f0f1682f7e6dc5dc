package store

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// testClock is a ChangeClock counting from 1.
type testClock struct{ t atomic.Uint64 }

func (c *testClock) Tick() uint64 { return c.t.Add(1) }
func (c *testClock) Now() uint64  { return c.t.Load() }
func (c *testClock) Applied()     {}

// commitChanges commits one batch carrying a document and the change records recs.
func commitChanges(t *testing.T, db *DB, recs ...string) uint64 {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	b.SetDoc(1, 0, []byte("id"), []byte{5, 0, 0, 0, 0})
	for _, r := range recs {
		b.AddChange([]byte(r))
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	return b.ChangeTime
}

// readAll returns the records after p up to the visible time, as "ts/pos:rec".
func readAll(t *testing.T, db *DB, after ChangePos) []ChangePos {
	t.Helper()
	var out []ChangePos
	if err := db.ReadChanges(after, db.ChangesVisible(), func(p ChangePos, _, _ []byte) bool {
		out = append(out, p)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestChangesStampedInOrderWithTheirBatch(t *testing.T) {
	db := openMem(t)
	if ts := commitChanges(t, db, "lost"); ts != 0 {
		t.Fatalf("a DB without a clock stamped a batch at %d", ts)
	}
	db.SetChangeClock(new(testClock))
	ts1 := commitChanges(t, db, "a", "b")
	ts2 := commitChanges(t, db, "c")
	if ts1 == 0 || ts2 <= ts1 {
		t.Fatalf("times %d, %d: want increasing, non-zero", ts1, ts2)
	}
	var got []string
	err := db.ReadChanges(ChangePos{}, db.ChangesVisible(), func(_ ChangePos, rec, _ []byte) bool {
		got = append(got, string(rec))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("records %q, want %q", got, want)
	}
	if after := readAll(t, db, ChangePos{TS: ts1, Pos: 0}); len(after) != 2 || after[0] != (ChangePos{ts1, 1}) {
		t.Fatalf("after (%d, 0): %v", ts1, after)
	}
	// A batch without records stamps nothing and is still applied.
	b := db.NewBatch()
	b.SetDoc(1, 0, []byte("x"), []byte{5, 0, 0, 0, 0})
	if err := b.Commit(true); err != nil || b.ChangeTime != 0 {
		t.Fatalf("plain batch: %v, time %d", err, b.ChangeTime)
	}
	b.Close()
}

// A reader that reads up to ChangesVisible never sees a record appear later below what it
// read: concurrent writers stamp and apply in any order.
func TestChangesVisibleIsAFrontier(t *testing.T) {
	db := openMem(t)
	db.SetChangeClock(new(testClock))
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				b := db.NewBatch()
				var rec [4]byte
				binary.BigEndian.PutUint32(rec[:], uint32(w*each+i))
				b.AddChange(rec[:])
				if err := b.Commit(i%2 == 0); err != nil {
					t.Error(err)
				}
				b.Close()
			}
		}()
	}
	seen := map[ChangePos]bool{}
	var pos ChangePos
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		upto := db.ChangesVisible()
		err := db.ReadChanges(pos, upto, func(p ChangePos, _, _ []byte) bool {
			if !pos.Less(p) || seen[p] {
				t.Errorf("record %v after position %v, or twice", p, pos)
			}
			seen[p], pos = true, p
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		pos = max2(pos, ChangePos{TS: upto, Pos: ^uint32(0)})
	}
	if len(seen) != writers*each {
		t.Fatalf("read %d records, want %d", len(seen), writers*each)
	}
}

func max2(a, b ChangePos) ChangePos {
	if a.Less(b) {
		return b
	}
	return a
}

func TestTrimChangesSurvivesReopen(t *testing.T) {
	fs := vfs.NewMem()
	db := openOn(t, fs, "db")
	db.SetChangeClock(new(testClock))
	ts1 := commitChanges(t, db, "a")
	ts2 := commitChanges(t, db, "b")
	if err := db.TrimChanges(ts2); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, db, ChangePos{}); len(got) != 1 || got[0].TS != ts2 {
		t.Fatalf("after trimming before %d: %v (first was %d)", ts2, got, ts1)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openOn(t, fs, "db")
	if got := db.ChangesTrimmed(); got != ts2 {
		t.Fatalf("trimmed %d after reopening, want %d", got, ts2)
	}
	if p, ok, err := db.OldestChange(); err != nil || !ok || p.TS != ts2 {
		t.Fatalf("oldest %v %v %v", p, ok, err)
	}
}
