"""Django's built-in RedisCache (django.core.cache.backends.redis, on redis-py) against a
Redis URL, configured in-process: the bulk calls, counters, add/get_or_set, timeouts, and
clear() emptying the cache's own database only.

    python django_check.py redis://127.0.0.1:PORT

Exits non-zero with a message naming what went wrong.
"""

import datetime
import sys
import time

CACHE_DB = 3
OTHER_DB = 4


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def expect_eq(got, want, what):
    check(got == want, f"{what}: got {got!r}, expected {want!r}")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: django_check.py redis://HOST:PORT")
    base = sys.argv[1].rstrip("/")
    url = f"{base}/{CACHE_DB}"

    import django
    from django.conf import settings

    settings.configure(
        CACHES={
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": url,
                "KEY_PREFIX": "memoria-check",
                "TIMEOUT": 300,
            }
        }
    )
    django.setup()
    from django.core.cache import cache
    from redis import Redis

    raw = Redis.from_url(url)
    other = Redis.from_url(f"{base}/{OTHER_DB}")
    raw.flushdb()
    other.flushdb()
    other.set("survives-clear", "yes")

    # set_many / get_many: ints are stored as plain integers, the rest pickled.
    stamp = datetime.datetime(2024, 5, 17, 12, 30, tzinfo=datetime.timezone.utc)
    values = {"a": 1, "b": "two", "c": [1, 2, {"x": None}], "d": stamp, "e": b"\x00\xffbytes", "f": 2.5}
    expect_eq(cache.set_many(values), [], "set_many failed keys")
    expect_eq(cache.get_many(list(values) + ["missing"]), values, "get_many")
    expect_eq(raw.get(cache.make_key("a")), b"1", "an int is stored as its decimal text")
    expect_eq(raw.dbsize(), len(values), "keys in the cache database after set_many")
    ttl = raw.ttl(cache.make_key("b"))
    check(290 <= ttl <= 300, f"set_many with the default TIMEOUT 300: TTL {ttl}")
    check(cache.has_key("a") and not cache.has_key("missing"), "has_key")

    # delete_many / delete
    cache.delete_many(["a", "b", "missing"])
    expect_eq(cache.get_many(list(values)), {k: v for k, v in values.items() if k not in ("a", "b")}, "get_many after delete_many")
    expect_eq(cache.delete("c"), True, "delete of a present key")
    expect_eq(cache.delete("c"), False, "delete of a missing key")
    expect_eq(cache.get("c", "default"), "default", "get of a deleted key with a default")

    # add / get_or_set
    expect_eq(cache.add("d", "other"), False, "add over an existing key")
    expect_eq(cache.get("d"), stamp, "the value add did not replace")
    expect_eq(cache.add("new", {"k": "v"}), True, "add of a new key")
    expect_eq(cache.get("new"), {"k": "v"}, "the value add stored")
    expect_eq(cache.get_or_set("g", 42), 42, "get_or_set of a missing key")
    expect_eq(cache.get_or_set("g", 43), 42, "get_or_set of a present key")
    expect_eq(cache.get_or_set("h", lambda: "computed"), "computed", "get_or_set with a callable")

    # incr / decr
    cache.set("n", 10)
    expect_eq(cache.incr("n"), 11, "incr")
    expect_eq(cache.incr("n", 5), 16, "incr by 5")
    expect_eq(cache.decr("n", 20), -4, "decr by 20")
    expect_eq(cache.get("n"), -4, "get after incr/decr")
    try:
        cache.incr("no-such-counter")
        raise AssertionError("incr of a missing key did not raise ValueError")
    except ValueError:
        pass

    # Versions: the same name under another version is another key.
    cache.set("v", "one", version=1)
    cache.set("v", "two", version=2)
    expect_eq((cache.get("v", version=1), cache.get("v", version=2)), ("one", "two"), "versioned get")
    expect_eq(cache.incr_version("v", version=2), 3, "incr_version")
    expect_eq(cache.get("v", version=3), "two", "get after incr_version")
    expect_eq(cache.get("v", version=2), None, "the old version after incr_version")

    # Timeouts: a TTL given, none (persistent), touch to extend and to persist, 0 = gone.
    # A TTL long enough that a slow machine cannot let it lapse before it is read.
    cache.set("t", "short", timeout=60)
    ttl = raw.pttl(cache.make_key("t"))
    check(0 < ttl <= 60_000, f"PTTL of a 60s entry: {ttl}")
    cache.set("forever", "kept", timeout=None)
    expect_eq(raw.ttl(cache.make_key("forever")), -1, "TTL of timeout=None")
    cache.set_many({"m1": 1, "m2": 2}, timeout=100)
    for k in ("m1", "m2"):
        ttl = raw.ttl(cache.make_key(k))
        check(90 <= ttl <= 100, f"set_many timeout=100: TTL of {k} is {ttl}")
    expect_eq(cache.touch("m1", 1000), True, "touch of a present key")
    ttl = raw.ttl(cache.make_key("m1"))
    check(990 <= ttl <= 1000, f"TTL after touch 1000: {ttl}")
    expect_eq(cache.touch("m2", None), True, "touch to persist")
    expect_eq(raw.ttl(cache.make_key("m2")), -1, "TTL after touch(None)")
    expect_eq(cache.touch("missing", 10), False, "touch of a missing key")
    cache.set("zero", "gone", timeout=0)
    expect_eq(cache.get("zero"), None, "set with timeout=0")
    expect_eq(cache.add("added-ttl", 1, timeout=50), True, "add with a timeout")
    ttl = raw.ttl(cache.make_key("added-ttl"))
    check(40 <= ttl <= 50, f"add timeout=50: TTL {ttl}")
    # Sleeping past a TTL only ever errs on the safe side: the entry is due whatever the
    # machine's speed.
    cache.set("short", "gone soon", timeout=1)
    time.sleep(1.3)
    expect_eq(cache.get("short"), None, "a 1s entry after 1.3s")
    expect_eq(cache.get("t"), "short", "a 60s entry after 1.3s")
    expect_eq(cache.get("forever"), "kept", "a timeout=None entry")

    # clear: FLUSHDB of the cache's database, and only that one.
    check(raw.dbsize() > 0, "the cache database is empty before clear")
    cache.clear()
    expect_eq(raw.dbsize(), 0, "keys in the cache database after clear")
    expect_eq(cache.get_many(["d", "e", "g", "forever"]), {}, "get_many after clear")
    expect_eq(other.get("survives-clear"), b"yes", f"database {OTHER_DB} after clear of database {CACHE_DB}")
    cache.close()
    print("django: set_many/get_many/delete_many/delete, add, get_or_set, incr/decr, versions, TTLs, touch, clear: as expected")
    print("django: ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        sys.exit(f"django check failed: {e}")
