#!/usr/bin/env bash
# Side-by-side load benchmark: redis-server and `memoria up` on loopback, driven by
# redis-benchmark in the same run, alternating servers and repeating to fight noise.
# Prints a markdown table (median of the repeats): ops/s, p50 and p99 for each server
# and the ratio Memoria/Redis.
#
#   benches/load/run.sh                      # GET,SET,ZADD,SADD; -d 100; 1M keys; 50 clients; P=1,16
#   benches/load/run.sh -t get,set,incr -P "1 16 64" -k 5 -s 10
#   benches/load/run.sh --tls -t get,set       # both servers over TLS only (test CA made here)
#
# Needs redis-server, redis-benchmark and redis-cli (Debian: apt-get install redis-server
# redis-tools) and a release build of memoria (cargo build --release -p memoria-host).
set -euo pipefail

usage() {
    cat <<'EOF'
usage: benches/load/run.sh [options]
  -t TESTS      redis-benchmark tests, comma-separated (default: get,set,zadd,sadd; zadd
                and sadd add random members to one sorted set / set, up to -r of them);
                also `evalsha` and `fcall`: a rate limiter (INCR + PEXPIRE + a comparison
                on a random key) as a script by EVALSHA and as a library function by FCALL;
                `geoadd` (random members at one point into `geo:bench`) and `geosearch`
                (GEOSEARCH FROMLONLAT … BYRADIUS 5 km ASC COUNT 10 on `geo:set`, which is
                preloaded with 100,000 members spread over about 1°×1° around Palermo);
                `restore` (RESTORE key:<random> 0 <payload> REPLACE, the payload a DUMP of a
                -d-byte string made by the server measured; sent by restore-load, built
                with cargo build --release -p memoria-benches --bin restore-load)
  -n N          requests per run, or "auto": calibrated on redis-server so one run
                lasts about -s seconds (default: auto)
  -s SECONDS    target length of one run for -n auto (default: 5)
  -c CLIENTS    parallel connections (default: 50)
  -P "LIST"     pipeline depths, space- or comma-separated (default: "1 16")
  -d BYTES      value size (default: 100)
  -r KEYS       keyspace size (-r of redis-benchmark) (default: 1000000)
  -k REPEATS    repeats per (test, pipeline, server); the median is reported (default: 3)
  -b PATH       memoria binary (default: $CARGO_TARGET_DIR/release/memoria or
                target/release/memoria)
  -m "ARGS"     extra arguments for `memoria up` (also $MEMORIA_ARGS)
  -R "ARGS"     extra arguments for redis-server (also $REDIS_ARGS; default: none, with
                --durable "--appendonly yes --appendfsync always", with --pg3az
                "--appendonly yes --appendfsync everysec")
  --durable     run memoria with its log (default: `--in-memory`, when the binary has it,
                which is the mode comparable to redis-server --save '' --appendonly no)
  --pg3az       run memoria on the three-AZ shape instead: e2e/pg3az (three PostgreSQL
                instances with quorum synchronous replication, one log service per AZ)
                and two `memoria server` nodes; the primary is measured (compare with
                -R "--appendonly yes --appendfsync everysec")
  --tls         both servers serve RESP over TLS only (redis-server --port 0 --tls-port,
                memoria --port 0 --tls-port; a CA and a certificate for 127.0.0.1 are made
                with openssl; no client certificates) and redis-benchmark runs with
                --tls --cacert
  --acl         also measure memoria through an ACL user with a key pattern (AUTH as
                `bench`: ~key:* +@read +@write +@connection), in the same run as
                memoria's default user, and print the ratio (ACL enforcement cost)
  --vs-in-memory
                with --durable or --pg3az: also run `memoria up --in-memory` (no log),
                measured in the same alternation, and print the durable node's figures as
                a ratio of the in-memory one's (what the log costs reads and writes)
  --vs-primary  with --durable: also measure the primary node's own port in the same
                alternation and print the stable endpoint's figures as a ratio of it
                (what reaching the primary through the documented port costs)
  --vs-build PATH
                also run the memoria binary at PATH (another build: the same flags, the
                same mode, its own ports and data dir), measured in the same alternation,
                and print this build's figures as a ratio of it (before/after a change)
  --no-preload  do not load all KEYS keys into the servers before measuring
  -o FILE       also write the markdown table to FILE
  -h            this help
EOF
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/servers.sh
source "$repo/benches/lib/servers.sh"

tests="get,set,zadd,sadd"
requests="auto"
seconds=5
clients=50
pipelines="1 16"
datasize=100
keyspace=1000000
repeats=3
memoria_bin="${CARGO_TARGET_DIR:-$repo/target}/release/memoria"
memoria_args="${MEMORIA_ARGS:-}"
redis_args="${REDIS_ARGS-__default__}"
preload=1
durable=0
pg3az=0
tls=0
acl=0
vs_mem=0
vs_primary=0
other_bin=""
outfile=""

while [[ $# -gt 0 ]]; do
    case "$1" in
        -t) tests="$2"; shift 2 ;;
        -n) requests="$2"; shift 2 ;;
        -s) seconds="$2"; shift 2 ;;
        -c) clients="$2"; shift 2 ;;
        -P) pipelines="${2//,/ }"; shift 2 ;;
        -d) datasize="$2"; shift 2 ;;
        -r) keyspace="$2"; shift 2 ;;
        -k) repeats="$2"; shift 2 ;;
        -b) memoria_bin="$2"; shift 2 ;;
        -m) memoria_args="$2"; shift 2 ;;
        -R) redis_args="$2"; shift 2 ;;
        --no-preload) preload=0; shift ;;
        --acl) acl=1; shift ;;
        --vs-in-memory) vs_mem=1; shift ;;
        --vs-primary) vs_primary=1; shift ;;
        --vs-build) other_bin="$2"; shift 2 ;;
        --durable) durable=1; shift ;;
        --pg3az) durable=1; pg3az=1; shift ;;
        --tls) tls=1; shift ;;
        -o) outfile="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
    esac
