package archtest

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// rule is what one package may import of ours directly, and why.
type rule struct {
	allow  []string // patterns: "x" is package x, "x/..." is x and every package under it
	reason string   // the package's place in the layout, printed with its failures
}

// rules holds one rule per package of the module, keyed by its path relative to the module
// root; a package without one fails TestLayout, so a new package says what it may use. The
// lists are what each package imports today: adding an import to one is a decision about the
// layout, taken in review where the reason can be read.
var rules = map[string]rule{
	// The leaves: every layer uses them, they use nothing of ours.
	"bsonx":            {[]string{"bsonx/decimal128"}, "leaf: pure functions over BSON values with MongoDB's semantics"},
	"bsonx/decimal128": {nil, "leaf: decimal128 arithmetic, bsonx's and expr's"},
	"wire/mongoerr":    {nil, "leaf: MongoDB's error vocabulary, which every layer answers in"},

	// The layers below execution: each knows its own concern and none knows commands.
	"auth":            {nil, "access control's model: exec checks commands against it and persists its records"},
	"shard":           {nil, "the partitioning policy sees hashes, sizes and costs only"},
	"store":           {nil, "store owns Pebble: it knows no commands, partitioning policy or wire"},
	"replica/raftlog": {nil, "the raft logs of a node's replica groups, in their own Pebble: no documents, commands or wire"},
	"wire":            {[]string{"wire/mongoerr"}, "wire owns the bytes on the socket: it knows no commands, shards or storage"},
	"cluster":         {[]string{"store"}, "membership and metadata on etcd (store's shared log); it runs no commands and knows no wire"},
	"replica/host": {[]string{"bsonx", "cluster", "replica", "replica/raftlog", "store", "wire", "wire/mongoerr"},
		"a node's replicas of shards: their stores, groups and transport, from the cluster's placement; it runs no commands"},
	"replica":          {[]string{"wire/mongoerr"}, "raft groups replicating shards: it drives raft over interfaces (log, state machine, transport) and knows no store, commands or wire"},
	"cluster/etcdtest": {nil, "real etcd servers for tests: nothing of ours"},
	"console":          {nil, "the web console reads the server's state through the Source interface it declares (exec/command implements it): it knows no commands, catalog or storage"},

	// Execution's languages: they compile and evaluate over raw BSON and know no collections.
	"exec/internal/pcre": {nil, "PCRE to RE2, shared by match and expr so both accept the same patterns"},
	"exec/args":          {[]string{"bsonx", "wire/mongoerr"}, "command arguments as MongoDB's IDL parses them: no collections"},
	"exec/collation":     {[]string{"bsonx", "exec/args", "wire/mongoerr"}, "collation documents and keys: no collections"},
	"exec/geo":           {[]string{"bsonx", "wire/mongoerr"}, "geometry and S2 coverings: no collections"},
	"exec/text":          {[]string{"bsonx", "wire/mongoerr"}, "text search's analysis (bleve's tokenizer, stop words, stemmers), scores and $text queries: no collections"},
	"exec/vector":        {[]string{"bsonx", "wire/mongoerr"}, "vector search's HNSW graph, similarities and index definitions: no collections"},
	"exec/js":            {[]string{"bsonx", "bsonx/decimal128", "wire/mongoerr"}, "server-side JavaScript on goja: no collections; match and expr reach it through their hooks"},
	"exec/match":         {[]string{"bsonx", "exec/geo", "exec/internal/pcre", "wire/mongoerr"}, "the query language: no collections or storage"},
	"exec/expr":          {[]string{"bsonx", "bsonx/decimal128", "exec/internal/pcre", "wire/mongoerr"}, "the expression language: no collections or storage"},
	"exec/project":       {[]string{"bsonx", "exec/match", "wire/mongoerr"}, "projections: no collections or storage"},
	"exec/update":        {[]string{"bsonx", "bsonx/decimal128", "exec/match", "wire/mongoerr"}, "the update language: no collections or storage"},

	// Collections and streams, under the read and write paths.
	"exec/stream": {[]string{"bsonx", "exec/project", "store", "wire/mongoerr"},
		"document streams (spilling to store) sit below the read and write paths"},
	"exec/catalog": {[]string{"bsonx", "exec/collation", "exec/expr", "exec/geo", "exec/match", "exec/text", "shard", "store", "wire/mongoerr"},
		"execution's view of collections and shards sits below the read and write paths"},

	"exec/changes": {[]string{"bsonx", "exec/catalog", "exec/stream", "shard", "store", "wire/mongoerr"},
		"change records and the streams that read them: below the write path, which records every write"},

	// The read and write paths: sharding plugs into them through interfaces they declare.
	"exec/query": {[]string{"bsonx", "exec/catalog", "exec/expr", "exec/geo", "exec/js", "exec/match", "exec/project", "exec/stream", "exec/text", "shard", "store", "wire/mongoerr"},
		"the read path: no writes, pipelines, DDL or sharding (its meters come in through query.Options)"},
	"exec/write": {[]string{"bsonx", "exec/catalog", "exec/changes", "exec/expr", "exec/match", "exec/project", "exec/query", "exec/update", "shard", "store", "wire", "wire/mongoerr"},
		"the write path: reads through query; no pipelines, DDL or sharding (it comes in through StageHook)"},

	// What builds on reads and writes.
	"exec/sharding": {[]string{"bsonx", "exec/catalog", "exec/write", "shard", "store", "wire/mongoerr"},
		"carries out shard's decisions, moving documents through the write path"},
	"exec/ddl": {[]string{"bsonx", "exec/args", "exec/catalog", "exec/collation", "exec/match", "exec/query", "exec/text", "exec/write", "store", "wire", "wire/mongoerr"},
		"catalog changes beyond the record: index builds and TTL deletes go through the read and write paths"},
	"exec/agg": {[]string{"bsonx", "exec/args", "exec/catalog", "exec/expr", "exec/match", "exec/query", "exec/stream", "exec/update", "exec/write", "store", "wire", "wire/mongoerr"},
		"pipelines over reads; the stages that write ($out, $merge) come from the server through Host"},
	"exec/vecindex": {[]string{"bsonx", "exec/catalog", "exec/match", "exec/vector", "shard", "store", "wire/mongoerr"},
		"vector search indexes' graphs per shard, kept current from the shards' write logs: reads shards through the catalog"},
	"exec/validate": {[]string{"bsonx", "exec/catalog", "store"},
		"checks a collection's stored data against itself, reading shards through the catalog"},

	// The services commands share, below the command kit.
	"exec/access": {[]string{"auth", "bsonx", "exec/args", "store", "wire/mongoerr"},
		"who a connection is and what it may do: users, roles, SASL, the internal user"},
	"exec/cursor": {[]string{"auth", "bsonx", "exec/args", "exec/query", "exec/stream", "store", "wire", "wire/mongoerr"},
		"open query results between getMores: a registry over streams"},
	"exec/session": {[]string{"auth", "bsonx", "exec/args", "exec/catalog", "exec/cursor", "exec/txn", "exec/write", "store", "wire/mongoerr"},
		"logical sessions: their cache, checkout, expiry and kill patterns, over cursors and transactions"},
	"exec/clock":  {[]string{"bsonx", "wire/mongoerr"}, "the cluster time: a leaf every command's reply reads"},
	"exec/params": {[]string{"bsonx", "wire/mongoerr"}, "the server parameters that change at runtime: a leaf"},
	"exec/txn": {[]string{"bsonx", "exec/catalog", "exec/changes", "exec/clock", "exec/params", "exec/query", "exec/sharding", "exec/write", "store", "wire/mongoerr"},
		"transactions and snapshot reads run the read and write paths over views of a shard"},

	// The command kit: requests, the command table and the services, which the families use.
	"exec/command": {[]string{"auth", "console", "exec/access", "exec/args", "exec/backup", "exec/catalog", "exec/changes", "exec/clock", "exec/cursor", "exec/ddl", "exec/failpoint", "exec/metrics", "exec/params", "exec/query", "exec/route", "exec/session", "exec/sharding", "exec/stream", "exec/txn", "exec/vecindex", "exec/write", "shard", "store", "wire", "wire/mongoerr"},
		"the command kit: what every family of commands shares, below them all"},

	// The command families: the handlers, by what they are about.
	"exec/command/server": {[]string{"auth", "bsonx", "exec/args", "exec/command", "exec/failpoint", "exec/params", "exec/query", "exec/session", "exec/txn", "wire", "wire/mongoerr"},
		"commands about the server itself: handshake, diagnostics, parameters"},
	"exec/command/users": {[]string{"auth", "bsonx", "exec/access", "exec/args", "exec/command", "store", "wire/mongoerr"},
		"authentication and the user and role commands, over exec/access"},
	"exec/command/crud": {[]string{"auth", "bsonx", "exec/agg", "exec/args", "exec/catalog", "exec/changes", "exec/collation", "exec/command", "exec/cursor", "exec/ddl", "exec/explain", "exec/expr", "exec/js", "exec/match", "exec/project", "exec/query", "exec/route", "exec/sharding", "exec/stream", "exec/update", "exec/vecindex", "exec/vector", "exec/write", "store", "wire/mongoerr"},
		"the commands that read and write documents, and aggregation"},
	"exec/command/colls": {[]string{"auth", "bsonx", "exec/args", "exec/backup", "exec/catalog", "exec/changes", "exec/collation", "exec/command", "exec/command/crud", "exec/ddl", "exec/match", "exec/query", "exec/route", "exec/sharding", "exec/validate", "exec/vecindex", "shard", "store", "wire/mongoerr"},
		"the commands that define and place collections; views' pipelines are CRUD's to parse"},
	"exec/command/node": {[]string{"auth", "bsonx", "exec/access", "exec/catalog", "exec/changes", "exec/command", "exec/command/crud", "exec/cursor", "exec/query", "exec/route", "exec/sharding", "exec/validate", "exec/write", "store", "wire/mongoerr"},
		"the internal commands an owner answers for other nodes (and the internal hello's pipelining, exec/access), sharing CRUD's statement compilers"},

	"exec/backup": {[]string{"exec/catalog", "store", "wire/mongoerr"},
		"online backups: the write gate, the shards' checkpoints at one cluster time and their manifest"},
	"exec/failpoint": {[]string{"bsonx", "wire/mongoerr"},
		"the test failpoints: failCommand and the gates that hold a step of the server"},
	"exec/metrics": {[]string{"exec/catalog", "exec/failpoint", "exec/sharding", "store", "wire", "wire/mongoerr"},
		"the Prometheus collector: reads the partition manager, the catalog and the shards at scrape time"},
	"exec/route": {[]string{"bsonx", "exec/access", "exec/catalog", "exec/changes", "exec/query", "exec/sharding", "exec/validate", "exec/write", "store", "wire", "wire/mongoerr"},
		"the router's side of remote execution and what spans a collection's shards"},
	"exec/explain": {[]string{"bsonx", "exec/agg", "exec/catalog", "exec/query", "exec/sharding"},
		"renders plans and run statistics in mongos' explain shape; runs nothing"},
	// The composition root: the Executor, which only cmd/ imports.
	"exec": {[]string{"auth", "bsonx", "exec/...", "shard", "store", "wire", "wire/mongoerr"},
		"the composition root: it builds the services and the command families and dispatches"},

	// Test support, within execution.
	"exec/internal/fixture":    {[]string{"exec/catalog", "exec/internal/streamtest", "store"}, "test shards and catalog for exec's packages"},
	"exec/internal/streamtest": {[]string{"exec/stream", "store"}, "test documents and streams for exec's packages"},

	// Programs and tests of the whole.
	"cmd/cleave": {[]string{"auth", "cluster", "console", "exec", "exec/catalog", "replica/host", "shard", "store", "tools/...", "wire"}, "the server's main: opens each layer and hands it to the next, and runs the client tools"},

	// The client tools: they talk to a server through the Go driver, never to our layers.
	"tools/archive":      {nil, "mongodump's archive format: bytes in, bytes out"},
	"tools/conn":         {nil, "the client tools' connection to a server"},
	"tools/dump":         {[]string{"tools/archive", "tools/conn", "tools/progress"}, "cleave dump and load: mongodump's layout through the driver"},
	"tools/impex":        {[]string{"tools/conn", "tools/progress"}, "cleave export and import: Extended JSON and CSV through the driver"},
	"tools/pitr":         {[]string{"tools/conn"}, "cleave restore --until: a change log replayed through the driver"},
	"tools/progress":     {nil, "the client tools' progress bars and lines"},
	"integration":        {nil, "end-to-end tests drive the built binary over the wire, never our packages"},
	"scripts/benchtable": {nil, "turns benchmark result files into a table: nothing of ours"},
	"scripts/redistload": {nil, "a load test of throughput redistribution through the driver: nothing of ours"},
	"internal/archtest":  {nil, "reads the sources it judges and imports none of them"},
}

