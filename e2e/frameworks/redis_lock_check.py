"""redis-py's Lock (redis.lock.Lock: acquire is SET NX PX, extend, reacquire and release
are Lua scripts run by EVALSHA) against a Redis URL, with a second client contending.

    python redis_lock_check.py redis://127.0.0.1:PORT

Exits non-zero with a message naming what went wrong.
"""

import sys
import threading
import time


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: redis_lock_check.py redis://HOST:PORT")
    import redis
    from redis.exceptions import LockError, LockNotOwnedError

    a = redis.Redis.from_url(sys.argv[1])
    b = redis.Redis.from_url(sys.argv[1])
    a.delete("resource-lock", "counter")

    # Acquire, contend, extend, release.
    la = a.lock("resource-lock", timeout=5)
    lb = b.lock("resource-lock", timeout=5, blocking=False)
    check(la.acquire(blocking=False), "first client could not take a free lock")
    check(la.owned(), "owner does not see itself as owner")
    check(not lb.acquire(), "second client took a lock that is held")
    check(lb.locked(), "second client does not see the lock as held")
    check(not lb.owned(), "second client thinks it owns the lock")
    check(la.extend(10), "extend by the owner failed")
    ttl = a.pttl("resource-lock")
    check(14000 < ttl <= 15000, f"extend did not add to the TTL (pttl {ttl})")
    check(la.extend(20, replace_ttl=True), "extend with replace_ttl failed")
    ttl = a.pttl("resource-lock")
    check(19000 < ttl <= 20000, f"replace_ttl did not set the TTL (pttl {ttl})")
    check(la.reacquire(), "reacquire by the owner failed")
    ttl = a.pttl("resource-lock")
    check(4000 < ttl <= 5000, f"reacquire did not reset the TTL to the timeout (pttl {ttl})")
    try:
        lb.local.token = b"not-the-token"
        lb.release()
        raise AssertionError("a client that does not own the lock released it")
    except LockNotOwnedError:
        pass
    try:
        lb.extend(5)
        raise AssertionError("a client that does not own the lock extended it")
    except LockError:
        pass
    la.release()
    check(not a.exists("resource-lock"), "the lock key is still there after release")
    check(lb.acquire(), "second client could not take the released lock")
    lb.release()

    # Mutual exclusion under contention: increments made under the lock are never lost.
    errors = []

    def worker(n):
        r = redis.Redis.from_url(sys.argv[1])
        try:
            for _ in range(n):
                with r.lock("resource-lock", timeout=5, blocking_timeout=10, sleep=0.005):
                    v = int(r.get("counter") or 0)
                    time.sleep(0.001)
                    r.set("counter", v + 1)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(25,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, f"workers failed: {errors}")
    got = int(a.get("counter"))
    check(got == 100, f"increments under the lock were lost: counter {got}, expected 100")

    # An expired lock is not released by its old owner.
    lc = a.lock("resource-lock", timeout=0.2)
    check(lc.acquire(blocking=False), "could not take the lock again")
    time.sleep(0.4)
    check(b.lock("resource-lock", timeout=5).acquire(blocking=False), "an expired lock was not free")
    try:
        lc.release()
        raise AssertionError("the old owner released a lock it lost")
    except LockNotOwnedError:
        pass
    print("redis-py Lock: ok")


if __name__ == "__main__":
    main()