done

need_tools redis-server redis-benchmark redis-cli
# The redis-server a mode is compared with, unless -R (or $REDIS_ARGS) says otherwise:
# fsync on every write against the durable log, once a second against three AZs.
if [[ $redis_args == __default__ ]]; then
    redis_args=""
    [[ $durable == 1 ]] && redis_args="--appendonly yes --appendfsync always"
    [[ $pg3az == 1 ]] && redis_args="--appendonly yes --appendfsync everysec"
fi
if [[ $vs_mem == 1 && $durable == 0 ]]; then echo "--vs-in-memory compares the durable node with an in-memory one: add --durable or --pg3az" >&2; exit 2; fi
if [[ $vs_mem == 1 && $tls == 1 ]]; then echo "--vs-in-memory with --tls is not supported" >&2; exit 2; fi
if [[ -n $other_bin && ( $pg3az == 1 || $tls == 1 ) ]]; then echo "--vs-build with --pg3az or --tls is not supported" >&2; exit 2; fi
[[ -z $other_bin || -x $other_bin ]] || { echo "--vs-build: no memoria binary at $other_bin" >&2; exit 1; }
[[ -x "$memoria_bin" ]] || { echo "memoria binary not found at $memoria_bin: cargo build --release -p memoria-host (or pass -b)" >&2; exit 1; }

mode="durable (log on)"
if [[ $durable == 0 ]]; then
    if "$memoria_bin" up --help 2>/dev/null | grep -q -- '--in-memory'; then
        memoria_args="--in-memory $memoria_args"
        mode="in-memory"
    else
        mode="in-memory (this build has no log)"
    fi
fi

# pg3az runs also stop their PostgreSQL instances and log services.
bench_before_cleanup() {
    if [[ $pg3az == 1 && -d "$work/pg3az" ]]; then
        PG3AZ_DIR="$work/pg3az" PG3AZ_PG_PORT=$pg_port PG3AZ_SVC_PORT=$svc_port "$repo/e2e/pg3az" down >/dev/null 2>&1 || true
    fi
}
bench_workdir load

# Three consecutive free ports (pg3az uses port, port+1, port+2).
free_port3() {
    local p
    while :; do
        p=$(free_port)
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1))") 2>/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 2))") 2>/dev/null; then
            echo "$p"
            return
        fi
    done
}

