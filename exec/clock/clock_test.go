package clock_test

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/clock"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// ts is the cluster time Timestamp(t, i).
func ts(t, i uint32) uint64 { return uint64(t)<<32 | uint64(i) }

// future is a cluster time well ahead of the wall clock.
var future = ts(uint32(time.Now().Unix())+3600, 7)

// TestTickIncreasesAcrossGoroutines checks that concurrent Ticks never give one time twice,
// each goroutine's increase strictly, every one is at least the wall clock's second, and
// LastWrite and Now end at the latest.
func TestTickIncreasesAcrossGoroutines(t *testing.T) {
	var c clock.Clock
	wall := ts(uint32(time.Now().Unix()), 0)
	const workers, each = 8, 500
	got := make([][]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				got[w] = append(got[w], c.Tick())
			}
		}()
	}
	wg.Wait()
	var all []uint64
	for w, seq := range got {
		for i := 1; i < len(seq); i++ {
			if seq[i] <= seq[i-1] {
				t.Fatalf("goroutine %d: tick %d = %x after %x", w, i, seq[i], seq[i-1])
			}
		}
		all = append(all, seq...)
	}
	slices.Sort(all)
	if len(slices.Compact(slices.Clone(all))) != workers*each {
		t.Fatal("two Ticks gave the same time")
	}
	if all[0] < wall {
		t.Fatalf("first tick %x is behind the wall clock %x", all[0], wall)
	}
	last := all[len(all)-1]
	if c.LastWrite() != last || c.Now() != last {
		t.Fatalf("LastWrite %x, Now %x, want the last tick %x", c.LastWrite(), c.Now(), last)
	}
}

// TestNowNeverGoesBack checks that Now of a new clock is a tick (a write's time from then
// on is after it), and that Now read while others tick and gossip never decreases.
func TestNowNeverGoesBack(t *testing.T) {
	var c clock.Clock
	first := c.Now()
	if first == 0 || c.Now() != first {
		t.Fatalf("Now of a new clock: %x, then %x", first, c.Now())
	}
	if tick := c.Tick(); tick <= first {
		t.Fatalf("Tick %x after Now %x", tick, first)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint32(0); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if w == 0 {
					c.Advance(c.Now() + uint64(i%3)) // sometimes behind, sometimes ahead
				} else {
					c.Tick()
				}
			}
		}()
	}
	prev := c.Now()
	for range 20000 {
		now := c.Now()
		if now < prev {
			close(stop)
			t.Fatalf("Now went back from %x to %x", prev, now)
		}
		prev = now
	}
	close(stop)
	wg.Wait()
}

// TestAdvance checks that Advance moves the clock forward only, that the next Tick follows
// the advanced time, and that LastWrite only follows Ticks.
func TestAdvance(t *testing.T) {
	var c clock.Clock
	w := c.Tick()
	c.Advance(future)
	if c.Now() != future {
		t.Fatalf("Now %x after Advance(%x)", c.Now(), future)
	}
	c.Advance(future - 1)
	c.Advance(ts(1, 0))
	if c.Now() != future {
		t.Fatalf("Advance to the past moved the clock to %x", c.Now())
	}
	if c.LastWrite() != w {
		t.Fatalf("Advance changed LastWrite to %x", c.LastWrite())
	}
	if tick := c.Tick(); tick != future+1 || c.LastWrite() != tick {
		t.Fatalf("Tick after Advance = %x, LastWrite %x; want %x", tick, c.LastWrite(), future+1)
	}
	sec, inc := c.Timestamp()
	if ts(sec, inc) != future+2 {
		t.Fatalf("Timestamp() = (%d, %d), want the next tick %x", sec, inc, future+2)
	}
}

