#!/usr/bin/env bash
# List scaling, side by side: redis-server and `memoria up` on loopback, one list of N
# elements (N = 1k, 100k, 1M by default) preloaded into both, then redis-benchmark runs of
#   LINDEX l N/2           (O(offset): walks whole nodes by their counts, then one node)
#   LRANGE l N/2 N/2+9     (O(offset + 10))
#   LRANGE l 0 9           (O(10) at the head)
#   RPOPLPUSH l l          (O(1): rotates the list, so its length stays N)
# at one pipeline depth, alternating servers. Prints ops/s per size and server, the
# Memoria/Redis ratio, and each server's slowdown from the smallest size: the head/tail
# commands should stay flat from 1k to 1M, the ones at the middle slow down on both.
#
#   benches/load/list_scale.sh                       # sizes 1000,100000,1000000; P=16
#   benches/load/list_scale.sh -s 1000,1000000 -P 1 -n 200000 -k 3
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/servers.sh
source "$repo/benches/lib/servers.sh"
sizes="1000,100000,1000000"
pipeline=16
requests=300000
clients=50
repeats=3
memoria_bin="${CARGO_TARGET_DIR:-$repo/target}/release/memoria"
memoria_args="${MEMORIA_ARGS:-}"

while [[ $# -gt 0 ]]; do
    case "$1" in
        -s) sizes="$2"; shift 2 ;;
        -P) pipeline="$2"; shift 2 ;;
        -n) requests="$2"; shift 2 ;;
        -c) clients="$2"; shift 2 ;;
        -k) repeats="$2"; shift 2 ;;
        -b) memoria_bin="$2"; shift 2 ;;
        -m) memoria_args="$2"; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done

need_tools redis-server redis-benchmark redis-cli
[[ -x "$memoria_bin" ]] || { echo "memoria binary not found at $memoria_bin (cargo build --release -p memoria-host, or -b)" >&2; exit 1; }
if "$memoria_bin" up --help 2>/dev/null | grep -q -- '--in-memory'; then memoria_args="--in-memory $memoria_args"; fi

bench_workdir lscale

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --dir "$work" --logfile "$work/redis.log" &
pids+=($!)
wait_ready "$redis_port" redis $!
memoria_port=$(free_port)
while [[ "$memoria_port" == "$redis_port" ]]; do memoria_port=$(free_port); done
# shellcheck disable=SC2086
"$memoria_bin" up --port "$memoria_port" --bind 127.0.0.1 --data-dir "$work/memoria-data" --console-port "$(free_port)" $memoria_args >"$work/memoria.log" 2>&1 &
pids+=($!)
wait_ready "$memoria_port" memoria $!
declare -A port=([redis]=$redis_port [memoria]=$memoria_port)

# One run of a custom command; prints ops/s.
bench() { # server size command...
    local s=$1 n=$2; shift 2
    redis-benchmark -h 127.0.0.1 -p "${port[$s]}" -P "$pipeline" -n "$requests" -c "$clients" -r "$n" --csv "$@" 2>"$work/bench.err" \
        | tr -d '"' | awk -F, 'NR > 1 && $1 != "" { print $2; exit }'
}
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.0f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

names=("LINDEX N/2" "LRANGE N/2 N/2+9" "LRANGE 0 9" "RPOPLPUSH l l")
declare -A res
IFS=, read -r -a size_list <<<"$sizes"
for n in "${size_list[@]}"; do
    for s in redis memoria; do
        redis-cli -h 127.0.0.1 -p "${port[$s]}" flushall >/dev/null
        echo "loading $n elements into $s…" >&2
        awk -v n="$n" 'BEGIN {
            for (i = 0; i < n; i += 1000) {
                m = (n - i < 1000) ? n - i : 1000
                printf "*%d\r\n$5\r\nRPUSH\r\n$1\r\nl\r\n", 2 + m
                for (j = i; j < i + m; j++) printf "$19\r\nelement:%011d\r\n", j
            }
        }' | redis-cli -h 127.0.0.1 -p "${port[$s]}" --pipe >"$work/load.log" 2>&1 || { cat "$work/load.log" >&2; exit 1; }
        len=$(redis-cli -h 127.0.0.1 -p "${port[$s]}" llen l)
        [[ "$len" == "$n" ]] || { echo "$s holds $len elements, expected $n" >&2; exit 1; }
    done
    for ((k = 1; k <= repeats; k++)); do
        if (( k % 2 )); then order="redis memoria"; else order="memoria redis"; fi
        for s in $order; do
            mid=$((n / 2))
            a=$(bench "$s" "$n" LINDEX l "$mid")
            b=$(bench "$s" "$n" LRANGE l "$mid" "$((mid + 9))")
            c=$(bench "$s" "$n" LRANGE l 0 9)
            d=$(bench "$s" "$n" RPOPLPUSH l l)
            res[$s,$n,0]+="$a "; res[$s,$n,1]+="$b "; res[$s,$n,2]+="$c "; res[$s,$n,3]+="$d "
            printf 'run %d/%d %-7s N=%-8s LINDEX-mid %s  LRANGE-mid %s  LRANGE-head %s  RPOPLPUSH %s ops/s\n' "$k" "$repeats" "$s" "$n" "$a" "$b" "$c" "$d" >&2
        done
    done
done

echo
echo "List scaling, $(date -u +%Y-%m-%d), redis-benchmark -P $pipeline -c $clients -n $requests, ${repeats} alternating runs, median ops/s;"
echo "slowdown = ops/s at the smallest size / ops/s at this size (1.00 = flat)."
echo
echo "| command | elements | redis ops/s | memoria ops/s | memoria/redis | redis slowdown | memoria slowdown |"
echo "|---------|---------:|------------:|--------------:|--------------:|---------------:|-----------------:|"
first=${size_list[0]}
for i in 0 1 2 3; do
    # shellcheck disable=SC2086
    r0=$(median ${res[redis,$first,$i]}); m0=$(median ${res[memoria,$first,$i]})
    for n in "${size_list[@]}"; do
        # shellcheck disable=SC2086
        r=$(median ${res[redis,$n,$i]}); m=$(median ${res[memoria,$n,$i]})
        awk -v c="${names[$i]}" -v n="$n" -v r="$r" -v m="$m" -v r0="$r0" -v m0="$m0" \
            'BEGIN { printf "| %s | %d | %.0f | %.0f | %.2f× | %.2f | %.2f |\n", c, n, r, m, (r > 0 ? m / r : 0), (r > 0 ? r0 / r : 0), (m > 0 ? m0 / m : 0) }'
    done
done
