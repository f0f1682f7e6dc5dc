package route_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/route"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// ext parses a document in Extended JSON.
func ext(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	return streamtest.ExtDoc(t, s)
}

// env is a router over local shards, with the partition manager that counts documents.
type env struct {
	cat *catalog.Catalog
	r   *route.Router
}

// newEnv opens n local shard stores and the router over them.
func newEnv(t *testing.T, n int) *env {
	t.Helper()
	cat := fixture.Stores(t, n)
	mgr := sharding.New(cat, zap.NewNop(), sharding.Options{})
	t.Cleanup(mgr.Close)
	return &env{cat: cat, r: route.New(cat, mgr, nil)}
}

// create creates collection db.name, sharded on hashed k over partitions on the shards
// given (one partition each, in order), with index a_1, options opts ("" for none) and
// docs {_id: i, k: i, a: "..."} (about 140 bytes) for i < n.
func (e *env) create(t *testing.T, name, opts string, shards []int, n int) *catalog.Coll {
	t.Helper()
	spec := store.Collection{DB: "db", Name: name, ShardKey: ext(t, `{"k": "hashed"}`),
		Indexes: []store.Index{fixture.Index(t, "a_1", `{"a": 1}`)}}
	if opts != "" {
		spec.Options = ext(t, opts)
	}
	for i, s := range shards {
		spec.Partitions = append(spec.Partitions, store.Partition{ID: uint64(i + 1), Lo: uint64(i) * (math.MaxUint64/uint64(len(shards)) + 1), Shard: s})
	}
	ci := fixture.Create(t, e.cat, spec)
	if n > 0 {
		vals := make([]bsoncore.Value, n)
		for i := range vals {
			vals[i] = bsonx.DocValue(ext(t, fmt.Sprintf(`{"_id": %d, "k": %d, "a": "%s %d"}`, i, i, strings.Repeat("v", 100), i)))
		}
		var res write.Results
		wp := write.NewPath(e.cat, query.New(e.cat, query.Options{}), nil)
		if _, err := wp.Insert(context.Background(), ci, vals, 0, true, false, write.Concern{}, &res, nil); err != nil || len(res.Errs) > 0 {
			t.Fatalf("insert: %v %v", err, res.Errs)
		}
	}
	return e.cat.Refresh(ci)
}

