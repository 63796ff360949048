"""redis-py's client-side cache (RESP3, CLIENT TRACKING default mode) against a Redis URL:
no read served from the cache is stale once a write by another client has been
acknowledged, across the cache's hits, many keys, the client's own writes, DEL, FLUSHDB
and, given the primary's pid, a kill -9 failover (redis-py flushes its cache when it
reconnects).

    python redis_cache_check.py redis://HOST:PORT [PRIMARY_PID]

redis-py applies the invalidations already in its socket before each command, and never
waits for one, so "the writer got its reply, then the cached client reads" can be stale
on redis-server too (its reply to the writer and the push to the reader leave in one
event-loop pass, in no fixed order). The cached client's PING after each write is the
barrier that makes the check exact: the push was queued on its connection before the
write's reply, so it arrives ahead of the PING's reply. Exits non-zero naming the stale
read.
"""

import os
import signal
import sys
import time

import redis
from redis.cache import CacheConfig
from redis.connection import CacheProxyConnection, Connection

# redis-py enables its cache only on servers whose HELLO says 7.4 or later; Memoria reports
# 7.0.15 (whose behaviour it reproduces), which has CLIENT TRACKING as used here.
CacheProxyConnection.MIN_ALLOWED_VERSION = "7.0.0"

sent = [0]  # GETs that reached the socket (a cache hit sends nothing)


class Counting(Connection):
    def send_command(self, *a, **kw):
        sent[0] += a[:1] == ("GET",)
        return super().send_command(*a, **kw)


def fail(msg):
    print("FAIL:", msg, flush=True)
    sys.exit(1)


def get(cached, k, want, hit, why):
    n = sent[0]
    got = cached.get(k)
    if got != want:
        fail(f"{why}: GET {k} = {got!r}, expected {want!r} (stale read)")
    if hit != (sent[0] == n):
        fail(f"{why}: GET {k} was {'not ' if hit else ''}a cache hit")


def retrying(what, f, seconds=60):
    """Runs f until it succeeds (the endpoint leads to the new primary after a failover)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return f()
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError) as e:
            if time.monotonic() > deadline:
                fail(f"{what}: still failing after {seconds} s: {e}")
            time.sleep(0.1)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: redis_cache_check.py redis://HOST:PORT [PRIMARY_PID]")
    url = sys.argv[1]
    cached = redis.Redis.from_url(url, protocol=3, cache_config=CacheConfig(), decode_responses=True, connection_class=Counting)
    writer = redis.Redis.from_url(url, decode_responses=True)
    writer.flushdb()

    # 1. One key: a miss, a hit, another client's write, then the new value.
    writer.set("k", "v1")
    get(cached, "k", "v1", False, "first read")
    get(cached, "k", "v1", True, "second read")
    writer.set("k", "v2")
    cached.ping()
    get(cached, "k", "v2", False, "after another client's SET")

    # 2. Many keys, several rounds: hits stay hits until their key is written.
    n = 300
    for r in range(3):
        writer.mset({f"m{i}": f"{r}" for i in range(n)})
        cached.ping()
        for i in range(n):
            get(cached, f"m{i}", f"{r}", False, f"round {r} fill")
        for i in range(n):
            get(cached, f"m{i}", f"{r}", True, f"round {r} hit")
        for i in range(0, n, 2):
            writer.set(f"m{i}", f"{r}x")
            cached.ping()
            get(cached, f"m{i}", f"{r}x", False, f"round {r} write")
        for i in range(1, n, 2):
            get(cached, f"m{i}", f"{r}", True, f"round {r} untouched key")

    # 3. Its own write, another client's DEL, FLUSHDB (a null push empties the cache).
    cached.get("k")
    cached.set("k", "own")
    cached.ping()
    get(cached, "k", "own", False, "own SET")
    writer.delete("k")
    cached.ping()
    get(cached, "k", None, False, "after DEL")
    writer.flushdb()
    cached.ping()
    if len(cached.get_cache().collection):
        fail("FLUSHDB left entries in the cache")
    get(cached, "m1", None, False, "after FLUSHDB")

    # 4. kill -9 of the primary: the writes after the failover are seen, never the values
    # cached before it.
    if len(sys.argv) == 3:
        pid = int(sys.argv[2])
        writer.mset({f"f{i}": "before" for i in range(50)})
        cached.ping()
        for i in range(50):
            get(cached, f"f{i}", "before", False, "before the failover")
            get(cached, f"f{i}", "before", True, "before the failover (cached)")
        os.kill(pid, signal.SIGKILL)
        retrying("write after the failover", lambda: writer.mset({f"f{i}": "after" for i in range(50)}))
        retrying("the cached client's barrier after the failover", cached.ping)
        for i in range(50):
            got = retrying("read after the failover", lambda: cached.get(f"f{i}"))
            if got != "after":
                fail(f"after the failover: GET f{i} = {got!r}, expected 'after' (stale read)")
        print("failover: no stale read", flush=True)
    print("ok", flush=True)


if __name__ == "__main__":
    main()
