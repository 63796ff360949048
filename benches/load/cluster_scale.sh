#!/usr/bin/env bash
# Scaling across shards: SET throughput of `memoria up --in-memory --shards N` (one
# process, one engine thread per shard, cluster mode) against `--shards 1`, driven by
# redis-benchmark (`--cluster` for N > 1: it reads CLUSTER NODES and sends each key to
# its shard), alternating and repeating; prints the medians, the ratio and the ratio per
# shard.
#
#   benches/load/cluster_scale.sh                   # SET, P=16, 2 shards, 50 clients, 5 repeats
#   benches/load/cluster_scale.sh -S 3 -P 1 -k 3
#
# The machine's cores bound the ratio: N shards need N cores plus the benchmark's own.
set -euo pipefail

shards=2
pipeline=16
clients=50
requests=1000000
repeats=5
threads=2
test=set
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
memoria_bin="${CARGO_TARGET_DIR:-$repo/target}/release/memoria"

while getopts "S:P:c:n:k:T:t:b:h" o; do
    case $o in
        S) shards=$OPTARG ;;
        P) pipeline=$OPTARG ;;
        c) clients=$OPTARG ;;
        n) requests=$OPTARG ;;
        k) repeats=$OPTARG ;;
        T) threads=$OPTARG ;;
        t) test=$OPTARG ;;
        b) memoria_bin=$OPTARG ;;
        *) sed -n '2,12p' "$0"; echo "options: -S shards -P pipeline -c clients -n requests -k repeats -T benchmark threads -t test -b memoria binary"; exit 0 ;;
    esac
done
for tool in redis-benchmark redis-cli; do
    command -v $tool >/dev/null || { echo "$tool is missing (apt-get install redis-tools)" >&2; exit 1; }
done
[[ -x "$memoria_bin" ]] || { echo "no memoria binary at $memoria_bin (cargo build --release -p memoria-host)" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_base() { # a run of $1 free ports below the ephemeral range
    python3 - "$1" <<'EOF'
import socket, sys, random
n = int(sys.argv[1])
for _ in range(500):
    b = random.randint(20000, 30000)
    try:
        socks = []
        for i in range(n):
            s = socket.socket(); s.bind(("127.0.0.1", b + i)); socks.append(s)
        print(b); break
    except OSError:
        pass
    finally:
        for s in socks: s.close()
EOF
}

p1=$(free_base 1)
"$memoria_bin" up --in-memory --shards 1 --port "$p1" --data-dir "$work/one" >"$work/one.log" 2>&1 &
pids+=($!)
pn=$(free_base "$shards")
"$memoria_bin" up --in-memory --shards "$shards" --port "$pn" --data-dir "$work/many" >"$work/many.log" 2>&1 &
pids+=($!)
for p in "$p1" "$pn"; do
    for _ in $(seq 100); do redis-cli -p "$p" PING >/dev/null 2>&1 && break; sleep 0.1; done
done

bench() { # port extra-args -> ops/s
    redis-benchmark -h 127.0.0.1 -p "$1" $2 -t "$test" -P "$pipeline" -n "$requests" -c "$clients" \
        -r 1000000 -d 100 --threads "$threads" --csv 2>"$work/err" | awk -F, '$1 ~ /^"[A-Z]/ && $1 != "\"test\"" {gsub(/"/,"",$2); print $2; exit}'
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

one=() many=()
for i in $(seq "$repeats"); do
    one+=("$(bench "$p1" "")")
    many+=("$(bench "$pn" "--cluster")")
    echo "run $i: 1 shard ${one[-1]} ops/s, $shards shards ${many[-1]} ops/s" >&2
done
m1=$(printf '%s\n' "${one[@]}" | median)
mn=$(printf '%s\n' "${many[@]}" | median)
echo
echo "| test | pipeline | 1 shard ops/s | $shards shards ops/s | ratio | per shard |"
echo "| --- | --- | --- | --- | --- | --- |"
awk -v t="$test" -v p="$pipeline" -v a="$m1" -v b="$mn" -v n="$shards" 'BEGIN { printf "| %s | %s | %.0f | %.0f | %.2fx | %.2fx |\n", toupper(t), p, a, b, b/a, b/a/n }'
echo
echo "($(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); median of $repeats; redis-benchmark --threads $threads, $clients clients)"
