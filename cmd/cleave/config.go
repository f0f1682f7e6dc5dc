package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// Config is the whole configuration of a cleave process, from flags with CLEAVE_* environment
// variables as fallbacks (flag > environment > default).
type Config struct {
	// ConfigFile is the configuration file the flags were read from too (config_file.go).
	ConfigFile   string
	Listen       string
	Dir          string
	Shards       int
	LogLevel     string
	LogFormat    string
	MaxConns     int
	AddrFile     string
	TestCommands bool
	// JavaScript enables server-side JavaScript ($where, $function, $accumulator).
	JavaScript bool
	// HTTPAddr is the address of the HTTP listener (/metrics); empty turns it off.
	// HTTPAddrFile receives its bound address, written before AddrFile.
	HTTPAddr, HTTPAddrFile string
	// Pprof serves Go's profiles under /debug/pprof/ on the HTTP listener (off by default:
	// profiles reveal internals and a CPU profile costs while it runs).
	Pprof bool
	// TLSCert and TLSKey are PEM files of the server's certificate and key (both or neither),
	// which its connections to the other nodes of a cluster use too; TLSCA, a PEM file of the
	// CA that signs client certificates, makes them required, and the other nodes'
	// certificates are verified against it.
	TLSCert, TLSKey, TLSCA string
	SlowOp                 time.Duration
	// CacheSize is the Pebble block cache shared by all shards, MemTableBudget the memory of
	// all memtables, split evenly between the shards (MemTableSize): with the Go heap, they
	// bound the process's memory (docs/configuration.md, "Memory").
	CacheSize      int64
	MemTableBudget int64
	// DocCacheSize is the documents kept for point reads, split evenly between the shards
	// (store/doccache.go); 0 turns the cache off. It is part of the Go heap.
	DocCacheSize int64
	// QueryMemory is the memory account that blocking sorts, $group tables and reply
	// batches reserve from (exec/stream.Budget); 0: none. It is part of the Go heap.
	QueryMemory int64
	// GoMemoryLimit is the soft limit of the Go heap (runtime/debug.SetMemoryLimit) besides
	// Pebble's manually allocated cache and memtables; 0 leaves the runtime's (GOMEMLIMIT).
	GoMemoryLimit int64
	// memoryLimit is the Go memory limit main set from GoMemoryLimit (0: none set), which
	// followLongLivedHeap raises by what the vector search graphs hold.
	memoryLimit int64
	// SyncPacing paces the WAL's group commits (store/syncpace.go); false only to measure it.
	SyncPacing bool
	// goMemoryLimitSet: --go-memory-limit or CLEAVE_GO_MEMORY_LIMIT was given, and wins
	// over GOMEMLIMIT.
	goMemoryLimitSet bool
	// GCPercent is the garbage collector's target (runtime/debug.SetGCPercent, GOGC's
	// percentage); 0 leaves the runtime's (GOGC).
	GCPercent int
	// gcPercentSet: --gc-percent or CLEAVE_GC_PERCENT was given, and wins over GOGC.
	gcPercentSet bool
	// DiskReserve and DiskReservePercent: writes that add data are refused (OutOfDiskSpace
	// 14031) while the data volume has less free space than the smaller of the two bounds;
	// 0 turns a bound off.
	DiskReserve        int64
	DiskReservePercent float64
	// Auth turns access control on (mongod's --auth); AuthUser and AuthPassword create a
	// root user on admin at startup when no user exists.
	Auth                   bool
	AuthUser, AuthPassword string

	// Partitioning: when partitions split and move (docs/compatibility.md, "Partitions").
	PartitionMaxBytes        int64
	MaxPartitionRU           float64
	SplitLoadRU              float64
	SplitLoadWindow          time.Duration
	MergeAfter               time.Duration
	LogicalPartitionMaxBytes int64
	// BalanceMinBytes is shard.Options.BalanceMinBytes; 0 means no minimum.
	BalanceMinBytes        int64
	MaxParallelism         int
	PartitionCheckInterval time.Duration
	// ThrottleRetryMS is how long a request out of budget waits for it before 16500;
	// RequestUnits false turns metering and throttling off (to measure their cost).
	ThrottleRetryMS int
	RequestUnits    bool
	// BurstCapacity is the server's default for burst capacity (shard.Options); a
	// collection's or database's enableBurstCapacity overrides it. RedistributeThroughput
	// lets partitions' budgets follow demand.
	BurstCapacity          bool
	RedistributeThroughput bool
	// AppPriority maps applications (client metadata appName) to a priority, as
	// "name=low,other=high"; appPriorities is it parsed (by Validate). LowPriorityReserve
	// and LowPriorityFloor tune priority-based execution (shard.BudgetOptions).
	AppPriority                          string
	appPriorities                        map[string]shard.Priority
	LowPriorityReserve, LowPriorityFloor float64
	// SessionTimeout is mongod's localLogicalSessionTimeoutMinutes, as a duration so that
	// tests can shorten it below a minute.
	SessionTimeout time.Duration
	// ChangeRetention and ChangeRetentionBytes bound each shard's change log (the window a
	// change stream can resume in), like the oplog's size and minimum retention.
	ChangeRetention      time.Duration
	ChangeRetentionBytes int64
	// ChangeRetentionInterval is how often the change logs are trimmed to those bounds.
	ChangeRetentionInterval time.Duration

	// Cluster is cluster mode's configuration (cluster.go).
	Cluster ClusterConfig
}

