#!/usr/bin/env bash
# bench-merge.sh: the cross-partition merge benchmarks of the aggregation issue, end to end
# against the real binary, driven by the mbench harness and mongosh.
#
#  1. find({metricValue: {$gt: X}}).sort({metricValue: 1}).limit(100) (mbench workload
#     sortx) on RECORDS documents with an index on metricValue: a collection sharded on
#     deviceId into 64 partitions over 2 shards against an unsharded copy, same server.
#  2. one $group by deviceId ($avg, $max, $sum, count) over all RECORDS documents, issued by
#     one client, on a server with --shards 1 and on one with --shards 2: median of RUNS.
#
# Usage: scripts/bench-merge.sh [RECORDS] [DOCSIZE]   (defaults 1000000 and 256; SKIP_SORTX=1: part 2 only)
# Needs: go, npm ci done (mongosh), mbench (MBENCH_SRC or MBENCH, scripts/mbench.sh).
# Writes results to ${OUT:-/tmp/bench-merge}.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/mbench.sh
RECORDS=${1:-1000000}
DOCSIZE=${2:-256}
RUNS=${RUNS:-5}
OUT=${OUT:-/tmp/bench-merge}
PORT=${PORT:-27931}
mkdir -p "$OUT"
go build -o "$OUT/cleave" ./cmd/cleave
build_mbench "$OUT/mbench"
MONGOSH=./node_modules/.bin/mongosh
URI=mongodb://127.0.0.1:$PORT

start() { # start SHARDS: a fresh server on $PORT; sets PID
	rm -rf "$OUT/data"
	"$OUT/cleave" --http-addr "" --dir "$OUT/data" --listen 127.0.0.1:$PORT --shards "$1" >"$OUT/server-$1.log" 2>&1 &
	PID=$!
	for _ in $(seq 100); do
		$MONGOSH --quiet "$URI" --eval 'db.runCommand({ping: 1}).ok' >/dev/null 2>&1 && return
		sleep 0.2
	done
	echo "server did not start" >&2
	exit 1
}
stop() { kill "$PID"; wait "$PID" || true; PID=; }
trap '[ -n "${PID:-}" ] && kill "$PID" 2>/dev/null' EXIT
load() { # load DB [extra mbench flags...]
	local db=$1
	shift
	"$OUT/mbench" run -uri "$URI" -db "$db" -workload load -records "$RECORDS" -docsize "$DOCSIZE" \
		-threads 4 "$@" >"$OUT/load-$db.txt"
}

# 1. sortx: sharded (64 partitions, 2 shards) against unsharded, one server.
if [ -z "${SKIP_SORTX:-}" ]; then
start 2
$MONGOSH --quiet "$URI" --eval \
	'sh.shardCollection("sharded.telemetry", {deviceId: "hashed"}, false, {numInitialChunks: 64})' >/dev/null
load sharded -drop=false -index metricValue
load unsharded -index metricValue
for threads in 1 8; do
	for db in unsharded sharded; do
		"$OUT/mbench" run -uri "$URI" -db "$db" -workload sortx -threads $threads -duration 10s \
			-records "$RECORDS" -pid "$PID" -label "$db-t$threads" -out "$OUT/sortx-$db-t$threads.json" \
			| tee "$OUT/sortx-$db-t$threads.txt"
	done
done
stop
fi

# 2. one large $group, --shards 1 against --shards 2.
group_ms() { # median milliseconds of RUNS runs of the $group
	$MONGOSH --quiet "$URI/mbench" --eval "
		const p = [{\$group: {_id: '\$deviceId', avg: {\$avg: '\$metricValue'}, max: {\$max: '\$metricValue'},
			sum: {\$sum: '\$metricValue'}, n: {\$count: {}}}}];
		db.telemetry.aggregate(p).toArray(); // warm the cache
		const t = [];
		for (let i = 0; i < $RUNS; i++) { const s = Date.now(); db.telemetry.aggregate(p).toArray(); t.push(Date.now() - s); }
		t.sort((a, b) => a - b);
		print(t[Math.floor(t.length / 2)], JSON.stringify(t));"
}
for shards in 1 2; do
	start $shards
	if [ "$shards" = 2 ]; then
		$MONGOSH --quiet "$URI" --eval \
			'sh.shardCollection("mbench.telemetry", {deviceId: "hashed"}, false, {numInitialChunks: 16})' >/dev/null
		load mbench -drop=false
	else
		load mbench
	fi
	echo "group over $RECORDS documents, --shards $shards: median ms, all runs: $(group_ms)" | tee "$OUT/group-$shards.txt"
	stop
done
