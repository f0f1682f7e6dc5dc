#!/usr/bin/env bash
# bench-ru.sh: what request-unit metering and throttling cost (issue 12), end to end: YCSB
# workload a (50% find, 50% $set by _id, synced) at 32 threads against a server metering
# every operation (--request-units=true, the collection provisioned with 1,000,000 RU/s so
# that budgets are checked but never exhausted) and one with --request-units=false,
# alternating, ROUNDS rounds. Compare ops/s and server CPU µs/op (medians).
#
# Usage: scripts/bench-ru.sh   (ROUNDS=3, RECORDS=100000, OUT=/tmp/bench-ru)
# Needs: go, npm ci done (mongosh), mbench (MBENCH_SRC or MBENCH, scripts/mbench.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/mbench.sh
ROUNDS=${ROUNDS:-3}
RECORDS=${RECORDS:-100000}
OUT=${OUT:-/tmp/bench-ru}
PORT=${PORT:-27932}
mkdir -p "$OUT"
go build -o "$OUT/cleave" ./cmd/cleave
build_mbench "$OUT/mbench"
MONGOSH=./node_modules/.bin/mongosh
URI=mongodb://127.0.0.1:$PORT
trap '[ -n "${PID:-}" ] && kill "$PID" 2>/dev/null' EXIT
for r in $(seq "$ROUNDS"); do
	for metered in true false; do
		rm -rf "$OUT/data"
		"$OUT/cleave" --http-addr "" --dir "$OUT/data" --listen 127.0.0.1:$PORT --request-units=$metered \
			--max-partition-ru 2000000 --log-level warn >"$OUT/server-$metered.log" 2>&1 &
		PID=$!
		for _ in $(seq 100); do
			$MONGOSH --quiet "$URI" --eval 'db.runCommand({ping: 1}).ok' >/dev/null 2>&1 && break
			sleep 0.2
		done
		"$OUT/mbench" run -uri "$URI" -workload load -records "$RECORDS" -docsize 1024 -threads 8 \
			-shard hashed:deviceId >"$OUT/load-$metered-$r.txt"
		$MONGOSH --quiet "$URI/mbench" --eval \
			'db.runCommand({customAction: "UpdateCollection", collection: "telemetry", offerThroughput: 1000000}).ok' >/dev/null
		"$OUT/mbench" run -uri "$URI" -workload a -records "$RECORDS" -threads 32 -duration 10s -pid "$PID" \
			-label "metered=$metered" -out "$OUT/a-$metered-$r.json" >"$OUT/a-$metered-$r.txt"
		kill "$PID"
		wait "$PID" || true
		PID=
		grep -E "^\s+total|^server" "$OUT/a-$metered-$r.txt" | sed "s/^/round $r metered=$metered: /"
	done
done
