#!/usr/bin/env bash
# Memory per small list, Memoria vs redis-server: loads N lists of each shape into both
# servers (already running) and reports the growth of INFO memory's used_memory per list.
# Memoria counts the bytes its engine allocates; Redis counts jemalloc's size classes.
#
#   benches/load/list-memory.sh REDIS_PORT MEMORIA_PORT [N]
set -euo pipefail
rport=${1:?redis port}; mport=${2:?memoria port}; n=${3:-20000}

used() { redis-cli -p "$1" info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'; }

# shape name, then an awk expression printing the members of set i (space-separated)
shapes=(
    "1 x 5-byte element|hello"
    "5 small ints|1 2 3 4 5"
    "5 x 8-byte elements|5x:element%d"
    "20 x 10-byte elements|20x:element:%02d"
    "100 x 10-byte elements|100x:element%03d"
)

load() { # port spec
    awk -v n="$n" -v spec="$2" 'BEGIN {
        split(spec, a, "|"); m = a[2]
        for (i = 0; i < n; i++) {
            key = sprintf("list:%08d", i)
            if (m ~ /^[0-9]+x:/) {
                split(m, b, "x:"); cnt = b[1] + 0; fmt = b[2]
                args = ""; c = 0
                for (j = 0; j < cnt; j++) {
                    if (fmt == "i*1000") v = j * 1000; else v = sprintf(fmt, j)
                    args = args sprintf("$%d\r\n%s\r\n", length(v), v); c++
                }
            } else {
                c = split(m, vals, " "); args = ""
                for (j = 1; j <= c; j++) args = args sprintf("$%d\r\n%s\r\n", length(vals[j]), vals[j])
            }
            printf "*%d\r\n$5\r\nRPUSH\r\n$%d\r\n%s\r\n%s", c + 2, length(key), key, args
        }
    }' | redis-cli -p "$1" --pipe >/dev/null
}

printf '| shape | redis B/list | memoria B/list | memoria/redis |\n|---|---:|---:|---:|\n'
for spec in "${shapes[@]}"; do
    declare -A per
    for s in redis memoria; do
        port=$rport; [[ $s == memoria ]] && port=$mport
        redis-cli -p "$port" flushall >/dev/null
        before=$(used "$port")
        load "$port" "$spec"
        after=$(used "$port")
        per[$s]=$(awk -v a="$after" -v b="$before" -v n="$n" 'BEGIN { printf "%.1f", (a - b) / n }')
        redis-cli -p "$port" flushall >/dev/null
    done
    printf '| %s | %s | %s | %s |\n' "${spec%%|*}" "${per[redis]}" "${per[memoria]}" \
        "$(awk -v m="${per[memoria]}" -v r="${per[redis]}" 'BEGIN { printf "%.2f", m / r }')"
done
