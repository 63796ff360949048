# Shared by the side-by-side benchmark scripts (sourced, not run): a work directory that
# is removed on exit along with every server started into `pids`, free loopback ports,
# and waiting for a server to answer PING.

# Fails with how to install any of the named tools that is missing.
need_tools() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { echo "$tool not found: apt-get install -y redis-server redis-tools python3" >&2; exit 1; }
    done
}

# Makes $work (a temporary directory named after $1) and arranges for every pid in
# `pids` to be stopped (TERM, then KILL after 5 s) and $work removed on exit; a script
# that started more than processes defines `bench_before_cleanup` to stop it first.
bench_workdir() { # tag
    work=$(mktemp -d "${TMPDIR:-/tmp}/memoria-$1.XXXXXX")
    pids=()
    trap bench_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

bench_cleanup() {
    local pid
    if declare -F bench_before_cleanup >/dev/null; then bench_before_cleanup || true; fi
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}

# A loopback port nothing listens on, below the kernel's ephemeral range (so no outgoing
# connection takes it before the server binds it).
free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 12000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
    done
}

# Waits until the server on port $1 answers PING; if process $3 exits first, prints its
# log ($work/$2.log) and fails.
wait_ready() { # port name pid
    for _ in $(seq 300); do
        if [[ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" == "PONG" ]]; then return 0; fi
        kill -0 "$3" 2>/dev/null || { echo "$2 exited during startup; its log:" >&2; cat "$work/$2.log" >&2; exit 1; }
        sleep 0.1
    done
    echo "$2 did not answer PING on port $1" >&2; exit 1
}

# user+system CPU time of processes, in clock ticks (of `getconf CLK_TCK`), comma-separated
# in the order given (0 for one that is gone).
cpu_ticks() { # pid...
    local p out=()
    for p in "$@"; do out+=("$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)"); done
    local IFS=,
    echo "${out[*]}"
}
