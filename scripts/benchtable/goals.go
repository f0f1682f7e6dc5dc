package main

import (
	"fmt"
	"slices"
	"strings"
)

// Issue 43's goals: a second shard costs at most maxShardCPU times the CPU per op of one for
// targeted reads (c) and writes (a), and a 2-shard insert at 8 threads reaches minInsertShare
// of the 1-shard docs/s with a p99 under maxInsertP99Us.
const (
	maxShardCPU    = 1.15
	minInsertShare = 0.85
	maxInsertP99Us = 100_000
)

// goals renders issue 43's ratios for each binary label, with the date of the run: workload
// a against its fair ceiling (the fake mongos whose writes are synced) and c against its own
// (the fake mongos), then two shards against one (CPU per op of c and a, insert docs/s and
// p99 at 8 threads). Ratios whose runs are missing are left out; "" when none remain.
func goals(rs *results) string {
	var paras []string
	for _, label := range rs.labels() {
		var parts []string
		if s := ceilingRatios(rs, label, key{"a", 32}, "mongos-sync", "synced fake mongos"); s != "" {
			parts = append(parts, s)
		}
		if s := ceilingRatios(rs, label, key{"c", 32}, "mongos", "fake mongos"); s != "" {
			parts = append(parts, s)
		}
		if s := shardRatios(rs, label); s != "" {
			parts = append(parts, s)
		}
		if len(parts) == 0 {
			continue
		}
		head := "Issue 43's goals"
		if label != "cleave" {
			head += " (" + label + ")"
		}
		if d := rs.date(); d != "" {
			head += ", run of " + d
		}
		paras = append(paras, head+": "+strings.Join(parts, "; ")+".")
	}
	return strings.Join(paras, "\n\n")
}

// ceilingRatios renders, for each shard setup of label, its CPU per op of row k as a multiple
// of the fake server setup's and its ops/s as a share of them.
func ceilingRatios(rs *results, label string, k key, setup, name string) string {
	ceil := rs.runs[k][column{"", setup}]
	if len(ceil) == 0 || ceil[0].Server == nil {
		return ""
	}
	cpu, ops := medianOf(ceil, cpuPerOp), medianOf(ceil, opsPerSec)
	var parts []string
	for _, s := range []string{"shards1", "shards2"} {
		rounds := rs.runs[k][column{label, s}]
		if len(rounds) == 0 || rounds[0].Server == nil || cpu == 0 || ops == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.2f× its CPU per op and %.0f%% of its ops/s",
			column{"", s}.title(), medianOf(rounds, cpuPerOp)/cpu, 100*medianOf(rounds, opsPerSec)/ops))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("`%s` at %d threads against the %s: %s", k.workload, k.threads, name, strings.Join(parts, ", "))
}

// shardRatios renders two shards against one for label: CPU per op of c and a at 32
// threads, and insert at 8 threads (docs/s, and the 2-shard p99), each with its goal.
func shardRatios(rs *results, label string) string {
	one := func(k key) []run { return rs.runs[k][column{label, "shards1"}] }
	two := func(k key) []run { return rs.runs[k][column{label, "shards2"}] }
	var parts []string
	for _, w := range []string{"c", "a"} {
		k := key{w, 32}
		if len(one(k)) == 0 || len(two(k)) == 0 || one(k)[0].Server == nil || two(k)[0].Server == nil {
			continue
		}
		if c := medianOf(one(k), cpuPerOp); c > 0 {
			parts = append(parts, fmt.Sprintf("CPU per op of `%s` %.2f×", w, medianOf(two(k), cpuPerOp)/c))
		}
	}
	if len(parts) > 0 {
		parts[len(parts)-1] += fmt.Sprintf(" (goal: at most %.2f×)", maxShardCPU)
	}
	k := key{"insert", 8}
	if len(one(k)) > 0 && len(two(k)) > 0 {
		if d := medianOf(one(k), docsPerSec); d > 0 {
			parts = append(parts, fmt.Sprintf("insert at 8 threads %.0f%% of the docs/s (goal: at least %.0f%%), p99 %s (goal: under %s)",
				100*medianOf(two(k), docsPerSec)/d, 100*minInsertShare, duration(medianOf(two(k), p99)), duration(maxInsertP99Us)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "2 shards against 1: " + strings.Join(parts, ", ")
}

// labels returns the binaries' labels in the order of their columns.
func (rs *results) labels() []string {
	var out []string
	for _, c := range rs.columns {
		if c.label != "" && !slices.Contains(out, c.label) {
			out = append(out, c.label)
		}
	}
	return out
}

// date returns the day (YYYY-MM-DD, UTC) the earliest run started, "" when no run says.
func (rs *results) date() string {
	var first string
	for _, byCol := range rs.runs {
		for _, rounds := range byCol {
			for _, r := range rounds {
				if len(r.Date) >= 10 && (first == "" || r.Date < first) {
					first = r.Date
				}
			}
		}
	}
	if first == "" {
		return ""
	}
	return first[:10]
}

// The figures of a run the goals compare.
func cpuPerOp(r run) float64   { return r.Server.CPUUsPerOp }
func opsPerSec(r run) float64  { return r.Total.OpsPerSec }
func docsPerSec(r run) float64 { return r.Total.DocsPerSec }
func p99(r run) float64        { return r.Total.P99Us }

// medianOf returns the median of f over rounds.
func medianOf(rounds []run, f func(run) float64) float64 {
	vs := make([]float64, 0, len(rounds))
	for _, r := range rounds {
		vs = append(vs, f(r))
	}
	return median(vs)
}