# TLS: a throwaway CA and a server certificate for 127.0.0.1; clients trust the CA.
tls_args=()
if [[ $tls == 1 ]]; then
    [[ $pg3az == 0 ]] || { echo "--tls with --pg3az is not supported" >&2; exit 2; }
    command -v openssl >/dev/null || { echo "openssl not found (needed for --tls)" >&2; exit 1; }
    mkdir -p "$work/tls"
    (
        cd "$work/tls"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=memoria bench CA"
        openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1"
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >ext.cnf
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile ext.cnf -out server.pem
    ) >"$work/tls/openssl.log" 2>&1 || { echo "making test certificates failed:" >&2; cat "$work/tls/openssl.log" >&2; exit 1; }
    tls_args=(--tls --cacert "$work/tls/ca.pem")
    mode="$mode, TLS"
fi
# The server side of --tls for either server: TLS only, on the port given.
tls_server_args() { # port
    echo "--port 0 --tls-port $1 --tls-cert-file $work/tls/server.pem --tls-key-file $work/tls/server.key --tls-ca-cert-file $work/tls/ca.pem --tls-auth-clients no"
}

wait_ready() { # port name pid
    for _ in $(seq 300); do
        if [[ "$(redis-cli -h 127.0.0.1 -p "$1" "${tls_args[@]}" ping 2>/dev/null)" == "PONG" ]]; then return 0; fi
        kill -0 "$3" 2>/dev/null || { echo "$2 exited during startup; its log:" >&2; cat "$work/$2.log" >&2; exit 1; }
        sleep 0.1
    done
    echo "$2 did not answer PING on port $1" >&2
    exit 1
}

redis_port=$(free_port)
redis_listen="--port $redis_port"
[[ $tls == 1 ]] && redis_listen=$(tls_server_args "$redis_port")
# shellcheck disable=SC2086
redis-server $redis_listen --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
    --dir "$work" --logfile "$work/redis.log" $redis_args &
pids+=($!)
wait_ready "$redis_port" redis $!
# The processes whose CPU time each run charges to a server (see `bench`), by server.
declare -A cpu_pids=([redis]=$!)

memoria_port=$(free_port)
while [[ "$memoria_port" == "$redis_port" ]]; do memoria_port=$(free_port); done
console_port=$(free_port)
if [[ $pg3az == 1 ]]; then
    # Three AZs of PostgreSQL and their log services, then two nodes against all three.
    pg_port=$(free_port3); svc_port=$(free_port3)
    while (( svc_port >= pg_port - 2 && svc_port <= pg_port + 2 )); do svc_port=$(free_port3); done
    # PostgreSQL runs as its own user: let it through the private work dir.
    chmod 711 "$work"
    export PG3AZ_DIR="$work/pg3az" PG3AZ_PG_PORT=$pg_port PG3AZ_SVC_PORT=$svc_port PG3AZ_TOKEN=bench-token
    export MEMORIA_LOG_BIN="$(dirname "$memoria_bin")/memoria-log"
    echo "starting e2e/pg3az (PostgreSQL in three simulated AZs)…" >&2
    "$repo/e2e/pg3az" up >"$work/pg3az.log" 2>&1 || { echo "e2e/pg3az up failed:" >&2; cat "$work/pg3az.log" >&2; exit 1; }
    urls="http://127.0.0.1:$svc_port,http://127.0.0.1:$((svc_port + 1)),http://127.0.0.1:$((svc_port + 2))"
    node_ports=()
    for i in 0 1; do
        np=$(free_port)
        node_ports+=("$np")
        # shellcheck disable=SC2086
        MEMORIA_LOG_TOKEN=bench-token "$memoria_bin" server --port "$np" --bind 127.0.0.1 --node-name "127.0.0.1:$np" \
            --cluster --log-url "$urls" --data-dir "$work/node-$i" $memoria_args >"$work/memoria-$i.log" 2>&1 &
        pids+=($!)
    done
    memoria_port=""
    for _ in $(seq 600); do
        for np in "${node_ports[@]}"; do
            if redis-cli -h 127.0.0.1 -p "$np" info replication 2>/dev/null | grep -q '^role:master'; then memoria_port=$np; fi
        done
        [[ -n $memoria_port ]] && break
        sleep 0.1
    done
    [[ -n $memoria_port ]] || { echo "no memoria node became primary:" >&2; cat "$work"/memoria-*.log >&2; exit 1; }
    mode="three-AZ PostgreSQL log, primary of 2 nodes"