// DefaultMemTableBudget is --memtable-budget's default: with the block cache's 256 MiB, the
// memory Pebble may hold whatever the number of shards (one shard: four 32 MiB memtables).
const DefaultMemTableBudget = 128 << 20

// DefaultDocCacheSize is --doc-cache-size's default. A point read answered from the cache
// skips Pebble's Get (a seek of every memtable and level, and a block from the cache or the
// file), 9 µs of a 25 µs find by _id under workload a; 16 MiB holds the hot documents of a
// skewed load, and the Go heap's limit grows by as much.
const DefaultDocCacheSize = store.DefaultDocCacheSize

// DefaultQueryMemory is --query-memory's default: what the queries of the process hold at
// once in sort buffers, $group tables and reply batches before sorts and groups with
// allowDiskUse spill and batches end early. It fits inside the Go heap's limit
// (--go-memory-limit), so that many queries at once (mbench sortx at 32 threads) stay within
// the block cache plus 256 MiB.
const DefaultQueryMemory = 64 << 20

// DefaultGCPercent is --gc-percent's default: the live heap of a server is small (a few MiB;
// the cache and memtables are outside it), so Go's default of 100 collected it several times
// a second under load, a tenth of the CPU of a point read (issue 13); --go-memory-limit still
// bounds the heap.
const DefaultGCPercent = 400

// DefaultGoMemoryLimit is --go-memory-limit's default, the Go heap's share of the 256 MiB
// the process may hold besides the block cache (docs/configuration.md, "Memory"); the rest goes to what
// neither limit bounds (the binary's 31 MiB of code, C's allocations of Pebble other than
// the cache and memtables, memtables being released). It was 128 MiB; once a retryable
// insertMany allocated 40% less (Retry.Renew), 96 MiB cost no CPU (mbench insert, 2 shards,
// 32 threads: 2,299 and 2,165 µs per insertMany against 2,280 and 2,240; sustained 60 s:
// 2,792 against 2,915; agg and a at 32 threads unchanged) and lowered the largest RSS by 16
// to 32 MiB. At 64 MiB the sustained insert spent 26% more CPU: its heap in use stayed near
// 50 MiB, and the collector ran without pause.
const DefaultGoMemoryLimit = 96 << 20

