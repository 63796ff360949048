#!/usr/bin/env bash
# Impact of snapshots on the serving primary (issue #6, acceptance 3), side by side with
# redis-server's BGSAVE:
#
#  memoria: `memoria up --single-process` (log embedded, SQLite), N keys preloaded; GET and
#    SET throughput and p99 (redis-benchmark) without snapshots, then with `memoria
#    snapshot --schedule` taking snapshots back to back in its own process (nice 19,
#    SCHED_IDLE and its default --cpu-share, as the scheduler of `memoria up` runs them):
#    K runs without, K with (one scheduler throughout), K without again; medians. A
#    trickle of writes (~100/s, in every phase) keeps every snapshot from being a no-op
#    during GETs.
#  redis-server: the same keys; SET/GET throughput, p99 and max latency without, then with
#    BGSAVE back to back; the fork time and the memory of the server and its fork child
#    (PSS, so shared copy-on-write pages are counted once).
#
#  CPUs: the saving work runs off the serving CPUs, as it runs off the serving node in
#  production. The first half of the CPUs serves (the node, redis-benchmark and the
#  trickle), the rest saves: memoria's snapshot process is pinned there, and redis-server
#  forks its BGSAVE child there (`bgsave_cpulist`). As a control, each round also runs
#  the load while a busy loop holds the saving CPUs: on a VM whose vCPUs share a physical
#  core, any work there slows the serving CPU, whatever it is. -u shares every CPU between
#  both instead (on a small machine the snapshot process then takes its CPU from the
#  primary) and skips the control.
#
#  -S STORE puts the snapshots elsewhere (a directory or an object_store URL). By default
#  they go under the data directory, on the disk whose fsyncs acknowledge the SETs: the
#  snapshot's own writes and fsyncs then share that disk's journal, which an off-box
#  object store would not.
#
#  -X ARGS adds arguments to the snapshot scheduler (e.g. -X --snapshot-no-truncate, to
#  tell the snapshots' own cost from the log truncation's).
#
#  -M measures memoria alone (no redis-server part). Each run's figures go to stderr.
#
#   benches/snapshot/impact.sh [-r KEYS] [-n REQUESTS] [-k REPEATS] [-c CLIENTS] [-P PIPELINE] [-u] [-M] [-S STORE] [-X ARGS]
set -euo pipefail

keys=1000000
requests=200000
repeats=3
clients=50
pipeline=1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
memoria_bin="${CARGO_TARGET_DIR:-$repo/target}/release/memoria"
split=1
store=""
extra_sched=""
with_redis=1
while getopts "r:n:k:c:P:b:uMS:X:h" o; do
    case $o in
        r) keys=$OPTARG ;; n) requests=$OPTARG ;; k) repeats=$OPTARG ;; c) clients=$OPTARG ;;
        P) pipeline=$OPTARG ;; b) memoria_bin=$OPTARG ;; u) split=0 ;; M) with_redis=0 ;; S) store=$OPTARG ;; X) extra_sched=$OPTARG ;;
        *) sed -n 2,34p "$0"; exit 1 ;;
    esac
done
for tool in redis-server redis-benchmark redis-cli; do
    command -v $tool >/dev/null || { echo "$tool is required (apt-get install redis-server redis-tools)" >&2; exit 1; }
done
[[ -x "$memoria_bin" ]] || { echo "no memoria binary at $memoria_bin (cargo build --release -p memoria-host)" >&2; exit 1; }

ncpu=$(nproc)
if (( split )) && (( ncpu < 2 )); then
    echo "one CPU: nothing to split, every process shares it (as with -u)" >&2; split=0
fi
if (( split )); then
    command -v taskset >/dev/null || { echo "taskset is required to split the CPUs (apt-get install util-linux), or pass -u" >&2; exit 1; }
    serve_cpus="0-$((ncpu / 2 - 1))"; save_cpus="$((ncpu / 2))-$((ncpu - 1))"
    on_serve="taskset -c $serve_cpus"; on_save="taskset -c $save_cpus"
    cpus_note="serving on CPUs $serve_cpus (node, redis-benchmark, trickle), saving on CPUs $save_cpus"
else
    on_serve=""; on_save=""
    cpus_note="every process on every CPU"
fi