// invariant is a statement about the whole tree: what a set of packages may reach, directly or
// through others. The rules imply each; stated apart, they still hold when a rule is widened
// without thinking them through.
type invariant struct {
	from   []string // patterns of the packages it holds for
	except []string // patterns of packages among from that it does not hold for
	reach  []string // with only: all that they may reach; otherwise what they must never reach
	only   bool
	reason string
}

// invariants are the layout's whole-tree statements.
var invariants = []invariant{
	{from: []string{"..."}, except: []string{"cmd/..."}, reach: []string{"exec"},
		reason: "exec is the top of the tree: only the programs in cmd/ use the command handlers"},
	{from: []string{"bsonx/..."}, reach: []string{"bsonx/..."}, only: true,
		reason: "bsonx is a leaf: everything uses it, so it can use nothing of ours"},
	{from: []string{"wire/mongoerr"}, reach: nil, only: true,
		reason: "mongoerr is a leaf: every layer answers in its errors, so it can use nothing of ours"},
	{from: []string{"store/...", "shard/...", "wire/...", "auth/...", "cluster/...", "replica/..."}, reach: []string{"exec/..."},
		reason: "the layers below execution serve it and never reach it"},
	{from: []string{"exec/catalog", "exec/stream"}, reach: []string{"exec/query", "exec/write", "exec/sharding", "exec/ddl", "exec/agg", "exec/command/..."},
		reason: "collections and streams sit below the read and write paths"},
	{from: []string{"exec/query", "exec/write"}, reach: []string{"exec/sharding", "exec/ddl", "exec/agg", "exec/command/..."},
		reason: "reads and writes know no pipelines and no DDL; sharding plugs in through interfaces they declare"},
	{from: []string{"exec/sharding", "exec/ddl", "exec/agg"}, reach: []string{"exec/command/..."},
		reason: "the engines serve the commands and never reach them"},
	{from: []string{"exec/agg"}, reach: []string{"exec/sharding", "exec/ddl", "exec/route", "exec/command/..."},
		reason: "a stage reaches the server only through agg.Host, never the partition manager or DDL themselves"},
	{from: []string{"exec/access", "exec/backup", "exec/clock", "exec/cursor", "exec/explain", "exec/failpoint", "exec/metrics", "exec/params",
		"exec/route", "exec/session", "exec/txn"}, reach: []string{"exec/command/..."},
		reason: "the services sit below the command kit, which wires them"},
}