// storeReserve maps a reserve bound of the configuration (0: off) to store.Options' (0:
// the default, negative: off).
func storeReserve[T int64 | float64](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// MemTableSize is the size of one memtable of each shard: the budget split between the
// shards' store.DefaultMemTables memtables.
func (c *Config) MemTableSize() int64 {
	return c.MemTableBudget / int64(max(c.Shards, 1)*store.DefaultMemTables)
}

// ShardDocCacheSize returns each shard's share of --doc-cache-size, as store.Options takes it
// (negative: off).
func (c *Config) ShardDocCacheSize() int64 {
	if c.DocCacheSize <= 0 {
		return -1
	}
	return max(c.DocCacheSize/int64(max(c.Shards, 1)), 1)
}

// flagSet returns the binary's flags, registered on c and m: each defaults to its CLEAVE_*
// environment variable when that is set (mongod's spellings, on m, have none).
// docs/configuration.md's table is generated from it (TestConfigurationDoc).
func (c *Config) flagSet(m *mongodFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("cleave", flag.ContinueOnError)
	fs.StringVar(&c.Listen, "listen", env("LISTEN", "127.0.0.1:27017"), "address to listen on (host:port; port 0 picks a free one)")
	fs.StringVar(&c.Dir, "dir", env("DIR", "./cleave-data"), "data directory: one Pebble store per shard under shard-<n>/")
	fs.IntVar(&c.Shards, "shards", envInt("SHARDS", 1), "number of shards (Pebble stores) in this process")
	fs.StringVar(&c.LogLevel, "log-level", env("LOG_LEVEL", "info"), "log level: debug (every command, with its connection and request ids), info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", env("LOG_FORMAT", "console"), "log format: console or json")
	fs.IntVar(&c.MaxConns, "max-conns", envInt("MAX_CONNS", 100_000), "maximum simultaneous client connections")
	fs.StringVar(&c.AddrFile, "addr-file", env("ADDR_FILE", ""), "write the listening address to this file once ready")
	fs.StringVar(&c.HTTPAddr, "http-addr", env("HTTP_ADDR", "127.0.0.1:8080"), "address of the HTTP listener serving /metrics, the web console, /healthz and /readyz (host:port; port 0 picks a free one; empty: no listener)")
	fs.StringVar(&c.HTTPAddrFile, "http-addr-file", env("HTTP_ADDR_FILE", ""), "write the HTTP listener's address to this file once ready (before --addr-file)")
	fs.BoolVar(&c.Pprof, "pprof", env("PPROF", "") == "true", "serve Go's profiles (net/http/pprof) under /debug/pprof/ on the HTTP listener")
	fs.StringVar(&c.TLSCert, "tls-cert", env("TLS_CERT", ""), "PEM file of the server's TLS certificate (with --tls-key: every connection uses TLS 1.2+, as with mongod's requireTLS, those to the other nodes of a cluster included)")
	fs.StringVar(&c.TLSKey, "tls-key", env("TLS_KEY", ""), "PEM file of the server's TLS private key")
	fs.StringVar(&c.TLSCA, "tls-ca", env("TLS_CA", ""), "PEM file of the CA that signs client certificates (clients must then present one) and, in a cluster, the other nodes' certificates")
	fs.BoolVar(&c.TestCommands, "test-commands", env("TEST_COMMANDS", "") == "true", "enable commands for test suites (failpoints), like mongod's enableTestCommands")
	fs.BoolVar(&c.JavaScript, "javascript-enabled", env("JAVASCRIPT_ENABLED", "true") != "false", "run server-side JavaScript ($where, $function, $accumulator), as mongod's security.javascriptEnabled; false answers as a mongod without a script engine")
	fs.BoolVar(&c.Auth, "auth", env("AUTH", "") == "true", "require authentication (SCRAM-SHA-256, SCRAM-SHA-1) and enforce roles on every command")
	fs.StringVar(&c.AuthUser, "auth-user", env("AUTH_USER", ""), "create this root user on admin at startup if no user exists (with --auth-password)")
	fs.StringVar(&c.AuthPassword, "auth-password", env("AUTH_PASSWORD", ""), "password of --auth-user (prefer CLEAVE_AUTH_PASSWORD: flags are visible to other local users)")
	fs.DurationVar(&c.SlowOp, "slow-op", envDuration("SLOW_OP", 100*time.Millisecond), "log commands slower than this at info level (MongoDB's slowms)")
	fs.Int64Var(&c.CacheSize, "cache-size", envInt64("CACHE_SIZE", store.DefaultCacheSize), "bytes of the block cache, shared by all shards")
	fs.Int64Var(&c.DocCacheSize, "doc-cache-size", envInt64("DOC_CACHE_SIZE", DefaultDocCacheSize), "bytes of documents kept in memory for point reads (finds by _id, the read before an update or delete by _id), split evenly between the shards; 0: off")
	fs.Int64Var(&c.QueryMemory, "query-memory", envInt64("QUERY_MEMORY", DefaultQueryMemory), "bytes the process's queries hold at once in blocking sorts, $group tables and reply batches: past it sorts and groups with allowDiskUse spill and batches end early (serverStatus' queryMemory); 0: no account")
	fs.Int64Var(&c.MemTableBudget, "memtable-budget", envInt64("MEMTABLE_BUDGET", DefaultMemTableBudget), "bytes of all memtables, split evenly between the shards (each shard holds at most "+strconv.Itoa(store.DefaultMemTables)+": the one written and those being flushed)")
	fs.BoolVar(&c.SyncPacing, "sync-pacing", env("SYNC_PACING", "true") != "false", "pace WAL syncs to gather more commits in each while many writers wait (false only to measure what pacing does: each sync then starts as soon as the previous one ends; durability is the same)")
	fs.Int64Var(&c.GoMemoryLimit, "go-memory-limit", envInt64("GO_MEMORY_LIMIT", DefaultGoMemoryLimit), "soft limit in bytes of the Go heap besides the block cache and memtables (0: GOMEMLIMIT or none; GOMEMLIMIT wins over the default)")
	fs.IntVar(&c.GCPercent, "gc-percent", envInt("GC_PERCENT", DefaultGCPercent), "the garbage collector's target: the heap grows by this percentage of the live heap between collections (GOGC; 0: GOGC or 100; GOGC wins over the default)")
	fs.Int64Var(&c.DiskReserve, "disk-reserve", envInt64("DISK_RESERVE", store.DefaultDiskReserve), "free bytes the data volume keeps: below the smaller of this and --disk-reserve-percent, writes that add data fail with OutOfDiskSpace (0: no byte bound)")
	fs.Float64Var(&c.DiskReservePercent, "disk-reserve-percent", envFloat("DISK_RESERVE_PERCENT", store.DefaultDiskReservePercent), "the reserve as a share of the data volume's size, in percent (0: no share bound; both 0: no reserve)")
	fs.Int64Var(&c.PartitionMaxBytes, "partition-max-bytes", envInt64("PARTITION_MAX_BYTES", 50<<30), "size above which a partition splits in two")
	fs.Float64Var(&c.MaxPartitionRU, "max-partition-ru", envFloat("MAX_PARTITION_RU", 10000), "most RU/s one partition serves (t): provisioned T needs ceil(T/t) partitions")
	fs.Float64Var(&c.SplitLoadRU, "split-load-ru", envFloat("SPLIT_LOAD_RU", 0), "measured RU/s above which a partition splits by load (0: 0.8 x --max-partition-ru)")
	fs.DurationVar(&c.SplitLoadWindow, "split-load-window", envDuration("SPLIT_LOAD_WINDOW", 10*time.Second), "how long a partition must stay above --split-load-ru before it splits")
	fs.Int64Var(&c.LogicalPartitionMaxBytes, "logical-partition-max-bytes", envInt64("LOGICAL_PARTITION_MAX_BYTES", 20<<30), "most bytes the documents of one shard-key value may hold")
	fs.Int64Var(&c.BalanceMinBytes, "balance-min-bytes", envInt64("BALANCE_MIN_BYTES", 3*128<<20), "difference between two shards' bytes of a collection below which the balancer moves nothing (MongoDB's migration threshold, three times its range size; 0: no minimum)")
	fs.IntVar(&c.MaxParallelism, "max-parallelism", envInt("MAX_PARALLELISM", 0), "most shards one query reads at once (0: all), like the Cosmos DB SDK's MaxDegreeOfParallelism")
	fs.DurationVar(&c.MergeAfter, "merge-after", envDuration("MERGE_AFTER", time.Hour), "how long adjacent partitions of one shard must stay small and cold before they merge (MongoDB's AutoMerger); 0 turns merging off")
	fs.DurationVar(&c.PartitionCheckInterval, "partition-check-interval", envDuration("PARTITION_CHECK_INTERVAL", time.Second), "how often the partition manager decides splits and moves")
	fs.IntVar(&c.ThrottleRetryMS, "throttle-retry-ms", envInt("THROTTLE_RETRY_MS", 0), "how long a request whose partition is out of budget waits for it before failing with 16500 (0: fails at once, as Cosmos DB)")
	fs.BoolVar(&c.BurstCapacity, "burst-capacity", env("BURST_CAPACITY", "false") == "true", "partitions below 3,000 RU/s bank unused throughput (up to 300 s of their share) and spend it at up to 3,000 RU/s, as Cosmos DB's burst capacity; collections and databases may say otherwise (enableBurstCapacity)")
	fs.BoolVar(&c.RedistributeThroughput, "redistribute-throughput", env("REDISTRIBUTE_THROUGHPUT", "false") == "true", "the partition manager moves a collection's throughput between its partitions, and a shared database's between its collections' partitions, by their demand before it splits them for load (false: T/N each, as Cosmos DB, or as RedistributeThroughput set them)")
	fs.StringVar(&c.AppPriority, "app-priority", env("APP_PRIORITY", ""), "priority of the requests of applications by their client metadata appName, as name=low,other=high (a command's priorityLevel, then its user's customData.priorityLevel, win; default high)")
	fs.Float64Var(&c.LowPriorityReserve, "low-priority-reserve", envFloat("LOW_PRIORITY_RESERVE", shard.DefaultLowPriorityReserve), "fraction of a partition's per-second budget kept for high-priority requests: below it, low-priority requests are throttled")
	fs.Float64Var(&c.LowPriorityFloor, "low-priority-floor", envFloat("LOW_PRIORITY_FLOOR", shard.DefaultLowPriorityFloor), "fraction of a partition's per-second budget low-priority requests are served at however busy it is, so they are never starved")
	fs.BoolVar(&c.RequestUnits, "request-units", env("REQUEST_UNITS", "true") != "false", "meter request units and enforce provisioned throughput (false only to measure what metering costs: no throttling, no load splits)")
	fs.DurationVar(&c.ChangeRetention, "change-retention", envDuration("CHANGE_RETENTION", 24*time.Hour), "how long each shard keeps its change log: a change stream resumes from a token at most this old (the oplog window; 0: no time bound)")
	fs.Int64Var(&c.ChangeRetentionBytes, "change-retention-bytes", envInt64("CHANGE_RETENTION_BYTES", 1<<30), "bytes of change log each shard keeps on disk, oldest trimmed first (the oplog's size; 0: no size bound)")
	fs.DurationVar(&c.ChangeRetentionInterval, "change-retention-interval", envDuration("CHANGE_RETENTION_INTERVAL", time.Minute), "how often each shard's change log is trimmed to --change-retention and --change-retention-bytes: the log holds up to this much past them")
	fs.DurationVar(&c.SessionTimeout, "session-timeout", envDuration("SESSION_TIMEOUT", 30*time.Minute), "how long an unused logical session lives: its transaction, cursors and retryable-write records then go (mongod's localLogicalSessionTimeoutMinutes)")
	c.Cluster.clusterFlags(fs)
	m.register(fs)
	fs.StringVar(&c.ConfigFile, "config", env("CONFIG", ""), "a configuration file in mongod's YAML shape (net, storage, security...) with a cleave: section for any other flag; flags given here win over it")
	fs.StringVar(&c.ConfigFile, "f", env("CONFIG", ""), "mongod's short name for --config")
	return fs
}

// parseConfig parses args (without the program name) into a Config and validates it.
func parseConfig(args []string) (Config, error) {
	var c Config
	var mongod mongodFlags
	fs := c.flagSet(&mongod)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.ConfigFile != "" {
		if err := applyConfigFile(fs, c.ConfigFile, set); err != nil {
			return c, err
		}
	}
	c.goMemoryLimitSet = set["go-memory-limit"]
	if err := mongod.apply(&c, set); err != nil {
		return c, err
	}
	if _, ok := os.LookupEnv("CLEAVE_GO_MEMORY_LIMIT"); ok {
		c.goMemoryLimitSet = true
	}
	c.gcPercentSet = set["gc-percent"]
	if _, ok := os.LookupEnv("CLEAVE_GC_PERCENT"); ok {
		c.gcPercentSet = true
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return c, c.validate()
}

// validate checks the values that flag parsing cannot, reporting every bad one at once, in
// the order of the groups below.
func (c *Config) validate() error {
	errs := c.validateListeners()
	if err := c.Cluster.validateCluster(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateKeyFile(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateProcess()...)
	errs = append(errs, c.validateMemoryAndDisk()...)
	errs = append(errs, c.validatePartitioning()...)
	errs = append(errs, c.validateRequests()...)
	return errors.Join(errs...)
}

// validateListeners checks the addresses the server listens on, and what needs the HTTP one.
func (c *Config) validateListeners() []error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("--listen %q: %w", c.Listen, err))
	}
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			errs = append(errs, fmt.Errorf("--http-addr %q: %w", c.HTTPAddr, err))
		}
	} else {
		if c.HTTPAddrFile != "" {
			errs = append(errs, errors.New("--http-addr-file needs an --http-addr"))
		}
		if c.Pprof {
			errs = append(errs, errors.New("--pprof needs an --http-addr"))
		}
	}
	return errs
}

