"""RQ against a Redis URL: jobs enqueued here are run by a real `rq worker --burst`
process, in database 0 and in database 1 of the same server.

    python rq_check.py redis://127.0.0.1:PORT

Exits non-zero with a message naming what went wrong.
"""

import os
import subprocess
import sys
import time

from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry, FinishedJobRegistry

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rq_jobs  # noqa: E402


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def run_worker(url, queue):
    """`rq worker --burst`: runs every job in the queue, then exits."""
    rq = os.path.join(os.path.dirname(sys.executable), "rq")
    started = time.monotonic()
    p = subprocess.run(
        [rq, "worker", "--burst", "--url", url, "--name", f"memoria-check-{os.getpid()}-{queue}", queue],
        cwd=HERE,
        env={**os.environ, "PYTHONPATH": HERE},
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(f"rq worker --burst {queue} on {url}: exit {p.returncode} in {time.monotonic() - started:.1f}s")
    if p.returncode != 0:
        print(p.stdout)
        print(p.stderr)
        raise AssertionError(f"rq worker --burst exited {p.returncode}")
    return p.stdout + p.stderr


def check_database(base, db):
    url = f"{base}/{db}"
    conn = Redis.from_url(url)
    check(conn.ping(), f"PING on {url}")
    conn.flushdb()
    queue_name = f"memoria-check-db{db}"
    q = Queue(queue_name, connection=conn)

    ok = q.enqueue(rq_jobs.add, 2, 3 + db)
    bad = q.enqueue(rq_jobs.fail, "boom from the check")
    rich = q.enqueue(rq_jobs.describe, {"a": 1, "b": 2, "c": db})
    after = q.enqueue(rq_jobs.add, 40, 2, depends_on=ok)
    check(ok.get_status() == JobStatus.QUEUED, f"{url}: first job is {ok.get_status()}, not queued")
    check(after.get_status() == JobStatus.DEFERRED, f"{url}: dependent job is {after.get_status()}, not deferred")
    check(len(q) == 3, f"{url}: queue length {len(q)}, expected 3 (the dependent job waits)")
    check(queue_name in [x.name for x in Queue.all(connection=conn)], f"{url}: Queue.all misses {queue_name}")

    # The queue lives in this database and in no other.
    other = Redis.from_url(f"{base}/{1 - db}")
    check(conn.exists(q.key) == 1, f"{url}: {q.key} is not in database {db}")
    check(other.exists(q.key) == 0, f"{q.key} leaked into another database than {db}")

    run_worker(url, queue_name)

    for job in (ok, bad, rich, after):
        job.refresh()
    check(ok.get_status() == JobStatus.FINISHED, f"{url}: add job is {ok.get_status()}")
    check(ok.return_value() == 5 + db, f"{url}: add returned {ok.return_value()!r}, expected {5 + db}")
    check(rich.get_status() == JobStatus.FINISHED, f"{url}: describe job is {rich.get_status()}")
    check(
        rich.return_value() == {"keys": ["a", "b", "c"], "total": 3 + db},
        f"{url}: describe returned {rich.return_value()!r}",
    )
    check(after.get_status() == JobStatus.FINISHED, f"{url}: dependent job is {after.get_status()}")
    check(after.return_value() == 42, f"{url}: dependent add returned {after.return_value()!r}")
    check(bad.get_status() == JobStatus.FAILED, f"{url}: failing job is {bad.get_status()}")
    exc = bad.latest_result().exc_string if bad.latest_result() else None
    check(exc and "boom from the check" in exc, f"{url}: failing job's exc_info is {exc!r}")

    # A fresh fetch by id reads what the worker wrote.
    fetched = Job.fetch(ok.id, connection=conn)
    check(fetched.return_value() == 5 + db, f"{url}: Job.fetch result {fetched.return_value()!r}")
    check(len(q) == 0, f"{url}: queue still holds {len(q)} jobs after the burst")
    finished = FinishedJobRegistry(queue=q)
    check(
        set(finished.get_job_ids()) == {ok.id, rich.id, after.id},
        f"{url}: finished registry {finished.get_job_ids()}",
    )
    failed = FailedJobRegistry(queue=q)
    check(failed.get_job_ids() == [bad.id], f"{url}: failed registry {failed.get_job_ids()}")
    print(f"{url}: 4 jobs run by rq worker --burst: add={ok.return_value()}, dependent add=42, describe ok, fail recorded")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: rq_check.py redis://HOST:PORT")
    base = sys.argv[1].rstrip("/")
    for db in (0, 1):
        check_database(base, db)
    print("rq: ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        sys.exit(f"rq check failed: {e}")