else
    node_args=()
    if [[ $durable == 1 ]] && "$memoria_bin" up --help 2>/dev/null | grep -q -- '--node-port-base'; then
        node_base=$(free_port)
        while [[ "$node_base" == "$redis_port" || "$node_base" == "$memoria_port" ]]; do node_base=$(free_port); done
        node_args=(--node-port-base "$node_base")
    fi
    memoria_listen="--port $memoria_port"
    if [[ $tls == 1 ]]; then
        if [[ $durable == 1 ]]; then
            # The supervisor keeps a plaintext endpoint; nodes get TLS ports from here.
            node_tls_base=$(free_port)
            memoria_listen="--port $(free_port) $(tls_server_args "$memoria_port" | sed 's/^--port 0 //') --node-tls-port-base $node_tls_base"
        else
            memoria_listen=$(tls_server_args "$memoria_port")
        fi
    fi
    # shellcheck disable=SC2086
    "$memoria_bin" up $memoria_listen --bind 127.0.0.1 --data-dir "$work/memoria-data" \
        --console-port "$console_port" "${node_args[@]}" $memoria_args >"$work/memoria.log" 2>&1 &
    pids+=($!)
    wait_ready "$memoria_port" memoria $!
    # `memoria up` with replicas: measured at the stable --port, the port users use (it
    # hands each connection to the primary); --vs-primary also measures the primary's own.
    cluster_json="$work/memoria-data/cluster.json"
    if [[ -f $cluster_json ]]; then
        deadline=$((SECONDS + 60))
        until primary_port=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(next(n["port"] for n in d["nodes"] if n["role"]=="primary"))' "$cluster_json" 2>/dev/null); do
            (( SECONDS < deadline )) || { echo "no primary in $cluster_json" >&2; exit 1; }
            sleep 0.2
        done
        mode="$mode, stable endpoint of a primary and $(grep -c '"replica"' "$cluster_json" || true) replica(s)"
        primary_node_port=$primary_port
        if [[ $tls == 1 ]]; then
            primary_node_port=$((node_tls_base + primary_port - node_base))
        fi
        wait_ready "$primary_node_port" memoria-primary "${pids[-1]}"
        # Every process of `memoria up`: the supervisor (stable endpoint, log service),
        # the primary, then the replicas, as cluster.json names them.
        cpu_pids[memoria]=$(python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
print(sys.argv[2], *[n["pid"] for n in c["nodes"] if n["role"] == "primary"], *[n["pid"] for n in c["nodes"] if n["role"] == "replica"])' "$cluster_json" "${pids[-1]}")
    else
        cpu_pids[memoria]="${pids[-1]} $(pgrep -P "${pids[-1]}" | tr '\n' ' ')"
    fi

fi

declare -A port=([redis]=$redis_port [memoria]=$memoria_port)
servers="redis memoria"
if [[ $vs_primary == 1 ]]; then
    [[ -n ${primary_node_port:-} ]] || { echo "--vs-primary needs memoria up with replicas (--durable)" >&2; exit 2; }
    port[memoria-primary]=$primary_node_port
    servers="redis memoria memoria-primary"
fi
if [[ $acl == 1 ]]; then
    # The same node, reached through an ACL user whose key pattern every command checks.
    redis-cli -h 127.0.0.1 -p "$memoria_port" "${tls_args[@]}" ACL SETUSER bench on '>bench-pw' '~key:*' '+@read' '+@write' '+@connection' >/dev/null
    [[ "$(redis-cli -h 127.0.0.1 -p "$memoria_port" "${tls_args[@]}" --user bench --pass bench-pw --no-auth-warning get key:000000000001 >/dev/null 2>&1; echo $?)" == 0 ]] \
        || { echo "the bench ACL user cannot read: $(redis-cli -h 127.0.0.1 -p "$memoria_port" "${tls_args[@]}" ACL LIST)" >&2; exit 1; }
    port[memoria-acl]=$memoria_port
    servers="redis memoria memoria-acl"
fi
if [[ $vs_mem == 1 ]]; then
    # A second memoria without a log, beside the durable one, in the same alternation.
    mem_port=$(free_port)
    while [[ -n "$(printf '%s\n' "${port[@]}" | grep -x "$mem_port")" || "$mem_port" == "$console_port" ]]; do mem_port=$(free_port); done
    # shellcheck disable=SC2086
    "$memoria_bin" up --in-memory --port "$mem_port" --bind 127.0.0.1 --data-dir "$work/memoria-mem-data" $memoria_args >"$work/memoria-mem.log" 2>&1 &
    pids+=($!)
    wait_ready "$mem_port" memoria-mem $!
    port[memoria-mem]=$mem_port
    servers="$servers memoria-mem"
fi

if [[ -n $other_bin ]]; then
    # The other build beside this one, started the same way, with the flags it has.
    other_port=$(free_port)
    while [[ -n "$(printf '%s\n' "${port[@]}" "$console_port" | grep -x "$other_port")" ]]; do other_port=$(free_port); done
    other_args=()
    other_help=$("$other_bin" up --help 2>/dev/null || true)
    if [[ $durable == 1 ]] && grep -q -- '--node-port-base' <<<"$other_help"; then other_args+=(--node-port-base "$(free_port)"); fi
    if grep -q -- '--console-port' <<<"$other_help"; then other_args+=(--console-port "$(free_port)"); fi
    if grep -q -- '--no-metrics' <<<"$other_help"; then other_args+=(--no-metrics); fi
    # shellcheck disable=SC2086
    "$other_bin" up --port "$other_port" --bind 127.0.0.1 --data-dir "$work/memoria-other-data" "${other_args[@]}" $memoria_args \
        >"$work/memoria-other.log" 2>&1 &
    pids+=($!)
    wait_ready "$other_port" memoria-other $!
    port[memoria-other]=$other_port
    servers="$servers memoria-other"
fi

# Every key the benchmark can touch exists, with a value of the benchmarked size, so GETs
# hit (redis-benchmark's keys are key:<12-digit zero-padded number>).
if [[ $preload == 1 ]]; then
    for s in redis memoria $([[ $vs_mem == 1 ]] && echo memoria-mem) $([[ -n $other_bin ]] && echo memoria-other); do
        echo "preloading $keyspace keys of $datasize bytes into $s…" >&2
        awk -v n="$keyspace" -v d="$datasize" 'BEGIN {
            v = sprintf("%*s", d, ""); gsub(/ /, "x", v);
            for (i = 0; i < n; i++) printf "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n", i, d, v
        }' | redis-cli -h 127.0.0.1 -p "${port[$s]}" "${tls_args[@]}" --pipe >"$work/preload-$s.log" 2>&1 \
            || { echo "preloading $s failed:" >&2; cat "$work/preload-$s.log" >&2; exit 1; }
        dbsize=$(redis-cli -h 127.0.0.1 -p "${port[$s]}" "${tls_args[@]}" dbsize)
        [[ "$dbsize" -ge "$keyspace" ]] || { echo "$s holds $dbsize keys after preloading $keyspace" >&2; exit 1; }
    done
