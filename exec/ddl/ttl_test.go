package ddl_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cleavedb/cleave/exec/validate"
)

// date is the Extended JSON date d before now.
func date(d time.Duration) string {
	return fmt.Sprintf(`{"$date": {"$numberLong": "%d"}}`, time.Now().Add(-d).UnixMilli())
}

// ttlDocs are documents of every kind a TTL pass meets, by _id: 1 expired, 2 recent, 3 a
// string, 4 missing the field, 5 an array holding an expired date, 6 an array of recent
// dates, 7 an expired date that the partial filter skips, 8 a number, 9 just expired.
func ttlDocs() []string {
	return []string{
		`{"_id": 1, "t": ` + date(2*time.Hour) + `, "p": true}`,
		`{"_id": 2, "t": ` + date(0) + `, "p": true}`,
		`{"_id": 3, "t": "2000-01-01", "p": true}`,
		`{"_id": 4, "p": true}`,
		`{"_id": 5, "t": [` + date(0) + `, ` + date(3*time.Hour) + `], "p": true}`,
		`{"_id": 6, "t": [` + date(0) + `, ` + date(time.Minute) + `], "p": true}`,
		`{"_id": 7, "t": ` + date(2*time.Hour) + `, "p": false}`,
		`{"_id": 8, "t": 0, "p": true}`,
		`{"_id": 9, "t": ` + date(61*time.Minute) + `, "p": true}`,
	}
}

// TestTTLPass checks a TTL monitor pass driven through TTLPassNow: the documents whose
// date (the earliest of an array) is older than expireAfterSeconds are deleted through the
// write path, with their index entries; recent dates, other types, missing fields and
// documents outside a partial index stay; indexes a TTL does not apply to delete nothing.
func TestTTLPass(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		kept       []int32
	}{
		{"Ascending", `{"key": {"t": 1}, "name": "t_1", "expireAfterSeconds": 3600}`, []int32{2, 3, 4, 6, 8}},
		{"Descending", `{"key": {"t": -1}, "name": "t_-1", "expireAfterSeconds": 3600}`, []int32{2, 3, 4, 6, 8}},
		{"Partial", `{"key": {"t": 1}, "name": "t_1", "expireAfterSeconds": 3600, "partialFilterExpression": {"p": true}}`,
			[]int32{2, 3, 4, 6, 7, 8}},
		{"LongerTTL", `{"key": {"t": 1}, "name": "t_1", "expireAfterSeconds": 14400}`, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"CompoundIgnored", `{"key": {"t": 1, "p": 1}, "name": "t_1_p_1", "expireAfterSeconds": 60}`, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"NoTTL", `{"key": {"t": 1}, "name": "t_1"}`, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			x := spec(t, tc.spec)
			c := e.create(t, "", x)
			e.insert(t, ttlDocs()...)
			e.x.StartTTL()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if n := e.x.TTLPassNow(ctx, 0); n < 1 || ctx.Err() != nil {
				t.Fatalf("TTLPassNow: %d passes, %v", n, ctx.Err())
			}
			if got := e.ids(t, c.ID); !slices.Equal(got, tc.kept) {
				t.Errorf("documents left %v, want %v", got, tc.kept)
			}
			if got, want := e.deleted.Load(), int64(9-len(tc.kept)); got != want {
				t.Errorf("deleted counter %d, want %d", got, want)
			}
			ci, _ := e.cat.Lookup("db", "c")
			if res, err := validate.Run(ctx, e.cat, ci, validate.Options{}); err != nil || !res.Valid() {
				t.Errorf("validate after the pass: %v, %q", err, res.Errors)
			}
		})
	}
}

// TestTTLMultikeyDeletesOnce checks a document whose array holds several expired dates: it
// has an index entry per date, and is deleted once, counted once, its statistics
// decremented once.
func TestTTLMultikeyDeletesOnce(t *testing.T) {
	e := newEnv(t)
	c := e.create(t, "", spec(t, `{"key": {"t": 1}, "name": "t_1", "expireAfterSeconds": 0}`))
	e.insert(t, `{"_id": 1, "t": [`+date(time.Hour)+`, `+date(2*time.Hour)+`]}`, `{"_id": 2, "t": `+date(time.Hour)+`}`,
		`{"_id": 3, "t": "x"}`)
	e.x.StartTTL()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.x.TTLPassNow(ctx, 0)
	if got := e.ids(t, c.ID); !slices.Equal(got, []int32{3}) || e.deleted.Load() != 2 {
		t.Errorf("documents left %v, deleted counter %d; want [3] and 2", got, e.deleted.Load())
	}
	ci, _ := e.cat.Lookup("db", "c")
	if res, err := validate.Run(ctx, e.cat, ci, validate.Options{}); err != nil || !res.Valid() {
		t.Errorf("validate after the pass: %v, %q", err, res.Errors)
	}
}

