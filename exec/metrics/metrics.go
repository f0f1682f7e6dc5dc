package metrics

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/failpoint"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Metrics is the server's Prometheus collector (cmd/cleave registers it and serves
// /metrics). The command histogram and error counters are kept as commands finish; everything
// else is read from live state at scrape time: per partition its load from the meters, its
// storage from the shard's range statistics, its share of the provisioned throughput and its
// throttled requests; the partition manager's counters; the wire server's connections.
//
//	cleave_partition_request_units_per_second{db,collection,partition,shard}  gauge
//	cleave_partition_request_units_total{...}                                  counter
//	cleave_partition_throttled_requests_total{...}                             counter
//	cleave_partition_throttled_low_priority_requests_total{...} (of those)     counter
//	cleave_partition_storage_bytes{...}, cleave_partition_documents{...}       gauges
//	cleave_partition_provisioned_request_units_per_second{...}                 gauge
//	cleave_partition_burst_bank_request_units{...} (burst capacity on)        gauge
//	cleave_splits_total, cleave_moves_total, cleave_hot_key_reports_total      counters
//	cleave_connections (gauge), cleave_connections_total (counter)
//	cleave_query_memory_bytes, _limit_bytes, _peak_bytes (gauges), _refused_total,
//	_overdrawn_total (counters): the query memory account (memory.go)
//	cleave_command_duration_seconds{command}                                   histogram
//	cleave_command_errors_total{command,code_name}                             counter
//
// Command labels are the names of the command table; any other name counts as "unknown",
// so a client cannot grow the number of series.
type Metrics struct {
	src Source
	// byName holds one entry per name of the command table, built once: finish looks the
	// command up without allocating.
	byName   map[string]*commandMetrics
	unknown  *commandMetrics
	duration *prometheus.HistogramVec
	errs     *prometheus.CounterVec

	partRUPerSec, partRUTotal, partThrottled, partThrottledLow, partBytes, partDocs, partProvisioned, partBurstBank *prometheus.Desc
	splits, moves, hotKeys, conns, connsTotal, streams                                                              *prometheus.Desc
	store                                                                                                           []storeMetric // store.go
}

// commandMetrics is one command's histogram child, created on the command's first run so
// that commands never run export no series.
type commandMetrics struct {
	name string
	obs  atomic.Pointer[prometheus.Observer]
}

// commandDurationBuckets are the upper bounds of cleave_command_duration_seconds: 100 µs
// (a point read) to 10 s.
var commandDurationBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// partitionLabels are the variable labels of the per-partition metrics.
var partitionLabels = []string{"db", "collection", "partition", "shard"}

// Source is what the collector reads at scrape time.
type Source struct {
	// Commands are the names of the command table: the command labels.
	Commands []string
	// WireStats reports the wire server's connections.
	WireStats func() wire.Stats
	// Shards, Cat and Catalog are the partition manager, the catalog and its records; nil
	// without storage (the server commands only).
	Shards  *sharding.Manager
	Cat     *catalog.Catalog
	Catalog *store.Catalog
	// ChangeStreams counts the open change streams by the namespace they watch; nil: none.
	ChangeStreams func() map[string]int
	// Replicas reports this node's copies of replicated shards, and ReplicaDivergences
	// the differences between copies consistency checks found; nil: none (replicas.go).
	Replicas           func() []ReplicaStat
	ReplicaDivergences func() int64
	// QueryMemory reports the query memory account; nil: none (memory.go).
	QueryMemory func() MemoryStats
}

// New returns the collector of src.
func New(src Source) *Metrics {
	m := &Metrics{
		src:    src,
		byName: map[string]*commandMetrics{},
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cleave_command_duration_seconds",
			Help:    "Time from a command's dispatch to its reply, by command name.",
			Buckets: commandDurationBuckets,
		}, []string{"command"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cleave_command_errors_total",
			Help: "Commands that answered {ok: 0}, by command name and MongoDB codeName.",
		}, []string{"command", "code_name"}),
		partRUPerSec: partitionDesc("cleave_partition_request_units_per_second",
			"Measured load of the partition in request units per second (decayed rate)."),
		partRUTotal: partitionDesc("cleave_partition_request_units_total",
			"Request units charged to the partition since its meter was created."),
		partThrottled: partitionDesc("cleave_partition_throttled_requests_total",
			"Requests the partition refused for want of throughput budget."),
		partThrottledLow: partitionDesc("cleave_partition_throttled_low_priority_requests_total",
			"Low-priority requests the partition refused for want of throughput budget (of those throttled_requests counts)."),
		partBytes: partitionDesc("cleave_partition_storage_bytes",
			"Bytes of the partition's documents (range statistics estimate)."),
		partDocs: partitionDesc("cleave_partition_documents",
			"Documents in the partition (range statistics estimate)."),
		partProvisioned: partitionDesc("cleave_partition_provisioned_request_units_per_second",
			"The partition's share of the collection's provisioned throughput; 0 when none is provisioned."),
		partBurstBank: partitionDesc("cleave_partition_burst_bank_request_units",
			"Request units the partition has banked for bursts (burst capacity on only)."),
		splits:  prometheus.NewDesc("cleave_splits_total", "Partition splits since the server started.", nil, nil),
		moves:   prometheus.NewDesc("cleave_moves_total", "Partition moves between shards since the server started.", nil, nil),
		hotKeys: prometheus.NewDesc("cleave_hot_key_reports_total", "Single-key hot partitions reported since the server started.", nil, nil),
		conns:   prometheus.NewDesc("cleave_connections", "Open client connections.", nil, nil),
		streams: prometheus.NewDesc("cleave_change_streams", "Open change streams on this node, by the namespace they watch "+
			"(db.coll, db.$cmd.aggregate for a database, admin.$cmd.aggregate for the cluster).", []string{"ns"}, nil),
		connsTotal: prometheus.NewDesc("cleave_connections_total", "Client connections accepted since the server started.", nil, nil),
		store:      newStoreMetrics(),
	}
	for _, name := range src.Commands {
		m.byName[name] = &commandMetrics{name: name}
	}
	m.unknown = &commandMetrics{name: "unknown"}
	return m
}

