#!/usr/bin/env bash
# bench.sh: the whole benchmark table of docs/benchmarks.md in one go, rendered from the result
# files by scripts/benchtable (generated, not edited).
#
#   fake server (mbench limit):  ping, c, a at 32 threads, insert at 8 and 32 (what the
#   driver alone can send: the ceiling of any server's insert figures on this machine)
#   fake mongos (mbench limit -mongos, answering as a router with $clusterTime as cleave does):
#   ping and c at 32; and synced (-sync-dir: each write a synced Pebble commit first, the
#   ceiling of a router whose writes are journaled): a at 32, insert at 8 and 32
#   --shards 1, and --shards 2 with the collection sharded on hashed deviceId, each loaded
#   with RECORDS 1 KiB documents and the indexes readingTime, metricValue,
#   deviceId+readingTime:  ping 32, c 32, a 32, agg 8 and 32, sortx 8 and 32, insert 8 and 32, then
#   insert at 32 for SUSTAINED (the "sustained" row: a 10 s insert ends before compactions
#   catch up, so it flatters whatever defers them)
#   mbench pebble: raw Pebble's batched ingest, the storage ceiling: of RECORDS records (a burst
#   that fits in one memtable) and of PEBBLE_SUSTAINED records (as many as
#   an insert run at 32 threads writes in DURATION, so that Pebble flushes and compacts as it
#   does under the insert)
#
# Every run measures the server's CPU per op and RSS (mbench -pid). BINS names the binaries
# to compare, "label=path ..." (default: this worktree's cleave, labelled cleave); with
# several, each round runs them one after the other on every setup (in reverse order every
# other round), so that an old and a new binary share the machine's noise, and the table shows
# medians per label.
#
# Usage: scripts/bench.sh [-short]        -short: 10,000 records, 3 s per run, to try it
#   env: OUT (/tmp/cleave-bench), ROUNDS (1), RECORDS (100000), DURATION (10s), SUSTAINED (60s;
#        0 skips it), PEBBLE_SUSTAINED (1000000; 0 skips it), BINS,
#        DOC=1 rewrites docs/benchmarks.md's table between <!-- bench:begin/end --> markers,
#        PPROF=DIR saves a 5 s CPU profile of the server during every run into DIR.
# Needs: go, and mbench: MBENCH_SRC (a checkout of the harness) or MBENCH (scripts/mbench.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/mbench.sh
ROOT=$PWD
OUT=${OUT:-/tmp/cleave-bench}
ROUNDS=${ROUNDS:-1}
RECORDS=${RECORDS:-100000}
DURATION=${DURATION:-10s}
SUSTAINED=${SUSTAINED:-60s}
PEBBLE_SUSTAINED=${PEBBLE_SUSTAINED:-1000000}
if [ "${1:-}" = "-short" ]; then
	RECORDS=10000
	DURATION=3s
	SUSTAINED=6s
	PEBBLE_SUSTAINED=100000
fi
freeport() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
LIMIT_PORT=${LIMIT_PORT:-$(freeport)}
INDEXES=readingTime,metricValue,deviceId+readingTime

rm -rf "$OUT" && mkdir -p "$OUT"
mkdir -p "$OUT/bin" && build_mbench "$OUT/bin/mbench"
if [ -z "${BINS:-}" ]; then
	go build -o "$OUT/bin/cleave" ./cmd/cleave
	BINS="cleave=$OUT/bin/cleave"
fi
MB=$OUT/bin/mbench
PID=
LPID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; [ -n "$LPID" ] && kill "$LPID" 2>/dev/null; true' EXIT

start() { # start BIN SHARDS: a fresh server on a free port; sets PID and URI
	rm -rf "$OUT/data"
	local http=()
	[ -n "${PPROF:-}" ] && http=(--http-addr 127.0.0.1:0 --http-addr-file "$OUT/http-addr" --pprof)
	[ -z "${PPROF:-}" ] && http=(--http-addr "")
	rm -f "$OUT/addr"
	"$1" --dir "$OUT/data" --listen 127.0.0.1:0 --shards "$2" --log-level warn \
		--addr-file "$OUT/addr" "${http[@]}" >>"$OUT/server.log" 2>&1 &
	PID=$!
	for _ in $(seq 100); do
		[ -s "$OUT/addr" ] && URI=mongodb://$(cat "$OUT/addr") && return
		sleep 0.1
	done
	echo "server did not start, see $OUT/server.log" >&2
	exit 1
}
stop() { kill "$PID"; wait "$PID" || true; PID=; rm -rf "$OUT/data"; } # a run leaves gigabytes

