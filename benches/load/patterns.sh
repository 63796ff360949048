#!/usr/bin/env bash
# Pathological glob patterns (CVE-2022-36021, CVE-2024-31228) against redis-server and a
# default `memoria up` (its documented port), in the same run: each request repeated -n
# times on one connection, servers alternating, -k rounds; prints the median wall time of
# a round per server and the ratio Memoria/Redis (below 1: Memoria is faster). The
# keyspace and a hash hold -K names of 40 `a`s and a suffix, so the matching itself, not
# the round trip, is what takes the time.
#
#   benches/load/patterns.sh               # -n 20 -k 5 -K 20000
#   benches/load/patterns.sh -n 50 -k 9 -K 100000
set -euo pipefail

n=20
rounds=5
keys=20000
out=""
while getopts "n:k:K:o:b:h" o; do
    case $o in
        n) n=$OPTARG ;;
        k) rounds=$OPTARG ;;
        K) keys=$OPTARG ;;
        o) out=$OPTARG ;;
        b) bin=$OPTARG ;;
        *) echo "usage: $0 [-n REQUESTS] [-k ROUNDS] [-K KEYS] [-o FILE] [-b MEMORIA_BIN]" >&2; exit 2 ;;
    esac
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/servers.sh
source "$repo/benches/lib/servers.sh"
need_tools redis-server redis-cli python3
bin=${bin:-${CARGO_TARGET_DIR:-$repo/target}/release/memoria}
[[ -x $bin ]] || { echo "no memoria binary at $bin: cargo build --release -p memoria-host" >&2; exit 1; }
bench_workdir patterns

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
wait_ready "$redis_port" redis $!
memoria_port=$(free_port)
while [[ $memoria_port == "$redis_port" ]]; do memoria_port=$(free_port); done
"$bin" up --port "$memoria_port" --node-port-base "$(free_port)" --no-console --bind 127.0.0.1 --data-dir "$work/memoria-data" >"$work/memoria.log" 2>&1 &
pids+=($!)
wait_ready "$memoria_port" memoria $!

key=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
pat="a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"
deep=$(python3 -c 'print("*a" * 1200 + "b")')
python3 -c '
import sys
n, key = int(sys.argv[1]), sys.argv[2].encode()
out = sys.stdout.buffer
def cmd(*a):
    out.write(b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a))
for i in range(n):
    name = key + b":%d" % i
    cmd(b"SET", name, b"1")
    cmd(b"HSET", b"h", name, b"1")
' "$keys" "$key" >"$work/load.resp"
for port in $redis_port $memoria_port; do
    redis-cli -p "$port" --pipe <"$work/load.resp" >/dev/null
    redis-cli -p "$port" set "$key" 1 >/dev/null
    redis-cli -p "$port" acl setuser u on nopass +@all "~$pat" >/dev/null
done

# name | the request, as arguments separated by tabs
requests=(
    "KEYS (control: zz*)	KEYS	zz*"
    "KEYS	KEYS	$pat"
    "SCAN MATCH	SCAN	0	MATCH	$pat	COUNT	$keys"
    "HSCAN MATCH	HSCAN	h	0	MATCH	$pat	COUNT	$keys"
    "KEYS, 1200 nested stars	KEYS	$deep"
    "PUBSUB CHANNELS	PUBSUB	CHANNELS	$pat"
    "CONFIG GET	CONFIG	GET	$pat"
    "ACL DRYRUN (key pattern)	ACL	DRYRUN	u	GET	$key"
)

# Seconds for one round: -n copies of the request, one at a time on one connection.
round() { # port request-args...
    local port=$1; shift
    python3 -c '
import socket, sys, time
port, n, args = int(sys.argv[1]), int(sys.argv[2]), [a.encode() for a in sys.argv[3:]]
req = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
f = s.makefile("rb")
def skip():
    line = f.readline()
    t = line[:1]
    if t == b"$":
        ln = int(line[1:])
        if ln >= 0: f.read(ln + 2)
    elif t == b"*":
        for _ in range(max(int(line[1:]), 0)): skip()
    elif t == b"":
        sys.exit("connection closed")
t0 = time.perf_counter()
for _ in range(n):
    s.sendall(req)
    skip()
print(time.perf_counter() - t0)
' "$port" "$n" "$@"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

table="| request ($keys names) | redis-server (s per $n) | memoria up (s per $n) | ratio |
| --- | --- | --- | --- |"
for r in "${requests[@]}"; do
    IFS=$'\t' read -r -a parts <<<"$r"
    name=${parts[0]}
    args=("${parts[@]:1}")
    rs=(); ms=()
    for _ in $(seq "$rounds"); do
        rs+=("$(round "$redis_port" "${args[@]}")")
        ms+=("$(round "$memoria_port" "${args[@]}")")
    done
    rm=$(printf '%s\n' "${rs[@]}" | median)
    mm=$(printf '%s\n' "${ms[@]}" | median)
    ratio=$(python3 -c "print(f'{$mm / $rm:.2f}x')")
    table+=$'\n'"| $name | $(printf %.4f "$rm") | $(printf %.4f "$mm") | $ratio |"
done
echo "$table"
if [[ -n $out ]]; then echo "$table" >"$out"; fi
