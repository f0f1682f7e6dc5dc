#!/usr/bin/env bash
# bench-replicas.sh: what replicated shards cost. Three cleave nodes of one cluster on loopback
# (one etcd, started by scripts/benchetcd), each with its --shards 1 home shard, run with
# --replicas 3 (every shard a raft group with a copy on each node) and then with --replicas 1
# (single copies), each on fresh data directories; and, for reference, one node without etcd
# (--shards 1, the raft path not on it).
#
# Per setup: wait until listShards through node a shows 3 shards, each with R healthy replicas
# (one PRIMARY and R-1 SECONDARY; no replicas field for R=1), shard mbench.telemetry on hashed
# deviceId with numInitialChunks 6 (two chunks per shard; the single node leaves it unsharded),
# load RECORDS 1 KiB documents (mbench load, 8 threads), then run each of WORKLOADS at each of
# THREADS for DURATION through node a. Each run records ops/s, p50/p99 latency (in total and
# per op type) and the CPU the servers used in mbench's measured window, summed over the three
# node processes (sampled from /proc/PID/stat every 50 ms, interpolated to the window that
# mbench's result gives), per op. A markdown table follows: medians over ROUNDS, with the
# ratio R=3/R=1 of the 1-thread p50 (in total, and of each op type).
#
# With PROFILE (on by default), once R=3's runs of the first round are done, one more run of
# each PROFILE_RUNS (workload:threads; default a:32) takes a CPU profile (PROFILE_SECONDS) of
# every node at once, through --pprof, into $OUT/pprof/R3-WORKLOAD-tTHREADS-node-N.pprof; the
# node leading most shards is named in the table (a tie goes to the first in a, b, c order),
# and `go tool pprof -top` (flat and -cum) of each profile lands beside it. The measured runs
# are not profiled.
#
# Usage: scripts/bench-replicas.sh [-short]   -short: 10,000 records, 3 s per run, to try it
#   env: OUT (/tmp/cleave-bench-replicas), ROUNDS (1), RECORDS (100000), DURATION (10s),
#        WORKLOADS ("a insert"), THREADS ("1 32"), REPLICAS ("3 1"), SINGLE (1: also the
#        single node; 0 skips it), SINGLE_THREADS (THREADS), INDEXES (none: mbench -index,
#        e.g. readingTime,metricValue,deviceId+readingTime), PROFILE (1; 0 skips it),
#        PROFILE_RUNS ("a:32"), PROFILE_SECONDS (10), CLEAVE (a built cleave to measure
#        instead of this worktree's), MONGOSH (node_modules/.bin/mongosh)
# Example: MBENCH_SRC=../shared/bench ROUNDS=2 scripts/bench-replicas.sh   (results, logs and
# the table, table.md, in OUT)
# Needs: go, python3, mongosh (npm ci), and mbench: MBENCH_SRC (a checkout of the harness) or
# MBENCH (scripts/mbench.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/mbench.sh
OUT=${OUT:-/tmp/cleave-bench-replicas}
ROUNDS=${ROUNDS:-1}
RECORDS=${RECORDS:-100000}
DURATION=${DURATION:-10s}
WORKLOADS=${WORKLOADS:-a insert}
THREADS=${THREADS:-1 32}
REPLICAS=${REPLICAS:-3 1}
SINGLE=${SINGLE:-1}
SINGLE_THREADS=${SINGLE_THREADS:-$THREADS}
INDEXES=${INDEXES:-}
PROFILE=${PROFILE:-1}
PROFILE_SECONDS=${PROFILE_SECONDS:-10}
PROFILE_RUNS=${PROFILE_RUNS:-a:32}
MONGOSH=${MONGOSH:-$PWD/node_modules/.bin/mongosh}
WARMUP=1s
if [ "${1:-}" = "-short" ]; then
	RECORDS=10000
	DURATION=3s
	PROFILE_SECONDS=3
fi
NODES=(a b c)

rm -rf "$OUT" && mkdir -p "$OUT/bin" "$OUT/results"
build_mbench "$OUT/bin/mbench"
if [ -n "${CLEAVE:-}" ]; then
	cp "$CLEAVE" "$OUT/bin/cleave"
