#!/usr/bin/env bash
# Memory per key, side by side: loads the same small values into redis-server and
# `memoria up --in-memory` and reports bytes per key from the growth of INFO memory's
# used_memory, and the ratio Memoria/Redis (issue #3's target: at most 1.5x).
#
#   benches/memory/run.sh                  # 200k keys per type
#   benches/memory/run.sh -n 50000 -o /tmp/mem.md
#
# Types a server does not implement yet (an error reply to the probe) are reported as n/a.
# Needs redis-server and redis-cli (apt-get install redis-server redis-tools) and a
# release build of memoria (cargo build --release -p memoria-host).
set -euo pipefail

usage() {
    cat <<'EOF'
usage: benches/memory/run.sh [options]
  -n KEYS     keys loaded per type (default: 200000)
  -f N        fields/members/elements per container (default: 5)
  -b PATH     memoria binary (default: $CARGO_TARGET_DIR/release/memoria or target/release/memoria)
  -t TYPES    comma-separated subset of string,hash,set,intset,zset,list (default: all)
  -o FILE     also write the markdown table to FILE
  -h          this help
EOF
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/servers.sh
source "$repo/benches/lib/servers.sh"
keys=200000
fields=5
types="string,hash,set,intset,zset,list"
memoria_bin="${CARGO_TARGET_DIR:-$repo/target}/release/memoria"
outfile=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        -n) keys="$2"; shift 2 ;;
        -f) fields="$2"; shift 2 ;;
        -b) memoria_bin="$2"; shift 2 ;;
        -t) types="$2"; shift 2 ;;
        -o) outfile="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
    esac
done
need_tools redis-server redis-cli awk
[[ -x "$memoria_bin" ]] || { echo "memoria binary not found at $memoria_bin: cargo build --release -p memoria-host (or pass -b)" >&2; exit 1; }

bench_workdir mem

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    --dir "$work" --logfile "$work/redis.log" &
pids+=($!)
wait_ready "$redis_port" redis $!
memoria_port=$(free_port)
while [[ "$memoria_port" == "$redis_port" ]]; do memoria_port=$(free_port); done
"$memoria_bin" up --in-memory --port "$memoria_port" --bind 127.0.0.1 --data-dir "$work/memoria-data" \
    --console-port "$(free_port)" >"$work/memoria.log" 2>&1 &
pids+=($!)
wait_ready "$memoria_port" memoria $!
declare -A port=([redis]=$redis_port [memoria]=$memoria_port)

used_memory() { # server
    redis-cli -h 127.0.0.1 -p "${port[$1]}" info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'
}

# The RESP commands that load $keys keys of one type (16-byte key names, 8-byte members,
# 8-byte values, like the small objects of a cache).
commands() { # type
    awk -v n="$keys" -v f="$fields" -v t="$1" 'function bulk(s) { return sprintf("$%d\r\n%s\r\n", length(s), s) }
    BEGIN {
        for (i = 0; i < n; i++) {
            k = sprintf("%s:%011d", substr(t, 1, 4), i)
            if (t == "string") { printf "*3\r\n%s%s%s", bulk("SET"), bulk(k), bulk(sprintf("v%07d", i)); continue }
            cmd = (t == "hash") ? "HSET" : (t == "set" || t == "intset") ? "SADD" : (t == "zset") ? "ZADD" : "RPUSH"
            per = (t == "hash" || t == "zset") ? 2 : 1
            printf "*%d\r\n%s%s", 2 + f * per, bulk(cmd), bulk(k)
            for (j = 0; j < f; j++) {
                m = (t == "intset") ? sprintf("%d", 1000 + j) : sprintf("m%07d", j)
                if (t == "hash") printf "%s%s", bulk(sprintf("f%07d", j)), bulk(sprintf("v%07d", j))
                else if (t == "zset") printf "%s%s", bulk(sprintf("%d", j)), bulk(m)
                else printf "%s", bulk(m)
            }
        }
    }'
}

probe() { # server type: does the server implement the type?
    local cmd
    case "$1" in string) cmd="SET" ;; hash) cmd="HSET" ;; set|intset) cmd="SADD" ;; zset) cmd="ZADD" ;; list) cmd="RPUSH" ;; esac
    redis-cli -h 127.0.0.1 -p "${port[$2]}" command info "$cmd" | grep -qi "$cmd"
}

measure() { # server type -> bytes per key (or n/a)
    local s=$1 t=$2 before after n
    if ! probe "$t" "$s"; then echo "n/a"; return; fi
    redis-cli -h 127.0.0.1 -p "${port[$s]}" flushall sync >/dev/null
    before=$(used_memory "$s")
    commands "$t" | redis-cli -h 127.0.0.1 -p "${port[$s]}" --pipe >"$work/load-$s.log" 2>&1 \
        || { echo "loading $t into $s failed:" >&2; cat "$work/load-$s.log" >&2; exit 1; }
    n=$(redis-cli -h 127.0.0.1 -p "${port[$s]}" dbsize)
    [[ "$n" == "$keys" ]] || { echo "$s holds $n keys after loading $keys $t keys" >&2; exit 1; }
    after=$(used_memory "$s")
    enc=$(redis-cli -h 127.0.0.1 -p "${port[$s]}" object encoding "$(printf '%s:%011d' "${t:0:4}" 0)")
    echo "$(( (after - before) / keys )) $enc"
    redis-cli -h 127.0.0.1 -p "${port[$s]}" flushall sync >/dev/null
}

table="| type | per key | redis-server B/key | memoria B/key | memoria/redis |
| --- | --- | --- | --- | --- |"
IFS=, read -r -a tlist <<<"$types"
for t in "${tlist[@]}"; do
    case "$t" in
        string) what="8-byte value" ;;
        intset) what="$fields small integers" ;;
        hash) what="$fields fields, 8-byte values" ;;
        *) what="$fields 8-byte members" ;;
    esac
    echo "loading $keys $t keys ($what)…" >&2
    read -r r renc <<<"$(measure redis "$t")"
    read -r m menc <<<"$(measure memoria "$t")"
    if [[ "$r" == n/a || "$m" == n/a ]]; then
        ratio="n/a"
    else
        ratio=$(awk -v a="$m" -v b="$r" 'BEGIN { printf "%.2fx", a / b }')
    fi
    table+="
| $t (${renc:-?} / ${menc:-?}) | $what | $r | $m | $ratio |"
done
echo "$table"
[[ -n "$outfile" ]] && echo "$table" >"$outfile"
exit 0
