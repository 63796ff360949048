//! The web console against a real `memoria up` (issue #8):
//! - in headless Chromium (chromedriver + fantoccini): the overview lists the shard and its
//!   nodes after hydration, the lease countdown moves, a snapshot taken from the page
//!   appears with its checksums, stepping the primary down from the page changes the
//!   primary shown, and a node killed with SIGKILL turns its row unhealthy; a screenshot
//!   of every page is saved under <target>/console-screenshots (paths printed);
//! - without JavaScript: the server-rendered pages carry the data;
//! - with a console token: unauthenticated actions and data requests are refused;
//! - on two shards, slots moved from the Slots page (the admin endpoint of issue #7):
//!   their keys follow them, the map shows the new owner, a bad request is refused.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them).

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Up, free_port, get, rt, signal, tempdir};
use fantoccini::{Client, ClientBuilder, Locator};
use memoria_core::server::cluster::key_slot;
use memoria_e2e::workload::{Conn, Reply};

fn with_console(dir: &std::path::Path, replicas: usize, extra: &[&str]) -> (Up, u16) {
    let port = free_port();
    let mut args = vec!["--console-port".to_string(), port.to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let up = Up::start_with(dir, replicas, None, args);
    (up, port)
}

/// The console answers (it is started by `memoria up` once the nodes are up).
async fn wait_console(base: &str, up: &Up) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if get(&format!("{base}/healthz"), None).await.0 == 200 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the console at {base} did not come up\n{}\nconsole.log:\n{}",
            up.tail_log(),
            std::fs::read_to_string(up.dir.join("console.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls the server-rendered overview until `pred` holds.
async fn overview_until(base: &str, what: &str, pred: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = get(&format!("{base}/"), None).await;
        if status == 200 && pred(&body) {
            return body;
        }
        assert!(Instant::now() < deadline, "overview never showed {what}; last page ({status}):\n{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn server_rendered_pages_work_without_javascript() {
    let dir = tempdir("console-nojs");
    let (up, port) = with_console(&dir, 1, &[]);
    let c = up.wait_all_serving(Duration::from_secs(60));
    let primary = c.primary.clone().expect("a primary");
    let base = format!("http://127.0.0.1:{port}");
    rt().block_on(async {
        wait_console(&base, &up).await;
        let mut e = Conn::connect(&up.endpoint()).await.unwrap();
        for i in 0..20 {
            assert_eq!(e.request(&[b"SET", format!("k{i}").as_bytes(), b"v"]).await.unwrap(), Reply::Simple("OK".into()));
        }
        // The whole overview is in the HTML: shard, both nodes, the primary, its health.
        let names_primary = |b: &str| b.find("id=\"primary-0\"").is_some_and(|i| b[i..(i + 200).min(b.len())].contains(primary.as_str()));
        let body = overview_until(&base, "the primary and both nodes healthy", |b| names_primary(b) && b.matches("node healthy").count() == 2).await;
        assert!(body.contains("id=\"shard-0\""), "{body}");
        for n in &c.nodes {
            assert!(body.contains(&format!("data-node=\"{}\"", n.name)), "node {} missing:\n{body}", n.name);
        }
        assert!(body.contains("Lease expires in"), "{body}");
        // The round trip through the port clients use, measured by the console itself.
        let body = overview_until(&base, "the endpoint's round trip", |b| {
            b.find("id=\"endpoint-latency\"").is_some_and(|i| b[i..(i + 120).min(b.len())].contains(" median, "))
        })
        .await;
        // No console token: no session, so the "Log out" link is hidden.
        assert!(!body.contains("with-login") && body.contains("class=\"logout\""), "{body}");
        assert!(body.contains("class=\"lease-countdown mono\""), "{body}");
        // Server-rendered: no <template> streaming, the data is in place.
        assert!(!body.contains("<template"), "the page should be rendered whole (SsrMode::Async)");
        // The other pages too.
        let (s, log) = get(&format!("{base}/log/0"), None).await;
        assert_eq!(s, 200);
        assert!(log.contains("leader claim") || log.contains("lease renewal"), "log page lacks lease entries:\n{log}");
        assert!(log.contains("class=\"entry\""), "{log}");
        let (s, slots) = get(&format!("{base}/slots"), None).await;
        assert_eq!(s, 200);
        // One shard without --cluster is a standalone server: no slots to draw.
        assert!(slots.contains("id=\"standalone\"") && !slots.contains("id=\"slot-map\""), "{slots}");
        let (s, snaps) = get(&format!("{base}/snapshots"), None).await;
        assert_eq!(s, 200);
        assert!(snaps.contains("id=\"snapshots-0\""), "{snaps}");
        // Before the first snapshot the page says so instead of "recorded up to 0".
        if snaps.contains("No snapshots yet.") {
            assert!(snaps.contains("Log not covered by a snapshot") && !snaps.contains("Log since the newest snapshot"), "{snaps}");
        }
        let (s, node) = get(&format!("{base}/node/{primary}"), None).await;
        assert_eq!(s, 200);
        assert!(node.contains("# Replication") || node.contains(">Replication<"), "INFO sections missing:\n{node}");
        assert!(node.contains("memoria_latency_p99_usec"), "node latency missing:\n{node}");
        // Nodes that need a password: the console (started by memoria up) authenticates
        // with the run's internal token, so nothing turns red.
        assert_eq!(e.request(&[b"CONFIG", b"SET", b"requirepass", b"pw"]).await.unwrap(), Reply::Simple("OK".into()));
        tokio::time::sleep(Duration::from_millis(2500)).await; // a few sampling rounds
        let (s, node) = get(&format!("{base}/node/{primary}"), None).await;
        assert!(s == 200 && node.contains("memoria_latency_p99_usec"), "node page with a password set ({s}):\n{node}");
        let body = overview_until(&base, "both nodes healthy with a password set", |b| b.matches("node healthy").count() == 2).await;
        assert!(!body.contains("NOAUTH"), "{body}");
    });
}

#[test]
fn actions_need_the_token_when_one_is_configured() {
    let dir = tempdir("console-auth");
    let (up, port) = with_console(&dir, 1, &["--console-token", "s3cret-token"]);
    let start = up.wait_all_serving(Duration::from_secs(60));
    let primary = start.nodes.iter().find(|n| n.role == "primary").unwrap().clone();
    let base = format!("http://127.0.0.1:{port}");
    rt().block_on(async {
        wait_console(&base, &up).await;
        let c = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        // Actions and data (server functions) without a login: 401, and nothing done.
        for (path, body) in
            [("/api/step_down", "shard=0"), ("/api/take_snapshot", "shard=0"), ("/api/move_slots", "slots=0-9&from=0&to=1"), ("/api/overview", "")]
        {
            let r = c.post(format!("{base}{path}")).header("content-type", "application/x-www-form-urlencoded").body(body).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 401, "{path} without a login");
            let r = c
                .post(format!("{base}{path}"))
                .bearer_auth("wrong")
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 401, "{path} with a wrong token");
        }
        // Pages send to the login; a wrong token does not log in.
        let (s, _) = get(&format!("{base}/"), None).await;
        assert_eq!(s, 303, "the overview redirects to the login");
        let r = c.post(format!("{base}/login")).form(&[("token", "nope")]).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 401);
        assert!(r.headers().get("set-cookie").is_none());
        // The right token gives a session cookie that opens the pages and the data.
        let r = c.post(format!("{base}/login")).form(&[("token", "s3cret-token")]).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 303);
        let cookie = r.headers().get("set-cookie").expect("a session cookie").to_str().unwrap().split(';').next().unwrap().to_string();
        let r = c.get(format!("{base}/")).header("cookie", &cookie).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200);
        assert!(r.text().await.unwrap().contains("id=\"shard-0\""));
        let r = c
            .post(format!("{base}/api/overview"))
            .header("cookie", &cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let (s, body) = get(&format!("{base}/"), Some("s3cret-token")).await;
        assert_eq!(s, 200, "a bearer token works too: {body}");
        assert!(body.contains("class=\"with-login\""), "a session to log out of: the link shows\n{body}");
        // No step-down happened while unauthenticated: the same primary, same epoch.
        let now = up.wait_primary(Duration::from_secs(10), None);
        assert_eq!((now.name, now.epoch), (primary.name, primary.epoch), "the refused step-down did nothing");
    });
}

struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn chromedriver() -> (Driver, String) {
    let port = free_port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver is needed for the console's browser tests: apt-get install -y chromium chromium-driver");
    let d = Driver(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    (d, format!("http://127.0.0.1:{port}"))
}

async fn browser(driver: &str, profile: &std::path::Path) -> Client {
    let mut caps = serde_json::Map::new();
    let args = vec![
        "--headless".to_string(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-quic".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--disable-dev-shm-usage".into(),
        "--window-size=1400,1000".into(),
        format!("--user-data-dir={}", profile.display()),
    ];
    caps.insert("goog:chromeOptions".into(), serde_json::json!({ "binary": "/usr/bin/chromium", "args": args }));
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new()).capabilities(caps).connect(driver).await.expect("a headless Chromium session")
}

fn screenshots_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let d = exe.parent().and_then(|p| p.parent()).unwrap().join("console-screenshots");
    std::fs::create_dir_all(&d).unwrap();
    d
}

async fn shot(c: &Client, name: &str) {
    let png = c.screenshot().await.expect("screenshot");
    let p = screenshots_dir().join(format!("{name}.png"));
    std::fs::write(&p, png).unwrap();
    println!("screenshot: {}", p.display());
}

async fn text(c: &Client, css: &str) -> String {
    match c.find(Locator::Css(css)).await {
        Ok(e) => e.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// Goes to `path` and waits for hydration (the page sets body[data-hydrated]).
async fn open(c: &Client, base: &str, path: &str) {
    c.goto(&format!("{base}{path}")).await.unwrap();
    c.wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::Css("body[data-hydrated='1']"))
        .await
        .unwrap_or_else(|e| panic!("{path} did not hydrate: {e}"));
}

async fn until<F, Fut>(what: &str, limit: Duration, mut f: F) -> String
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<String>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "the page never showed {what} (waited {limit:?})");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn browser_overview_countdown_snapshot_step_down_and_a_killed_node() {
    let dir = tempdir("console-browser");
    let (up, port) = with_console(&dir, 2, &[]);
    let cj = up.wait_all_serving(Duration::from_secs(60));
    assert_eq!(cj.nodes.len(), 3);
    let base = format!("http://127.0.0.1:{port}");
    let (_driver, driver_url) = chromedriver();
    let profile = dir.join("chromium-profile");
    rt().block_on(async {
        wait_console(&base, &up).await;
        let mut e = Conn::connect(&up.endpoint()).await.unwrap();
        for i in 0..100 {
            assert_eq!(e.request(&[b"SET", format!("key:{i}").as_bytes(), b"value"]).await.unwrap(), Reply::Simple("OK".into()));
        }
        let c = browser(&driver_url, &profile).await;

        // Overview, hydrated: the shard and its three nodes.
        open(&c, &base, "/").await;
        let primary = until("the primary", Duration::from_secs(30), || async {
            let p = text(&c, "#primary-0").await;
            (p.starts_with("node-")).then_some(p)
        })
        .await;
        assert_eq!(Some(primary.clone()), up.cluster().unwrap().primary, "the page names cluster.json's primary");
        for n in &cj.nodes {
            c.find(Locator::Css(&format!("tr[data-node='{}']", n.name))).await.unwrap_or_else(|_| panic!("row of {} missing", n.name));
        }
        until("every node healthy", Duration::from_secs(30), || async {
            (c.find_all(Locator::Css("tr.node.healthy")).await.map(|v| v.len()).unwrap_or(0) == 3).then_some(String::new())
        })
        .await;
        shot(&c, "overview").await;

        // The lease countdown moves without a reload.
        let first = text(&c, "#lease-0").await;
        assert!(first.ends_with(" s") || first == "expired", "countdown text {first:?}");
        until("the lease countdown moving", Duration::from_secs(10), || async {
            let now = text(&c, "#lease-0").await;
            (now != first && now.ends_with(" s")).then_some(now)
        })
        .await;

        // A snapshot taken from the page appears with its checksums.
        open(&c, &base, "/snapshots").await;
        let before: Vec<String> = names(&c).await;
        c.wait().at_most(Duration::from_secs(30)).for_element(Locator::Css("#take-snapshot-0")).await.unwrap().click().await.unwrap();
        c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("#confirm-snapshot")).await.unwrap().click().await.unwrap();
        let result = until("the snapshot's result", Duration::from_secs(180), || async {
            let ok = text(&c, "#snapshot-result .result.ok").await;
            let err = text(&c, "#snapshot-result .result.error").await;
            assert!(err.is_empty(), "taking a snapshot failed: {err}");
            (!ok.is_empty()).then_some(ok)
        })
        .await;
        assert!(result.contains("published snapshot"), "{result}");
        let new_name =
            until("the new snapshot in the table", Duration::from_secs(30), || async { names(&c).await.into_iter().find(|n| !before.contains(n)) }).await;
        assert!(result.contains(&new_name), "result {result:?} names {new_name}");
        let row = c.find(Locator::Css(&format!("tr[data-name='{new_name}']"))).await.unwrap();
        for class in ["log-checksum", "data-checksum"] {
            let sum = row.find(Locator::Css(&format!("code.{class}"))).await.unwrap().attr("title").await.unwrap().unwrap_or_default();
            assert_eq!(sum.len(), 64, "{class} of {new_name}: {sum:?}");
            assert!(sum.chars().all(|ch| ch.is_ascii_hexdigit()), "{sum}");
        }
        let status = row.find(Locator::Css("td.status")).await.unwrap().text().await.unwrap();
        assert!(status.starts_with("verified"), "status {status:?}");
        shot(&c, "snapshots").await;

        // Step the primary down from the page: the election picks another node.
        open(&c, &base, "/").await;
        until("the primary again", Duration::from_secs(30), || async { (text(&c, "#primary-0").await == primary).then_some(String::new()) }).await;
        until("a healthy replica", Duration::from_secs(30), || async {
            (c.find_all(Locator::Css("tr.node.healthy[data-role='replica']")).await.map(|v| v.len()).unwrap_or(0) >= 1).then_some(String::new())
        })
        .await;
        c.wait().at_most(Duration::from_secs(30)).for_element(Locator::Css("#step-down-0")).await.unwrap().click().await.unwrap();
        c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("#confirm-step-down")).await.unwrap().click().await.unwrap();
        let said = until("the step-down result", Duration::from_secs(30), || async {
            let ok = text(&c, "#step-down-result .result.ok").await;
            let err = text(&c, "#step-down-result .result.error").await;
            assert!(err.is_empty(), "step-down failed: {err}");
            (!ok.is_empty()).then_some(ok)
        })
        .await;
        assert!(said.contains(&primary), "{said}");
        // Election time: the lease (1.5 s) plus two backoffs at most; the page refreshes
        // every second. The bound is generous: this is not a timing assertion.
        let new_primary = until("a new primary", Duration::from_secs(30), || async {
            let p = text(&c, "#primary-0").await;
            (p.starts_with("node-") && p != primary).then_some(p)
        })
        .await;
        assert_ne!(new_primary, primary);
        shot(&c, "overview-after-step-down").await;

        // A node killed with SIGKILL turns its row unhealthy (the supervisor restarts it).
        let cj = up.cluster().unwrap();
        let victim = cj.nodes.iter().find(|n| n.role == "replica" && n.pid.is_some()).expect("a replica").clone();
        signal(victim.pid.unwrap(), "KILL");
        until("the killed node's row unhealthy", Duration::from_secs(30), || async {
            let rows = c.find_all(Locator::Css(&format!("tr.node.unhealthy[data-node='{}']", victim.name))).await.unwrap_or_default();
            (!rows.is_empty()).then_some(String::new())
        })
        .await;
        let health = text(&c, &format!("tr[data-node='{}'] td.health", victim.name)).await;
        assert!(health.starts_with("unhealthy"), "{health}");
        shot(&c, "overview-node-killed").await;

        // The other pages, for the record.
        open(&c, &base, "/slots").await;
        c.wait().at_most(Duration::from_secs(30)).for_element(Locator::Css("#standalone")).await.unwrap();
        shot(&c, "slots-standalone").await;
        open(&c, &base, "/log/0").await;
        c.wait().at_most(Duration::from_secs(30)).for_element(Locator::Css("#log-entries tr.entry")).await.unwrap();
        shot(&c, "log").await;
        open(&c, &base, &format!("/node/{new_primary}")).await;
        c.wait().at_most(Duration::from_secs(30)).for_element(Locator::Css(".chart svg")).await.unwrap();
        assert_eq!(text(&c, "#node-role").await, "primary");
        shot(&c, "node").await;
        c.close().await.unwrap();
    });
    drop(up);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Types `value` into the input `css` in place of what it held.
