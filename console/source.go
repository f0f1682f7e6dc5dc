package console

import "time"

// Source is the server state the console reads. Every method returns a fresh copy, safe to
// use after it returns; implementations must be safe for concurrent use.
type Source interface {
	// Databases returns the databases and their collections, sorted by name.
	Databases() []Database
	// Collection returns one collection's partitions and statistics; ok is false when it
	// does not exist.
	Collection(db, name string) (c Collection, ok bool)
	// Manager returns the partition manager's counters (serverStatus.sharding.partitionManager).
	Manager() Manager
	// Events returns the recent splits, merges and moves, oldest first.
	Events() []Event
	// Nodes returns the cluster's nodes with their shards; nil on a single node.
	Nodes() []Node
	// SlowOps returns the recent slow operations, newest first.
	SlowOps() []SlowOp
	// Ready returns nil when the server serves: its stores are open and, in cluster mode,
	// it has joined the cluster and every shard has a node serving it. The error says what
	// is missing.
	Ready() error
	// AuthEnabled reports whether access control is on (--auth).
	AuthEnabled() bool
	// Authorize checks user (name or name@db, admin by default) and password: known is
	// whether the password is the user's, allowed whether the user also holds the cluster's
	// monitoring privileges the console needs.
	Authorize(user, password string) (known, allowed bool)
}

// Database is one database and its collections.
type Database struct {
	Name        string
	Collections []CollectionSummary
}

// CollectionSummary is a collection's line in the overview.
type CollectionSummary struct {
	Name       string
	ShardKey   string // "" for an unsharded collection
	Partitions int
	Throughput float64 // provisioned RU/s, 0 when none
	Documents  int64
	Bytes      int64
	RUPerSec   float64
	Throttled  int64
}

// Collection is one collection's page.
type Collection struct {
	DB, Name   string
	ShardKey   string
	Throughput float64 // provisioned RU/s (the collection's, or its share of its database's)
	Autoscale  bool
	Partitions []Partition
	HotKeys    []HotKey
}

// Partition is one partition of a collection, in hash order.
type Partition struct {
	ID       uint64
	Min, Max string // the hash bounds as config.chunks shows them (MinKey, MaxKey at the ends)
	Shard    string
	Node     string // the node serving its shard; "" on a single node
	// ShardIndex numbers the shard (its colour).
	ShardIndex int
	Documents  int64
	Bytes      int64
	RUPerSec   float64
	BudgetRU   float64 // its share of the provisioned throughput, RU/s
	Throttled  int64   // requests refused for want of budget since the start
}

// HotKey is a shard-key value that takes a large share of a partition's load.
type HotKey struct {
	Partition uint64
	Key       string
	Share     float64 // of the partition's load
	RUPerSec  float64
	Bytes     int64
	SingleKey bool // the partition holds this key only: it cannot split
	Reason    string
}

// Manager is the partition manager's counters since the start.
type Manager struct {
	Shards                                       int
	Splits, Merges, Moves, HotKeyReports, Rounds int64
	Conversions, Redistributions                 int64
}

// Event is one split, merge or move.
type Event struct {
	Time     time.Time
	Kind     string // split, merge or move
	NS       string
	From, To string // a move's shards
	Detail   string // the partitions and the reason
}

// Node is one node of a cluster.
type Node struct {
	Name   string
	Host   string
	Up     bool
	Self   bool // the node serving this console
	Shards []NodeShard
}

// NodeShard is a copy of a shard that a node keeps.
type NodeShard struct {
	Name   string
	Copies int // copies of the shard in the cluster (1 without replication)
	// State is the copy's replica-set state: PRIMARY (it serves the shard), SECONDARY,
	// STARTUP2 (catching up) or DOWN.
	State string
}

// SlowOp is one recent slow operation.
type SlowOp struct {
	Time        time.Time
	Command, NS string
	Duration    time.Duration
	RU          float64
	Error       string
	PlanSummary string // the plan of its read (IXSCAN { a: 1 }, COLLSCAN); "" if none
}
