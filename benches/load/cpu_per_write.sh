#!/usr/bin/env bash
# CPU time per durable write, side by side: redis-server with an AOF fsynced on every
# write and `memoria up` with its log (SQLite), both on loopback, driven by the same
# redis-benchmark SET load. Reads each server process's user+system CPU time from /proc
# before and after the load and prints microseconds of CPU per SET: for Memoria per
# process (the supervisor with its log service, the primary, the replica) and in total,
# and the total's ratio to redis-server's. On a machine with few cores, throughput under
# load follows this total, whatever the disk does.
#
#   benches/load/cpu_per_write.sh                  # 500 clients, P16, 4M SETs, 3 rounds
#   benches/load/cpu_per_write.sh -P 1 -n 500000 -k 1
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/servers.sh
source "$repo/benches/lib/servers.sh"
pipeline=16
requests=4000000
clients=500
keyspace=100000
repeats=3
memoria_bin="${CARGO_TARGET_DIR:-$repo/target}/release/memoria"

while [[ $# -gt 0 ]]; do
    case "$1" in
        -P) pipeline="$2"; shift 2 ;;
        -n) requests="$2"; shift 2 ;;
        -c) clients="$2"; shift 2 ;;
        -r) keyspace="$2"; shift 2 ;;
        -k) repeats="$2"; shift 2 ;;
        -b) memoria_bin="$2"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done

need_tools redis-server redis-benchmark redis-cli python3
[[ -x "$memoria_bin" ]] || { echo "memoria binary not found at $memoria_bin (cargo build --release -p memoria-host, or -b)" >&2; exit 1; }

bench_workdir cpu
hz=$(getconf CLK_TCK)

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly yes --appendfsync always \
    --daemonize no --dir "$work" --logfile "$work/redis.log" &
redis_pid=$!
pids+=("$redis_pid")
wait_ready "$redis_port" redis "$redis_pid"

up_port=$(free_port)
"$memoria_bin" up --port "$up_port" --bind 127.0.0.1 --data-dir "$work/memoria-data" --no-console >"$work/memoria.log" 2>&1 &
sup_pid=$!
pids+=("$sup_pid")
wait_ready "$up_port" memoria "$sup_pid"
# The primary's pid, then the replicas', from cluster.json once every node has its role.
nodes=""
for _ in $(seq 100); do
    nodes=$(python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))
p = [n for n in c['nodes'] if n['role'] == 'primary']
if p and all(n['role'] in ('primary', 'replica') for n in c['nodes']):
    print(p[0]['port'], p[0]['pid'], *[n['pid'] for n in c['nodes'] if n['role'] == 'replica'])" "$work/memoria-data/cluster.json" 2>/dev/null || true)
    [[ -n "$nodes" ]] && break
    sleep 0.1
done
[[ -n "$nodes" ]] || { echo "memoria up elected no primary:" >&2; cat "$work/memoria.log" >&2; exit 1; }
read -r _ primary_pid replica_pids <<<"$nodes"

load() { # port
    redis-benchmark -h 127.0.0.1 -p "$1" -t set -c "$clients" -P "$pipeline" -d 100 -r "$keyspace" -n "$requests" --csv 2>/dev/null \
        | tr -d '"' | awk -F, 'NR > 1 && $1 == "SET" { print $2; exit }'
}
# One load run against port; prints "ops/s" and each pid's CPU ticks spent meanwhile.
measure() { # port pids...
    local port=$1; shift
    local before=() p i=0 out
    for p in "$@"; do before+=("$(cpu_ticks "$p")"); done
    out=$(load "$port")
    for p in "$@"; do
        out="$out $(($(cpu_ticks "$p") - before[i]))"
        i=$((i + 1))
    done
    echo "$out"
}

# Warm both (keys preloaded, JIT and caches settled).
load "$redis_port" >/dev/null
load "$up_port" >/dev/null

rows=()
for round in $(seq "$repeats"); do
    r=$(measure "$redis_port" "$redis_pid")
    # shellcheck disable=SC2086
    # At the stable endpoint, the port users use: it hands each connection to the primary.
    m=$(measure "$up_port" "$sup_pid" "$primary_pid" $replica_pids)
    echo "round $round/$repeats (ops/s, then CPU ticks per process)  redis: $r  memoria: $m" >&2
    rows+=("$r|$m")
done

python3 - "$clients" "$pipeline" "$requests" "$hz" "${rows[@]}" <<'EOF'
import statistics, sys
clients, pipeline, requests, hz = sys.argv[1:5]
# Each side: ops/s, then CPU ticks per process -> microseconds per request.
us = 1e6 / int(hz) / int(requests)
rounds = [[[float(x) * (us if i else 1) for i, x in enumerate(side.split())] for side in r.split("|")] for r in sys.argv[5:]]
med = lambda xs: statistics.median(xs)
r_ops = med([r[0][0] for r in rounds]); r_cpu = med([r[0][1] for r in rounds])
m_ops = med([r[1][0] for r in rounds])
parts = len(rounds[0][1]) - 1
m_each = [med([r[1][1 + i] for r in rounds]) for i in range(parts)]
m_total = med([sum(r[1][1:]) for r in rounds])
names = ["supervisor (log service on SQLite)", "primary node"] + [f"replica node {i + 1}" for i in range(parts - 2)]
print(f"CPU per durable SET: redis-benchmark -t set -c {clients} -P {pipeline} -d 100, {requests} requests, median of {len(rounds)} rounds\n")
print("| server | process | ops/s | CPU us per SET |")
print("| --- | --- | ---: | ---: |")
print(f"| redis-server --appendfsync always | redis-server | {r_ops:,.0f} | {r_cpu:.2f} |")
for n, v in zip(names, m_each):
    print(f"| memoria up | {n} | {m_ops:,.0f} | {v:.2f} |")
print(f"| memoria up | all processes | {m_ops:,.0f} | {m_total:.2f} |")
print(f"\nMemoria/Redis: {m_ops / r_ops:.2f}x the throughput, {m_total / r_cpu:.2f}x the CPU per write")
EOF