fi

# The scripted tests: one rate limiter, as an EVAL script and as a library function.
limiter_body="local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if n > tonumber(ARGV[1]) then return 0 end
return 1"
if [[ ",$tests," == *,evalsha,* || ",$tests," == *,fcall,* ]]; then
    for s in $servers; do
        limiter_sha=$(redis-cli -h 127.0.0.1 -p "${port[$s]}" "${tls_args[@]}" SCRIPT LOAD "$limiter_body")
        [[ ${#limiter_sha} == 40 ]] || { echo "SCRIPT LOAD on $s failed: $limiter_sha" >&2; exit 1; }
        lib=$(redis-cli -h 127.0.0.1 -p "${port[$s]}" "${tls_args[@]}" FUNCTION LOAD REPLACE "#!lua name=bench
redis.register_function('limit', function(KEYS, ARGV)
$limiter_body
end)")
        [[ $lib == bench ]] || { echo "FUNCTION LOAD on $s failed: $lib" >&2; exit 1; }
    done
fi

# The GEO tests' set: 100,000 members on a deterministic grid with jitter (same on both).
if [[ ",$tests," == *,geosearch,* ]]; then
    for s in $servers; do
        awk 'BEGIN { srand(7); for (i = 0; i < 100000; i++) {
            lon = sprintf("%.6f", 13.0 + rand()); lat = sprintf("%.6f", 38.0 + rand()); m = "m:" i
            printf "*5\r\n$6\r\nGEOADD\r\n$7\r\ngeo:set\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", length(lon), lon, length(lat), lat, length(m), m } }' \
            | redis-cli -h 127.0.0.1 -p "${port[$s]}" "${tls_args[@]}" --pipe >"$work/geo-$s.log" 2>&1 \
            || { echo "loading geo:set into $s failed:" >&2; cat "$work/geo-$s.log" >&2; exit 1; }
        n=$(redis-cli -h 127.0.0.1 -p "${port[$s]}" "${tls_args[@]}" ZCARD geo:set)
        [[ "$n" == 100000 ]] || { echo "$s holds $n members in geo:set" >&2; exit 1; }
    done
fi

hz=$(getconf CLK_TCK)

# One redis-benchmark run; prints "rps p50 p99 cpu" (latencies in ms; cpu: microseconds of
# CPU per request of each of the server's processes, comma-separated, or - when unknown).
bench() { # server test pipeline n
    local before cpu=- line
    # shellcheck disable=SC2086
    [[ -n ${cpu_pids[$1]:-} ]] && before=$(cpu_ticks ${cpu_pids[$1]})
    # A failed run ends the script (command substitution does not inherit set -e).
    line=$(bench_run "$@") || exit 1
    if [[ -n ${cpu_pids[$1]:-} ]]; then
        # shellcheck disable=SC2086
        cpu=$(awk -v a="$before" -v b="$(cpu_ticks ${cpu_pids[$1]})" -v hz="$hz" -v n="$4" 'BEGIN {
            k = split(a, x, ","); split(b, y, ","); s = ""
            for (i = 1; i <= k; i++) s = s (i > 1 ? "," : "") sprintf("%.2f", (y[i] - x[i]) * 1e6 / hz / n)
            print s }')
    fi
    echo "$line $cpu"
}

bench_run() { # server test pipeline n
    local out line auth=() what=(-t "$2")
    [[ $1 == memoria-acl ]] && auth=(--user bench -a bench-pw)
    if [[ $2 == restore ]]; then
        out=$("$restore_load" -h 127.0.0.1 -p "${port[$1]}" -P "$3" -n "$4" -c "$clients" -d "$datasize" -r "$keyspace" 2>"$work/bench.err") \
            || { echo "restore-load against $1 failed:" >&2; cat "$work/bench.err" >&2; exit 1; }
        printf '%s\n' "$out" | tr -d '"' | awk -F, 'NR > 1 && $1 != "" { print $2, $5, $7; exit }'
        return
    fi
    case $2 in
        evalsha) what=(EVALSHA "$limiter_sha" 1 "rl:__rand_int__" 1000000 60000) ;;
        fcall) what=(FCALL limit 1 "rl:__rand_int__" 1000000 60000) ;;
        geoadd) what=(GEOADD geo:bench 13.361389 38.115556 "m:__rand_int__") ;;
        geosearch) what=(GEOSEARCH geo:set FROMLONLAT 13.5 38.5 BYRADIUS 5 km ASC COUNT 10) ;;
    esac
    out=$(redis-benchmark -h 127.0.0.1 -p "${port[$1]}" "${tls_args[@]}" "${auth[@]}" -P "$3" -n "$4" -c "$clients" \
        -d "$datasize" -r "$keyspace" --csv "${what[@]}" 2>"$work/bench.err") \
        || { echo "redis-benchmark against $1 failed:" >&2; cat "$work/bench.err" >&2; exit 1; }
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    line=$(printf '%s\n' "$out" | tr -d '"' | awk -F, 'NR > 1 && $1 != "" { print $2, $5, $7; exit }')
    [[ -n "$line" ]] || { echo "no result from redis-benchmark against $1: $out" >&2; exit 1; }
    echo "$line"
}

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