// validateProcess checks the shape of the process: where it keeps its data, in how many
// shards, how it logs, its initial user and how many clients it serves.
func (c *Config) validateProcess() []error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("--dir must not be empty"))
	}
	if c.Shards < 1 || c.Shards > 1024 {
		errs = append(errs, fmt.Errorf("--shards %d: must be between 1 and 1024", c.Shards))
	}
	switch c.LogFormat {
	case "console", "json":
	default:
		errs = append(errs, fmt.Errorf("--log-format %q: must be console or json", c.LogFormat))
	}
	if (c.AuthUser == "") != (c.AuthPassword == "") {
		errs = append(errs, errors.New("--auth-user and --auth-password go together"))
	}
	if c.MaxConns < 1 {
		errs = append(errs, fmt.Errorf("--max-conns %d: must be at least 1", c.MaxConns))
	}
	return errs
}

// validateMemoryAndDisk checks the bounds on memory (Pebble's cache and memtables, the Go
// heap) and on the free disk space writes leave.
func (c *Config) validateMemoryAndDisk() []error {
	var errs []error
	if c.CacheSize < 1<<20 {
		errs = append(errs, fmt.Errorf("--cache-size %d: must be at least 1 MiB", c.CacheSize))
	}
	if c.QueryMemory < 0 {
		errs = append(errs, fmt.Errorf("--query-memory %d: must not be negative (0: no account)", c.QueryMemory))
	}
	if c.DocCacheSize < 0 {
		errs = append(errs, fmt.Errorf("--doc-cache-size %d: must not be negative (0 turns the cache off)", c.DocCacheSize))
	}
	if m := c.MemTableSize(); m < 1<<20 || m >= 4<<30 {
		errs = append(errs, fmt.Errorf("--memtable-budget %d: with --shards %d, a memtable of %d bytes; it must be at least 1 MiB and below 4 GiB",
			c.MemTableBudget, c.Shards, m))
	}
	if c.GCPercent < 0 {
		errs = append(errs, fmt.Errorf("--gc-percent %d: must not be negative", c.GCPercent))
	}
	if c.GoMemoryLimit != 0 && c.GoMemoryLimit < 32<<20 {
		errs = append(errs, fmt.Errorf("--go-memory-limit %d: must be 0 or at least 32 MiB", c.GoMemoryLimit))
	}
	if c.DiskReserve < 0 {
		errs = append(errs, fmt.Errorf("--disk-reserve %d: must not be negative", c.DiskReserve))
	}
	if c.DiskReservePercent < 0 || c.DiskReservePercent >= 100 {
		errs = append(errs, fmt.Errorf("--disk-reserve-percent %g: must be at least 0 and below 100", c.DiskReservePercent))
	}
	return errs
}