async fn fill(c: &Client, css: &str, value: &str) {
    let input = c.wait().at_most(Duration::from_secs(30)).for_element(Locator::Css(css)).await.unwrap();
    input.clear().await.unwrap();
    input.send_keys(value).await.unwrap();
}

/// Asks the page to move `slots` and returns the action's result: Ok(text) or Err(text).
async fn ask_move(c: &Client, slots: &str, from: u16, to: u16) -> Result<String, String> {
    fill(c, "#move-slots-input", slots).await;
    fill(c, "#move-from", &from.to_string()).await;
    fill(c, "#move-to", &to.to_string()).await;
    c.find(Locator::Css("#move-slots")).await.unwrap().click().await.unwrap();
    // The previous request's result stays until this one's arrives.
    let before = text(c, "#move-result").await;
    c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("#confirm-move")).await.unwrap().click().await.unwrap();
    let r = until("the move's result", Duration::from_secs(30), || async {
        let ok = text(c, "#move-result .result.ok").await;
        let err = text(c, "#move-result .result.error").await;
        let now = text(c, "#move-result").await;
        (now != before && (!ok.is_empty() || !err.is_empty())).then(|| format!("{}{ok}|{err}", if ok.is_empty() { "E" } else { "O" }))
    })
    .await;
    let (ok, err) = r[1..].split_once('|').unwrap();
    if r.starts_with('O') { Ok(ok.to_string()) } else { Err(err.to_string()) }
}

