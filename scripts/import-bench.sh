#!/bin/bash
# import-bench.sh: cleave import against the bench harness's insert workload on one server,
# alternating, as docs/tools.md measures it. Usage:
#   scripts/import-bench.sh OLD_CLEAVE NEW_CLEAVE MBENCH [ROUNDS]
# (RECORDS=N for another count.) It starts NEW_CLEAVE --shards 2 on a free port with its data in a temporary directory,
# loads 1,000,000 telemetry documents with mbench (-shard hashed:deviceId), exports them as
# relaxed Extended JSON, then per round runs the insert workload (20 s, 8 threads, -pid) and
# imports the file with OLD_CLEAVE and NEW_CLEAVE into a collection sharded the same way,
# printing docs/s, the server's CPU per document and the tool's CPU and peak RSS.
set -euo pipefail
OLD=$1 NEW=$2 MBENCH=$3 ROUNDS=${4:-2} RECORDS=${RECORDS:-1000000}
MS=$(cd "$(dirname "$0")/.." && pwd)/node_modules/.bin/mongosh
TMP=$(mktemp -d)
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$TMP"' EXIT
"$NEW" --dir "$TMP/data" --shards 2 --listen 127.0.0.1:0 --addr-file "$TMP/addr" --http-addr 127.0.0.1:0 --log-level warn >"$TMP/server.log" 2>&1 &
PID=$!
until [ -s "$TMP/addr" ]; do sleep 0.1; done
U="mongodb://$(cat "$TMP/addr")/"
"$MBENCH" run -uri "$U" -workload load -records "$RECORDS" -shard hashed:deviceId -threads 4 >/dev/null
"$NEW" export --uri "$U" --db mbench --collection telemetry --out "$TMP/tele.json" 2>/dev/null
n=$(wc -l <"$TMP/tele.json")
cpu() { awk '{print $14+$15}' /proc/$PID/stat; } # the server's utime+stime, in clock ticks
imp() {
	local label=$1 bin=$2
	"$MS" --quiet "${U}admin" --eval 'db.getSiblingDB("mbench").imp.drop(); db.adminCommand({shardCollection: "mbench.imp", key: {deviceId: "hashed"}})' >/dev/null
	local c0 t0 t1 c1
	c0=$(cpu) t0=$(date +%s.%N)
	/usr/bin/time -f "%U %S %M" -o "$TMP/time" "$bin" import --uri "$U" --db mbench --collection imp "$TMP/tele.json" >"$TMP/out" 2>/dev/null
	t1=$(date +%s.%N) c1=$(cpu)
	read -r user sys rss <"$TMP/time"
	echo "$label: $(tail -1 "$TMP/out") $(echo "$n/($t1-$t0)" | bc) docs/s;" \
		"server CPU $(echo "($c1-$c0)*10000/$n" | bc) µs/doc; tool CPU ${user}+${sys} s, peak RSS $((rss / 1024)) MiB"
}
for r in $(seq "$ROUNDS"); do
	"$MBENCH" run -uri "$U" -workload insert -duration 20s -threads 8 -pid $PID >"$TMP/ins" 2>&1
	echo "insert $r: $(grep -E '^\s*insertMany' "$TMP/ins" | tr -s ' ')"
	grep -E '^(server|host)' "$TMP/ins"
	imp "old $r" "$OLD"
	imp "new $r" "$NEW"
done
