// Package metrics is the server's Prometheus collector: command latencies and errors kept as
// commands finish, and at scrape time the partitions' load, storage and throttling, the
// partition manager's counters, the connections and each shard's storage engine figures.
// cmd/cleave registers it and serves /metrics.
package metrics