IFS=, read -r -a test_list <<<"$tests"
restore_load="$(dirname "$memoria_bin")/restore-load"
if [[ ",$tests," == *,restore,* ]]; then
    [[ $tls == 0 ]] || { echo "-t restore with --tls is not supported" >&2; exit 2; }
    [[ -x $restore_load ]] || { echo "no $restore_load: cargo build --release -p memoria-benches --bin restore-load" >&2; exit 1; }
fi
declare -A nreq rps p50 p99 cpu

# Calibrate -n on redis-server so each run lasts about $seconds.
for P in $pipelines; do
    for t in "${test_list[@]}"; do
        if [[ $requests == auto ]]; then
            probe=$((20000 * P)); (( probe > 1000000 )) && probe=1000000
            res=$(bench redis "$t" "$P" "$probe")
            read -r r _ _ <<<"$res"
            n=$(awk -v r="$r" -v s="$seconds" 'BEGIN { n = int(r * s / 10000) * 10000; if (n < 10000) n = 10000; print n }')
        else
            n=$requests
        fi
        nreq[$t,$P]=$n
    done
done

for ((k = 1; k <= repeats; k++)); do
    # Alternate which server goes first, so slow drift of the machine hits both alike.
    if (( k % 2 )); then order="$servers"; else order=$(tr ' ' '\n' <<<"$servers" | tac | tr '\n' ' '); fi
    for P in $pipelines; do
        for t in "${test_list[@]}"; do
            for s in $order; do
                res=$(bench "$s" "$t" "$P" "${nreq[$t,$P]}")
                read -r r a b c <<<"$res"
                rps[$s,$t,$P]+="$r "
                cpu[$s,$t,$P]+="$c "
                p50[$s,$t,$P]+="$a "
                p99[$s,$t,$P]+="$b "
                printf 'run %d/%d  %-7s %-6s P=%-3s n=%-9s %12s ops/s  p50 %s ms  p99 %s ms  CPU us/request %s\n' \
                    "$k" "$repeats" "$s" "$t" "$P" "${nreq[$t,$P]}" "$r" "$a" "$b" "$c" >&2
            done
        done
    done