// TestGossip checks the $clusterTime a client sends (taken when it is ahead, ignored when it
// is not a timestamp) and readConcern.afterClusterTime: satisfied up to the clock, refused
// ahead of it with InvalidOptions, and of another type with TypeMismatch.
func TestGossip(t *testing.T) {
	doc := func(s string) bsoncore.Value {
		if s == "" {
			return bsoncore.Value{}
		}
		return streamtest.ExtDoc(t, `{"v": `+s+`}`).Lookup("v")
	}
	tsJSON := func(v uint64) string {
		return fmt.Sprintf(`{"$timestamp": {"t": %d, "i": %d}}`, v>>32, uint32(v))
	}
	for _, tc := range []struct {
		name, clusterTime, readConcern string
		wantNow                        uint64 // 0: the clock as it was
		code                           mongoerr.Code
		msg                            string
	}{
		{"Nothing", "", "", 0, 0, ""},
		{"ClusterTimeAhead", `{"clusterTime": ` + tsJSON(future) + `}`, "", future, 0, ""},
		{"ClusterTimeBehind", `{"clusterTime": {"$timestamp": {"t": 1, "i": 1}}}`, "", 0, 0, ""},
		{"ClusterTimeNotATimestamp", `{"clusterTime": {"$date": "2030-01-01T00:00:00Z"}}`, "", 0, 0, ""},
		{"ClusterTimeNotADocument", tsJSON(future), "", 0, 0, ""},
		{"AfterPast", "", `{"afterClusterTime": {"$timestamp": {"t": 1, "i": 1}}}`, 0, 0, ""},
		{"AfterGossipedInSameCommand", `{"clusterTime": ` + tsJSON(future) + `}`, `{"afterClusterTime": ` + tsJSON(future) + `}`,
			future, 0, ""},
		{"AfterAhead", "", `{"afterClusterTime": ` + tsJSON(future) + `}`, 0, mongoerr.InvalidOptions,
			fmt.Sprintf("readConcern afterClusterTime value must not be greater than the current clusterTime. "+
				"Requested clusterTime: { ts: Timestamp(%d, 7) }; current clusterTime: { ts: Timestamp(", future>>32)},
		{"AfterNotATimestamp", "", `{"afterClusterTime": 5}`, 0, mongoerr.TypeMismatch,
			"BSON field 'readConcern.afterClusterTime' is the wrong type 'int', expected type 'timestamp'"},
		{"AfterString", "", `{"level": "local", "afterClusterTime": "x"}`, 0, mongoerr.TypeMismatch,
			"BSON field 'readConcern.afterClusterTime' is the wrong type 'string', expected type 'timestamp'"},
		{"OnlyLevel", "", `{"level": "majority"}`, 0, 0, ""},
		{"AfterNow", "", "now", 0, 0, ""},
		{"AfterOneAhead", "", "next", 0, mongoerr.InvalidOptions,
			"readConcern afterClusterTime value must not be greater than the current clusterTime."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c clock.Clock
			before := c.Tick()
			rc := tc.readConcern
			switch rc { // relative to the clock
			case "now":
				rc = `{"afterClusterTime": ` + tsJSON(before) + `}`
			case "next":
				rc = `{"afterClusterTime": ` + tsJSON(before+1) + `}`
			}
			err := c.Gossip(doc(tc.clusterTime), doc(rc))
			want := tc.wantNow
			if want == 0 {
				want = before
			}
			if c.Now() != want {
				t.Fatalf("Now %x after Gossip, want %x", c.Now(), want)
			}
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("Gossip: %v", err)
				}
				return
			}
			me := mongoerr.As(err)
			if me == nil || me.Code != tc.code || len(me.Message) < len(tc.msg) || me.Message[:len(tc.msg)] != tc.msg {
				t.Fatalf("Gossip = %v, want %s %q...", err, tc.code, tc.msg)
			}
		})
	}
}

// TestAppendClusterTime checks the fields a reply carries: $clusterTime with the time and a
// zero signature, as an unsigned mongod sends it, then operationTime.
func TestAppendClusterTime(t *testing.T) {
	at := ts(1700000000, 42)
	idx, out := bsoncore.AppendDocumentStart(nil)
	out = bsoncore.AppendInt32Element(out, "ok", 1)
	out = clock.AppendClusterTime(out, at)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	want := streamtest.ExtDoc(t, `{"ok": 1, "$clusterTime": {
		"clusterTime": {"$timestamp": {"t": 1700000000, "i": 42}},
		"signature": {"hash": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", "subType": "00"}}, "keyId": {"$numberLong": "0"}}},
		"operationTime": {"$timestamp": {"t": 1700000000, "i": 42}}}`)
	if !bytes.Equal(out, want) {
		t.Fatalf("reply %v\nwant  %v", bsoncore.Document(out), want)
	}
}

// TestFillEmptyTimestamps checks that each top-level Timestamp(0, 0) but _id's gets its own
// new tick, in field order, while _id, nested fields and other timestamps are kept, and that
// a document without one is returned as it is.
func TestFillEmptyTimestamps(t *testing.T) {
	var c clock.Clock
	c.Advance(future)
	doc := streamtest.ExtDoc(t, `{"_id": {"$timestamp": {"t": 0, "i": 0}}, "a": {"$timestamp": {"t": 0, "i": 0}},
		"n": {"x": {"$timestamp": {"t": 0, "i": 0}}}, "arr": [{"$timestamp": {"t": 0, "i": 0}}],
		"one": {"$timestamp": {"t": 0, "i": 1}}, "sec": {"$timestamp": {"t": 1, "i": 0}},
		"b": {"$timestamp": {"t": 0, "i": 0}}, "s": "x"}`)
	orig := bytes.Clone(doc)
	got := c.FillEmptyTimestamps(doc)
	want := streamtest.ExtDoc(t, fmt.Sprintf(`{"_id": {"$timestamp": {"t": 0, "i": 0}}, "a": {"$timestamp": {"t": %d, "i": 8}},
		"n": {"x": {"$timestamp": {"t": 0, "i": 0}}}, "arr": [{"$timestamp": {"t": 0, "i": 0}}],
		"one": {"$timestamp": {"t": 0, "i": 1}}, "sec": {"$timestamp": {"t": 1, "i": 0}},
		"b": {"$timestamp": {"t": %d, "i": 9}}, "s": "x"}`, future>>32, future>>32))
	if !bytes.Equal(got, want) {
		t.Fatalf("filled %v\nwant   %v", bsoncore.Document(got), want)
	}
	if !bytes.Equal(doc, orig) {
		t.Fatal("FillEmptyTimestamps changed its argument")
	}
	if c.LastWrite() != future+2 {
		t.Fatalf("LastWrite %x, want the second tick %x", c.LastWrite(), future+2)
	}
	for _, s := range []string{
		`{"_id": {"$timestamp": {"t": 0, "i": 0}}, "n": {"x": {"$timestamp": {"t": 0, "i": 0}}}}`,
		`{"a": {"$timestamp": {"t": 5, "i": 0}}}`,
		`{}`,
	} {
		d := streamtest.ExtDoc(t, s)
		if out := c.FillEmptyTimestamps(d); &out[0] != &d[0] || len(out) != len(d) {
			t.Errorf("%s: a document without an empty timestamp was copied", s)
		}
	}
	if c.LastWrite() != future+2 {
		t.Fatal("a document without an empty timestamp ticked the clock")
	}
}
