package main

import (
	"fmt"
	"slices"
	"strings"
)

// rows is the table, in its order.
var rows = []key{
	{"ping", 32}, {"c", 32}, {"a", 32}, {"insert", 8}, {"insert", 32}, {"sustained", 32},
	{"agg", 8}, {"agg", 32}, {"sortx", 8}, {"sortx", 32},
}

// rowNames are the first cells of rows whose result files are not named after their workload:
// "sustained" is the insert workload run for longer (scripts/bench.sh's SUSTAINED).
var rowNames = map[string]string{"sustained": "insert, sustained"}

// aggSpan is the number of readings one agg op's $match selects (mbench's aggSpan), so that
// its CPU per op converts to CPU per document examined.
const aggSpan = 10_000

// render returns the Markdown table of rs.
func render(rs *results) string {
	var b strings.Builder
	b.WriteString("| workload, threads |")
	for _, c := range rs.columns {
		fmt.Fprintf(&b, " %s |", c.title())
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(rs.columns)) + "\n")
	for _, k := range rows {
		if rs.runs[k] == nil {
			continue
		}
		name := k.workload
		if n, ok := rowNames[name]; ok {
			name = n
		}
		fmt.Fprintf(&b, "| %s, %d |", name, k.threads)
		for _, c := range rs.columns {
			fmt.Fprintf(&b, " %s |", cell(k, rs.runs[k][c]))
		}
		b.WriteString("\n")
	}
	if len(rs.pebble) > 0 {
		ingest := median(rs.pebble)
		fmt.Fprintf(&b, "\n`mbench pebble` batched ingest (batches of 100, no sync): %s records/s.", thousands(ingest))
		b.WriteString(insertShares(rs, ingest))
		if len(rs.pebbleSustained) > 0 {
			sustained := median(rs.pebbleSustained)
			fmt.Fprintf(&b, " The same ingest of as many records as an insert run writes, which flushes and "+
				"compacts as the insert does (the one above fits in a memtable): %s records/s.", thousands(sustained))
			b.WriteString(insertShares(rs, sustained))
		}
		b.WriteString("\n")
	}
	if g := goals(rs); g != "" {
		b.WriteString("\n" + g + "\n")
	}
	return b.String()
}

// insertShares renders the insert rate at 32 threads of each column as a share of Pebble's
// ingest (issue 13's goal is 25%), the fake server's too: the most the driver can send.
func insertShares(rs *results, ingest float64) string {
	k := key{"insert", 32}
	var parts []string
	for _, c := range rs.columns {
		if rounds := rs.runs[k][c]; len(rounds) > 0 && ingest > 0 {
			vs := make([]float64, 0, len(rounds))
			for _, r := range rounds {
				vs = append(vs, r.Total.DocsPerSec)
			}
			parts = append(parts, fmt.Sprintf("%s %.0f%%", c.title(), 100*median(vs)/ingest))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " Insert at 32 threads as a share of it: " + strings.Join(parts, ", ") + "."
}

// title names a column.
func (c column) title() string {
	setup := map[string]string{
		"limit": "fake server", "mongos": "fake mongos", "mongos-sync": "fake mongos, synced",
		"shards1": "1 shard", "shards2": "2 shards",
	}[c.setup]
	if setup == "" {
		setup = c.setup
	}
	if c.label == "" || c.label == "cleave" {
		return setup
	}
	return c.label + ", " + setup
}

// cell renders the medians of the rounds of one workload in one column: throughput (docs/s
// for insert), server CPU per op (per document examined for agg), p99 latency and the largest
// RSS; errors, when any round had some.
func cell(k key, rounds []run) string {
	if len(rounds) == 0 {
		return ""
	}
	pick := func(f func(run) float64) float64 { return medianOf(rounds, f) }
	var parts []string
	if pick(func(r run) float64 { return r.Total.OpsPerSec }) == 0 {
		return fmt.Sprintf("no op completed in the window, RSS %.0f MiB", pick(func(r run) float64 {
			if r.Server == nil {
				return 0
			}
			return r.Server.RSSMaxKB / 1024
		}))
	}
	if k.workload == "insert" || k.workload == "sustained" {
		parts = append(parts, thousands(pick(func(r run) float64 { return r.Total.DocsPerSec }))+" docs/s")
	} else {
		parts = append(parts, thousands(pick(func(r run) float64 { return r.Total.OpsPerSec }))+" ops/s")
	}
	if rounds[0].Server != nil {
		cpu := pick(func(r run) float64 { return r.Server.CPUUsPerOp })
		switch k.workload {
		case "agg":
			parts = append(parts, fmt.Sprintf("%.2f µs CPU/doc examined", cpu/aggSpan))
		case "insert", "sustained", "sortx":
			parts = append(parts, fmt.Sprintf("%s µs CPU/op", thousands(cpu)))
		default:
			parts = append(parts, fmt.Sprintf("%.1f µs CPU/op", cpu))
		}
	}
	parts = append(parts, "p99 "+duration(pick(func(r run) float64 { return r.Total.P99Us })))
	if rounds[0].Server != nil {
		parts = append(parts, fmt.Sprintf("RSS %.0f MiB", pick(func(r run) float64 { return r.Server.RSSMaxKB / 1024 })))
	}
	var errs int64
	for _, r := range rounds {
		for _, n := range r.Total.Errors {
			errs += n
		}
	}
	if errs > 0 {
		parts = append(parts, fmt.Sprintf("%d errors", errs))
	}
	if len(rounds) > 1 {
		parts = append(parts, fmt.Sprintf("%d runs", len(rounds)))
	}
	return strings.Join(parts, ", ")
}

// median of vs (the mean of the middle two for an even count).
func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// duration renders microseconds as µs, ms or s.
func duration(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.1f ms", us/1e3)
	default:
		return fmt.Sprintf("%.0f µs", us)
	}
}

// thousands renders v rounded, with commas between groups of three digits.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