// TestLayout checks every package's imports against its rule. A package imports directly only
// what its rule allows; and what it reaches through others must be reachable through allowed
// imports alone, so one bad import fails the package that has it and, with the import chain,
// every package it brings the import into.
func TestLayout(t *testing.T) {
	g := loadGraph(t, moduleRoot(t))
	checkRulesCoverTree(t, g)
	allowed := func(p string) []string { // what p may import: its rule's patterns, expanded
		return slices.DeleteFunc(slices.Clone(g.pkgs), func(q string) bool { return q == p || !matchesAny(rules[p].allow, q) })
	}
	actual := func(p string) []string { return g.imports[p] }
	for _, p := range g.pkgs {
		r, ok := rules[p]
		if !ok {
			continue // reported by checkRulesCoverTree
		}
		for _, dep := range g.imports[p] {
			if !matchesAny(r.allow, dep) {
				t.Errorf("%s -> %s: %s may not import %s (%s: %s)", p, dep, p, dep, p, r.reason)
			}
		}
		// Beyond its direct imports, p fails where a chain first leaves what it may reach: what
		// the chain brings in after that comes with the same bad import.
		mayReach := g.chains(p, allowed)
		reached := g.chains(p, actual)
		for _, dep := range slices.Sorted(maps.Keys(reached)) {
			chain := reached[dep]
			if len(chain) > 2 && mayReach[dep] == nil && mayReach[chain[len(chain)-2]] != nil {
				t.Errorf("%s: %s may not import %s (%s: %s)", chainString(chain), p, dep, p, r.reason)
			}
		}
	}
}

