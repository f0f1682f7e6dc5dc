package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestGateCloseWaitsForWriters: closing the gate waits for the commands inside and lets no
// new one in until it opens again.
func TestGateCloseWaitsForWriters(t *testing.T) {
	var g Gate
	g.Enter()
	leave := g.Leave
	closed := make(chan func())
	go func() {
		open, err := g.closeCtx(context.Background())
		if err != nil {
			t.Error(err)
		}
		closed <- open
	}()
	entered := make(chan struct{})
	time.Sleep(20 * time.Millisecond) // the close is waiting: a new command must wait too
	go func() { g.Enter(); g.Leave(); close(entered) }()
	select {
	case <-closed:
		t.Fatal("the gate closed with a command inside")
	case <-entered:
		t.Fatal("a command entered while a close waited")
	case <-time.After(50 * time.Millisecond):
	}
	leave()
	open := <-closed
	select {
	case <-entered:
		t.Fatal("a command entered a closed gate")
	case <-time.After(20 * time.Millisecond):
	}
	open()
	<-entered
}

// TestGateCloseGivesUp: a close whose context ends first holds nothing once the command
// inside leaves.
func TestGateCloseGivesUp(t *testing.T) {
	var g Gate
	g.Enter()
	leave := g.Leave
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.closeCtx(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("closeCtx = %v, want the deadline", err)
	}
	leave()
	done := make(chan struct{})
	go func() { g.Enter(); g.Leave(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the gate stayed closed after the close gave up")
	}
}

// TestRunBacksUpEveryShard: a backup of two shards holds the catalog and every document,
// names the collections in its manifest, and restores.
func TestRunBacksUpEveryShard(t *testing.T) {
	cat := fixture.Stores(t, 2)
	ci := fixture.Create(t, cat, store.Collection{DB: "db", Name: "c"})
	for s, sh := range cat.Shards() {
		db, _ := catalog.LocalDB(sh)
		b := db.NewBatch()
		for i := range 10 * (s + 1) {
			b.SetDoc(ci.Meta.ID, uint64(s), []byte{byte(i)}, []byte{byte(s), byte(i)})
		}
		if err := b.Commit(true); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	var g Gate
	var now uint64 = 41
	opts := Options{Cat: cat, Gate: &g, Tick: func() uint64 { now++; return now }, ServerVersion: "v", Log: zap.NewNop()}
	opts.Dir = filepath.Join(t.TempDir(), "b")
	res, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.ClusterTime != 42 || res.Manifest.ClusterTime != 42 || len(res.Manifest.Shards) != 2 {
		t.Fatalf("result = %+v", res)
	}
	var found bool
	for _, c := range res.Manifest.Collections {
		if c.NS == "db.c" {
			found = c.Count == 30
		}
	}
	if !found {
		t.Fatalf("collections = %+v, want db.c with 30 documents", res.Manifest.Collections)
	}
	if _, err := store.Restore(store.RestoreOptions{From: opts.Dir, To: t.TempDir(), ServerVersion: "v"}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		dir  string
		code mongoerr.Code
	}{
		{"NotEmpty", opts.Dir, mongoerr.IllegalOperation},
		{"Relative", "relative/dir", mongoerr.BadValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			o.Dir = tc.dir
			_, err := Run(context.Background(), o)
			if e := mongoerr.As(err); e == nil || e.Code != tc.code {
				t.Fatalf("Run = %v, want %s", err, tc.code)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, store.ManifestName)); err != nil {
		t.Fatalf("a refused backup touched the earlier one: %v", err)
	}
}

// TestRunRetriesWhileWritesDrain: a write that stays inside the gate longer than the drain
// timeout makes the backup let the writes go and try again, rather than stop them all for as
// long; the backup's cluster time comes after the write left.
func TestRunRetriesWhileWritesDrain(t *testing.T) {
	cat := fixture.Stores(t, 1)
	var g Gate
	var mu sync.Mutex
	var now uint64
	tick := func() uint64 { mu.Lock(); defer mu.Unlock(); now++; return now }
	g.Enter()
	leave := g.Leave
	var left uint64
	go func() {
		time.Sleep(300 * time.Millisecond)
		left = tick()
		leave()
	}()
	res, err := Run(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "b"), Cat: cat, Gate: &g, Tick: tick,
		Log: zap.NewNop(), DrainTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.ClusterTime <= left {
		t.Fatalf("cluster time %d, before the write left at %d", res.ClusterTime, left)
	}
}