// validatePartitioning checks the thresholds of splits and moves (shard.Options) and the
// logical partition's size limit.
func (c *Config) validatePartitioning() []error {
	var errs []error
	if c.PartitionMaxBytes < 1 {
		errs = append(errs, fmt.Errorf("--partition-max-bytes %d: must be positive", c.PartitionMaxBytes))
	}
	if c.BalanceMinBytes < 0 {
		errs = append(errs, fmt.Errorf("--balance-min-bytes %d: must not be negative", c.BalanceMinBytes))
	}
	if c.MaxPartitionRU <= 0 {
		errs = append(errs, fmt.Errorf("--max-partition-ru %g: must be positive", c.MaxPartitionRU))
	}
	if c.SplitLoadRU < 0 {
		errs = append(errs, fmt.Errorf("--split-load-ru %g: must not be negative", c.SplitLoadRU))
	}
	if c.SplitLoadWindow <= 0 || c.PartitionCheckInterval <= 0 {
		errs = append(errs, errors.New("--split-load-window and --partition-check-interval must be positive"))
	}
	if c.LogicalPartitionMaxBytes < 1 {
		errs = append(errs, fmt.Errorf("--logical-partition-max-bytes %d: must be positive", c.LogicalPartitionMaxBytes))
	}
	return errs
}