else
	go build -o "$OUT/bin/cleave" ./cmd/cleave
fi
go build -o "$OUT/bin/benchetcd" scripts/benchetcd/main.go
MB=$OUT/bin/mbench

freeport() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
log() { echo "== $*" >&2; }

declare -A PID HTTP PORT
EPID=
ETCD=
cleanup() {
	for n in "${!PID[@]}"; do kill "${PID[$n]}" 2>/dev/null || true; done
	[ -n "$EPID" ] && kill "$EPID" 2>/dev/null
	true
}
trap cleanup EXIT

start_etcd() { # a fresh one-member etcd; sets EPID and ETCD
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

start_node() { # start_node NAME ARGS...: a node on fresh data; sets PID, PORT, HTTP of NAME
	local n=$1
	shift
	rm -rf "$OUT/data-$n" "$OUT/addr-$n"
	PORT[$n]=$(freeport)
	HTTP[$n]=127.0.0.1:$(freeport)
	"$OUT/bin/cleave" --dir "$OUT/data-$n" --listen 127.0.0.1:${PORT[$n]} --shards 1 --log-level warn \
		--http-addr "${HTTP[$n]}" --pprof --addr-file "$OUT/addr-$n" "$@" >>"$OUT/node-$n.log" 2>&1 &
	PID[$n]=$!
}

wait_addr() { # wait_addr NAME: until the node listens
	for _ in $(seq 600); do
		[ -s "$OUT/addr-$1" ] && return
		kill -0 "${PID[$1]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "node $1 did not start, see $OUT/node-$1.log" >&2
	exit 1
}

stop_all() { # stop every node (SIGTERM), then etcd, and delete the data (a run leaves gigabytes)
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

sh_eval() { # sh_eval URI JS: mongosh's output of JS
	"$MONGOSH" --quiet "$1" --eval "$2"
}

# The JS that prints "ok" once listShards shows 3 shards each with $1 healthy replicas, else
# what it sees; and the JS that prints the node leading most shards.
ready_js() {
	cat <<EOF
const r = db.adminCommand({listShards: 1});
const want = $1;
const ok = r.ok === 1 && r.shards.length === 3 && r.shards.every(s => want === 1
	? !s.replicas
	: s.replicas && s.replicas.length === want &&
	  s.replicas.filter(x => x.stateStr === "PRIMARY").length === 1 &&
	  s.replicas.every(x => x.stateStr === "PRIMARY" || x.stateStr === "SECONDARY"));
print(ok ? "ok" : JSON.stringify(r.shards ? r.shards.map(s => [s._id, (s.replicas || []).map(x => x.node + ":" + x.stateStr)]) : r));
EOF
}
LEADER_JS='const c = {a: 0, b: 0, c: 0};
db.adminCommand({listShards: 1}).shards.forEach(s => (s.replicas || []).forEach(x => { if (x.stateStr === "PRIMARY") c[x.node]++; }));
let best = "a"; for (const n of ["a", "b", "c"]) if (c[n] > c[best]) best = n;
print(best + " " + JSON.stringify(c));'

start_cluster() { # start_cluster R: etcd and nodes a, b, c with --replicas R, until healthy
	local r=$1 uri seen=
	start_etcd
	for n in "${NODES[@]}"; do
		start_node "$n" --etcd "$ETCD" --node-name "$n" --replicas "$r"
	done
	for n in "${NODES[@]}"; do wait_addr "$n"; done
	uri=mongodb://127.0.0.1:${PORT[a]}
	for _ in $(seq 120); do
		seen=$(sh_eval "$uri" "$(ready_js "$r")" 2>&1 || true)
		if [ "$seen" = ok ]; then
			log "R=$r: 3 shards, each with $r healthy replica(s)"
			return
		fi
		sleep 1
	done
	echo "R=$r: the cluster did not become healthy in 120 s; listShards: $seen" >&2
	exit 1
}

load() { # load URI SETUP SHARDED
	local uri=$1 setup=$2 idx=()
	[ -n "$INDEXES" ] && idx=(-index "$INDEXES")
	if [ "$3" = 1 ]; then
		sh_eval "$uri" 'const r = db.adminCommand({shardCollection: "mbench.telemetry", key: {deviceId: "hashed"}, numInitialChunks: 6});
if (r.ok !== 1) { print(JSON.stringify(r)); quit(1); }
print("chunks per shard: " + JSON.stringify(db.getSiblingDB("config").chunks.aggregate([{$group: {_id: "$shard", n: {$sum: 1}}}, {$sort: {_id: 1}}]).toArray()));' \
			>"$OUT/results/$setup-shard.txt"
		log "$setup: $(cat "$OUT/results/$setup-shard.txt")"
	fi
	"$MB" run -uri "$uri" -workload load -records "$RECORDS" -threads 8 -drop=false "${idx[@]}" \
		-out "$OUT/results/$setup-load-r$round.json" >"$OUT/results/$setup-load-r$round.txt"
	log "$setup: loaded $RECORDS records: $(awk '/^ +load /{print $3" batches/s, p50 "$7}' "$OUT/results/$setup-load-r$round.txt")"
}

# $OUT/bin/cpu_sample.py OUTFILE PID... (run in the background): every 50 ms, the wall time and
# each process's utime+stime in seconds, one line each, until killed.
cat >"$OUT/bin/cpu_sample.py" <<'EOF'
import os, sys, time
out, pids = sys.argv[1], sys.argv[2:]
tck = os.sysconf("SC_CLK_TCK")
def cpu(p):
    with open(f"/proc/{p}/stat") as f:
        fs = f.read().rsplit(")", 1)[1].split()
    return (int(fs[11]) + int(fs[12])) / tck  # utime, stime (fields 14, 15)
with open(out, "w", buffering=1) as f:
    while True:
        f.write(" ".join([repr(time.time())] + [repr(cpu(p)) for p in pids]) + "\n")
        time.sleep(0.05)
EOF

# cpu_window SAMPLES RESULT NAMES...: the CPU seconds each process used in the result's
# measured window ([date + warm-up, + duration_s]), interpolated between samples, as JSON.
cpu_window() {
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
rows = [x for x in rows if len(x) == len(names) + 1]
ts = [x[0] for x in rows]
def at(t, i):
    k = bisect.bisect_left(ts, t)
    if k <= 0: return rows[0][i]
    if k >= len(rows): return rows[-1][i]
    a, b = rows[k - 1], rows[k]
    return a[i] + (b[i] - a[i]) * (t - a[0]) / (b[0] - a[0])
cov = ts[0] <= lo and ts[-1] >= hi
cpu = {n: at(hi, i + 1) - at(lo, i + 1) for i, n in enumerate(names)}
ops = r["total"]["ops"]
print(json.dumps({"cpu_s": cpu, "ops": ops, "covered": cov,
                  "cpu_us_per_op": {n: (c * 1e6 / ops if ops else 0) for n, c in cpu.items()},
                  "sum_cpu_us_per_op": sum(cpu.values()) * 1e6 / ops if ops else 0}))
EOF
}

run() { # run SETUP WORKLOAD THREADS: one measured run through node a
	local setup=$1 w=$2 t=$3 name=$2-t$3-r$round names=() pids=() spid
	local res=$OUT/results/$setup
	mkdir -p "$res"
	for n in "${NODES[@]}"; do
		[ -n "${PID[$n]:-}" ] && names+=("$n") && pids+=("${PID[$n]}")
	done
	python3 "$OUT/bin/cpu_sample.py" "$res/$name.cpu" "${pids[@]}" &
	spid=$!
	"$MB" run -uri "mongodb://127.0.0.1:${PORT[a]}" -workload "$w" -threads "$t" -duration "$DURATION" \
		-warmup "$WARMUP" -records "$RECORDS" -pid "${PID[a]}" -label "$setup-$name" -out "$res/$name.json" >"$res/$name.txt"
	sleep 0.2 # a sample after the window's end (mbench exits right after it)
	kill "$spid" && wait "$spid" 2>/dev/null || true
	cpu_window "$res/$name.cpu" "$res/$name.json" "${names[@]}" >"$res/$name.cpuwin.json"
	log "$setup $name: $(awk '/^ +total |^ +insertMany /{print $3" ops/s, p50 "$7", p99 "$9}' "$res/$name.txt"), \
$(python3 -c 'import json,sys; print("%.0f CPU us/op (all nodes)" % json.load(open(sys.argv[1]))["sum_cpu_us_per_op"])' "$res/$name.cpuwin.json")"
}

profile() { # profile SETUP WORKLOAD THREADS: one more run, profiling every node meanwhile
	local setup=$1 w=$2 t=$3 dir=$OUT/pprof lead pids=() secs name
	name=$setup-$w-t$t
	mkdir -p "$dir"
	lead=$(sh_eval "mongodb://127.0.0.1:${PORT[a]}" "$LEADER_JS")
	echo "$lead" >"$dir/$setup-leader.txt"
	log "$setup: leading most shards: node ${lead%% *} (PRIMARYs per node: ${lead#* })"
	secs=$((PROFILE_SECONDS + 3))
	"$MB" run -uri "mongodb://127.0.0.1:${PORT[a]}" -workload "$w" -threads "$t" -duration "${secs}s" -records "$RECORDS" \
		-pid "${PID[a]}" -label "$name-profiled" -out "$dir/$name.json" >"$dir/$name.txt" &
	local mpid=$!
	sleep 2
	for n in "${NODES[@]}"; do
		curl -s -o "$dir/$name-node-$n.pprof" "http://${HTTP[$n]}/debug/pprof/profile?seconds=$PROFILE_SECONDS" &
		pids+=($!)
	done
	wait "${pids[@]}" || true
	wait "$mpid" || true
	for n in "${NODES[@]}"; do
		go tool pprof -top -nodecount=60 "$dir/$name-node-$n.pprof" >"$dir/$name-node-$n.top.txt" 2>/dev/null || true
		go tool pprof -top -cum -nodecount=80 "$dir/$name-node-$n.pprof" >"$dir/$name-node-$n.cum.txt" 2>/dev/null || true
	done
	log "$name: profiled ($(awk '/^ +total |^ +insertMany /{print $3" ops/s, p50 "$7}' "$dir/$name.txt")), profiles in $dir"
}

for round in $(seq "$ROUNDS"); do
	order=$REPLICAS
	if [ $((round % 2)) = 0 ]; then # every other round runs the setups in reverse order
		order=$(printf '%s\n' $REPLICAS | tac | tr '\n' ' ')
	fi
	for r in $order; do
		setup=R$r
		log "round $round: $setup"
		start_cluster "$r"
		load "mongodb://127.0.0.1:${PORT[a]}" "$setup" 1
		for w in $WORKLOADS; do
			for t in $THREADS; do run "$setup" "$w" "$t"; done
		done
		if [ "$PROFILE" = 1 ] && [ "$r" = 3 ] && [ "$round" = 1 ]; then
			for p in $PROFILE_RUNS; do profile "$setup" "${p%%:*}" "${p#*:}"; done
		fi
		stop_all
	done
	if [ "$SINGLE" = 1 ]; then
		log "round $round: single node (--shards 1, no etcd)"
		start_node a
		wait_addr a
		load "mongodb://127.0.0.1:${PORT[a]}" single 0
		for w in $WORKLOADS; do
			for t in $SINGLE_THREADS; do run single "$w" "$t"; done
		done
		stop_all
	fi
done

# The table: medians over the rounds of every setup's runs.
python3 - "$OUT" "$REPLICAS" <<'EOF' | tee "$OUT/table.md"
import glob, json, os, re, statistics, sys
out, replicas = sys.argv[1], sys.argv[2].split()
runs = {}  # (setup, workload, threads) -> [(result, cpuwin)]
for f in glob.glob(os.path.join(out, "results", "*", "*-t*-r*.json")):
    if f.endswith(".cpuwin.json"):
        continue
    m = re.match(r"(.+)-t(\d+)-r(\d+)\.json$", os.path.basename(f))
    setup = os.path.basename(os.path.dirname(f))
    cw = json.load(open(f[:-5] + ".cpuwin.json"))
    runs.setdefault((setup, m[1], int(m[2])), []).append((json.load(open(f)), cw))
med = statistics.median
def op(res, name):
    if name == "total":
        return res["total"]
    return next((o for o in res["ops"] if o["name"] == name), None)
def foreign(r, c):  # cores busy on the host in the window besides the nodes and mbench
    h = r.get("host_cpu") or {}
    return h.get("busy_cores", 0) - (r.get("client") or {}).get("cores", 0) - sum(c["cpu_s"].values()) / r["duration_s"]
def fmt_us(us):
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} µs"
setups = [f"R{r}" for r in replicas] + (["single"] if any(k[0] == "single" for k in runs) else [])
label = {"single": "single node"} | {f"R{r}": f"R={r}" for r in replicas}
nrounds = max((len(v) for v in runs.values()), default=0)
print(f"Medians of {nrounds} round(s); CPU µs/op is the servers' utime+stime in the measured window, summed over "
      "the node processes (one for the single node), per op (an insert op is one insertMany of 100 documents). "
      "Other cores: the host's busy cores in the window less the nodes' and mbench's (etcd, softirqs, and "
      "whatever else ran: above ~0.1 the run shared the machine, and its latencies suffer).\n")
print("| workload | threads | setup | ops/s | p50 | p99 | CPU µs/op (sum) | per node a / b / c | errors | other cores |")
print("| --- | ---: | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
ws = sorted({k[1] for k in runs}, key=lambda w: (w != "a", w))
for w in ws:
    for t in sorted({k[2] for k in runs if k[1] == w}):
        for s in setups:
            rs = runs.get((s, w, t))
            if not rs:
                continue
            tot = [r["total"] for r, _ in rs]
            per = [c["cpu_us_per_op"] for _, c in rs]
            nodes = " / ".join(f"{med([p[n] for p in per]):.0f}" for n in ["a", "b", "c"] if n in per[0])
            errs = med([sum((o.get("errors") or {}).values()) for o in tot])
            other = med([foreign(r, c) for r, c in rs])
            print(f"| {w} | {t} | {label[s]} | {med([o['ops_per_s'] for o in tot]):,.0f} | "
                  f"{fmt_us(med([o['p50_us'] for o in tot]))} | {fmt_us(med([o['p99_us'] for o in tot]))} | "
                  f"{med([c['sum_cpu_us_per_op'] for _, c in rs]):,.0f} | {nodes} | {errs:g} | {other:.2f} |")
print("\nPer op type (workload a mixes reads, which replication leaves alone, and updates):\n")
print("| workload | threads | setup | op | ops/s | p50 | p99 |")
print("| --- | ---: | --- | --- | ---: | ---: | ---: |")
for w in ws:
    for t in sorted({k[2] for k in runs if k[1] == w}):
        for s in setups:
            rs = runs.get((s, w, t))
            if not rs:
                continue
            for name in [o["name"] for o in rs[0][0]["ops"]]:
                os_ = [op(r, name) for r, _ in rs]
                print(f"| {w} | {t} | {label[s]} | {name} | {med([o['ops_per_s'] for o in os_]):,.0f} | "
                      f"{fmt_us(med([o['p50_us'] for o in os_]))} | {fmt_us(med([o['p99_us'] for o in os_]))} |")
if "3" in replicas and "1" in replicas:
    print("\nR=3 / R=1, 1-thread p50 latency (goal: ≤ 2×):\n")
    print("| workload | op | R=1 p50 | R=3 p50 | ratio |")
    print("| --- | --- | ---: | ---: | ---: |")
    for w in ws:
        r1, r3 = runs.get(("R1", w, 1)), runs.get(("R3", w, 1))
        if not r1 or not r3:
            continue
        for name in ["total"] + ([o["name"] for o in r1[0][0]["ops"]] if len(r1[0][0]["ops"]) > 1 else []):
            a = med([op(r, name)["p50_us"] for r, _ in r1])
            b = med([op(r, name)["p50_us"] for r, _ in r3])
            print(f"| {w} | {name} | {fmt_us(a)} | {fmt_us(b)} | {b / a:.2f}× |")
lead = os.path.join(out, "pprof", "R3-leader.txt")
if os.path.exists(lead):
    print(f"\nProfiles of R=3 (one run each of PROFILE_RUNS, every node): {os.path.join(out, 'pprof')}; leading most shards: "
          f"node {open(lead).read().split()[0]}")
EOF