// perShard counts the documents {_id: i, k: i} for i < n that ci keeps on each of shards
// shards.
func perShard(t *testing.T, ci *catalog.Coll, shards, n int) []int64 {
	t.Helper()
	out := make([]int64, shards)
	for i := range n {
		h, err := ci.ShardHash(ext(t, fmt.Sprintf(`{"k": %d}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		out[ci.Map.Partition(ci.Map.Locate(h)).Shard]++
	}
	return out
}

// TestLocalSizes checks the sizes of a collection over local shards: per shard the
// documents of the partitions it owns (nil for a shard owning none), each shard's storage at
// least its data and 4 KiB, index sizes estimated from the count, and the totals of
// collStats, dataSize and count agreeing; an empty collection takes 4 KiB per shard.
func TestLocalSizes(t *testing.T) {
	e := newEnv(t, 3)
	ci := e.create(t, "c", "", []int{0, 1, 0, 1}, 200)
	want := perShard(t, ci, 3, 200)
	if want[0] == 0 || want[1] == 0 || want[2] != 0 {
		t.Fatalf("the documents landed on shards %v", want)
	}
	per := e.r.LocalOwnedSizes(ci)
	owned, err := e.r.OwnedSizes(context.Background(), ci)
	if err != nil || len(per) != 3 || len(owned) != 3 {
		t.Fatalf("OwnedSizes: %v, %d and %d shards", err, len(per), len(owned))
	}
	var size int64
	for s, sz := range per {
		if s == 2 {
			if sz != nil || owned[s] != nil {
				t.Fatalf("a shard owning no partition measured %+v", sz)
			}
			continue
		}
		if sz.Count != want[s] || sz.Size <= 0 || sz.Storage < sz.Size || sz.Storage < 4096 {
			t.Fatalf("shard %d: %+v, want %d documents", s, sz, want[s])
		}
		if !slices.Equal(sz.Indexes, []int64{max(sz.Count*24, 4096), max(sz.Count*24, 4096)}) {
			t.Fatalf("shard %d: index sizes %v", s, sz.Indexes)
		}
		if sz.Disk() != sz.Storage+sz.Indexes[0]+sz.Indexes[1] {
			t.Fatalf("shard %d: Disk() = %d", s, sz.Disk())
		}
		if o := owned[s]; o.Count != sz.Count || o.Size != sz.Size {
			t.Fatalf("shard %d: OwnedSizes %+v, LocalOwnedSizes %+v", s, o, sz)
		}
		size += sz.Size
	}
	total, err := e.r.ClusterCollSizes(context.Background(), ci.Meta)
	if err != nil || total.Count != 200 || total.Size != size || total.Storage < size || len(total.Indexes) != 2 {
		t.Fatalf("ClusterCollSizes: %+v, %v", total, err)
	}
	if n, err := e.r.DocCount(context.Background(), ci); err != nil || n != 200 {
		t.Fatalf("DocCount = %d, %v", n, err)
	}
	empty := e.create(t, "empty", "", []int{0, 1}, 0)
	total, err = e.r.ClusterCollSizes(context.Background(), empty.Meta)
	// Each shard's smallest file, as mongos sums its shards' storageSize.
	if err != nil || total.Count != 0 || total.Size != 0 || total.Storage != 2*4096 || !slices.Equal(total.Indexes, []int64{4096, 4096}) {
		t.Fatalf("empty collection: %+v, %v", total, err)
	}
}

// TestAppendStorageFields checks collStats' storage fields: their order and types, scaling,
// avgObjSize only with documents, the indexes being built, a capped collection's bounds,
// and int64 once a size passes int32.
func TestAppendStorageFields(t *testing.T) {
	e := newEnv(t, 1)
	ci := e.create(t, "capped", `{"capped": true, "size": 1048576, "max": 1000}`, []int{0}, 10)
	sz := e.r.LocalOwnedSizes(ci)[0]
	meta := *ci.Meta
	meta.Indexes = append(slices.Clone(meta.Indexes), store.Index{Name: "b_1", Key: ext(t, `{"b": 1}`)}) // being built
	fields := func(sz *route.CollSizes, c *store.Collection, scale int64) bsoncore.Document {
		idx, d := bsoncore.AppendDocumentStart(nil)
		d = route.AppendStorageFields(d, sz, c, scale)
		d, _ = bsoncore.AppendDocumentEnd(d, idx)
		return d
	}
	got := fields(sz, &meta, 1024)
	var keys []string
	elems, _ := got.Elements()
	for _, el := range elems {
		keys = append(keys, el.Key())
	}
	wantKeys := []string{"size", "count", "avgObjSize", "numOrphanDocs", "storageSize", "freeStorageSize", "capped", "max",
		"maxSize", "nindexes", "indexBuilds", "totalIndexSize", "totalSize", "indexSizes", "scaleFactor"}
	if !slices.Equal(keys, wantKeys) {
		t.Fatalf("fields %v\nwant   %v", keys, wantKeys)
	}
	total := sz.Indexes[0] + sz.Indexes[1]
	for _, tc := range []struct {
		key  string
		want int64
	}{
		{"size", sz.Size / 1024}, {"count", 10}, {"avgObjSize", sz.Size / 10}, {"numOrphanDocs", 0},
		{"storageSize", sz.Storage / 1024}, {"max", 1000}, {"maxSize", 1024}, {"nindexes", 2},
		{"totalIndexSize", total / 1024}, {"totalSize", (sz.Storage + total) / 1024}, {"scaleFactor", 1024},
	} {
		if v := got.Lookup(tc.key); v.Type != bsoncore.TypeInt32 || int64(v.Int32()) != tc.want {
			t.Errorf("%s = %v, want int32 %d", tc.key, v, tc.want)
		}
	}
	if got.Lookup("capped").Boolean() != true || got.Lookup("indexSizes", "a_1").Int32() != int32(sz.Indexes[1]/1024) {
		t.Errorf("capped or indexSizes: %v", got)
	}
	if builds, _ := got.Lookup("indexBuilds").Array().Values(); len(builds) != 1 || builds[0].StringValue() != "b_1" {
		t.Errorf("indexBuilds %v", builds)
	}
	big := *sz
	big.Size, big.Count = 1<<40, 0
	got = fields(&big, nil, 1)
	if v := got.Lookup("size"); v.Type != bsoncore.TypeInt64 || v.Int64() != 1<<40 {
		t.Errorf("a size past int32: %v", v)
	}
	if _, err := got.LookupErr("avgObjSize"); err == nil || got.Lookup("capped").Boolean() {
		t.Errorf("no documents, no collection: %v", got)
	}
}

// TestSpansRemote checks the collections that span another node's shard (its stand-in,
// catalog.Remote): those with a partition there; their sizes here leave that shard out.
func TestSpansRemote(t *testing.T) {
	e := newEnv(t, 2)
	local := e.create(t, "local", "", []int{0, 0}, 20)
	spread := e.create(t, "spread", "", []int{0, 1}, 20)
	if e.r.SpansRemote(local) || e.r.SpansRemote(spread) {
		t.Fatal("a collection on local shards spans another node")
	}
	e.cat.SetShards([]catalog.Shard{e.cat.Shards()[0], catalog.Remote(1, "node-b")})
	if e.r.SpansRemote(local) || !e.r.SpansRemote(spread) {
		t.Fatalf("with shard 1 on another node: local %v, spread %v", e.r.SpansRemote(local), e.r.SpansRemote(spread))
	}
	per := e.r.LocalOwnedSizes(spread)
	if per[0] == nil || per[1] != nil || per[0].Count != perShard(t, spread, 2, 20)[0] {
		t.Fatalf("local sizes of a collection spanning another node: %+v, %+v", per[0], per[1])
	}
}

// TestIsStale checks which errors are StaleConfig: the code itself, wrapped, and what the
// stand-in of another node's shard answers a write routed with an old map; nothing else.
func TestIsStale(t *testing.T) {
	stale := mongoerr.New(mongoerr.StaleConfig, "routed with an older map")
	b := catalog.Remote(3, "node-c").NewBatch()
	defer b.Close()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"StaleConfig", stale, true},
		{"Wrapped", fmt.Errorf("shard 3: %w", stale), true},
		{"RemoteShardWrite", b.Commit(true), true},
		{"OtherCode", mongoerr.New(mongoerr.HostUnreachable, "down"), false},
		{"NotMongo", errors.New("StaleConfig"), false},
		{"Nil", nil, false},
	} {
		if got := route.IsStale(tc.err); got != tc.want {
			t.Errorf("%s: IsStale(%v) = %v", tc.name, tc.err, got)
		}
	}
}