// validateRequests checks how requests are served: sessions' lifetime, the wait for request
// units, and the parallelism of a read.
func (c *Config) validateRequests() []error {
	var errs []error
	if c.ChangeRetention < 0 || c.ChangeRetentionBytes < 0 {
		errs = append(errs, fmt.Errorf("--change-retention %s, --change-retention-bytes %d: must not be negative", c.ChangeRetention, c.ChangeRetentionBytes))
	}
	if c.ChangeRetentionInterval <= 0 {
		errs = append(errs, fmt.Errorf("--change-retention-interval %s: must be positive", c.ChangeRetentionInterval))
	}
	if c.SessionTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--session-timeout %s: must be positive", c.SessionTimeout))
	}
	if c.ThrottleRetryMS < 0 {
		errs = append(errs, fmt.Errorf("--throttle-retry-ms %d: must not be negative", c.ThrottleRetryMS))
	}
	if !(c.LowPriorityReserve > 0 && c.LowPriorityReserve <= 1) || !(c.LowPriorityFloor > 0 && c.LowPriorityFloor <= 1) {
		errs = append(errs, fmt.Errorf("--low-priority-reserve %g, --low-priority-floor %g: must be in (0, 1]", c.LowPriorityReserve, c.LowPriorityFloor))
	}
	var err error
	if c.appPriorities, err = parseAppPriorities(c.AppPriority); err != nil {
		errs = append(errs, err)
	}
	if c.MaxParallelism < 0 {
		errs = append(errs, fmt.Errorf("--max-parallelism %d: must not be negative", c.MaxParallelism))
	}
	return errs
}

