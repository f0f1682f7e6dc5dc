package metrics

import "github.com/prometheus/client_golang/prometheus"

// MemoryStats is the server's query memory account (exec/stream.Budget) at scrape time.
type MemoryStats struct {
	Limit, Used, Peak, Refused, Overdrawn int64
}

var (
	memoryLimitDesc = prometheus.NewDesc("cleave_query_memory_limit_bytes",
		"The query memory account's limit (--query-memory): what sort buffers, $group tables and reply batches hold at once before sorts and groups with allowDiskUse spill and batches end early.", nil, nil)
	memoryUsedDesc = prometheus.NewDesc("cleave_query_memory_bytes",
		"Bytes reserved from the query memory account now.", nil, nil)
	memoryPeakDesc = prometheus.NewDesc("cleave_query_memory_peak_bytes",
		"The most bytes reserved from the query memory account at once since the server started.", nil, nil)
	memoryRefusedDesc = prometheus.NewDesc("cleave_query_memory_refused_total",
		"Reservations the query memory account refused (a sort or group then spilled, or a batch ended early).", nil, nil)
	memoryOverdrawnDesc = prometheus.NewDesc("cleave_query_memory_overdrawn_total",
		"Reservations charged past the query memory account's limit, by holders that could neither spill nor wait (the first document of a batch, a top-k sort, a stage without allowDiskUse).", nil, nil)
)

// describeMemory sends the memory account's descriptors.
func describeMemory(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{memoryLimitDesc, memoryUsedDesc, memoryPeakDesc, memoryRefusedDesc, memoryOverdrawnDesc} {
		ch <- d
	}
}

// collectMemory sends the memory account's state.
func collectMemory(ch chan<- prometheus.Metric, s MemoryStats) {
	ch <- prometheus.MustNewConstMetric(memoryLimitDesc, prometheus.GaugeValue, float64(s.Limit))
	ch <- prometheus.MustNewConstMetric(memoryUsedDesc, prometheus.GaugeValue, float64(s.Used))
	ch <- prometheus.MustNewConstMetric(memoryPeakDesc, prometheus.GaugeValue, float64(s.Peak))
	ch <- prometheus.MustNewConstMetric(memoryRefusedDesc, prometheus.CounterValue, float64(s.Refused))
	ch <- prometheus.MustNewConstMetric(memoryOverdrawnDesc, prometheus.CounterValue, float64(s.Overdrawn))
}
