//! Real frameworks, unchanged, against a default `memoria up` (one shard, one replica: a
//! standalone Redis at the stable endpoint): an RQ job enqueued and run by `rq worker
//! --burst`, a Celery round trip with the redis broker and result backend, Django's
//! RedisCache, redis-py's Lock (Lua scripts by EVALSHA) under contention, and BullMQ on
//! Node.js (every queue operation a Lua script: jobs, retries, delays, failures, two
//! workers). The client side is `e2e/frameworks/*_check.py` and
//! `e2e/frameworks/bullmq/check.mjs`, one script per framework, run against the endpoint;
//! each asserts real results and exits non-zero saying what went wrong.
//!
//! The Python frameworks live in a venv this test makes (`python3 -m venv` and `pip install
//! -r e2e/frameworks/requirements.txt`, every package pinned) under
//! ~/.cache/memoria/pyvenv-frameworks, or `MEMORIA_PYVENV`; BullMQ in
//! ~/.cache/memoria/node-bullmq (`npm ci` from `e2e/frameworks/bullmq/package-lock.json`).
//! Each is reused while it was made from the same requirements or lock file, so only the
//! first run reaches the registries.

mod common;

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{Up, manifest_dir, tempdir};

fn frameworks_dir() -> PathBuf {
    manifest_dir().join("frameworks")
}

fn venv_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("MEMORIA_PYVENV") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    home.join(".cache/memoria/pyvenv-frameworks")
}

/// The venv's python, made once per test process (the tests share it), and once per
/// requirements file across processes (a lock file keeps two test runs from building it
/// at the same time).
fn venv_python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(make_venv).clone()
}

