package exec

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// newViewHarness returns a harness over a fresh executor with shards shards.
func newViewHarness(t *testing.T, shards int) *writeStageHarness {
	e := testExecutor(t, shards, Options{})
	return &writeStageHarness{t: t, c: e.Connect(wire.ConnInfo{ID: 1})}
}

// batch returns the first batch of a cursor reply.
func batch(reply bsoncore.Document) []bsoncore.Document {
	vals, _ := reply.Lookup("cursor", "firstBatch").Array().Values()
	out := make([]bsoncore.Document, len(vals))
	for i, v := range vals {
		out[i] = v.Document()
	}
	return out
}

// ids returns the _id of each document, printed.
func ids(docs []bsoncore.Document) string {
	var b []string
	for _, d := range docs {
		n, _ := d.Lookup("_id").AsInt64OK()
		b = append(b, fmt.Sprint(n))
	}
	return strings.Join(b, ",")
}

// seedViews fills "c" with ten documents {_id: i, g: i%2, v: i*10} and defines the views
// "odd" (g == 1, without v) and "big" (over odd, v >= 50).
func seedViews(h *writeStageHarness) {
	var docs []string
	for i := range 10 {
		docs = append(docs, fmt.Sprintf(`{"_id": %d, "g": %d, "v": %d}`, i, i%2, i*10))
	}
	h.insert("c", docs...)
	h.ok(`{"create": "odd", "viewOn": "c", "pipeline": [{"$match": {"g": 1}}, {"$project": {"g": 1, "w": "$v"}}]}`)
	h.ok(`{"create": "big", "viewOn": "odd", "pipeline": [{"$match": {"w": {"$gte": 50}}}]}`)
}

func TestViewReads(t *testing.T) {
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("Shards%d", shards), func(t *testing.T) {
			h := newViewHarness(t, shards)
			if shards == 2 {
				h.ok(`{"create": "c", "shardKey": {"_id": "hashed"}}`)
			}
			seedViews(h)
			r := h.ok(`{"find": "odd", "filter": {"w": {"$gt": 10}}, "sort": {"w": -1}, "skip": 1, "limit": 2}`)
			if got := ids(batch(r)); got != `7,5` {
				t.Errorf("find through the view: %s", got)
			}
			if ns := r.Lookup("cursor", "ns").StringValue(); ns != "test.odd" {
				t.Errorf("cursor ns %q", ns)
			}
			d := batch(r)[0]
			if _, err := d.LookupErr("v"); err == nil {
				t.Errorf("the view's $project was skipped: %v", d)
			}
			r = h.ok(`{"find": "big", "sort": {"_id": 1}, "projection": {"_id": 1}}`)
			if got := ids(batch(r)); got != `5,7,9` {
				t.Errorf("find through a view over a view: %s", got)
			}
			if n, _ := h.ok(`{"count": "odd", "query": {"w": {"$lt": 50}}}`).Lookup("n").AsInt64OK(); n != 2 {
				t.Errorf("count: %d", n)
			}
			if n, _ := h.ok(`{"count": "big"}`).Lookup("n").AsInt64OK(); n != 3 {
				t.Errorf("count of a view over a view: %d", n)
			}
			vals := h.ok(`{"distinct": "odd", "key": "w", "query": {"w": {"$gt": 30}}}`).Lookup("values").String()
			if vals != `[{"$numberInt":"50"},{"$numberInt":"70"},{"$numberInt":"90"}]` {
				t.Errorf("distinct: %s", vals)
			}
			r = h.ok(`{"aggregate": "big", "pipeline": [{"$group": {"_id": null, "s": {"$sum": "$w"}}}], "cursor": {}}`)
			if s := batch(r)[0].Lookup("s").String(); s != `{"$numberInt":"210"}` {
				t.Errorf("aggregate through a view: %s", s)
			}
			r = h.ok(`{"find": "odd", "batchSize": 2}`)
			id := r.Lookup("cursor", "id").Int64()
			r = h.ok(fmt.Sprintf(`{"getMore": {"$numberLong": "%d"}, "collection": "odd"}`, id))
			if n := len(r.Lookup("cursor", "nextBatch").Array().DebugString()); n == 0 {
				t.Errorf("getMore: %v", r)
			}
			h.ok(`{"explain": {"find": "big", "filter": {"w": 70}}}`)
			h.ok(`{"explain": {"count": "big"}}`)
		})
	}
}