run() { # run DIR PID WORKLOAD THREADS URI ROUND [ROW DURATION]: ROW names the result file
	local name=${7:-$3}-t$4-r$6 prof= cpid=
	mkdir -p "$1"
	if [ -n "${PPROF:-}" ] && [ -s "$OUT/http-addr" ] && [ "$2" = "$PID" ]; then
		mkdir -p "$PPROF"
		prof=$PPROF/$(basename "$(dirname "$1")")-$(basename "$1")-$name.pprof
		(sleep 3 && curl -s -o "$prof" "http://$(cat "$OUT/http-addr")/debug/pprof/profile?seconds=5") &
		cpid=$!
	fi
	"$MB" run -uri "$5" -workload "$3" -threads "$4" -duration "${8:-$DURATION}" -records "$RECORDS" \
		-pid "$2" -label "$name" -out "$1/$name.json" >"$1/$name.txt"
	[ -n "$cpid" ] && wait "$cpid"
	awk -v n="$name" '/^ +[a-z]+ +[0-9]+ /||/^server /{print n": "$0}' "$1/$name.txt"
}

for round in $(seq "$ROUNDS"); do
	"$MB" limit -listen 127.0.0.1:$LIMIT_PORT 2>"$OUT/limit.log" &
	LPID=$!
	sleep 1
	for w in ping c a; do
		run "$OUT/fake/limit" "$LPID" $w 32 mongodb://127.0.0.1:$LIMIT_PORT "$round"
	done
	for t in 8 32; do
		run "$OUT/fake/limit" "$LPID" insert $t mongodb://127.0.0.1:$LIMIT_PORT "$round"
	done
	kill "$LPID"
	wait "$LPID" 2>/dev/null || true
	LPID=
	# The fair ceilings: a fake mongos (the driver gossips $clusterTime back to it, as to
	# cleave) for the reads, and one that also makes every write durable (a synced Pebble
	# commit, concurrent writes sharing group commits) for the writes.
	"$MB" limit -mongos -listen 127.0.0.1:$LIMIT_PORT 2>"$OUT/limit-mongos.log" &
	LPID=$!
	sleep 1
	for w in ping c; do
		run "$OUT/fake/mongos" "$LPID" $w 32 mongodb://127.0.0.1:$LIMIT_PORT "$round"
	done
	kill "$LPID"
	wait "$LPID" 2>/dev/null || true
	LPID=
	rm -rf "$OUT/limit-sync" && mkdir -p "$OUT/limit-sync"
	"$MB" limit -mongos -sync-dir "$OUT/limit-sync" -listen 127.0.0.1:$LIMIT_PORT 2>"$OUT/limit-sync.log" &
	LPID=$!
	sleep 1
	run "$OUT/fake/mongos-sync" "$LPID" a 32 mongodb://127.0.0.1:$LIMIT_PORT "$round"
	for t in 8 32; do
		run "$OUT/fake/mongos-sync" "$LPID" insert $t mongodb://127.0.0.1:$LIMIT_PORT "$round"
	done
	kill "$LPID"
	wait "$LPID" 2>/dev/null || true
	LPID=
	rm -rf "$OUT/limit-sync"
	order=$BINS
	if [ $((round % 2)) = 0 ]; then # every other round runs the binaries in reverse order
		order=$(printf '%s\n' $BINS | tac | tr '\n' ' ')
	fi
	for shards in 1 2; do
		for bin in $order; do
			label=${bin%%=*}
			dir=$OUT/$label/shards$shards
			start "${bin#*=}" $shards
			shard=()
			[ $shards = 2 ] && shard=(-shard hashed:deviceId)
			"$MB" run -uri "$URI" -workload load -records "$RECORDS" -threads 8 -index "$INDEXES" \
				"${shard[@]}" -pid "$PID" -out "$OUT/load-$label-$shards-r$round.json" >"$OUT/load-$label-$shards-r$round.txt"
			run "$dir" "$PID" ping 32 "$URI" "$round"
			run "$dir" "$PID" c 32 "$URI" "$round"
			run "$dir" "$PID" a 32 "$URI" "$round"
			run "$dir" "$PID" agg 8 "$URI" "$round"
			run "$dir" "$PID" agg 32 "$URI" "$round"
			run "$dir" "$PID" sortx 8 "$URI" "$round"
			run "$dir" "$PID" sortx 32 "$URI" "$round"
			run "$dir" "$PID" insert 8 "$URI" "$round"
			run "$dir" "$PID" insert 32 "$URI" "$round"
			if [ "$SUSTAINED" != 0 ]; then
				run "$dir" "$PID" insert 32 "$URI" "$round" sustained "$SUSTAINED"
			fi
			stop
		done
	done
	"$MB" pebble -dir "$OUT/pebble" -records "$RECORDS" -docsize 1024 -out "$OUT/pebble-r$round.json" >"$OUT/pebble-r$round.txt"
	if [ "$PEBBLE_SUSTAINED" != 0 ]; then
		"$MB" pebble -dir "$OUT/pebble" -records "$PEBBLE_SUSTAINED" -docsize 1024 \
			-out "$OUT/pebble-sustained-r$round.json" >"$OUT/pebble-sustained-r$round.txt"
	fi
done

labels=$(printf '%s\n' $BINS | sed 's/=.*//' | paste -sd, -)
go run ./scripts/benchtable -dir "$OUT" -labels "$labels" | tee "$OUT/table.md"
if [ -n "${DOC:-}" ]; then
	go run ./scripts/benchtable -dir "$OUT" -labels "$labels" -doc "$ROOT/docs/benchmarks.md"
fi
