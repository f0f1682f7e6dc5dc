#!/usr/bin/env bash
# bench-hop.sh: what a hop to another node costs. For each cleave binary of BINS (label:path,
# alternated round by round), three nodes of one cluster on loopback (one etcd, from
# scripts/benchetcd; --shards 1 each, --replicas 1) with mbench.telemetry sharded on hashed _id
# (numInitialChunks 6: two reads in three go to another node), then one node alone (--shards 1,
# no etcd); each loads RECORDS documents and runs each of WORKLOADS at THREADS through node a.
# A run records ops/s and the CPU the servers used in mbench's measured window, summed over the
# node processes (/proc/PID/stat every 50 ms), per op, and their read and write system calls
# per op (/proc/PID/io: syscr + syscw, which counts socket reads and writes). The table gives medians over ROUNDS and
# a remote read's cost against a local one: with C the cluster's summed CPU per op and L the
# single node's, C = (L + 2R)/3, so R/L = (3C - L)/(2L).
#
# With REMOTE=1 (the default) the three nodes then also run every workload on an unsharded
# collection created through node b (so on node b's shard, with node b's WAL alone) and read
# through node a: every operation is remote, and its CPU over L is a remote operation's cost
# directly, on one WAL as the one node's and the relay's (the sharded collection spreads writes
# over three WALs, which share fewer group commits than one: workload a's ratio is not the
# hop's alone).
#
# With RELAY=1 (the default) the one node is then also measured through scripts/hoprelay, a
# plain TCP relay (read, write, nothing else) in front of it: every request pays one more hop
# over loopback with no database work on it, so the relay's CPU per op plus the node's, over L,
# is the floor of a remote read for any design that forwards over TCP. With PERF=1 (the
# default when perf(1) is installed) every process is also counted by `perf stat` during the
# measured window (all its system calls and context switches, per op).
#
# With PROFILE=1, the first round also profiles every node of each binary's cluster during one
# more run of each workload of PROFILE_WORKLOADS (PROFILE_SECONDS), into $OUT/pprof.
#
# Usage: BINS="old:/tmp/x/cleave-old new:/tmp/x/cleave" MBENCH=/tmp/x/mbench scripts/bench-hop.sh
#   env: OUT (/tmp/cleave-bench-hop), ROUNDS (2), RECORDS (100000), DURATION (10s),
#        WORKLOADS ("c a"), THREADS (32), PROFILE (0), PROFILE_SECONDS (8), PROFILE_WORKLOADS (c),
#        REMOTE (1), RELAY (1), PERF (1 when perf is installed)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/mbench.sh
OUT=${OUT:-/tmp/cleave-bench-hop}
ROUNDS=${ROUNDS:-2}
RECORDS=${RECORDS:-100000}
DURATION=${DURATION:-10s}
WORKLOADS=${WORKLOADS:-c a}
THREADS=${THREADS:-32}
PROFILE=${PROFILE:-0}
PROFILE_SECONDS=${PROFILE_SECONDS:-8}
PROFILE_WORKLOADS=${PROFILE_WORKLOADS:-c}
RELAY=${RELAY:-1}
REMOTE=${REMOTE:-1}
PERF=${PERF:-$(command -v perf >/dev/null && echo 1 || echo 0)}
MONGOSH=${MONGOSH:-$PWD/node_modules/.bin/mongosh}
WARMUP=1s
NODES=(a b c)
: "${BINS:?set BINS to label:path pairs}"

rm -rf "$OUT" && mkdir -p "$OUT/bin" "$OUT/results"
build_mbench "$OUT/bin/mbench"
go build -o "$OUT/bin/benchetcd" scripts/benchetcd/main.go
go build -o "$OUT/bin/hoprelay" scripts/hoprelay/main.go
MB=$OUT/bin/mbench

freeport() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
log() { echo "== $*" >&2; }

declare -A PID HTTP PORT
EPID=
ETCD=
BIN=
TARGET=a # the process mbench connects to: a node, or relay
cleanup() {
	for n in "${!PID[@]}"; do kill "${PID[$n]}" 2>/dev/null || true; done
	[ -n "$EPID" ] && kill "$EPID" 2>/dev/null
	true
}
trap cleanup EXIT