// TestTTLMultikeyAcrossBatches checks multikey documents whose expired entries are far
// apart in the index, more than a delete batch apart (document 0: the oldest and the newest
// expired date), or many in one document (document 1: five): each is deleted once, in one
// batch, in ascending and descending TTL indexes.
func TestTTLMultikeyAcrossBatches(t *testing.T) {
	for _, tc := range []struct{ name, spec string }{
		{"Ascending", `{"key": {"t": 1}, "name": "t_1", "expireAfterSeconds": 60}`},
		{"Descending", `{"key": {"t": -1}, "name": "t_-1", "expireAfterSeconds": 60}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			x := spec(t, tc.spec)
			c := e.create(t, "", x)
			mid := date(2 * time.Hour)
			e.insert(t, docs(600, func(i int) string {
				switch i {
				case 0:
					return `"t": [` + date(3*time.Hour) + `, ` + date(time.Hour) + `]`
				case 1:
					return `"t": [` + date(time.Hour) + `, ` + date(2*time.Hour) + `, ` + date(3*time.Hour) + `, ` +
						date(4*time.Hour) + `, ` + date(5*time.Hour) + `]`
				case 2:
					return `"t": [` + date(0) + `, "x"]`
				}
				return `"t": ` + mid
			})...)
			e.x.StartTTL()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			e.x.TTLPassNow(ctx, 0)
			if got := e.ids(t, c.ID); !slices.Equal(got, []int32{2}) || e.deleted.Load() != 599 {
				t.Errorf("documents left %v, deleted counter %d; want [2] and 599", got, e.deleted.Load())
			}
			if n := e.entries(t, c.ID, e.coll(t).Index(x.Name).ID); n != 2 {
				t.Errorf("%d entries left in %s, want 2", n, x.Name)
			}
			ci, _ := e.cat.Lookup("db", "c")
			if res, err := validate.Run(ctx, e.cat, ci, validate.Options{}); err != nil || !res.Valid() {
				t.Errorf("validate after the pass: %v, %q", err, res.Errors)
			}
		})
	}
}

// TestTTLPassNowWithoutMonitor checks that TTLPassNow returns when its context ends, with
// no monitor to run the pass, and that a second pass of a started monitor finds nothing.
func TestTTLPassNowWithoutMonitor(t *testing.T) {
	e := newEnv(t)
	c := e.create(t, "", spec(t, `{"key": {"t": 1}, "name": "t_1", "expireAfterSeconds": 10}`))
	e.insert(t, `{"_id": 1, "t": `+date(time.Hour)+`}`)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if n := e.x.TTLPassNow(ctx, 0); n != 0 {
		t.Fatalf("%d passes without a monitor", n)
	}
	if got := e.ids(t, c.ID); len(got) != 1 {
		t.Fatalf("documents %v without a pass", got)
	}
	e.x.StartTTL()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	first := e.x.TTLPassNow(ctx2, time.Hour)
	second := e.x.TTLPassNow(ctx2, 0)
	if first < 1 || second <= first || len(e.ids(t, c.ID)) != 0 || e.deleted.Load() != 1 {
		t.Errorf("passes %d then %d, documents %v, deleted %d", first, second, e.ids(t, c.ID), e.deleted.Load())
	}
	e.x.Close()
	e.x.Close() // a second Close returns
}

// TestTTLManyDocuments checks a pass over more expired documents than one delete batch.
func TestTTLManyDocuments(t *testing.T) {
	e2 := newEnv(t)
	c2 := e2.create(t, "", spec(t, `{"key": {"t": 1}, "name": "t_1", "expireAfterSeconds": 60}`))
	old := date(time.Hour)
	e2.insert(t, docs(600, func(i int) string {
		if i%2 == 0 {
			return `"t": ` + old
		}
		return `"t": ` + date(0)
	})...)
	e2.x.StartTTL()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e2.x.TTLPassNow(ctx, 0)
	left := e2.ids(t, c2.ID)
	if len(left) != 300 || e2.deleted.Load() != 300 || e2.entries(t, c2.ID, e2.coll(t).Index("t_1").ID) != 300 {
		t.Errorf("%d documents left, %d deleted", len(left), e2.deleted.Load())
	}
	for _, id := range left {
		if id%2 == 0 {
			t.Fatalf("expired document %d is left", id)
		}
	}
}