fn make_venv() -> PathBuf {
    let reqs_path = frameworks_dir().join("requirements.txt");
    let reqs = std::fs::read_to_string(&reqs_path).unwrap_or_else(|e| panic!("{}: {e}", reqs_path.display()));
    let venv = venv_dir();
    let python = venv.join("bin/python");
    let marker = venv.join("memoria-requirements.txt");
    let manual = format!(
        "to make it by hand: python3 -m venv {v} && {v}/bin/pip install -r {r} && cp {r} {v}/memoria-requirements.txt",
        v = venv.display(),
        r = reqs_path.display()
    );
    std::fs::create_dir_all(venv.parent().unwrap()).unwrap();
    let lock = File::create(venv.with_extension("lock")).unwrap();
    lock.lock().expect("lock the venv's lock file");

    // Reused when made from this requirements file and its python still runs them (a
    // venv outlives an upgrade of the python it points at only on paper).
    let usable = || {
        std::fs::read_to_string(&marker).is_ok_and(|m| m == reqs)
            && Command::new(&python)
                .args(["-c", "import rq, celery, django, redis"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
    };
    if usable() {
        return python;
    }
    let started = Instant::now();
    eprintln!("frameworks: making the venv {} from {}", venv.display(), reqs_path.display());
    let _ = std::fs::remove_dir_all(&venv);
    let base = std::env::var("MEMORIA_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(&base).args(["-m", "venv"]).arg(&venv).output().unwrap_or_else(|e| {
        panic!(
            "could not run `{base} -m venv` ({e}): install CPython 3.10+ with the venv module (apt-get install python3-venv), or set MEMORIA_PYTHON; {manual}"
        )
    });
    assert!(
        out.status.success(),
        "`{base} -m venv {}` failed ({}):\n{}{}\n{manual}",
        venv.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&python)
        .args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-q", "-r"])
        .arg(&reqs_path)
        .output()
        .expect("run the venv's pip");
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&venv);
        panic!(
            "pip install -r {} into {} failed ({}): it needs PyPI (or a mirror set with PIP_INDEX_URL).\n{}{}\n{manual}",
            reqs_path.display(),
            venv.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::write(&marker, &reqs).unwrap();
    assert!(usable(), "the venv {} was made but cannot import rq, celery, django and redis; {manual}", venv.display());
    eprintln!("frameworks: venv ready in {:.0?}", started.elapsed());
    python
}

/// A default `memoria up`: one shard, a primary and one replica, no console. The
/// directory comes first, so it outlives the processes when both are dropped.
fn memoria_up(tag: &str) -> (common::TestDir, Up) {
    let dir = tempdir(tag);
    let up = Up::start(&dir, 1, None);
    up.wait_all_serving(Duration::from_secs(60));
    (dir, up)
}

/// Runs `e2e/frameworks/<script>` with the venv's python against `url`; panics with the
/// script's output unless it exits 0 within `timeout`.
fn run_check(script: &str, url: &str, dir: &Path, up: &Up, timeout: Duration) {
    run_check_with(script, &[url], dir, up, timeout);
}

/// `run_check` with the script's arguments (the URL first).
fn run_check_with(script: &str, args: &[&str], dir: &Path, up: &Up, timeout: Duration) {
    let python = venv_python();
    let mut cmd = Command::new(&python);
    cmd.arg(frameworks_dir().join(script))
        .args(args)
        .current_dir(frameworks_dir())
        // No __pycache__ in the source tree.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .env_remove("PYTHONPATH");
    run_program(cmd, &format!("{script} against {}", args[0]), dir, up, timeout);
}

/// Runs `cmd` (a check); panics with its output unless it exits 0 within `timeout`. It
/// runs in its own process group, so a timeout also ends the workers it started.
fn run_program(mut cmd: Command, what: &str, dir: &Path, up: &Up, timeout: Duration) {
    let out_path = dir.join("check.out");
    let out = File::create(&out_path).unwrap();
    let started = Instant::now();
    let mut child =
        cmd.stdin(Stdio::null()).stdout(out.try_clone().unwrap()).stderr(out).process_group(0).spawn().unwrap_or_else(|e| panic!("run {what}: {e}"));
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > timeout {
            // The group: the script and the workers it started.
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = std::fs::read_to_string(&out_path).unwrap_or_default();
    match status {
        Some(s) if s.success() => eprintln!("{what}: passed in {:.1?}\n{output}", started.elapsed()),
        Some(s) => panic!("{what} failed ({s}) after {:.1?}:\n{output}\n--- memoria up log ---\n{}", started.elapsed(), up.tail_log()),
        None => panic!("{what} did not finish within {timeout:?}:\n{output}\n--- memoria up log ---\n{}", up.tail_log()),
    }
}

/// BullMQ installed with `npm ci` from the pinned lock file, made once per lock file.
fn bullmq_dir() -> PathBuf {
    let src = frameworks_dir().join("bullmq");
    let home = PathBuf::from(std::env::var("HOME").expect("HOME"));
    let dir = std::env::var_os("MEMORIA_NODE_BULLMQ").map(PathBuf::from).unwrap_or_else(|| home.join(".cache/memoria/node-bullmq"));
    let lock_file = std::fs::read_to_string(src.join("package-lock.json")).unwrap();
    let marker = dir.join("memoria-package-lock.json");
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    let lock = File::create(dir.with_extension("lock")).unwrap();
    lock.lock().expect("lock the node cache's lock file");
    if !std::fs::read_to_string(&marker).is_ok_and(|m| m == lock_file) {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["package.json", "package-lock.json"] {
            std::fs::copy(src.join(f), dir.join(f)).unwrap();
        }
        let out = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .output()
            .unwrap_or_else(|e| panic!("could not run npm ({e}): install Node.js 20+ and npm (apt-get install -y nodejs npm)"));
        assert!(
            out.status.success(),
            "npm ci in {} failed ({}): it needs the npm registry.\n{}{}",
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(&marker, &lock_file).unwrap();
    }
    // The check itself is copied on every run: node resolves bullmq from its directory.
    std::fs::copy(src.join("check.mjs"), dir.join("check.mjs")).unwrap();
    dir
}

#[test]
fn rq_worker_burst_runs_enqueued_jobs_in_databases_0_and_1() {
    let (dir, up) = memoria_up("fw-rq");
    let url = format!("redis://{}", up.endpoint());
    run_check("rq_check.py", &url, &dir, &up, Duration::from_secs(300));
}

/// Every Celery 5 worker on a redis broker runs Lua: kombu's `QoS.restore_visible` takes
/// its `unacked_mutex` with redis-py's `Lock` (released by EVALSHA), and kombu 5.7 keeps
/// the binding tables of queues with x-expires (pidbox, mingle, gossip) with scripts
/// calling TIME and ZADD GT.
#[test]
fn celery_round_trip_with_redis_broker_and_result_backend() {
    let (dir, up) = memoria_up("fw-celery");
    let url = format!("redis://{}", up.endpoint());
    run_check("celery_check.py", &url, &dir, &up, Duration::from_secs(300));
}

/// redis-py's `Lock`: extend, reacquire and release are Lua scripts (EVALSHA, loading them
/// on NOSCRIPT), with clients contending for it.
#[test]
fn redis_py_lock_acquire_extend_release_with_contention() {
    let (dir, up) = memoria_up("fw-lock");
    let url = format!("redis://{}", up.endpoint());
    run_check("redis_lock_check.py", &url, &dir, &up, Duration::from_secs(300));
}

/// redis-py's client-side cache (RESP3, CLIENT TRACKING): no stale read across other
/// clients' writes (each held until durable), DEL, FLUSHDB, and a kill -9 of the primary
/// in the middle (the script kills it; redis-py flushes its cache on reconnecting).
#[test]
fn redis_py_client_side_cache_has_no_stale_reads_across_writes_and_failover() {
    let (dir, up) = memoria_up("fw-csc");
    let url = format!("redis://{}", up.endpoint());
    let primary = up.wait_primary(Duration::from_secs(60), None);
    let pid = primary.pid.expect("the primary's pid").to_string();
    run_check_with("redis_cache_check.py", &[&url, &pid], &dir, &up, Duration::from_secs(300));
}

#[test]
fn django_redis_cache_bulk_counters_timeouts_and_clear() {
    let (dir, up) = memoria_up("fw-django");
    let url = format!("redis://{}", up.endpoint());
    run_check("django_check.py", &url, &dir, &up, Duration::from_secs(300));
}

/// BullMQ: every queue operation is a Lua script (EVALSHA, with cmsgpack-encoded job
/// options); two workers complete jobs, retry one with backoff, run a delayed one after
/// its delay and leave a failing one in the failed set.
#[test]
fn bullmq_jobs_retries_delays_and_failures_on_node() {
    let (dir, up) = memoria_up("fw-bullmq");
    let node_dir = bullmq_dir();
    let port = up.endpoint().rsplit(':').next().unwrap().to_string();
    let mut cmd = Command::new("node");
    cmd.arg("check.mjs").arg(&port).current_dir(&node_dir);
    run_program(cmd, &format!("bullmq/check.mjs against port {port}"), &dir, &up, Duration::from_secs(300));
}