// partitionDesc describes a per-partition metric.
func partitionDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, partitionLabels, nil)
}

// Observe records one finished command: its duration and, when it failed, its codeName.
func (m *Metrics) Observe(name string, d time.Duration, err error) {
	cm := m.byName[name]
	if cm == nil {
		cm = m.unknown
	}
	cm.observer(m.duration).Observe(d.Seconds())
	if err != nil && !errors.Is(err, failpoint.ErrCloseConnection) {
		m.errs.WithLabelValues(cm.name, mongoerr.From(err).Code.String()).Inc()
	}
}

// observer returns the histogram child of the command, creating it on first use; racing
// first uses get the same child from the vector.
func (cm *commandMetrics) observer(vec *prometheus.HistogramVec) prometheus.Observer {
	if o := cm.obs.Load(); o != nil {
		return *o
	}
	o := vec.WithLabelValues(cm.name)
	cm.obs.Store(&o)
	return o
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.duration.Describe(ch)
	m.errs.Describe(ch)
	for _, d := range []*prometheus.Desc{m.partRUPerSec, m.partRUTotal, m.partThrottled, m.partThrottledLow, m.partBytes,
		m.partDocs, m.partProvisioned, m.partBurstBank, m.splits, m.moves, m.hotKeys, m.conns, m.connsTotal, m.streams} {
		ch <- d
	}
	m.describeStore(ch)
	describeReplicas(ch)
	describeMemory(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.duration.Collect(ch)
	m.errs.Collect(ch)
	ws := m.src.WireStats()
	ch <- prometheus.MustNewConstMetric(m.conns, prometheus.GaugeValue, float64(ws.ConnectionsCurrent))
	ch <- prometheus.MustNewConstMetric(m.connsTotal, prometheus.CounterValue, float64(ws.ConnectionsTotalCreated))
	if m.src.ChangeStreams != nil {
		for ns, n := range m.src.ChangeStreams() {
			ch <- prometheus.MustNewConstMetric(m.streams, prometheus.GaugeValue, float64(n), ns)
		}
	}
	if m.src.Replicas != nil {
		collectReplicas(ch, m.src.Replicas())
		ch <- prometheus.MustNewConstMetric(replicaDivergedDesc, prometheus.CounterValue, float64(m.src.ReplicaDivergences()))
	}
	sh := m.src.Shards
	if sh == nil {
		return // no storage: the server commands only
	}
	ch <- prometheus.MustNewConstMetric(m.splits, prometheus.CounterValue, float64(sh.Splits()))
	ch <- prometheus.MustNewConstMetric(m.moves, prometheus.CounterValue, float64(sh.Moves()))
	ch <- prometheus.MustNewConstMetric(m.hotKeys, prometheus.CounterValue, float64(sh.HotKeyReports()))
	m.collectStore(ch)
	if m.src.QueryMemory != nil {
		collectMemory(ch, m.src.QueryMemory())
	}
	st := m.src.Catalog.State()
	for _, d := range st.Databases() {
		for _, c := range st.Collections(d.Name) {
			ci, err := m.src.Cat.Info(c)
			if err != nil {
				continue // a record that does not compile serves no requests either
			}
			m.collectPartitions(ch, st, ci)
		}
	}
}

// collectPartitions sends the per-partition metrics of ci, as partitionStats reports them.
func (m *Metrics) collectPartitions(ch chan<- prometheus.Metric, st *store.CatalogState, ci *catalog.Coll) {
	n := ci.Map.Len()
	snaps := m.src.Shards.Meters(ci).Snapshots()
	throttled, throttledLow := m.src.Shards.Throttled(ci), m.src.Shards.ThrottledLow(ci)
	provisioned := sharding.Throughput(st, ci.Meta).RU / float64(n)
	budgets := m.src.Shards.ReadBudgets(ci)
	for i := range n {
		p := ci.Map.Partition(i)
		labels := []string{ci.Meta.DB, ci.Meta.Name, strconv.FormatUint(p.ID, 10), catalog.ShardName(p.Shard)}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
		counter := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
		}
		lo, hi := ci.Map.Range(i)
		if docs, bytes, err := m.src.Cat.Shards()[p.Shard].Stats(ci.Meta.ID, lo, hi); err == nil {
			gauge(m.partDocs, float64(docs))
			gauge(m.partBytes, float64(bytes))
		}
		if i < len(snaps) {
			gauge(m.partRUPerSec, snaps[i].RUPerSec)
			counter(m.partRUTotal, snaps[i].TotalRU)
		}
		if i < len(throttled) {
			counter(m.partThrottled, float64(throttled[i]))
			counter(m.partThrottledLow, float64(throttledLow[i]))
		}
		if budgets != nil {
			gauge(m.partProvisioned, budgets.PerPartition(i))
			if budgets.BurstCapacity() {
				gauge(m.partBurstBank, budgets.Banked(i))
			}
		} else {
			gauge(m.partProvisioned, provisioned)
		}
	}
}