// checkRulesCoverTree fails for a package without a rule, a rule without a package, and an
// allow pattern that names no package (a rename left it behind).
func checkRulesCoverTree(t *testing.T, g *graph) {
	t.Helper()
	for _, p := range g.pkgs {
		if _, ok := rules[p]; !ok {
			t.Errorf("%s has no rule: add one to rules in internal/archtest/layout_test.go, "+
				"with the packages of ours it may import (today: %s) and its place in the layout", p, orNothing(g.imports[p]))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(rules)) {
		if !slices.Contains(g.pkgs, p) {
			t.Errorf("rules has %s, which is no package of the module: remove it", p)
			continue
		}
		for _, pat := range rules[p].allow {
			if !slices.ContainsFunc(g.pkgs, func(q string) bool { return matches(pat, q) }) {
				t.Errorf("the rule of %s allows %s, which names no package of the module: remove it", p, pat)
			}
		}
	}
}

// TestLayoutInvariants checks the invariants on what every package reaches, printing the import
// chain of each violation.
func TestLayoutInvariants(t *testing.T) {
	g := loadGraph(t, moduleRoot(t))
	actual := func(p string) []string { return g.imports[p] }
	for _, inv := range invariants {
		held := false
		for _, p := range g.pkgs {
			if !matchesAny(inv.from, p) || matchesAny(inv.except, p) {
				continue
			}
			held = true
			reached := g.chains(p, actual)
			breaks := func(dep string) bool { return dep != p && matchesAny(inv.reach, dep) != inv.only }
			for _, dep := range slices.Sorted(maps.Keys(reached)) {
				// Only where the chain first breaks it: the rest comes with that import.
				if chain := reached[dep]; breaks(dep) && !breaks(chain[len(chain)-2]) {
					t.Errorf("%s: %s may not reach %s (%s)", chainString(chain), p, dep, inv.reason)
				}
			}
		}
		if !held {
			t.Errorf("the invariant %q holds for no package: %v names none", inv.reason, inv.from)
		}
	}
}

// orNothing prints a list of packages for a message, or says it is empty.
func orNothing(pkgs []string) string {
	if len(pkgs) == 0 {
		return "nothing of ours"
	}
	return strings.Join(pkgs, ", ")
}

// TestMatches pins the pattern forms the rules are written in.
func TestMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, pkg string
		want         bool
	}{
		{"exec", "exec", true},
		{"exec", "exec/query", false},
		{"exec/...", "exec", true},
		{"exec/...", "exec/internal/pcre", true},
		{"exec/...", "execx", false},
		{"wire/...", "wire/mongoerr", true},
		{"...", "cmd/cleave", true},
	} {
		if got := matches(c.pattern, c.pkg); got != c.want {
			t.Errorf("matches(%q, %q) = %v, want %v", c.pattern, c.pkg, got, c.want)
		}
	}
}
