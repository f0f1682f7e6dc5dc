#!/usr/bin/env bash
# bench-retry.sh: what retryable writes cost (issue 15): YCSB workload a (50% find, 50% $set
# by _id, synced) at 32 threads on one server, with the driver's default retryWrites=true
# (every update records its result in the session's record, in the same batch) and with
# retryWrites=false, alternating ROUNDS times. Compare ops/s and server CPU µs/op (medians).
#
# Usage: scripts/bench-retry.sh   (ROUNDS=3, RECORDS=100000, OUT=/tmp/bench-retry)
# Needs: go, mbench (MBENCH_SRC or MBENCH, scripts/mbench.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/mbench.sh
ROUNDS=${ROUNDS:-3}
RECORDS=${RECORDS:-100000}
OUT=${OUT:-/tmp/bench-retry}
PORT=${PORT:-27933}
mkdir -p "$OUT"
go build -o "$OUT/cleave" ./cmd/cleave
build_mbench "$OUT/mbench"
URI=mongodb://127.0.0.1:$PORT
rm -rf "$OUT/data"
"$OUT/cleave" --http-addr "" --dir "$OUT/data" --listen 127.0.0.1:$PORT --log-level warn >"$OUT/server.log" 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null' EXIT
sleep 1
"$OUT/mbench" run -uri "$URI" -workload load -records "$RECORDS" -docsize 1024 -threads 8 -shard hashed:deviceId >"$OUT/load.txt"
for r in $(seq "$ROUNDS"); do
	for retry in true false; do
		"$OUT/mbench" run -uri "$URI/?retryWrites=$retry" -workload a -records "$RECORDS" -threads 32 -duration 10s \
			-pid "$PID" -label "retryWrites=$retry" -out "$OUT/a-$retry-$r.json" >"$OUT/a-$retry-$r.txt"
		grep -E "^\s+total|^server" "$OUT/a-$retry-$r.txt" | sed "s/^/round $r retryWrites=$retry: /"
	done
done