func TestViewCatalog(t *testing.T) {
	h := newViewHarness(t, 1)
	seedViews(h)
	r := h.ok(`{"listCollections": 1, "filter": {"name": "odd"}}`)
	e := batch(r)
	if len(e) != 1 || e[0].Lookup("type").StringValue() != "view" ||
		e[0].Lookup("options", "viewOn").StringValue() != "c" || !e[0].Lookup("info", "readOnly").Boolean() {
		t.Fatalf("listCollections: %v", e)
	}
	h.ok(`{"create": "odd", "viewOn": "c", "pipeline": [{"$match": {"g": 1}}, {"$project": {"g": 1, "w": "$v"}}]}`)
	h.fails(`{"create": "odd", "viewOn": "c", "pipeline": []}`, mongoerr.NamespaceExists)
	h.fails(`{"create": "bad", "viewOn": "c", "pipeline": [{"$out": "x"}]}`, mongoerr.OptionNotSupportedOnView)
	h.fails(`{"create": "bad", "pipeline": []}`, mongoerr.InvalidOptions)
	h.fails(`{"create": "bad", "viewOn": "c", "validator": {}}`, mongoerr.InvalidOptions)
	r = h.fails(`{"collMod": "odd", "viewOn": "big"}`, mongoerr.GraphContainsCycle)
	if msg := r.Lookup("errmsg").StringValue(); msg != "View cycle detected: test.odd => test.odd => test.big => test.odd" {
		t.Errorf("cycle message %q", msg)
	}
	h.fails(`{"collMod": "odd", "validator": {}}`, mongoerr.InvalidOptions)
	h.fails(`{"collMod": "c", "viewOn": "x"}`, mongoerr.InvalidOptions)
	h.ok(`{"collMod": "odd", "pipeline": [{"$match": {"g": 0}}, {"$project": {"w": "$v"}}]}`)
	if n, _ := h.ok(`{"count": "big"}`).Lookup("n").AsInt64OK(); n != 2 {
		t.Errorf("count after collMod: %d", n) // 6, 8
	}
	// A chain of 20 views is the deepest MongoDB allows.
	prev := "c"
	for i := range 20 {
		name := fmt.Sprintf("d%d", i)
		h.ok(`{"create": "` + name + `", "viewOn": "` + prev + `"}`)
		prev = name
	}
	h.fails(`{"create": "d20", "viewOn": "d19"}`, mongoerr.ViewDepthLimitExceeded)
	if n, _ := h.ok(`{"count": "d19"}`).Lookup("n").AsInt64OK(); n != 10 {
		t.Errorf("count through 20 views: %d", n)
	}
	stats := h.ok(`{"dbStats": 1}`)
	if v, _ := stats.Lookup("views").AsInt64OK(); v != 22 {
		t.Errorf("dbStats views: %v", stats)
	}
	h.ok(`{"drop": "odd"}`)
	if n, _ := h.ok(`{"count": "big"}`).Lookup("n").AsInt64OK(); n != 0 {
		t.Errorf("count over a dropped view: %d", n)
	}
}

func TestViewWritesRefused(t *testing.T) {
	h := newViewHarness(t, 1)
	seedViews(h)
	for _, body := range []string{
		`{"insert": "odd", "documents": [{"a": 1}, {"a": 2}]}`,
		`{"update": "odd", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}]}`,
		`{"delete": "odd", "deletes": [{"q": {}, "limit": 0}]}`,
	} {
		r := h.ok(body)
		we, _ := r.Lookup("writeErrors").Array().Values()
		if len(we) != 1 || we[0].Document().Lookup("code").Int32() != int32(mongoerr.CommandNotSupportedOnView) {
			t.Errorf("%s: %v", body, r)
		}
		if msg := we[0].Document().Lookup("errmsg").StringValue(); msg != "Namespace test.odd is a view, not a collection" {
			t.Errorf("%s: %q", body, msg)
		}
	}
	h.fails(`{"findAndModify": "odd", "query": {}, "remove": true}`, mongoerr.CommandNotSupportedOnView)
	h.fails(`{"createIndexes": "odd", "indexes": [{"key": {"a": 1}, "name": "a_1"}]}`, mongoerr.CommandNotSupportedOnView)
	h.fails(`{"listIndexes": "odd"}`, mongoerr.CommandNotSupportedOnView)
	if n, _ := h.ok(`{"count": "c"}`).Lookup("n").AsInt64OK(); n != 10 {
		t.Errorf("the backing collection changed: %d", n)
	}
}