start_etcd() {
	local dir=$OUT/etcd cp pp
	rm -rf "$dir"
	cp=$(freeport) pp=$(freeport)
	"$OUT/bin/benchetcd" -dir "$dir" -listen 127.0.0.1:$cp -peer 127.0.0.1:$pp -no-fsync >"$OUT/etcd.log" 2>&1 &
	EPID=$!
	ETCD=127.0.0.1:$cp
	for _ in $(seq 300); do
		grep -q ready "$OUT/etcd.log" && return
		sleep 0.1
	done
	echo "etcd did not start, see $OUT/etcd.log" >&2
	exit 1
}

start_node() { # start_node NAME ARGS...
	local n=$1
	shift
	rm -rf "$OUT/data-$n" "$OUT/addr-$n"
	PORT[$n]=$(freeport)
	HTTP[$n]=127.0.0.1:$(freeport)
	"$BIN" --dir "$OUT/data-$n" --listen 127.0.0.1:${PORT[$n]} --shards 1 --log-level warn \
		--http-addr "${HTTP[$n]}" --pprof --addr-file "$OUT/addr-$n" "$@" >>"$OUT/node-$n.log" 2>&1 &
	PID[$n]=$!
}

start_relay() { # start_relay: the relay in front of node a
	rm -f "$OUT/addr-relay"
	"$OUT/bin/hoprelay" -listen 127.0.0.1:0 -upstream "127.0.0.1:${PORT[a]}" -addr-file "$OUT/addr-relay" >>"$OUT/relay.log" 2>&1 &
	PID[relay]=$!
	wait_addr relay
	PORT[relay]=$(sed 's/.*://' "$OUT/addr-relay")
}

wait_addr() {
	for _ in $(seq 600); do
		[ -s "$OUT/addr-$1" ] && return
		kill -0 "${PID[$1]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "node $1 did not start, see $OUT/node-$1.log" >&2
	exit 1
}

stop_all() {
	for n in "${!PID[@]}"; do kill "${PID[$n]}" 2>/dev/null || true; done
	for n in "${!PID[@]}"; do wait "${PID[$n]}" 2>/dev/null || true; done
	PID=()
	if [ -n "$EPID" ]; then
		kill "$EPID" 2>/dev/null || true
		wait "$EPID" 2>/dev/null || true
		EPID=
	fi
	rm -rf "$OUT"/data-* "$OUT/etcd"
}

sh_eval() { "$MONGOSH" --quiet "$1" --eval "$2"; }

start_cluster() {
	local uri seen=
	start_etcd
	for n in "${NODES[@]}"; do start_node "$n" --etcd "$ETCD" --node-name "$n" --replicas 1; done
	for n in "${NODES[@]}"; do wait_addr "$n"; done
	uri=mongodb://127.0.0.1:${PORT[a]}
	for _ in $(seq 120); do
		seen=$(sh_eval "$uri" 'const r = db.adminCommand({listShards: 1}); print(r.ok === 1 && r.shards.length === 3 ? "ok" : JSON.stringify(r))' 2>&1 || true)
		[ "$seen" = ok ] && return
		sleep 1
	done
	echo "the cluster did not show 3 shards in 120 s: $seen" >&2
	exit 1
}

load() { # load URI SETUP SHARDED
	if [ "$3" = 1 ]; then
		sh_eval "$1" 'const r = db.adminCommand({shardCollection: "mbench.telemetry", key: {_id: "hashed"}, numInitialChunks: 6});
if (r.ok !== 1) { print(JSON.stringify(r)); quit(1); }' >"$OUT/results/$2-shard-r$round.txt"
	fi
	"$MB" run -uri "$1" -workload load -records "$RECORDS" -threads 8 -drop=false \
		-out "$OUT/results/$2-load-r$round.json" >"$OUT/results/$2-load-r$round.txt"
}

