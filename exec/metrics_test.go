package exec

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
)

// gather collects e's metrics through a pedantic registry (which checks that Collect matches
// Describe) and returns them by family name.
func gather(t *testing.T, e *Executor) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.Metrics())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// matching returns the metrics of family name whose labels include want.
func matching(fams map[string]*dto.MetricFamily, name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range fams[name].GetMetric() {
		n := 0
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				n++
			}
		}
		if n == len(want) {
			out = append(out, m)
		}
	}
	return out
}

// sum adds up the gauge or counter values of the metrics of family name matching want.
func sum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var s float64
	for _, m := range matching(fams, name, want) {
		s += m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	return s
}

// commandCount is how many times command was observed in the duration histogram.
func commandCount(fams map[string]*dto.MetricFamily, command string) uint64 {
	var n uint64
	for _, m := range matching(fams, "cleave_command_duration_seconds", map[string]string{"command": command}) {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}

// TestMetricsPartitionStats shards a collection into 4 partitions over 2 shards, inserts
// documents into it and into an unsharded one: each partition has its series, the document
// gauges sum to what was inserted and the sharded partitions were charged request units.
func TestMetricsPartitionStats(t *testing.T) {
	e := twoShardExecutor(t, 0)
	c := e.Connect(wire.ConnInfo{ID: 1})
	shardBench(t, c, "deviceId", 4)
	const n = 1500
	loadDocs(t, c, n)
	run(t, c, streamtest.ExtDoc(t, `{"insert": "u", "documents": [{"a": 1}, {"a": 2}, {"a": 3}], "$db": "bench"}`))

	fams := gather(t, e)
	sharded := map[string]string{"db": "bench", "collection": "c"}
	parts := matching(fams, "cleave_partition_documents", sharded)
	if len(parts) != 4 {
		t.Fatalf("bench.c: %d partition series, want 4", len(parts))
	}
	shards := map[string]bool{}
	for _, p := range parts {
		for _, l := range p.GetLabel() {
			if l.GetName() == "shard" {
				shards[l.GetValue()] = true
			}
		}
	}
	if len(shards) != 2 {
		t.Errorf("bench.c's partitions are on shards %v, want both", shards)
	}
	if got := sum(fams, "cleave_partition_documents", sharded); got != n {
		t.Errorf("bench.c documents: %g, want %d", got, n)
	}
	if got := sum(fams, "cleave_partition_storage_bytes", sharded); got < n*900 {
		t.Errorf("bench.c bytes: %g, want at least %d", got, n*900)
	}
	if got := sum(fams, "cleave_partition_request_units_total", sharded); got <= 0 {
		t.Errorf("bench.c request units: %g, want some", got)
	}
	if got := len(matching(fams, "cleave_partition_throttled_requests_total", sharded)); got != 4 {
		t.Errorf("bench.c: %d throttled series, want 4", got)
	}
	unsharded := map[string]string{"db": "bench", "collection": "u"}
	if got := len(matching(fams, "cleave_partition_documents", unsharded)); got != 1 {
		t.Errorf("bench.u: %d partition series, want 1", got)
	}
	if got := sum(fams, "cleave_partition_documents", unsharded); got != 3 {
		t.Errorf("bench.u documents: %g, want 3", got)
	}
	if got := sum(fams, "cleave_partition_provisioned_request_units_per_second", sharded); got != 0 {
		t.Errorf("bench.c provisioned: %g, want 0 (none provisioned)", got)
	}
}

// TestMetricsSplitsTotal splits a partition: the counter and the partition series follow,
// and the documents are still all counted.
func TestMetricsSplitsTotal(t *testing.T) {
	e := twoShardExecutor(t, 0)
	c := e.Connect(wire.ConnInfo{ID: 1})
	shardBench(t, c, "deviceId", 2)
	loadDocs(t, c, 200)
	before := gather(t, e)
	if !splitLargest(t, e) {
		t.Fatal("nothing to split")
	}
	after := gather(t, e)
	coll := map[string]string{"db": "bench", "collection": "c"}
	if got := sum(after, "cleave_splits_total", nil) - sum(before, "cleave_splits_total", nil); got != 1 {
		t.Errorf("cleave_splits_total grew by %g, want 1", got)
	}
	if got := len(matching(after, "cleave_partition_documents", coll)); got != 3 {
		t.Errorf("%d partition series after the split, want 3", got)
	}
	if got := sum(after, "cleave_partition_documents", coll); got != 200 {
		t.Errorf("documents after the split: %g, want 200", got)
	}
	for _, name := range []string{"cleave_moves_total", "cleave_hot_key_reports_total"} {
		if _, ok := after[name]; !ok {
			t.Errorf("%s missing", name)
		}
	}
}

// TestMetricsProvisionedThroughput creates a collection with Cosmos DB's offerThroughput:
// its partitions' shares add up to it.
func TestMetricsProvisionedThroughput(t *testing.T) {
	e := twoShardExecutor(t, 0)
	c := e.Connect(wire.ConnInfo{ID: 1})
	run(t, c, streamtest.ExtDoc(t, `{"customAction": "CreateCollection", "collection": "p", "shardKey": "k",
		"offerThroughput": 25000, "$db": "cosmos"}`))
	fams := gather(t, e)
	coll := map[string]string{"db": "cosmos", "collection": "p"}
	if got := sum(fams, "cleave_partition_provisioned_request_units_per_second", coll); got != 25000 {
		t.Errorf("provisioned RU/s over the partitions: %g, want 25000", got)
	}
	if got := len(matching(fams, "cleave_partition_provisioned_request_units_per_second", coll)); got < 3 {
		t.Errorf("%d partitions for 25000 RU/s at 10000 per partition, want at least 3", got)
	}
}

// TestMetricsCommandDuration runs commands: the histogram counts them under their names,
// unknown names under "unknown", and failures by codeName.
func TestMetricsCommandDuration(t *testing.T) {
	e := twoShardExecutor(t, 0)
	c := e.Connect(wire.ConnInfo{ID: 1})
	for range 3 {
		run(t, c, streamtest.ExtDoc(t, `{"insert": "c", "documents": [{"a": 1}], "$db": "m"}`))
	}
	run(t, c, streamtest.ExtDoc(t, `{"find": "c", "$db": "m"}`))
	for _, body := range []string{`{"noSuchCommand": 1, "$db": "m"}`, `{"find": 5, "$db": "m"}`} {
		reply, err := c.Handle(t.Context(), &wire.Request{Body: streamtest.ExtDoc(t, body)})
		if err != nil || reply.Lookup("ok").Double() != 0 {
			t.Fatalf("%s: %v %v, want {ok: 0}", body, reply, err)
		}
	}
	fams := gather(t, e)
	for cmd, want := range map[string]uint64{"insert": 3, "find": 2, "unknown": 1, "noSuchCommand": 0, "update": 0} {
		if got := commandCount(fams, cmd); got != want {
			t.Errorf("%s: observed %d times, want %d", cmd, got, want)
		}
	}
	for _, tc := range []struct{ cmd, code string }{{"unknown", "CommandNotFound"}, {"find", "InvalidNamespace"}} {
		if got := sum(fams, "cleave_command_errors_total", map[string]string{"command": tc.cmd, "code_name": tc.code}); got != 1 {
			t.Errorf("errors of %s with %s: %g, want 1", tc.cmd, tc.code, got)
		}
	}
	if got := sum(fams, "cleave_command_errors_total", map[string]string{"command": "insert"}); got != 0 {
		t.Errorf("insert errors: %g, want 0", got)
	}
}

// TestMetricsConnections reports the wire server's connection counters.
func TestMetricsConnections(t *testing.T) {
	e := testExecutor(t, 1, Options{WireStats: func() wire.Stats {
		return wire.Stats{ConnectionsCurrent: 3, ConnectionsTotalCreated: 17}
	}})
	fams := gather(t, e)
	if got := sum(fams, "cleave_connections", nil); got != 3 {
		t.Errorf("cleave_connections: %g, want 3", got)
	}
	if got := sum(fams, "cleave_connections_total", nil); got != 17 {
		t.Errorf("cleave_connections_total: %g, want 17", got)
	}
}

// TestMetricsLint runs promlint over every metric of a server holding data.
func TestMetricsLint(t *testing.T) {
	e := twoShardExecutor(t, 0)
	c := e.Connect(wire.ConnInfo{ID: 1})
	shardBench(t, c, "deviceId", 2)
	loadDocs(t, c, 10)
	_, _ = c.Handle(t.Context(), &wire.Request{Body: streamtest.ExtDoc(t, `{"nope": 1, "$db": "m"}`)})
	problems, err := testutil.CollectAndLint(e.Metrics())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestMetricsObserveAllocs checks that recording a command allocates nothing once its
// histogram child exists (finish runs it for every command).
func TestMetricsObserveAllocs(t *testing.T) {
	m := benchExecutor(t).Metrics()
	m.Observe("find", time.Millisecond, nil)
	if n := testing.AllocsPerRun(100, func() { m.Observe("find", time.Millisecond, nil) }); n != 0 {
		t.Errorf("observe allocates %g times per command, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { m.Observe("bogus", time.Millisecond, nil) }); n != 0 {
		t.Errorf("observe of an unknown name allocates %g times, want 0", n)
	}
}

// BenchmarkMetricsObserve measures what finish adds to every command.
func BenchmarkMetricsObserve(b *testing.B) {
	m := benchExecutor(b).Metrics()
	b.ReportAllocs()
	for b.Loop() {
		m.Observe("find", time.Millisecond, nil)
	}
}

// TestMetricsScrapeDuringWrites scrapes while a connection inserts and the partitions split
// (run it with -race): every scrape succeeds, and the last one counts every document.
func TestMetricsScrapeDuringWrites(t *testing.T) {
	e := twoShardExecutor(t, 0)
	c := e.Connect(wire.ConnInfo{ID: 1})
	shardBench(t, c, "deviceId", 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 5 {
			reply, err := c.Handle(t.Context(), &wire.Request{Body: streamtest.ExtDoc(t,
				`{"insert": "c", "documents": [{"deviceId": "a"}, {"deviceId": "b"}, {"deviceId": "c"}], "$db": "bench"}`)})
			if err != nil || reply.Lookup("ok").Double() != 1 {
				t.Errorf("insert %d: %v %v", i, reply, err)
			}
		}
	}()
	for range 5 {
		gather(t, e)
		splitLargest(t, e)
		gather(t, e)
	}
	<-done
	fams := gather(t, e)
	if got := sum(fams, "cleave_partition_documents", map[string]string{"db": "bench", "collection": "c"}); got != 15 {
		t.Errorf("documents: %g, want 15", got)
	}
}

// TestMetricsStore: each shard of the node exports its storage engine's metrics, labelled
// by shard: what is written shows in its memtable and live files and its WAL's fsyncs, and
// reads of documents flushed to sstables count in the block cache.
func TestMetricsStore(t *testing.T) {
	e := twoShardExecutor(t, 0)
	c := e.Connect(wire.ConnInfo{ID: 1})
	shardBench(t, c, "deviceId", 2)
	loadDocs(t, c, 200)
	fams := gather(t, e)
	for _, shard := range []string{"shard-0", "shard-1"} {
		on := map[string]string{"shard": shard}
		if got := sum(fams, "cleave_store_memtable_bytes", on); got <= 0 {
			t.Errorf("%s: cleave_store_memtable_bytes = %g after 200 inserts", shard, got)
		}
		if got := sum(fams, "cleave_store_disk_bytes", on); got <= 0 {
			t.Errorf("%s: cleave_store_disk_bytes = %g after 200 inserts", shard, got)
		}
		// The inserts were synced (the default write concern): each shard's WAL synced.
		if h := matching(fams, "cleave_store_wal_fsync_seconds", on); len(h) != 1 ||
			h[0].GetHistogram().GetSampleCount() == 0 || h[0].GetHistogram().GetSampleSum() <= 0 {
			t.Errorf("%s: cleave_store_wal_fsync_seconds = %v after 200 synced inserts", shard, h)
		}
		for _, name := range []string{"cleave_store_read_amplification", "cleave_store_flushes_total",
			"cleave_store_compactions_total", "cleave_store_block_cache_hits_total", "cleave_store_write_stalls_total"} {
			if len(matching(fams, name, on)) != 1 {
				t.Errorf("%s: no %s", shard, name)
			}
		}
	}
	// compact flushes each shard's memtable, then compacts the collection's key ranges.
	if reply := handleJSONOn(context.Background(), t, c, "bench", `{"compact": "c"}`); reply.Lookup("ok").Double() != 1 {
		t.Fatalf("compact: %v", reply)
	}
	for _, body := range findByIDBodies()[:50] {
		if _, err := c.Handle(context.Background(), &wire.Request{Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	after := gather(t, e)
	if got := sum(after, "cleave_store_flushes_total", nil); got < 2 {
		t.Errorf("cleave_store_flushes_total = %g after a flush of each shard", got)
	}
	if got := sum(after, "cleave_store_sstable_bytes", nil); got <= 0 {
		t.Errorf("cleave_store_sstable_bytes = %g after the flushes", got)
	}
	if got := sum(after, "cleave_store_block_cache_hits_total", nil) + sum(after, "cleave_store_block_cache_misses_total", nil); got <= 0 {
		t.Errorf("no block cache access counted after 50 reads of flushed documents")
	}
}