// parsed returns the configuration in the shape of getCmdLineOpts' "parsed" field.
func (c *Config) parsed() bsoncore.Document {
	host, port, _ := net.SplitHostPort(c.Listen)
	b := bsoncore.NewDocumentBuilder()
	if c.ConfigFile != "" {
		b.AppendString("config", c.ConfigFile) // as mongod reports its --config
	}
	return b.AppendDocument("net", c.parsedNet(host, port)).
		AppendDocument("storage", bsoncore.NewDocumentBuilder().
			AppendString("dbPath", c.Dir).
			AppendString("engine", "pebble").
			Build()).
		AppendDocument("sharding", bsoncore.NewDocumentBuilder().
			AppendInt32("shards", int32(c.Shards)).
			Build()).
		AppendDocument("security", c.parsedSecurity()).
		AppendDocument("systemLog", bsoncore.NewDocumentBuilder().
			AppendString("verbosity", c.LogLevel).
			AppendString("format", c.LogFormat).
			Build()).
		Build()
}

// authorization is getCmdLineOpts' security.authorization: "enabled" or "disabled".
func (c *Config) authorization() string {
	if c.Auth {
		return "enabled"
	}
	return "disabled"
}

// redactArgv returns argv with the value of --auth-password replaced, for getCmdLineOpts.
func redactArgv(argv []string) []string {
	out := slices.Clone(argv)
	for i, a := range argv {
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case name != "auth-password" || !strings.HasPrefix(a, "-"):
		case hasValue:
			out[i] = a[:strings.Index(a, "=")+1] + "<password>"
		case i+1 < len(argv):
			out[i+1] = "<password>"
		}
	}
	return out
}