cat >"$OUT/bin/cpu_sample.py" <<'EOF'
import os, sys, time
out, pids = sys.argv[1], sys.argv[2:]
tck = os.sysconf("SC_CLK_TCK")
def cpu(p):
    with open(f"/proc/{p}/stat") as f:
        fs = f.read().rsplit(")", 1)[1].split()
    return (int(fs[11]) + int(fs[12])) / tck
def syscalls(p):  # read and write system calls (syscr + syscw)
    n = 0
    with open(f"/proc/{p}/io") as f:
        for line in f:
            k, v = line.split(":")
            if k in ("syscr", "syscw"):
                n += int(v)
    return n
with open(out, "w", buffering=1) as f:
    while True:
        vals = []
        for p in pids:
            vals += [repr(cpu(p)), repr(syscalls(p))]
        f.write(" ".join([repr(time.time())] + vals) + "\n")
        time.sleep(0.05)
EOF

cpu_window() { # cpu_window SAMPLES RESULT NAMES...: CPU in the measured window, as JSON
	python3 - "$WARMUP" "$@" <<'EOF'
import json, sys, datetime, bisect
warm, samples, result, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
warm = float(warm.rstrip("s"))
r = json.load(open(result))
d = r["date"].rstrip("Z")
frac = ""
if "." in d:
    d, frac = d.split(".")
t0 = datetime.datetime.strptime(d, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()
t0 += float("0." + frac) if frac else 0
lo, hi = t0 + warm, t0 + warm + r["duration_s"]
rows = [list(map(float, l.split())) for l in open(samples) if l.strip()]
rows = [x for x in rows if len(x) == 2 * len(names) + 1]
ts = [x[0] for x in rows]
def at(t, i):
    k = bisect.bisect_left(ts, t)
    if k <= 0: return rows[0][i]
    if k >= len(rows): return rows[-1][i]
    a, b = rows[k - 1], rows[k]
    return a[i] + (b[i] - a[i]) * (t - a[0]) / (b[0] - a[0])
cpu = {n: at(hi, 2 * i + 1) - at(lo, 2 * i + 1) for i, n in enumerate(names)}
sys_ = {n: at(hi, 2 * i + 2) - at(lo, 2 * i + 2) for i, n in enumerate(names)}
ops = r["total"]["ops"]
# perf stat's counts (every system call, context switches), per op at the run's rate
perf, base = {}, samples[:-len(".cpu")]
for n in names:
    try:
        for line in open(f"{base}.perf-{n}"):
            f = line.strip().split(",")
            if len(f) > 2 and f[0].strip().isdigit():
                key = "all_syscalls" if "sys_enter" in f[2] else "ctx_switches"
                perf[key] = perf.get(key, 0) + int(f[0]) / (r["total"]["ops_per_s"] * r["duration_s"])
    except OSError:
        pass
out = {"cpu_s": cpu, "syscalls": sys_, "ops": ops, "sum_cpu_us_per_op": sum(cpu.values()) * 1e6 / ops if ops else 0,
       "sum_syscalls_per_op": sum(sys_.values()) / ops if ops else 0}
out.update({"sum_" + k + "_per_op": v for k, v in perf.items()})
print(json.dumps(out))
EOF
}

run() { # run SETUP WORKLOAD THREADS
	local setup=$1 w=$2 t=$3 name=$2-t$3-r$round names=() pids=() spid
	local res=$OUT/results/$setup
	mkdir -p "$res"
	for n in "${NODES[@]}" relay; do
		[ -n "${PID[$n]:-}" ] && names+=("$n") && pids+=("${PID[$n]}")
	done
	python3 "$OUT/bin/cpu_sample.py" "$res/$name.cpu" "${pids[@]}" &
	spid=$!
	local ppids=() i
	if [ "$PERF" = 1 ]; then # all system calls and context switches, inside the measured window
		for i in "${!names[@]}"; do
			(sleep "${WARMUP%s}" && exec perf stat -x, -e raw_syscalls:sys_enter,context-switches -p "${pids[$i]}" \
				-o "$res/$name.perf-${names[$i]}" -- sleep "${DURATION%s}") 2>/dev/null &
			ppids+=($!)
		done
	fi
	"$MB" run -uri "mongodb://127.0.0.1:${PORT[$TARGET]}" -workload "$w" -threads "$t" -duration "$DURATION" \
		-warmup "$WARMUP" -records "$RECORDS" -pid "${PID[a]}" -label "$setup-$name" -out "$res/$name.json" >"$res/$name.txt"
	sleep 0.2
	kill "$spid" && wait "$spid" 2>/dev/null || true
	[ ${#ppids[@]} = 0 ] || wait "${ppids[@]}" || true
	cpu_window "$res/$name.cpu" "$res/$name.json" "${names[@]}" >"$res/$name.cpuwin.json"
	log "$setup $name: $(python3 -c 'import json,sys; r = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
print("%.0f ops/s, %.1f CPU us/op, %.2f read+write syscalls/op (all nodes)" % (r["total"]["ops_per_s"], c["sum_cpu_us_per_op"], c["sum_syscalls_per_op"]))' "$res/$name.json" "$res/$name.cpuwin.json")"
}

profile() { # profile SETUP WORKLOAD: one more run of WORKLOAD, profiling every node
	local setup=$1-$2 dir=$OUT/pprof pids=()
	[ "$2" = c ] && setup=$1 # workload c's profiles keep their names
	mkdir -p "$dir"
	"$MB" run -uri "mongodb://127.0.0.1:${PORT[a]}" -workload "$2" -threads "${THREADS%% *}" -duration "$((PROFILE_SECONDS + 3))s" \
		-records "$RECORDS" -out "$dir/$setup.json" >"$dir/$setup.txt" &
	local mpid=$!
	sleep 2
	for n in "${NODES[@]}"; do
		curl -s -o "$dir/$setup-$n.pprof" "http://${HTTP[$n]}/debug/pprof/profile?seconds=$PROFILE_SECONDS" &
		pids+=($!)
	done
	wait "${pids[@]}" || true
	wait "$mpid" || true
	for n in "${NODES[@]}"; do
		go tool pprof -top -nodecount=50 "$dir/$setup-$n.pprof" >"$dir/$setup-$n.top.txt" 2>/dev/null || true
		go tool pprof -top -cum -nodecount=70 "$dir/$setup-$n.pprof" >"$dir/$setup-$n.cum.txt" 2>/dev/null || true
	done
}

for round in $(seq "$ROUNDS"); do
	order=$BINS
	if [ $((round % 2)) = 0 ]; then order=$(printf '%s\n' $BINS | tac | tr '\n' ' '); fi
	for b in $order; do
		label=${b%%:*} BIN=${b#*:}
		log "round $round: $label, three nodes"
		start_cluster
		load "mongodb://127.0.0.1:${PORT[a]}" "$label-cluster" 1
		for w in $WORKLOADS; do for t in $THREADS; do run "$label-cluster" "$w" "$t"; done; done
		if [ "$PROFILE" = 1 ] && [ "$round" = 1 ]; then for w in $PROFILE_WORKLOADS; do profile "$label-cluster" "$w"; done; fi
		if [ "$REMOTE" = 1 ]; then
			log "round $round: $label, three nodes, the collection on node b"
			sh_eval "mongodb://127.0.0.1:${PORT[b]}" 'db.getSiblingDB("mbench").telemetry.drop()' >/dev/null
			load "mongodb://127.0.0.1:${PORT[b]}" "$label-remote" 0
			for w in $WORKLOADS; do for t in $THREADS; do run "$label-remote" "$w" "$t"; done; done
			if [ "$PROFILE" = 1 ] && [ "$round" = 1 ]; then for w in $PROFILE_WORKLOADS; do profile "$label-remote" "$w"; done; fi
		fi
		stop_all
		log "round $round: $label, one node"
		start_node a
		wait_addr a
		load "mongodb://127.0.0.1:${PORT[a]}" "$label-single" 0
		for w in $WORKLOADS; do for t in $THREADS; do run "$label-single" "$w" "$t"; done; done
		if [ "$RELAY" = 1 ]; then
			log "round $round: $label, one node behind the relay"
			start_relay
			TARGET=relay
			for w in $WORKLOADS; do for t in $THREADS; do run "$label-relay" "$w" "$t"; done; done
			TARGET=a
		fi
		stop_all
	done
done

python3 - "$OUT" "$BINS" <<'EOF' | tee "$OUT/table.md"
import glob, json, os, re, statistics, sys
out, bins = sys.argv[1], [b.split(":")[0] for b in sys.argv[2].split()]
runs = {}
for f in glob.glob(os.path.join(out, "results", "*", "*-t*-r*.json")):
    if f.endswith(".cpuwin.json"):
        continue
    m = re.match(r"(.+)-t(\d+)-r(\d+)\.json$", os.path.basename(f))
    setup = os.path.basename(os.path.dirname(f))
    cw = json.load(open(f[:-5] + ".cpuwin.json"))
    runs.setdefault((setup, m[1], int(m[2])), []).append((json.load(open(f)), cw))
med = statistics.median
def cell(b, setup, w, t):
    rs = runs.get((b + "-" + setup, w, t))
    if not rs:
        return None
    g = lambda k: med([x.get(k, 0) for _, x in rs])
    return {"ops": med([r["total"]["ops_per_s"] for r, _ in rs]), "cpu": g("sum_cpu_us_per_op"),
            "rw": g("sum_syscalls_per_op"), "sys": g("sum_all_syscalls_per_op"), "cs": g("sum_ctx_switches_per_op")}
print("Medians over rounds; CPU µs/op: the processes' utime+stime in the measured window, summed over the nodes")
print("(and the relay), per op. remote/local: a remote read's CPU over a local one's, (3C - L)/(2L);")
print("all remote: the collection on node b, read through node a; relay/local and all-remote/local: their")
print("CPU over the one node's.\n")
print("| workload | threads | binary | cluster ops/s | cluster CPU µs/op | one node ops/s | one node CPU µs/op | relay ops/s | relay CPU µs/op | all remote ops/s | all remote CPU µs/op | remote/local | relay/local | all-remote/local |")
print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
keys = sorted({(k[1], k[2]) for k in runs}, key=lambda k: (k[0] != "c", k[0], k[1]))
for w, t in keys:
    for b in bins:
        c, s, r = cell(b, "cluster", w, t), cell(b, "single", w, t), cell(b, "relay", w, t)
        if not c or not s:
            continue
        a = cell(b, "remote", w, t)
        rel = f"{r['ops']:,.0f} | {r['cpu']:.1f} | " if r else "| | "
        rem = f"{a['ops']:,.0f} | {a['cpu']:.1f} | " if a else "| | "
        rr = f"{r['cpu'] / s['cpu']:.2f}×" if r else ""
        ar = f"{a['cpu'] / s['cpu']:.2f}×" if a else ""
        print(f"| {w} | {t} | {b} | {c['ops']:,.0f} | {c['cpu']:.1f} | {s['ops']:,.0f} | {s['cpu']:.1f} | {rel}{rem}{(3 * c['cpu'] - s['cpu']) / (2 * s['cpu']):.2f}× | {rr} | {ar} |")
print("\nPer op, summed over the processes: read+write system calls (/proc/PID/io), all system calls and")
print("context switches (perf stat; blank without it). remote: (3C - L)/2, the cost of one remote read.\n")
print("| workload | threads | binary | setup | read+write syscalls | all syscalls | context switches |")
print("| --- | ---: | --- | --- | ---: | ---: | ---: |")
for w, t in keys:
    for b in bins:
        c, s = cell(b, "cluster", w, t), cell(b, "single", w, t)
        if not c or not s:
            continue
        rows = [("one node", s), ("remote (derived)", {k: (3 * c[k] - s[k]) / 2 for k in ("rw", "sys", "cs")}),
                ("all remote", cell(b, "remote", w, t)), ("relay", cell(b, "relay", w, t))]
        for name, x in rows:
            if x:
                print(f"| {w} | {t} | {b} | {name} | {x['rw']:.2f} | {x['sys']:.2f} | {x['cs']:.2f} |")
EOF