work=$(mktemp -d /tmp/memoria-snapshot-impact.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() { # port
    for _ in $(seq 1 600); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
    echo "server on port $1 did not start" >&2; exit 1
}
preload() { # port
    awk -v n="$keys" 'BEGIN {
        v = sprintf("%*s", 100, ""); gsub(/ /, "x", v);
        for (i = 0; i < n; i++) printf "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$100\r\n%s\r\n", i, v
    }' | redis-cli -p "$1" --pipe >"$work/preload.log" 2>&1
}
# "rps p99 max" of one redis-benchmark run (also on stderr, with `what` in front)
bench() { # port test [what]
    local r
    r=$($on_serve redis-benchmark -p "$1" -t "$2" -P "$pipeline" -n "$requests" -c "$clients" -d 100 -r "$keys" --csv 2>/dev/null \
        | tr -d '"' | awk -F, 'NR > 1 && $1 != "" { print $2, $7, $8; exit }')
    echo "  ${3:-run} $2: $r ops/s, p99, max ms" >&2
    echo "$r"
}
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
imedian() { median "$@" | awk '{ printf "%d\n", $1 }'; }
pss_kb() { # pids... -> total PSS in kB
    local t=0 p v
    for p in "$@"; do
        v=$(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
        t=$((t + ${v:-0}))
    done
    echo $t
}
# "rps p99 max" of one run while a busy loop holds the saving CPUs ("- - -" without a split)
bench_busy() { # port test
    (( split )) || { echo "- - -"; return; }
    $on_save sh -c 'while :; do :; done' &
    local spin=$!
    bench "$1" "$2" "busy loop"
    kill $spin; wait $spin 2>/dev/null || true
}
trickle() { # port: ~100 writes/s until killed
    while true; do $on_serve redis-cli -p "$1" set "trickle:$((RANDOM % 1000))" "$RANDOM" >/dev/null 2>&1 || true; sleep 0.01; done
}

# As the scheduler of `memoria up` runs a snapshot: nice 19 and SCHED_IDLE.
idle="nice -n 19"
command -v chrt >/dev/null && idle="chrt --idle 0 nice -n 19"

# ---- memoria ----
mport=$(free_port)
$on_serve "$memoria_bin" up --single-process --no-snapshots --port "$mport" --data-dir "$work/m" >"$work/memoria.log" 2>&1 &
mpid=$!; pids+=($mpid)
wait_ready "$mport"
echo "preloading $keys keys into memoria…" >&2
preload "$mport"
trickle "$mport" & pids+=($!)
# A first snapshot, so every later one starts from a snapshot as in steady state.
store_args=()
[[ -n $store ]] && store_args=(--store "$store")
$on_save "$memoria_bin" snapshot --data-dir "$work/m" "${store_args[@]}" >"$work/first-snapshot.log" 2>&1
declare -A res
# Without snapshots before and after the runs with them (the median of both brackets any
# drift of the machine), with one scheduler running through all the runs with snapshots:
# each snapshot takes several runs' time at the snapshot process's --cpu-share, and a
# scheduler restarted per run would never publish one.
for round in $(seq 1 "$repeats"); do
    for t in get set; do
        res[$t,off]+="$(bench "$mport" $t "memoria, none") "$'\n'
        res[$t,busy]+="$(bench_busy "$mport" $t) "$'\n'
    done
done
$on_save $idle "$memoria_bin" snapshot --data-dir "$work/m" "${store_args[@]}" --schedule --poll-ms 50 \
    --snapshot-growth-ratio 0 --snapshot-min-log-bytes 0 --snapshot-min-entries 1 --snapshot-min-interval-ms 0 --snapshot-keep 2 $extra_sched \
    >"$work/sched.log" 2>&1 &
spid=$!
sleep 1 # the snapshot process is busy from here on
m0=$(pss_kb "$mpid")
( while kill -0 $spid 2>/dev/null; do pss_kb $spid; sleep 0.2; done ) >"$work/snap-pss" &
for round in $(seq 1 "$repeats"); do
    for t in get set; do
        res[$t,on]+="$(bench "$mport" $t "memoria, snapshots") "$'\n'
    done
done
m1=$(pss_kb "$mpid")
snap_cpu=$(awk '{ print ($14 + $15) / 100 }' "/proc/$spid/stat" 2>/dev/null || echo 0)
kill $spid; wait $spid 2>/dev/null || true
snapshot_runs=$(grep -c "snapshot published" "$work/sched.log" || true)
peak_snap_pss=$(sort -n "$work/snap-pss" | tail -1); peak_snap_pss=${peak_snap_pss:-0}
res[mem]="$m0 $m1"$'\n'
for round in $(seq 1 "$repeats"); do
    for t in get set; do
        res[$t,off]+="$(bench "$mport" $t "memoria, none") "$'\n'
    done
done
col() { printf '%s' "$1" | awk -v c="$2" 'NF { print $c }'; }
busy_col() { # rows column: the median, or n/a without a split
    (( split )) || { echo n/a; return; }
    median $(col "$1" "$2") | awk -v c="$2" '{ printf (c == 1 ? "%.0f" : "%.3f"), $1 }'
}
busy_ratio() { # ops/s-with-snapshots busy-rows
    (( split )) || { echo n/a; return; }
    printf '%.2f×' "$(echo "$1 / $(median $(col "$2" 1))" | bc -l)"
}
echo
printf 'memoria: %s keys, %s clients, pipeline %s, %s requests per run, median of %s runs without snapshots (before and after) and %s with, %s; during the runs with snapshots the snapshot process used %.1f CPU-seconds and published %s snapshots\n' "$keys" "$clients" "$pipeline" "$requests" "$((2 * repeats))" "$repeats" "$cpus_note" "$snap_cpu" "$snapshot_runs"
echo
echo "| test | no snapshots ops/s | p99 ms | saving CPUs busy-looping ops/s | p99 ms | snapshots back to back ops/s | p99 ms | throughput ratio | p99 ratio | throughput vs busy loop |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for t in get set; do
    r0=$(median $(col "${res[$t,off]}" 1)); p0=$(median $(col "${res[$t,off]}" 2))
    r1=$(median $(col "${res[$t,on]}" 1)); p1=$(median $(col "${res[$t,on]}" 2))
    printf '| %s | %.0f | %.3f | %s | %s | %.0f | %.3f | %.2f× | %.2f× | %s |\n' "${t^^}" "$r0" "$p0" "$(busy_col "${res[$t,busy]}" 1)" "$(busy_col "${res[$t,busy]}" 2)" "$r1" "$p1" "$(echo "$r1 / $r0" | bc -l)" "$(echo "$p1 / $p0" | bc -l)" "$(busy_ratio "$r1" "${res[$t,busy]}")"
done
mem0=$(imedian $(col "${res[mem]}" 1)); mem1=$(imedian $(col "${res[mem]}" 2))
echo
echo "memoria primary PSS: $((mem0 / 1024)) MB before, $((mem1 / 1024)) MB while snapshots ran; the snapshot process (its own process, off-box in production) peaked at $((peak_snap_pss / 1024)) MB"
kill $mpid; wait $mpid 2>/dev/null || true

(( with_redis )) || exit 0

# ---- redis-server ----
rport=$(free_port)
redis_cpus=()
(( split )) && redis_cpus=(--server_cpulist "$serve_cpus" --bio_cpulist "$serve_cpus" --bgsave_cpulist "$save_cpus")
$on_serve redis-server "${redis_cpus[@]}" --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" --daemonize no >"$work/redis.log" 2>&1 &
rpid=$!; pids+=($rpid)
wait_ready "$rport"
echo "preloading $keys keys into redis-server…" >&2
preload "$rport"
declare -A rr
peak=0
forks=()
for round in $(seq 1 "$repeats"); do
    for t in get set; do
        rr[$t,off]+="$(bench "$rport" $t) "$'\n'
        rr[$t,busy]+="$(bench_busy "$rport" $t) "$'\n'
        base=$(pss_kb "$rpid")
        ( while true; do
            redis-cli -p "$rport" bgsave >/dev/null 2>&1 || true
            while redis-cli -p "$rport" info persistence | grep -q "rdb_bgsave_in_progress:1"; do sleep 0.05; done
          done ) &
        loop=$!
        ( while kill -0 $loop 2>/dev/null; do pss_kb "$rpid" $(pgrep -P "$rpid" || true); sleep 0.1; done ) >"$work/redis-pss" &
        sampler=$!
        rr[$t,on]+="$(bench "$rport" $t) "$'\n'
        kill $loop $sampler 2>/dev/null || true; wait $loop $sampler 2>/dev/null || true
        while redis-cli -p "$rport" info persistence | grep -q "rdb_bgsave_in_progress:1"; do sleep 0.05; done
        p=$(sort -n "$work/redis-pss" | tail -1); p=${p:-0}
        rr[mem]+="$base $p"$'\n'
        forks+=("$(redis-cli -p "$rport" info stats | awk -F: '/^latest_fork_usec/ { print $2 }' | tr -d '\r')")
    done
done
echo
echo "redis-server 7.0: same keys and load, without and with BGSAVE back to back (median of $repeats, $cpus_note)"
echo
echo "| test | no BGSAVE ops/s | p99 ms | max ms | saving CPUs busy-looping ops/s | p99 ms | BGSAVE back to back ops/s | p99 ms | max ms | throughput ratio | p99 ratio | throughput vs busy loop |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for t in get set; do
    r0=$(median $(col "${rr[$t,off]}" 1)); p0=$(median $(col "${rr[$t,off]}" 2)); x0=$(median $(col "${rr[$t,off]}" 3))
    r1=$(median $(col "${rr[$t,on]}" 1)); p1=$(median $(col "${rr[$t,on]}" 2)); x1=$(median $(col "${rr[$t,on]}" 3))
    printf '| %s | %.0f | %.3f | %.1f | %s | %s | %.0f | %.3f | %.1f | %.2f× | %.2f× | %s |\n' "${t^^}" "$r0" "$p0" "$x0" "$(busy_col "${rr[$t,busy]}" 1)" "$(busy_col "${rr[$t,busy]}" 2)" "$r1" "$p1" "$x1" "$(echo "$r1 / $r0" | bc -l)" "$(echo "$p1 / $p0" | bc -l)" "$(busy_ratio "$r1" "${rr[$t,busy]}")"
done
b=$(imedian $(col "${rr[mem]}" 1)); p=$(imedian $(col "${rr[mem]}" 2))
echo
echo "redis-server PSS (server + fork child): $((b / 1024)) MB before, peak $((p / 1024)) MB during BGSAVE (+$(( (p - b) * 100 / (b > 0 ? b : 1) ))%); fork took $(imedian "${forks[@]}") µs (latest_fork_usec, median)"