// env returns the CLEAVE_<name> environment variable, or def when unset.
func env(name, def string) string {
	if v, ok := os.LookupEnv("CLEAVE_" + name); ok {
		return v
	}
	return def
}

// envInt is env for integers; an unparsable value falls back to def (flag validation then
// reports nothing about it, so it is also rejected loudly here).
func envInt(name string, def int) int {
	v := env(name, "")
	if v == "" {
		return def
	}
	var n int
	if _, err := fmt.Sscan(strings.TrimSpace(v), &n); err != nil {
		return def
	}
	return n
}

// envInt64 is env for 64-bit integers.
func envInt64(name string, def int64) int64 {
	var n int64
	if _, err := fmt.Sscan(strings.TrimSpace(env(name, "")), &n); err != nil {
		return def
	}
	return n
}

// envFloat is env for floating-point numbers.
func envFloat(name string, def float64) float64 {
	var f float64
	if _, err := fmt.Sscan(strings.TrimSpace(env(name, "")), &f); err != nil {
		return def
	}
	return f
}

// envDuration is env for durations.
func envDuration(name string, def time.Duration) time.Duration {
	d, err := time.ParseDuration(env(name, ""))
	if err != nil {
		return def
	}
	return d
}

// parsedNet is getCmdLineOpts' parsed.net: the address, and the TLS settings as mongod's
// net.tls reports them.
func (c *Config) parsedNet(host, port string) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().
		AppendString("bindIp", host).
		AppendString("port", port).
		AppendInt32("maxIncomingConnections", int32(c.MaxConns))
	if c.TLSCert != "" {
		t := bsoncore.NewDocumentBuilder().
			AppendString("mode", "requireTLS").
			AppendString("certificateKeyFile", c.TLSCert)
		if c.TLSCA != "" {
			t.AppendString("CAFile", c.TLSCA)
		}
		b.AppendDocument("tls", t.Build())
	}
	return b.Build()
}

// balanceMinBytes maps --balance-min-bytes to shard.Options.BalanceMinBytes, whose zero is
// its default and whose negative values mean no minimum.
func balanceMinBytes(flag int64) int64 {
	if flag == 0 {
		return -1
	}
	return flag
}

// parseAppPriorities parses --app-priority, "name=low,other=high", into a map.
func parseAppPriorities(s string) (map[string]shard.Priority, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]shard.Priority{}
	for _, kv := range strings.Split(s, ",") {
		name, level, ok := strings.Cut(kv, "=")
		p, known := shard.ParsePriority(strings.TrimSpace(level))
		if !ok || !known || name == "" {
			return nil, fmt.Errorf("--app-priority %q: want name=low or name=high, comma-separated", kv)
		}
		out[name] = p
	}
	return out, nil
}
