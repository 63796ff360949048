"""Celery against a Redis URL: the broker in one database, the result backend in another
(as people set it up), a real `celery worker` process (solo pool) running the tasks, and
the caller reading results with .get().

    python celery_check.py redis://127.0.0.1:PORT

Exits non-zero with a message naming what went wrong.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BROKER_DB = 0
BACKEND_DB = 2


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: celery_check.py redis://HOST:PORT")
    base = sys.argv[1].rstrip("/")
    broker, backend = f"{base}/{BROKER_DB}", f"{base}/{BACKEND_DB}"
    os.environ["CELERY_CHECK_BROKER"] = broker
    os.environ["CELERY_CHECK_BACKEND"] = backend
    sys.path.insert(0, HERE)

    from redis import Redis

    for url in (broker, backend):
        Redis.from_url(url).flushdb()

    import celery_app
    from celery import group
    from celery.exceptions import TimeoutError as CeleryTimeout

    # Sent before the worker runs: the message waits in the broker's list.
    early = celery_app.add.delay(20, 22)

    celery = os.path.join(os.path.dirname(sys.executable), "celery")
    log = tempfile.NamedTemporaryFile(prefix="celery-worker-", suffix=".log", delete=False)
    worker = subprocess.Popen(
        [celery, "-A", "celery_app", "worker", "--pool", "solo", "--concurrency", "1",
         "--hostname", f"memoria-check-{os.getpid()}@localhost", "--loglevel", "INFO"],
        cwd=HERE,
        env={**os.environ, "PYTHONPATH": HERE},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    ok = False
    try:
        started = time.monotonic()
        # Waits as long as the worker lives (no bound on elapsed time here: the test
        # harness's hang guard ends a check that never finishes).
        while True:
            try:
                value = early.get(timeout=1)
                break
            except CeleryTimeout:
                code = worker.poll()
                check(code is None, f"the worker exited ({code}) before it ran the first task")
        check(value == 42, f"add(20, 22) returned {value!r}")
        print(f"worker up and first result read in {time.monotonic() - started:.1f}s")

        r = celery_app.add.delay(2, 3)
        check(r.get(timeout=30) == 5, f"add(2, 3) returned {r.result!r}")
        check(r.state == "SUCCESS", f"add(2, 3) state {r.state}")
        check(r.successful(), "add(2, 3) not successful")

        s = celery_app.shout.apply_async(("memoria",), countdown=0)
        check(s.get(timeout=30) == {"text": "MEMORIA", "length": 7}, f"shout returned {s.result!r}")

        f = celery_app.fail.delay("boom from the check")
        try:
            f.get(timeout=30)
            raise AssertionError("fail task: .get() did not raise")
        except ValueError as e:
            check("boom from the check" in str(e), f"fail task raised {e!r}")
        check(f.state == "FAILURE", f"fail task state {f.state}")

        g = group(celery_app.add.s(i, i) for i in range(5))()
        check(g.get(timeout=60) == [0, 2, 4, 6, 8], f"group returned {g.results!r}")

        # Where things live: the results in the backend's database, not the broker's.
        backend_conn = Redis.from_url(backend)
        broker_conn = Redis.from_url(broker)
        key = f"celery-task-meta-{r.id}"
        check(backend_conn.exists(key) == 1, f"{key} is not in the backend database {BACKEND_DB}")
        check(broker_conn.exists(key) == 0, f"{key} is in the broker database {BROKER_DB}")
        ttl = backend_conn.ttl(key)
        check(0 < ttl <= 3600, f"{key} TTL {ttl}, expected result_expires 3600")
        check(broker_conn.llen("memoria-check") == 0, "the broker queue still holds messages")
        r.forget()
        check(backend_conn.exists(key) == 0, f"forget() left {key}")
        print("celery: add, shout, fail (raised), group of 5, result TTL, forget: as expected")
        ok = True
    finally:
        # Warm shutdown, as a service manager stops a worker.
        worker.send_signal(signal.SIGTERM)
        try:
            code = worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            code = worker.wait()
            ok = False
            print("the worker did not stop within 30s of SIGTERM")
        log.close()
        output = open(log.name, encoding="utf-8", errors="replace").read()
        os.unlink(log.name)
        if not ok or code != 0:
            print(f"--- celery worker output (exit {code}) ---")
            print(output)
        if ok and code != 0:
            raise AssertionError(f"the worker exited {code} on SIGTERM")
    print("celery: ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        sys.exit(f"celery check failed: {e}")