done

# A markdown table of server `other` against server `base`, same run: ops/s, the ratio
# other/base, p50/p99. Labels name the two columns.
compare_table() { # base base_label other other_label
    local base=$1 bl=$2 other=$3 ol=$4 t P br or b50 o50 b99 o99 ratio
    echo "| test | pipeline | $bl ops/s | $ol ops/s | $ol/$bl | $bl p50/p99 ms | $ol p50/p99 ms |"
    echo "|------|---------:|------:|------:|------:|------:|------:|"
    for t in "${test_list[@]}"; do
        for P in $pipelines; do
            # shellcheck disable=SC2086
            {
                br=$(median ${rps[$base,$t,$P]}); or=$(median ${rps[$other,$t,$P]})
                b50=$(median ${p50[$base,$t,$P]}); o50=$(median ${p50[$other,$t,$P]})
                b99=$(median ${p99[$base,$t,$P]}); o99=$(median ${p99[$other,$t,$P]})
            }
            ratio=$(awk -v o="$or" -v b="$br" 'BEGIN { printf "%.2f", (b > 0 ? o / b : 0) }')
            printf '| %s | %s | %.0f | %.0f | %s× | %s / %s | %s / %s |\n' "$(tr '[:lower:]' '[:upper:]' <<<"$t")" "$P" "$br" "$or" "$ratio" "$b50" "$b99" "$o50" "$o99"
        done
    done
}

