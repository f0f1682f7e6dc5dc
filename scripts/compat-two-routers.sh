#!/usr/bin/env bash
# compat-two-routers.sh: the drivers' suites whose tests need several mongoses, against two real
# routers. Starts one etcd (scripts/benchetcd, embedded: no etcd binary needed) and two cleave
# nodes of one cluster on loopback (--replicas 1, --test-commands), then runs compat/cmd/compat
# with -uri naming both nodes, so the driver sees two mongoses that are two processes, each with
# its own failpoints, sessions and transactions. `make compat` runs the same suites against one
# cleave named twice; the tests it lists as "needs two routers" run here for real.
#
# Usage: scripts/compat-two-routers.sh       (make compat-two-routers)
#   env: OUT (/tmp/cleave-compat-two-routers), SUITES (the suites below), CLEAVE (a built
#        cleave to run instead of building one), COMPAT_FLAGS (more flags for cmd/compat)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/cleave-compat-two-routers}
SUITES=${SUITES:-transactions-legacy,transactions-prose,retryable-reads-prose,retryable-writes-prose,server-selection-prose}
rm -rf "$OUT" && mkdir -p "$OUT"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT

go build -o "$OUT/benchetcd" scripts/benchetcd/main.go
BIN=${CLEAVE:-$OUT/cleave}
[ -n "${CLEAVE:-}" ] || go build -o "$BIN" ./cmd/cleave

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ETCD=127.0.0.1:$(free_port)
"$OUT/benchetcd" -dir "$OUT/etcd" -listen "$ETCD" -peer "127.0.0.1:$(free_port)" -no-fsync >"$OUT/etcd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q ready "$OUT/etcd.log" && break; sleep 0.1; done
grep -q ready "$OUT/etcd.log" || { echo "etcd did not start: $OUT/etcd.log" >&2; exit 1; }

hosts=
for n in a b; do
	"$BIN" --dir "$OUT/$n" --listen 127.0.0.1:0 --addr-file "$OUT/addr-$n" --etcd "$ETCD" --node-name "$n" \
		--replicas 1 --http-addr "" --test-commands --log-level warn >"$OUT/$n.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 200); do [ -s "$OUT/addr-$n" ] && break; sleep 0.1; done
	[ -s "$OUT/addr-$n" ] || { echo "node $n did not start: $OUT/$n.log" >&2; exit 1; }
	hosts=${hosts:+$hosts,}$(cat "$OUT/addr-$n")
done
echo "two routers: $hosts (etcd $ETCD; logs in $OUT)"
cd compat
# shellcheck disable=SC2086 # COMPAT_FLAGS is a list of flags
go run ./cmd/compat -uri "mongodb://$hosts/?socketTimeoutMS=30000" -suites "$SUITES" \
	-known testdata/known.txt ${COMPAT_FLAGS:-} | tee "$OUT/compat.txt"
