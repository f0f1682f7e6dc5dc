package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchtableRender writes result files as scripts/bench.sh names them and checks the
// table: medians over rounds, the fake server's column first, insert in docs/s, agg per
// document examined, the sustained insert row, the pebble line with each column's insert rate as
// a share of it, and of the sustained pebble ingest (median of its rounds).
func TestBenchtableRender(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, ops := range []string{"100", "300", "200"} {
		r := string(rune('1' + i))
		write("cleave/shards1/c-t32-r"+r+".json", `{"workload":"c","threads":32,"total":{"ops_per_s":`+ops+`,"p99_us":1500},"server":{"cpu_us_per_op":20,"rss_max_kb":102400}}`)
	}
	write("fake/limit/c-t32-r1.json", `{"workload":"c","threads":32,"total":{"ops_per_s":1000,"p99_us":900},"server":{"cpu_us_per_op":10,"rss_max_kb":10240}}`)
	write("cleave/shards2/insert-t8-r1.json", `{"workload":"insert","threads":8,"total":{"ops_per_s":10,"docs_per_s":1000,"p99_us":2500000,"errors":{"11000":2}},"server":{"cpu_us_per_op":3000,"rss_max_kb":1024}}`)
	write("cleave/shards1/insert-t32-r1.json", `{"workload":"insert","threads":32,"total":{"ops_per_s":300,"docs_per_s":30864.2,"p99_us":1000},"server":{"cpu_us_per_op":3000,"rss_max_kb":1024}}`)
	write("cleave/shards1/sustained-t32-r1.json", `{"workload":"insert","threads":32,"total":{"ops_per_s":250,"docs_per_s":25000,"p99_us":140000},"server":{"cpu_us_per_op":2200,"rss_max_kb":2048}}`)
	write("fake/limit/insert-t32-r1.json", `{"workload":"insert","threads":32,"total":{"ops_per_s":900,"docs_per_s":90000,"p99_us":1000},"server":{"cpu_us_per_op":100,"rss_max_kb":1024}}`)
	write("cleave/shards1/agg-t8-r1.json", `{"workload":"agg","threads":8,"total":{"ops_per_s":5,"p99_us":100},"server":{"cpu_us_per_op":20000,"rss_max_kb":1024}}`)
	write("cleave/shards1/agg-t32-r1.json", `{"workload":"agg","threads":32,"total":{"ops":0},"server":{"cpu_us_per_op":0,"rss_max_kb":2048}}`)
	write("pebble-r1.json", `[{"name":"insert batch=100 nosync","records_per_s":123456.7},{"name":"get","records_per_s":1}]`)
	write("pebble-sustained-r1.json", `[{"name":"insert batch=100 nosync","records_per_s":61728.4}]`)
	write("pebble-sustained-r2.json", `[{"name":"insert batch=100 nosync","records_per_s":40000}]`)
	write("pebble-sustained-r3.json", `[{"name":"insert batch=100 nosync","records_per_s":100000}]`)
	rs, err := loadResults(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := render(rs)
	for _, want := range []string{
		"| workload, threads | fake server | 1 shard | 2 shards |",
		"| c, 32 | 1,000 ops/s, 10.0 µs CPU/op, p99 900 µs, RSS 10 MiB | 200 ops/s, 20.0 µs CPU/op, p99 1.5 ms, RSS 100 MiB, 3 runs |  |",
		"| insert, 8 |  |  | 1,000 docs/s, 3,000 µs CPU/op, p99 2.50 s, RSS 1 MiB, 2 errors |",
		"| insert, sustained, 32 |  | 25,000 docs/s, 2,200 µs CPU/op, p99 140.0 ms, RSS 2 MiB |  |",
		"| agg, 8 |  | 5 ops/s, 2.00 µs CPU/doc examined, p99 100 µs, RSS 1 MiB |  |",
		"| agg, 32 |  | no op completed in the window, RSS 2 MiB |  |",
		"batched ingest (batches of 100, no sync): 123,457 records/s. Insert at 32 threads as a share of it: fake server 73%, 1 shard 25%.",
		"as the insert does (the one above fits in a memtable): 61,728 records/s. Insert at 32 threads as a share of it: fake server 146%, 1 shard 50%.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	doc := filepath.Join(dir, "benchmarks.md")
	write("benchmarks.md", "head\n"+beginMarker+"\nold\n"+endMarker+"\ntail\n")
	if err := rewrite(doc, got); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(doc)
	if want := "head\n" + beginMarker + "\n" + got + endMarker + "\ntail\n"; string(b) != want {
		t.Errorf("benchmarks.md after rewrite:\n%s\nwant:\n%s", b, want)
	}
}

// TestBenchmarksDoc: docs/benchmarks.md, which `DOC=1 scripts/bench.sh` rewrites, holds the
// bench markers once each, in order.
func TestBenchmarksDoc(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	if strings.Count(doc, beginMarker) != 1 || strings.Count(doc, endMarker) != 1 ||
		strings.Index(doc, beginMarker) > strings.Index(doc, endMarker) {
		t.Errorf("docs/benchmarks.md: want one %s, then one %s", beginMarker, endMarker)
	}
}

// TestBenchtableGoals checks the fake mongos columns (after the plain fake server, before the
// shards) and issue 43's ratio line: a against the synced fake mongos, c against the fake
// mongos, two shards against one (CPU per op of c and a, insert docs/s and p99 at 8
// threads), medians over rounds, with the date of the earliest run.
func TestBenchtableGoals(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, workload string, threads int, opsPerS, docsPerS, p99Us, cpuUs float64, date string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"workload":%q,"threads":%d,"date":%q,"total":{"ops_per_s":%g,"docs_per_s":%g,"p99_us":%g},"server":{"cpu_us_per_op":%g,"rss_max_kb":1024}}`,
			workload, threads, date, opsPerS, docsPerS, p99Us, cpuUs)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	day := "2026-12-07T02:00:00Z"
	write("fake/limit/c-t32-r1.json", "c", 32, 60000, 60000, 900, 9, day)
	write("fake/mongos/c-t32-r1.json", "c", 32, 50000, 50000, 900, 10, day)
	write("fake/mongos-sync/a-t32-r1.json", "a", 32, 40000, 40000, 900, 20, "2026-12-06T23:59:00Z")
	write("fake/mongos-sync/insert-t8-r1.json", "insert", 8, 3000, 300000, 900, 60, day)
	for i, f := range []float64{1, 3, 2} { // medians: the middle round's figures
		r := fmt.Sprintf("-r%d.json", i+1)
		write("cleave/shards1/c-t32"+r, "c", 32, 40000*f, 40000*f, 1000, 15*f, day)
		write("cleave/shards2/c-t32"+r, "c", 32, 36000*f, 36000*f, 1000, 18*f, day)
		write("cleave/shards1/a-t32"+r, "a", 32, 20000*f, 20000*f, 1000, 40*f, day)
		write("cleave/shards2/a-t32"+r, "a", 32, 18000*f, 18000*f, 1000, 48*f, day)
		write("cleave/shards1/insert-t8"+r, "insert", 8, 1000*f, 100000*f, 30000, 1000*f, day)
		write("cleave/shards2/insert-t8"+r, "insert", 8, 600*f, 60000*f, 40000*f, 2000*f, day)
	}
	rs, err := loadResults(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := render(rs)
	for _, want := range []string{
		"| workload, threads | fake server | fake mongos | fake mongos, synced | 1 shard | 2 shards |",
		"| c, 32 | 60,000 ops/s, 9.0 µs CPU/op, p99 900 µs, RSS 1 MiB | 50,000 ops/s, 10.0 µs CPU/op, p99 900 µs, RSS 1 MiB |  | 80,000 ops/s,",
		"Issue 43's goals, run of 2026-12-06: " +
			"`a` at 32 threads against the synced fake mongos: 1 shard 4.00× its CPU per op and 100% of its ops/s, 2 shards 4.80× its CPU per op and 90% of its ops/s; " +
			"`c` at 32 threads against the fake mongos: 1 shard 3.00× its CPU per op and 160% of its ops/s, 2 shards 3.60× its CPU per op and 144% of its ops/s; " +
			"2 shards against 1: CPU per op of `c` 1.20×, CPU per op of `a` 1.20× (goal: at most 1.15×), " +
			"insert at 8 threads 60% of the docs/s (goal: at least 85%), p99 80.0 ms (goal: under 100.0 ms).",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