# Median CPU per request of each process, from the runs' "a,b,c" strings.
cpu_median() { printf '%s\n' "$@" | python3 -c '
import statistics, sys
runs = [[float(x) for x in l.split(",")] for l in sys.stdin.read().split() if l != "-"]
print(",".join(f"{statistics.median(c):.2f}" for c in zip(*runs)) if runs else "-")'; }

# CPU per request: redis-server's, and memoria's in total and per process (supervisor,
# then primary, then replicas, when `memoria up` runs nodes).
cpu_table() {
    local t P rc mc total split
    echo "| test | pipeline | redis-server µs | memoria µs (all processes) | memoria/redis | memoria per process |"
    echo "|------|---------:|------:|------:|------:|------|"
    for t in "${test_list[@]}"; do
        for P in $pipelines; do
            # shellcheck disable=SC2086
            { rc=$(cpu_median ${cpu[redis,$t,$P]}); mc=$(cpu_median ${cpu[memoria,$t,$P]}); }
            total=$(awk -v m="$mc" 'BEGIN { k = split(m, x, ","); s = 0; for (i = 1; i <= k; i++) s += x[i]; printf "%.2f", s }')
            split=$(awk -v m="$mc" -v nodes="$([[ -f ${cluster_json:-/nonexistent} ]] && echo 1 || echo 0)" 'BEGIN {
                k = split(m, x, ","); s = ""
                for (i = 1; i <= k; i++) {
                    name = (nodes == 0) ? (i == 1 ? "supervisor" : "child " i - 1) : (i == 1 ? "supervisor" : (i == 2 ? "primary" : "replica " i - 2))
                    s = s (i > 1 ? ", " : "") name " " x[i] }
                print s }')
            printf '| %s | %s | %s | %s | %s× | %s |\n' "$(tr '[:lower:]' '[:upper:]' <<<"$t")" "$P" "$rc" "$total" \
                "$(awk -v m="$total" -v r="$rc" 'BEGIN { printf "%.2f", (r > 0 ? m / r : 0) }')" "$split"
        done
    done
}

rev=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$repo" diff --quiet HEAD -- 2>/dev/null; then rev="$rev+dirty"; fi
table=$(
    echo "Load benchmark, $(date -u +%Y-%m-%d) — memoria $rev ($mode) vs redis-server $(redis-server --version | awk '{print $3}' | tr -d 'v=') on $(nproc) cores;"
    echo "redis-benchmark -c $clients -d $datasize -r $keyspace, ${repeats} alternating runs each, median shown$([[ $preload == 1 ]] && echo ", all $keyspace keys preloaded")."
    echo
    echo "| test | pipeline | requests | redis ops/s | memoria ops/s | memoria/redis | redis p50 ms | memoria p50 ms | redis p99 ms | memoria p99 ms |"
    echo "|------|---------:|---------:|------------:|--------------:|--------------:|-------------:|---------------:|-------------:|---------------:|"
    for t in "${test_list[@]}"; do
        for P in $pipelines; do
            # shellcheck disable=SC2086
            {
                rr=$(median ${rps[redis,$t,$P]}); mr=$(median ${rps[memoria,$t,$P]})
                r50=$(median ${p50[redis,$t,$P]}); m50=$(median ${p50[memoria,$t,$P]})
                r99=$(median ${p99[redis,$t,$P]}); m99=$(median ${p99[memoria,$t,$P]})
            }
            ratio=$(awk -v m="$mr" -v r="$rr" 'BEGIN { printf "%.2f", (r > 0 ? m / r : 0) }')
            printf '| %s | %s | %s | %.0f | %.0f | %s× | %s | %s | %s | %s |\n' \
                "$(tr '[:lower:]' '[:upper:]' <<<"$t")" "$P" "${nreq[$t,$P]}" "$rr" "$mr" "$ratio" "$r50" "$m50" "$r99" "$m99"
        done
    done
    if [[ -n ${cpu_pids[memoria]:-} ]]; then
        echo
        echo "CPU per request (user+system µs, median of the runs), every process of each server:"
        echo
        cpu_table
    fi
    if [[ $acl == 1 ]]; then
        echo
        echo "ACL enforcement: the same memoria node through its default user (no restrictions) and through the ACL user \`bench\` (AUTH, ~key:* +@read +@write +@connection), same run:"
        echo
        echo "| test | pipeline | memoria ops/s | memoria + ACL user ops/s | ACL/default | memoria p99 ms | memoria + ACL p99 ms |"
        echo "|------|---------:|--------------:|-------------------------:|------------:|---------------:|---------------------:|"
        for t in "${test_list[@]}"; do
            for P in $pipelines; do
                # shellcheck disable=SC2086
                {
                    mr=$(median ${rps[memoria,$t,$P]}); ar=$(median ${rps[memoria-acl,$t,$P]})
                    m99=$(median ${p99[memoria,$t,$P]}); a99=$(median ${p99[memoria-acl,$t,$P]})
                }
                ratio=$(awk -v a="$ar" -v m="$mr" 'BEGIN { printf "%.2f", (m > 0 ? a / m : 0) }')
                printf '| %s | %s | %.0f | %.0f | %s× | %s | %s |\n' "$(tr '[:lower:]' '[:upper:]' <<<"$t")" "$P" "$mr" "$ar" "$ratio" "$m99" "$a99"
            done
        done
    fi
    if [[ $vs_mem == 1 ]]; then
        echo
        echo "The log's cost: the durable node against \`memoria up --in-memory\` (no log), same run:"
        echo
        compare_table memoria-mem "in-memory" memoria "durable"
    fi
    if [[ -n $other_bin ]]; then
        echo
        echo "This build against the build at \`$other_bin\`, same mode, same run:"
        echo
        compare_table memoria-other "other build" memoria "this build"
    fi
    if [[ $vs_primary == 1 ]]; then
        echo
        echo "The stable endpoint (the documented port) against the primary node's own port, same run:"
        echo
        compare_table memoria-primary "primary port" memoria "stable endpoint"
    fi
)
echo
echo "$table"
[[ -n "$outfile" ]] && echo "$table" >"$outfile"
exit 0
