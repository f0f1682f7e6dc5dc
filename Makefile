# cleave's entry points. `make test` and `make lint` are what CI runs (.ci/run). make test
# installs the pinned test clients (mongosh and the Node.js driver, from package-lock.json)
# and runs every Go test, including the integration and compatibility suites and the rules on
# the shape of the code (internal/archtest), with the race detector.

GO        ?= go
NPM       ?= npm
GOTESTFLAGS ?= -race -shuffle=on -timeout 30m
GOLANGCI_LINT_VERSION := v2.6.2

.PHONY: test test-short node-deps browser-deps build lint fuzz bench compat clean

test: node-deps browser-deps
	$(GO) test $(GOTESTFLAGS) ./...
	cd compat && $(GO) test $(GOTESTFLAGS) ./...

test-short:
	$(GO) test -short ./...
	cd compat && $(GO) test -short ./...

# npm ci only when the lockfile changed since the last install.
node-deps: node_modules/.package-lock.json

node_modules/.package-lock.json: package.json package-lock.json
	$(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $@

# The console's browser test (integration, TestConsoleBrowserPartitionChart) drives headless
# Chromium: Debian's chromium package, installed when missing (as root, or through sudo
# without a password prompt). When it cannot be installed the test skips and says so.
APT_GET = apt-get -y -q install chromium || { apt-get -q update && apt-get -y -q install chromium; }
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then sh -c '$(APT_GET)'; \
	  elif command -v sudo >/dev/null 2>&1; then sudo -n sh -c '$(APT_GET)'; \
	  else false; fi || echo "make: chromium could not be installed: the console's browser test will skip"; }

build:
	$(GO) build -o bin/cleave ./cmd/cleave

# golangci-lint at the pinned version, with .golangci.yml; the first run downloads and builds it.
lint:
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) run ./...

# Run every fuzz target for FUZZTIME each, then keep what it found interesting: Go writes new
# corpus entries to $(GOCACHE)/fuzz, and they are copied to the package's testdata/fuzz (which
# every `go test` runs as seeds, and which is committed).
FUZZTIME ?= 1m
fuzz:
	@cache=$$($(GO) env GOCACHE)/fuzz; \
	for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; \
	    if [ -d "$$cache/$$pkg/$$f" ]; then mkdir -p "$$dir/testdata/fuzz/$$f" && cp -n "$$cache/$$pkg/$$f"/* "$$dir/testdata/fuzz/$$f/"; fi; \
	  done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The long form of the replication kill test: 20 rounds of a random node SIGKILLed under load
# (CI runs 3); its figures are in the test's log.
.PHONY: replication-chaos
replication-chaos:
	CLEAVE_LONG=1 $(GO) test -count=1 -timeout 30m -run 'TestReplicationKillChaos' -v ./integration

# The long form of the vector search measure (TestVectorSearchRecall, 3,000 vectors in `make
# test`): recall@10 at numCandidates 100 against exact: true over 100,000 random 128-dimension
# vectors, on one shard and on two, quantization none and scalar, with queries per second and
# server CPU per query.
.PHONY: vector-recall
vector-recall:
	CLEAVE_LONG=1 $(GO) test -count=1 -timeout 90m -run '^TestVectorSearchRecall$$' -v ./integration

# The long form of the dump round trip (TestDumpLoadDumpByteForByte, 20,000 documents in
# `make test`): 1,000,000 documents dumped, loaded into a fresh server and dumped again; the
# two dumps' .bson files must be byte for byte the same, and both servers' data checksums.
.PHONY: dump-roundtrip
dump-roundtrip:
	CLEAVE_LONG=1 $(GO) test -count=1 -timeout 60m -run '^TestDumpLoadDumpByteForByte$$' -v ./integration

# The long form of the load test (TestLoadConnections, 10 s in `make test`): 1,000
# connections for a minute, then the leak checks.
.PHONY: load
load:
	CLEAVE_LONG=1 $(GO) test -count=1 -timeout 30m -run '^TestLoadConnections$$' -v ./integration

# The long form of the change stream chaos test: 10 rounds of a node SIGKILLed (every other
# one the node the stream reads through) while partitions split and move under inserts,
# updates and deletes (CI runs 2); its figures are in the test's log.
.PHONY: changestream-chaos
changestream-chaos:
	CLEAVE_LONG=1 $(GO) test -count=1 -timeout 30m -run '^TestChangeStreamChaos$$' -v ./integration

# The long form of the linearizability check of replicated shards (TestReplicationLinearizable,
# 20 s of workload in `make test`): 3 minutes of writes, compare-and-sets and linearizable reads
# under partitions and SIGKILLs, checked with porcupine. A violation's visualization is kept under
# test-artifacts/.
.PHONY: linearizability
linearizability:
	mkdir -p test-artifacts
	CLEAVE_LONG=1 $(GO) test ./integration -run '^TestReplicationLinearizable$$' -count=1 -v -timeout 30m \
	  -artifacts -outputdir $(CURDIR)/test-artifacts

# The long form of the cluster differential test (TestDifferentialCluster, the first 100
# queries in `make test`): all 300 of TestDifferentialShardedVsUnsharded's queries through a
# node owning neither collection.
.PHONY: differential-cluster
differential-cluster:
	CLEAVE_LONG=1 $(GO) test -count=1 -timeout 30m -run '^TestDifferentialCluster$$' -v ./integration

# The long forms of the resharding tests (20,000 and 10,000 documents in `make test`):
# TestReshardCollectionUnderWrites, 1,000,000 documents resharded on one node while 8 clients
# write (about 3 minutes), and TestClusterReshardCollection, 200,000 documents resharded and
# unsharded over three nodes while 4 clients write through them.
.PHONY: reshard
reshard:
	CLEAVE_LONG=1 $(GO) test -count=1 -timeout 30m -run '^(TestReshardCollectionUnderWrites|TestClusterReshardCollection)$$' -v ./integration

# The drivers' spec and prose tests (compat/ is its own module, pinning mongo-driver v1.17 for
# its spec files and runners): every suite against a fresh cleave; rewrites the table between the
# compat markers of docs/compatibility.md and adds newly passing tests to
# compat/testdata/baseline.txt (fails, without removing them, if baseline tests stopped passing;
# COMPAT_FLAGS="-prune" accepts that). compat-check is the CI check alone (`make test` runs it
# too): the target suites against the baseline.
COMPAT_FLAGS ?=
compat:
	cd compat && $(GO) run ./cmd/compat $(if $(wildcard docs/compatibility.md),-doc ../docs/compatibility.md) -baseline testdata/baseline.txt -known testdata/known.txt -update $(COMPAT_FLAGS)

# The suites whose tests need several mongoses, against two real routers (two cleave nodes of
# one cluster on an embedded etcd): scripts/compat-two-routers.sh. Not in CI (about 1 min).
.PHONY: compat-two-routers
compat-two-routers:
	scripts/compat-two-routers.sh

# Mongoose's own test suite against a fresh cleave (scripts/mongoose.sh; clones Mongoose's
# MONGOOSE_REF from GitHub and installs its npm dependencies). Not in CI.
.PHONY: mongoose
mongoose:
	scripts/mongoose.sh

.PHONY: compat-check
compat-check:
	cd compat && $(GO) test -count=1 ./...

clean:
	rm -rf bin cleave-data test-artifacts