#[test]
fn browser_moves_slots_between_shards() {
    const LAST: u16 = 99; // slots 0-99 move from shard 0 to shard 1
    let dir = tempdir("console-move");
    let port = free_port();
    let up = Up::start_sharded_with(&dir, 2, 1, None, vec!["--console-port".into(), port.to_string()]);
    up.wait_all_serving(Duration::from_secs(90));
    let base = format!("http://127.0.0.1:{port}");
    let (_driver, driver_url) = chromedriver();
    let profile = dir.join("chromium-profile");
    let keys: Vec<String> = (0..).map(|i| format!("mv:{i}")).filter(|k| key_slot(k.as_bytes()) <= LAST).take(200).collect();
    rt().block_on(async {
        wait_console(&base, &up).await;
        let urls: Vec<String> = up.node_addrs().iter().map(|a| format!("redis://{a}/")).collect();
        let mut kv = redis::cluster::ClusterClientBuilder::new(urls).retries(10).build().unwrap().get_async_connection().await.unwrap();
        for k in &keys {
            let () = redis::cmd("SET").arg(k).arg(format!("v-{k}")).query_async(&mut kv).await.unwrap();
        }
        let c = browser(&driver_url, &profile).await;
        open(&c, &base, "/slots").await;
        c.wait().at_most(Duration::from_secs(30)).for_element(Locator::Css("#slot-map rect[data-slots^='0-'][data-shard='0']")).await.unwrap();

        // Refused before anything starts: slots the source does not own.
        let err = ask_move(&c, "16000-16010", 0, 1).await.expect_err("shard 0 does not own slot 16000");
        assert!(err.contains("slot 16000 belongs to shard 1, not 0"), "{err}");
        assert!(text(&c, "#no-migrations").await == "None.", "a refused move started nothing");

        let said = ask_move(&c, &format!("0-{LAST}"), 0, 1).await.expect("the move starts");
        assert!(said.contains(&format!("moving slots 0-{LAST} from shard-0 to shard-1")), "{said}");
        let status = until("the move committed", Duration::from_secs(120), || async {
            let el = c.find(Locator::Css("#move-status[data-running='false']")).await.ok()?;
            Some(format!("{}|{}", el.attr("data-ok").await.ok().flatten().unwrap_or_default(), el.text().await.unwrap_or_default()))
        })
        .await;
        assert!(status.starts_with("true|") && status.contains("committed") && status.contains(&format!("({} keys moved)", keys.len())), "{status}");
        // The map, drawn from the nodes' CLUSTER SLOTS, shows the new owner.
        until("slots 0-99 drawn as shard-1's", Duration::from_secs(30), || async {
            c.find(Locator::Css(&format!("#slot-map rect[data-slots='0-{LAST}'][data-shard='1']"))).await.ok().map(|_| String::new())
        })
        .await;
        until("no migration in progress", Duration::from_secs(30), || async { (text(&c, "#no-migrations").await == "None.").then_some(String::new()) }).await;
        shot(&c, "slots-after-move").await;
        c.close().await.unwrap();

        // Every key is readable, and held by shard 1 only.
        for k in &keys {
            let v: String = redis::cmd("GET").arg(k).query_async(&mut kv).await.unwrap();
            assert_eq!(v, format!("v-{k}"));
        }
        let cl = up.cluster().unwrap();
        for shard in 0..2u16 {
            let p = cl.nodes.iter().find(|n| n.shard == shard && n.role == "primary").expect("a primary per shard");
            let mut d = redis::Client::open(format!("redis://127.0.0.1:{}/", p.port)).unwrap().get_multiplexed_async_connection().await.unwrap();
            let mut pipe = redis::pipe();
            for s in 0..=LAST {
                pipe.cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(s);
            }
            let n: u64 = pipe.query_async::<Vec<u64>>(&mut d).await.unwrap().iter().sum();
            assert_eq!(n, if shard == 1 { keys.len() as u64 } else { 0 }, "keys of slots 0-{LAST} on shard {shard}");
        }
    });
    drop(up);
    let _ = std::fs::remove_dir_all(&dir);
}

async fn names(c: &Client) -> Vec<String> {
    let mut out = Vec::new();
    for r in c.find_all(Locator::Css("#snapshots-0 tr.snapshot")).await.unwrap_or_default() {
        if let Ok(Some(n)) = r.attr("data-name").await {
            out.push(n);
        }
    }
    out
}
