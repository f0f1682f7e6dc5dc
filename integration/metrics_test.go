package integration

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// scrape GETs /metrics from the server's HTTP listener and parses the text format.
func scrape(t *testing.T, s *server) map[string]*dto.MetricFamily {
	t.Helper()
	if s.httpAddr == "" {
		t.Fatal("the server has no HTTP listener")
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get("http://" + s.httpAddr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %s\n%s", resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want Prometheus' text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// metricSum adds the values (gauge, counter, untyped; a histogram's count) of the series of
// family name whose labels include want.
func metricSum(fams map[string]*dto.MetricFamily, name string, want map[string]string) (sum float64, series int) {
	for _, m := range fams[name].GetMetric() {
		n := 0
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				n++
			}
		}
		if n != len(want) {
			continue
		}
		series++
		sum += m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue() +
			float64(m.GetHistogram().GetSampleCount())
	}
	return sum, series
}

// TestMetricsEndpoint drives a two-shard server with the Go driver and reads /metrics: every
// cleave_* family is there, the partitions of a sharded collection hold the documents
// inserted and were charged request units, and the commands run were counted.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	c := srv.client(t)
	ctx := context.Background()
	db := c.Database("TestMetricsEndpoint")
	shardColl(t, c, db.Name()+".people", "region", bson.E{Key: "numInitialChunks", Value: 4})
	insertPeople(t, db.Collection("people"), 0, 500, 50, "a")
	if _, err := db.Collection("plain").InsertMany(ctx, []any{bson.D{{Key: "x", Value: 1}}, bson.D{{Key: "x", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Collection("people").CountDocuments(ctx, bson.D{{Key: "region", Value: "k7"}}); err != nil || n != 10 {
		t.Fatalf("count: %d, %v; want 10", n, err)
	}
	if err := db.Collection("people").FindOne(ctx, bson.D{{Key: "_id", Value: 42}}).Err(); err != nil {
		t.Fatal(err)
	}

	fams := scrape(t, srv)
	for _, name := range []string{
		"cleave_partition_request_units_per_second", "cleave_partition_request_units_total",
		"cleave_partition_throttled_requests_total", "cleave_partition_storage_bytes",
		"cleave_partition_documents", "cleave_partition_provisioned_request_units_per_second",
		"cleave_splits_total", "cleave_moves_total", "cleave_hot_key_reports_total",
		"cleave_connections", "cleave_connections_total",
		"cleave_command_duration_seconds", "go_goroutines", "process_resident_memory_bytes",
	} {
		if fams[name] == nil {
			t.Errorf("/metrics has no %s", name)
		}
	}
	people := map[string]string{"db": db.Name(), "collection": "people"}
	if docs, series := metricSum(fams, "cleave_partition_documents", people); docs != 500 || series != 4 {
		t.Errorf("people: %g documents in %d partitions, want 500 in 4", docs, series)
	}
	if bytes, _ := metricSum(fams, "cleave_partition_storage_bytes", people); bytes < 500*100 {
		t.Errorf("people: %g bytes, want at least 50000", bytes)
	}
	if ru, _ := metricSum(fams, "cleave_partition_request_units_total", people); ru <= 0 {
		t.Errorf("people: %g request units charged, want some", ru)
	}
	if _, series := metricSum(fams, "cleave_partition_documents", map[string]string{"shard": "shard-1"}); series == 0 {
		t.Error("no partition on shard-1")
	}
	if docs, series := metricSum(fams, "cleave_partition_documents", map[string]string{"db": db.Name(), "collection": "plain"}); docs != 2 || series != 1 {
		t.Errorf("plain: %g documents in %d partitions, want 2 in 1", docs, series)
	}
	for _, cmd := range []string{"insert", "find", "aggregate", "shardCollection"} {
		if n, _ := metricSum(fams, "cleave_command_duration_seconds", map[string]string{"command": cmd}); n < 1 {
			t.Errorf("%s: observed %g times, want at least once", cmd, n)
		}
	}
	if n, _ := metricSum(fams, "cleave_connections", nil); n < 1 {
		t.Errorf("cleave_connections %g, want at least the driver's", n)
	}
	if n, _ := metricSum(fams, "cleave_connections_total", nil); n < 1 {
		t.Errorf("cleave_connections_total %g, want at least 1", n)
	}
}

// TestMetricsEndpointOff starts a server with an empty --http-addr: it serves the wire
// protocol and opens no HTTP listener.
func TestMetricsEndpointOff(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--http-addr", "", "--http-addr-file", "")
	if srv.httpAddr != "" {
		t.Errorf("HTTP listener on %s, want none", srv.httpAddr)
	}
	if err := srv.client(t).Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsPprof reads a heap profile from /debug/pprof/ on a server started with --pprof,
// and finds no such route on one without it.
func TestMetricsPprof(t *testing.T) {
	t.Parallel()
	get := func(s *server, path string) (int, string) {
		hc := &http.Client{Timeout: 30 * time.Second}
		resp, err := hc.Get("http://" + s.httpAddr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	on := startServer(t, "--pprof")
	if code, body := get(on, "/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.Contains(body, "heap profile") {
		t.Fatalf("GET /debug/pprof/heap with --pprof: %d\n%.200s", code, body)
	}
	if code, body := get(on, "/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.Contains(body, "goroutine profile") {
		t.Fatalf("GET /debug/pprof/goroutine with --pprof: %d\n%.200s", code, body)
	}
	off := sharedServer(t)
	if code, _ := get(off, "/debug/pprof/heap?debug=1"); code != http.StatusNotFound {
		t.Fatalf("GET /debug/pprof/heap without --pprof: %d, want 404", code)
	}
}
