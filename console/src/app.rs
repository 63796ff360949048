//! The pages. Rendered on the server (complete HTML: `SsrMode::Async`, so the console is
//! a read-only view without JavaScript) and hydrated in the browser, where a one-second
//! tick refetches each page's data through server functions and a 100 ms clock moves
//! the lease countdowns between fetches.
//!
//! Controls that act live outside the parts that refresh, so they keep keyboard focus;
//! every action asks for confirmation in the page and shows its result.

use leptos::prelude::*;
use leptos_router::components::{Route, Router, Routes};
use leptos_router::hooks::{use_params_map, use_query_map};
use leptos_router::{SsrMode, path};

use crate::model::*;

/// Served as /pkg/console.css (and inlined in the login page).
pub const STYLE: &str = r#"
:root { --bg: #f7f7f5; --fg: #1c1c1c; --muted: #5d5d5d; --ok: #17663a; --okbg: #e3f4ea; --bad: #a8161b; --badbg: #fde4e4; --warn: #8a5a00; --warnbg: #fff2d6; --line: #d8d8d3; --accent: #1f4e99; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; background: var(--bg); color: var(--fg); }
header.top { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; padding: .6rem 1.2rem; background: #20242b; color: #fff; }
header.top strong { font-size: 1.05rem; margin-right: 1rem; }
header.top a { color: #dfe7ff; text-decoration: none; padding: .2rem .4rem; border-radius: 4px; }
header.top a:hover, header.top a:focus-visible { background: #3a4150; outline: 2px solid #9bb8ff; }
main { padding: 1rem 1.2rem 3rem; max-width: 1400px; }
h1 { font-size: 1.35rem; margin: .2rem 0 .8rem; }
h2 { font-size: 1.1rem; margin: 1.2rem 0 .4rem; }
table { border-collapse: collapse; width: 100%; background: #fff; margin: .3rem 0 1rem; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { background: #eeeeea; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.unhealthy td { background: var(--badbg); color: var(--bad); }
tr.healthy td.health { color: var(--ok); }
.badge { display: inline-block; padding: .05rem .5rem; border-radius: 999px; font-size: .85rem; font-weight: 600; }
.badge.ok { background: var(--okbg); color: var(--ok); }
.badge.degraded { background: var(--warnbg); color: var(--warn); }
.badge.down { background: var(--badbg); color: var(--bad); }
.totals { display: flex; flex-wrap: wrap; gap: .6rem; margin-bottom: 1rem; }
.totals div { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .4rem .8rem; min-width: 8rem; }
.totals b { display: block; font-size: 1.2rem; font-variant-numeric: tabular-nums; }
.shard { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: .6rem 1rem; margin-bottom: 1rem; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(15rem, 1fr)); gap: .2rem 1.2rem; margin: .4rem 0; }
.facts span { color: var(--muted); margin-right: .3rem; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: .88rem; }
.errors { background: var(--badbg); color: var(--bad); border: 1px solid #f0b4b4; border-radius: 6px; padding: .5rem 1rem .5rem 2rem; }
.actions { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: .6rem 1rem; margin: .6rem 0 1rem; }
.actions .row { display: flex; flex-wrap: wrap; gap: .6rem; align-items: center; margin: .3rem 0; }
button { font: inherit; padding: .3rem .8rem; border-radius: 5px; border: 1px solid #888; background: #fff; cursor: pointer; }
button:focus-visible, a:focus-visible, input:focus-visible { outline: 3px solid #6c9cff; outline-offset: 1px; }
button.danger { background: var(--bad); color: #fff; border-color: var(--bad); }
button:disabled { opacity: .55; cursor: not-allowed; }
.confirm { display: flex; flex-wrap: wrap; gap: .6rem; align-items: center; background: var(--warnbg); border: 1px solid #e8c67a; border-radius: 6px; padding: .5rem .8rem; margin: .3rem 0; }
.result { padding: .4rem .8rem; border-radius: 6px; margin: .3rem 0; }
.result.ok { background: var(--okbg); color: var(--ok); }
.result.error { background: var(--badbg); color: var(--bad); }
.muted { color: var(--muted); }
.pager { display: flex; gap: 1rem; margin: .4rem 0; }
svg.slots rect.free { fill: #e5e5e0; }
.legend span { display: inline-block; width: .9rem; height: .9rem; border-radius: 2px; vertical-align: middle; margin-right: .3rem; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5rem; }
.chart { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .4rem .6rem; }
.chart polyline { fill: none; stroke: var(--accent); stroke-width: 1.5; }
.info { display: grid; grid-template-columns: repeat(auto-fill, minmax(22rem, 1fr)); gap: 1rem; }
.info table td:first-child { color: var(--muted); }
main.login { max-width: 24rem; margin: 4rem auto; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 1.5rem; }
main.login form { display: flex; flex-direction: column; gap: .6rem; }
main.login input { font: inherit; padding: .4rem; }
p.error { color: var(--bad); }
/* Only a console started with a token has a session to log out of. */
header.top a.logout { display: none; }
body.with-login header.top a.logout { display: inline; }
"#;

/// Shard colours on the slot map (and its legend).
const COLOURS: [&str; 8] = ["#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"];

// ---- server functions (the browser's data and actions) ----

#[server(endpoint = "overview")]
pub async fn get_overview() -> Result<Overview, ServerFnError> {
    let c = expect_context::<crate::server::Shared>();
    Ok(c.overview().await)
}

#[server(endpoint = "shards")]
pub async fn get_shard_ids() -> Result<Vec<u32>, ServerFnError> {
    let c = expect_context::<crate::server::Shared>();
    Ok(c.overview().await.shards.iter().map(|s| s.id).collect())
}

#[server(endpoint = "snapshots")]
pub async fn get_snapshots() -> Result<SnapshotsPage, ServerFnError> {
    let c = expect_context::<crate::server::Shared>();
    Ok(c.snapshots_page().await)
}

#[server(endpoint = "log")]
pub async fn get_log(shard: u32, before: Option<u64>) -> Result<LogPage, ServerFnError> {
    let c = expect_context::<crate::server::Shared>();
    Ok(c.log_page(shard, before, 50).await)
}

#[server(endpoint = "slots")]
pub async fn get_slots() -> Result<SlotsPage, ServerFnError> {
    let c = expect_context::<crate::server::Shared>();
    Ok(c.slots_page().await)
}

#[server(endpoint = "node")]
pub async fn get_node(name: String) -> Result<NodeDetail, ServerFnError> {
    let c = expect_context::<crate::server::Shared>();
    Ok(c.node_detail(&name).await)
}

#[server(endpoint = "step_down")]
pub async fn step_down(shard: u32) -> Result<String, ServerFnError> {
    let c = expect_context::<crate::server::Shared>();
    c.step_down(shard).await.map_err(ServerFnError::new)
}

#[server(endpoint = "take_snapshot")]
pub async fn take_snapshot(shard: u32) -> Result<String, ServerFnError> {
    let c = expect_context::<crate::server::Shared>();
    c.take_snapshot(shard).await.map_err(ServerFnError::new)
}

#[server(endpoint = "move_slots")]
pub async fn move_slots(slots: String, from: u16, to: u16) -> Result<String, ServerFnError> {
    let c = expect_context::<crate::server::Shared>();
    crate::server::moves::start(&c, &slots, from, to).await.map_err(ServerFnError::new)
}

#[server(endpoint = "count_keys")]
pub async fn count_keys(slot: u16) -> Result<String, ServerFnError> {
    let c = expect_context::<crate::server::Shared>();
    c.count_keys(slot).await.map_err(ServerFnError::new)
}

// ---- the shell and the app ----

#[cfg(feature = "ssr")]
/// The page; `login`: the console was started with a token (only then is there a
/// session to log out of, and the "Log out" link shows).
pub fn shell(options: LeptosOptions, login: bool) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <title>"Memoria console"</title>
                <link rel="stylesheet" href="/pkg/console.css"/>
                <HydrationScripts options/>
            </head>
            <body class=if login { "with-login" } else { "" }>
                <App/>
            </body>
        </html>
    }
}

/// The refresh tick (seconds) and the time since the page's data arrived (100 ms steps).
#[derive(Clone, Copy)]
struct Live {
    tick: RwSignal<u64>,
    since_ms: RwSignal<u64>,
}

#[component]
pub fn App() -> impl IntoView {
    let live = Live { tick: RwSignal::new(0), since_ms: RwSignal::new(0) };
    provide_context(live);
    // Effects run in the browser only: the server renders one still frame.
    Effect::new(move |_| {
        let _ = set_interval_with_handle(move || live.tick.update(|t| *t += 1), std::time::Duration::from_secs(1));
        let _ = set_interval_with_handle(move || live.since_ms.update(|t| *t += 100), std::time::Duration::from_millis(100));
    });
    view! {
        <Router>
            <header class="top">
                <strong>"Memoria"</strong>
                <nav aria-label="Pages">
                    <a href="/">"Overview"</a>
                    " "
                    <a href="/slots">"Slots"</a>
                    " "
                    <a href="/snapshots">"Snapshots"</a>
                    " "
                    <a href="/log/0">"Log"</a>
                    " "
                    <a class="logout" href="/logout" rel="external">"Log out"</a>
                </nav>
            </header>
            <main>
                <Routes fallback=|| view! { <p>"No such page."</p> }>
                    <Route path=path!("/") view=OverviewPage ssr=SsrMode::Async/>
                    <Route path=path!("/slots") view=SlotsView ssr=SsrMode::Async/>
                    <Route path=path!("/snapshots") view=SnapshotsView ssr=SsrMode::Async/>
                    <Route path=path!("/log/:shard") view=LogView ssr=SsrMode::Async/>
                    <Route path=path!("/node/:name") view=NodeView ssr=SsrMode::Async/>
                </Routes>
            </main>
        </Router>
    }
}

fn error_list(errors: Vec<String>) -> impl IntoView {
    (!errors.is_empty()).then(|| {
        view! {
            <ul class="errors" role="alert">
                {errors.into_iter().map(|e| view! { <li>{e}</li> }).collect_view()}
            </ul>
        }
    })
}

fn fmt_ops(v: Option<f64>) -> String {
    match v {
        Some(x) if x >= 10.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.1}"),
        None => "–".into(),
    }
}

fn fmt_us(v: Option<u64>) -> String {
    match v {
        Some(0) | None => "–".into(),
        Some(us) if us >= 1000 => format!("{:.1} ms", us as f64 / 1000.0),
        Some(us) => format!("{us} µs"),
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "–".into())
}

fn fmt_countdown(ms: i64) -> String {
    if ms <= 0 { "expired".to_string() } else { format!("{:.1} s", ms as f64 / 1000.0) }
}

/// The result of the last run of an action, in the page.
fn action_result<A>(a: ServerAction<A>) -> impl IntoView
where
    A: leptos::server_fn::ServerFn<Output = String, Error = ServerFnError> + Clone + Send + Sync + 'static,
    A::Output: Send + Sync + 'static,
{
    move || {
        if a.pending().get() {
            return Some(view! { <p class="result muted" role="status">"Working…"</p> }.into_any());
        }
        a.value().get().map(|r| match r {
            Ok(m) => view! { <p class="result ok" role="status">{m}</p> }.into_any(),
            Err(e) => {
                view! { <p class="result error" role="alert">{e.to_string().trim_start_matches("error running server function: ").to_string()}</p> }.into_any()
            }
        })
    }
}

// ---- overview ----

#[component]
fn OverviewPage() -> impl IntoView {
    let live = expect_context::<Live>();
    let data = Resource::new(move || live.tick.get(), |_| get_overview());
    Effect::new(move |_| {
        if data.get().is_some() {
            live.since_ms.set(0);
        }
    });
    view! {
        <h1>"Overview"</h1>
        <StepDownPanel/>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || data.get().map(|r| match r {
                Ok(o) => overview_body(o, live).into_any(),
                Err(e) => view! { <p class="errors" role="alert">{format!("the console could not gather the overview: {e}")}</p> }.into_any(),
            })}
        </Transition>
    }
}

#[component]
fn StepDownPanel() -> impl IntoView {
    shard_action_panel(
        ServerAction::<StepDown>::new(),
        |shard| StepDown { shard },
        ActionTexts {
            section: "Failover",
            button_id: "step-down",
            button: |id| format!("Step down the primary of shard-{id}…"),
            note: "The primary stops serving; the election through the log makes a replica the primary.",
            confirm_label: "Confirm step-down",
            confirm: |id| format!("Step down the primary of shard-{id}? Its clients are disconnected and reconnect to the new primary."),
            confirm_id: "confirm-step-down",
            confirm_button: "Step down",
            result_id: "step-down-result",
        },
    )
}

/// What a per-shard action panel says, and the ids the browser tests find it by.
struct ActionTexts {
    section: &'static str,
    /// Buttons are `<button_id>-<shard>`.
    button_id: &'static str,
    button: fn(u32) -> String,
    note: &'static str,
    confirm_label: &'static str,
    confirm: fn(u32) -> String,
    confirm_id: &'static str,
    confirm_button: &'static str,
    result_id: &'static str,
}

/// A button per shard, a confirmation in the page, then the action and its result.
fn shard_action_panel<A>(action: ServerAction<A>, make: fn(u32) -> A, t: ActionTexts) -> impl IntoView
where
    A: leptos::server_fn::ServerFn<Output = String, Error = ServerFnError> + Clone + Send + Sync + 'static,
    A::Output: Send + Sync + 'static,
{
    let ids = Resource::new(|| (), |_| get_shard_ids());
    let asking = RwSignal::new(None::<u32>);
    let ActionTexts { section, button_id, button, note, confirm_label, confirm, confirm_id, confirm_button, result_id } = t;
    view! {
        <section class="actions" aria-label=section>
            <Suspense fallback=|| ()>
                {move || ids.get().map(|r| {
                    let ids = r.unwrap_or_default();
                    view! {
                        <div class="row">
                            {ids.into_iter().map(|id| view! {
                                <button id=format!("{button_id}-{id}") on:click=move |_| asking.set(Some(id)) disabled=move || action.pending().get()>
                                    {button(id)}
                                </button>
                            }).collect_view()}
                            <span class="muted">{note}</span>
                        </div>
                    }
                })}
            </Suspense>
            {move || asking.get().map(|id| view! {
                <div class="confirm" role="alertdialog" aria-label=confirm_label>
                    <span>{confirm(id)}</span>
                    <button id=confirm_id class="danger" on:click=move |_| { asking.set(None); action.dispatch(make(id)); }>{confirm_button}</button>
                    <button on:click=move |_| asking.set(None)>"Cancel"</button>
                </div>
            })}
            <div id=result_id>{action_result(action)}</div>
        </section>
    }
}

fn overview_body(o: Overview, live: Live) -> impl IntoView {
    let t = o.totals.clone();
    view! {
        <p class="muted">{format!("Source: {}", o.source)}</p>
        {error_list(o.errors)}
        <section class="totals" aria-label="Cluster totals">
            <div>"Shards"<b id="total-shards">{t.shards}</b></div>
            <div>"Nodes healthy"<b id="total-nodes">{format!("{} / {}", t.healthy_nodes, t.nodes)}</b></div>
            <div>"Keys"<b>{t.keys}</b></div>
            <div title="The console's PING through the port clients use, once a second: the round trip a client sees, next to each node's own reply latency (p99 below)">
                "Endpoint round trip (1 min)"
                <b id="endpoint-latency">{match (t.endpoint_p50_us, t.endpoint_max_us) {
                    (Some(p50), Some(max)) => format!("{} median, {} worst", fmt_us(Some(p50)), fmt_us(Some(max))),
                    _ => "–".to_string(),
                }}</b>
            </div>
            <div>"Ops/s"<b>{fmt_ops(Some(t.ops_per_sec))}</b></div>
            <div>"Clients"<b>{t.clients}</b></div>
            <div>"Memory"<b>{human_bytes(t.used_memory)}</b></div>
        </section>
        {o.shards.into_iter().map(|s| shard_card(s, live)).collect_view()}
    }
}

fn shard_card(s: ShardView, live: Live) -> impl IntoView {
    let remaining = s.lease_remaining_ms;
    let countdown = move || match remaining {
        Some(r) => fmt_countdown(r - live.since_ms.get() as i64),
        None => "no lease".into(),
    };
    let id = s.id;
    let owned: u32 = s.slots.iter().map(|&(a, b)| (b - a) as u32 + 1).sum();
    view! {
        <section class="shard" id=format!("shard-{id}") data-health=s.health.clone()>
            <h2>
                {format!("shard-{id} ")}
                <span class=format!("badge {}", s.health)>{s.health.clone()}</span>
                " "
                <span class="muted">{s.health_reason.clone()}</span>
            </h2>
            <div class="facts">
                <div><span>"Primary"</span><b class="primary" id=format!("primary-{id}")>{s.primary.clone().unwrap_or_else(|| "none".into())}</b></div>
                <div><span>"Epoch"</span><b class="epoch">{s.epoch}</b></div>
                <div><span>"Lease holder"</span><b>{s.lease_holder.clone().unwrap_or_else(|| "–".into())}</b></div>
                <div><span>"Lease expires in"</span><b class="lease-countdown mono" id=format!("lease-{id}")>{countdown}</b></div>
                <div><span>"Log tail"</span><b class="mono">{s.tail_id}</b>" "<a href=format!("/log/{id}")>"entries"</a></div>
                <div><span>"Last checksum"</span><code title=s.last_checksum.clone()>{short(&s.last_checksum)}</code></div>
                <div><span>"Snapshot covers"</span><b class="mono">{if s.snapshot_id == 0 { "none".to_string() } else { format!("1..={}", s.snapshot_id) }}</b></div>
                <div><span>"Slots"</span><b>{owned}</b>" "<a href="/slots">"map"</a></div>
            </div>
            <table>
                <thead>
                    <tr>
                        <th>"Node"</th><th>"Role"</th><th>"Health"</th><th class="num">"Epoch"</th><th class="num">"Offset"</th><th class="num">"Lag"</th>
                        <th class="num">"Ops/s"</th><th class="num">"p99"</th><th class="num">"Clients"</th><th class="num">"Memory"</th><th class="num">"Keys"</th><th class="num">"PID"</th><th class="num">"Restarts"</th>
                    </tr>
                </thead>
                <tbody>
                    {s.nodes.into_iter().map(|n| {
                        let class = if n.healthy { "node healthy" } else { "node unhealthy" };
                        view! {
                            <tr class=class data-node=n.name.clone() data-role=n.role.clone()>
                                <td><a href=format!("/node/{}", n.addr)>{n.name.clone()}</a>" "<span class="muted mono">{n.addr.clone()}</span></td>
                                <td class="role">{n.role.clone()}</td>
                                <td class="health">{if n.healthy { "healthy".to_string() } else { format!("unhealthy: {}", n.problem) }}</td>
                                <td class="num">{opt(n.epoch)}</td>
                                <td class="num">{opt(n.offset)}</td>
                                <td class="num">{opt(n.lag)}</td>
                                <td class="num">{fmt_ops(n.ops_per_sec)}</td>
                                <td class="num">{fmt_us(n.p99_us)}</td>
                                <td class="num">{opt(n.clients)}</td>
                                <td class="num">{n.used_memory.map(human_bytes).unwrap_or_else(|| "–".into())}</td>
                                <td class="num">{opt(n.keys)}</td>
                                <td class="num">{opt(n.pid)}</td>
                                <td class="num">{n.restarts}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}

// ---- snapshots ----

#[component]
fn SnapshotsView() -> impl IntoView {
    let live = expect_context::<Live>();
    let data = Resource::new(move || live.tick.get() / 2, |_| get_snapshots());
    view! {
        <h1>"Snapshots"</h1>
        <TakeSnapshotPanel/>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || data.get().map(|r| match r {
                Ok(p) => snapshots_body(p).into_any(),
                Err(e) => view! { <p class="errors" role="alert">{e.to_string()}</p> }.into_any(),
            })}
        </Transition>
    }
}

#[component]
fn TakeSnapshotPanel() -> impl IntoView {
    shard_action_panel(
        ServerAction::<TakeSnapshot>::new(),
        |shard| TakeSnapshot { shard },
        ActionTexts {
            section: "Take a snapshot",
            button_id: "take-snapshot",
            button: |id| format!("Take a snapshot of shard-{id} now…"),
            note: "Runs memoria snapshot in its own process: replay, dump, verify, publish.",
            confirm_label: "Confirm snapshot",
            confirm: |id| format!("Take a snapshot of shard-{id} now? It reads the log and writes to the snapshot store; the nodes are not paused."),
            confirm_id: "confirm-snapshot",
            confirm_button: "Take snapshot",
            result_id: "snapshot-result",
        },
    )
}

fn snapshots_body(p: SnapshotsPage) -> impl IntoView {
    let now = p.now_ms;
    view! {
        {error_list(p.errors)}
        {p.take_disabled.map(|why| view! { <p class="muted">{format!("Taking a snapshot from here is unavailable: {why}")}</p> })}
        {p.shards.into_iter().map(|s| view! {
            <section class="shard" id=format!("snapshots-{}", s.shard)>
                <h2>{format!("{} ", s.log)}<span class="muted">{format!("store {}", s.store)}</span></h2>
                <div class="facts">
                    <div><span>"Log tail"</span><b class="mono">{s.tail_id}</b></div>
                    <div><span>"Snapshot recorded in the log up to"</span><b class="mono">{if s.recorded_id == 0 { "none".to_string() } else { s.recorded_id.to_string() }}</b></div>
                    <div>
                        <span>{if s.snapshots.is_empty() { "Log not covered by a snapshot" } else { "Log since the newest snapshot" }}</span>
                        <b>{format!("{} entries{}", s.entries_since, s.bytes_since_estimate.map(|b| format!(" (≈ {})", human_bytes(b))).unwrap_or_default())}</b>
                    </div>
                </div>
                {if s.snapshots.is_empty() {
                    view! { <p class="muted">"No snapshots yet."</p> }.into_any()
                } else {
                    view! {
                        <table>
                            <thead><tr>
                                <th>"Snapshot"</th><th class="num">"Last log id"</th><th>"Log-prefix checksum"</th><th>"Data checksum"</th><th>"Status"</th>
                                <th class="num">"Keys"</th><th class="num">"Size"</th><th class="num">"Age"</th>
                            </tr></thead>
                            <tbody>
                                {s.snapshots.into_iter().map(|v| {
                                    let class = if v.ok { "snapshot healthy" } else { "snapshot unhealthy" };
                                    view! {
                                        <tr class=class data-name=v.name.clone() data-last-id=v.last_id.to_string()>
                                            <td class="mono">{v.name.clone()}</td>
                                            <td class="num">{v.last_id}</td>
                                            <td><code class="log-checksum" title=v.log_checksum.clone()>{short(&v.log_checksum)}</code></td>
                                            <td><code class="data-checksum" title=v.data_checksum.clone()>{short(&v.data_checksum)}</code></td>
                                            <td class="status">{v.status.clone()}</td>
                                            <td class="num">{v.keys}</td>
                                            <td class="num">{format!("{} in {} chunks", human_bytes(v.bytes), v.chunks)}</td>
                                            <td class="num">{if v.created_unix_ms == 0 { "–".to_string() } else { human_age(now.saturating_sub(v.created_unix_ms)) }}</td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any()
                }}
            </section>
        }).collect_view()}
    }
}

// ---- log ----

#[component]
fn LogView() -> impl IntoView {
    let live = expect_context::<Live>();
    let params = use_params_map();
    let query = use_query_map();
    let shard = move || params.read().get("shard").and_then(|s| s.parse::<u32>().ok()).unwrap_or(0);
    let before = move || query.read().get("before").and_then(|s| s.parse::<u64>().ok());
    // Only the newest page follows the log as it grows.
    let data = Resource::new(move || (shard(), before(), if before().is_none() { live.tick.get() / 2 } else { 0 }), |(s, b, _)| get_log(s, b));
    view! {
        <h1>{move || format!("Log of shard-{}", shard())}</h1>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || data.get().map(|r| match r {
                Ok(p) => log_body(p).into_any(),
                Err(e) => view! { <p class="errors" role="alert">{e.to_string()}</p> }.into_any(),
            })}
        </Transition>
    }
}

fn log_body(p: LogPage) -> impl IntoView {
    let shard = p.shard;
    let pager = view! {
        <nav class="pager" aria-label="Pages of the log">
            {p.newer.map(|b| view! { <a href=format!("/log/{shard}?before={b}")>"← newer"</a> })}
            {(p.newer.is_some()).then(|| view! { <a href=format!("/log/{shard}")>"newest"</a> })}
            {p.older.map(|b| view! { <a href=format!("/log/{shard}?before={b}")>"older →"</a> })}
        </nav>
    };
    view! {
        {p.error.map(|e| view! { <p class="errors" role="alert">{e}</p> })}
        <p class="muted">{format!("{}: entries {}..={} stored (older ones were truncated behind snapshots)", p.log, p.first_id.max(1), p.tail_id)}</p>
        {pager}
        <table id="log-entries">
            <thead><tr><th class="num">"Id"</th><th>"Kind"</th><th class="num">"Epoch"</th><th class="num">"Format"</th><th>"Checksum"</th><th class="num">"Payload"</th><th>"Detail"</th></tr></thead>
            <tbody>
                {p.entries.into_iter().map(|e| view! {
                    <tr class="entry" data-id=e.id.to_string()>
                        <td class="num">{e.id}</td>
                        <td>{e.kind}</td>
                        <td class="num">{e.epoch}</td>
                        <td class="num">{e.format}</td>
                        <td><code title=e.checksum.clone()>{short(&e.checksum)}</code></td>
                        <td class="num">{human_bytes(e.payload_len as u64)}</td>
                        <td>{e.detail}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

// ---- slots ----

#[component]
fn SlotsView() -> impl IntoView {
    let live = expect_context::<Live>();
    let data = Resource::new(move || live.tick.get() / 3, |_| get_slots());
    let count = ServerAction::<CountKeys>::new();
    let slot = RwSignal::new(String::new());
    view! {
        <h1>"Slots"</h1>
        <section class="actions" aria-label="Keys in a slot">
            <div class="row">
                <label for="slot-input">"Keys in slot"</label>
                <input id="slot-input" type="number" min="0" max="16383" prop:value=move || slot.get() on:input=move |ev| slot.set(event_target_value(&ev))/>
                <button id="count-keys" on:click=move |_| {
                    match slot.get().trim().parse::<u16>() {
                        Ok(s) => { count.dispatch(CountKeys { slot: s }); }
                        Err(_) => { count.dispatch(CountKeys { slot: u16::MAX }); }
                    }
                }>"Count"</button>
            </div>
            <div id="count-result">{action_result(count)}</div>
        </section>
        <MovePanel/>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || data.get().map(|r| match r {
                Ok(p) => slots_body(p).into_any(),
                Err(e) => view! { <p class="errors" role="alert">{e.to_string()}</p> }.into_any(),
            })}
        </Transition>
    }
}

fn slots_body(p: SlotsPage) -> AnyView {
    if p.standalone {
        return view! {
            {error_list(p.errors)}
            <p id="standalone" class="muted">"Cluster mode is off: this deployment is one standalone server with 16 databases, so keys have no slots. Slots and their moves apply to memoria up --cluster or --shards N."</p>
        }
        .into_any();
    }
    let segs = grid_segments(&p.shards);
    let cell = 5u32;
    let size = 128 * cell;
    view! {
        {error_list(p.errors)}
        <p class="legend">
            {p.shards.iter().enumerate().map(|(i, o)| {
                let n: u32 = o.ranges.iter().map(|&(a, b)| (b - a) as u32 + 1).sum();
                view! { <span style=format!("background:{}", COLOURS[i % COLOURS.len()])></span>{format!("shard-{} ({} slots, primary {})  ", o.shard, n, o.primary.clone().unwrap_or_else(|| "none".into()))} }
            }).collect_view()}
            <span style="background:#e5e5e0"></span>"unowned"
        </p>
        <svg class="slots" id="slot-map" role="img" aria-label="The 16384 slots, 128 per row, coloured by owning shard" width=size.to_string() height=size.to_string() viewBox=format!("0 0 {size} {size}")>
            <rect class="free" x="0" y="0" width=size.to_string() height=size.to_string()></rect>
            {segs.into_iter().map(|(row, a, b, i)| view! {
                <rect x=(a as u32 * cell).to_string() y=(row as u32 * cell).to_string() width=((b - a + 1) as u32 * cell).to_string() height=cell.to_string() fill=COLOURS[i % COLOURS.len()] data-slots=format!("{}-{}", row as u32 * 128 + a as u32, row as u32 * 128 + b as u32) data-shard=p.shards[i].shard.to_string()></rect>
            }).collect_view()}
        </svg>
        <h2>"Ranges"</h2>
        <table>
            <thead><tr><th>"Shard"</th><th>"Primary"</th><th>"Slot ranges"</th></tr></thead>
            <tbody>
                {p.shards.iter().map(|o| view! {
                    <tr>
                        <td>{format!("shard-{}", o.shard)}</td>
                        <td>{o.primary.clone().unwrap_or_else(|| "none".into())}</td>
                        <td class="mono">{o.ranges.iter().map(|(a, b)| format!("{a}-{b}")).collect::<Vec<_>>().join(", ")}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        <h2>"Migrations in progress"</h2>
        {p.console_move.map(|m| {
            let (class, text) = if m.running {
                ("result muted", format!("This console is moving slots {} from shard-{} to shard-{}: pass {}, {} keys moved, {} exported again.", m.slots, m.from, m.to, m.passes, m.moved, m.retried))
            } else if m.ok {
                ("result ok", format!("Slots {} from shard-{} to shard-{}: {}", m.slots, m.from, m.to, m.result))
            } else {
                ("result error", format!("Slots {} from shard-{} to shard-{}: {}", m.slots, m.from, m.to, m.result))
            };
            view! { <p id="move-status" class=class data-running=m.running.to_string() data-ok=m.ok.to_string()>{text}</p> }
        })}
        {if p.migrations.is_empty() {
            view! { <p class="muted" id="no-migrations">"None."</p> }.into_any()
        } else {
            view! {
                <table id="migrations">
                    <thead><tr><th>"Slots"</th><th>"From"</th><th>"To"</th><th>"Phase"</th><th>"Progress"</th></tr></thead>
                    <tbody>{p.migrations.into_iter().map(|m| view! {
                        <tr class="migration"><td class="mono">{m.slots}</td><td>{format!("shard-{}", m.from)}</td><td>{format!("shard-{}", m.to)}</td><td style="white-space: normal">{m.phase}</td><td style="white-space: normal">{m.progress}</td></tr>
                    }).collect_view()}</tbody>
                </table>
            }.into_any()
        }}
    }
    .into_any()
}

/// Move slot ranges between shards: a form, a confirmation, then the move runs in the
/// console (its progress and result show under Migrations in progress).
#[component]
fn MovePanel() -> impl IntoView {
    let ids = Resource::new(|| (), |_| get_shard_ids());
    let action = ServerAction::<MoveSlots>::new();
    let slots = RwSignal::new(String::new());
    let from = RwSignal::new("0".to_string());
    let to = RwSignal::new("1".to_string());
    let asking = RwSignal::new(false);
    let request = move || (slots.get().trim().to_string(), from.get().trim().parse::<u16>().ok(), to.get().trim().parse::<u16>().ok());
    view! {
        <section class="actions" aria-label="Move slots">
            <Suspense fallback=|| ()>
                {move || ids.get().map(|r| {
                    let n = r.map(|v| v.len()).unwrap_or(0);
                    if n < 2 {
                        view! {
                            <div class="row">
                                <button id="move-slots" disabled=true aria-describedby="move-why">"Move slots…"</button>
                                <span class="muted" id="move-why">"This deployment has one shard: it owns all 16384 slots, so there is nowhere to move them (start with memoria up --shards N)."</span>
                            </div>
                        }.into_any()
                    } else {
                        view! {
                            <div class="row">
                                <label for="move-slots-input">"Move slots"</label>
                                <input id="move-slots-input" class="mono" placeholder="0-999,2000" size="16" prop:value=move || slots.get() on:input=move |ev| slots.set(event_target_value(&ev))/>
                                <label for="move-from">"from shard"</label>
                                <input id="move-from" type="number" min="0" max=(n - 1).to_string() style="width: 4rem" prop:value=move || from.get() on:input=move |ev| from.set(event_target_value(&ev))/>
                                <label for="move-to">"to shard"</label>
                                <input id="move-to" type="number" min="0" max=(n - 1).to_string() style="width: 4rem" prop:value=move || to.get() on:input=move |ev| to.set(event_target_value(&ev))/>
                                <button id="move-slots" on:click=move |_| asking.set(true) disabled=move || action.pending().get()>"Move…"</button>
                                <span class="muted">"Clients keep reading and writing; keys follow their slots."</span>
                            </div>
                        }.into_any()
                    }
                })}
            </Suspense>
            {move || asking.get().then(|| {
                let (s, f, t) = request();
                let what = match (f, t) {
                    (Some(f), Some(t)) => format!("Move slots {s} from shard-{f} to shard-{t}? Their keys are copied to shard-{t} while clients follow -ASK; the commit in the cluster log then moves ownership."),
                    _ => "The shards must be numbers.".to_string(),
                };
                view! {
                    <div class="confirm" role="alertdialog" aria-label="Confirm moving slots">
                        <span>{what}</span>
                        <button id="confirm-move" class="danger" on:click=move |_| {
                            asking.set(false);
                            let (slots, f, t) = request();
                            // A shard that is not a number is refused by the server as out of range.
                            action.dispatch(MoveSlots { slots, from: f.unwrap_or(u16::MAX), to: t.unwrap_or(u16::MAX) });
                        }>"Move"</button>
                        <button on:click=move |_| asking.set(false)>"Cancel"</button>
                    </div>
                }
            })}
            <div id="move-result">{action_result(action)}</div>
        </section>
    }
}

// ---- node ----

#[component]
fn NodeView() -> impl IntoView {
    let live = expect_context::<Live>();
    let params = use_params_map();
    let name = move || params.read().get("name").unwrap_or_default();
    let data = Resource::new(move || (name(), live.tick.get()), |(n, _)| get_node(n));
    view! {
        <h1>{move || format!("Node {}", name())}</h1>
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || data.get().map(|r| match r {
                Ok(d) => node_body(d).into_any(),
                Err(e) => view! { <p class="errors" role="alert">{e.to_string()}</p> }.into_any(),
            })}
        </Transition>
    }
}

/// A small line chart of the last samples (SVG polyline).
fn chart(title: &str, values: Vec<f64>, unit: &str) -> impl IntoView {
    let (w, h) = (320.0f64, 80.0f64);
    let max = values.iter().cloned().fold(0.0f64, f64::max);
    let scale = if max > 0.0 { max } else { 1.0 };
    let n = values.len().max(2) as f64;
    let points: Vec<String> =
        values.iter().enumerate().map(|(i, v)| format!("{:.1},{:.1}", i as f64 * w / (n - 1.0), h - v / scale * (h - 4.0) - 2.0)).collect();
    let last = values.last().copied();
    view! {
        <div class="chart">
            <div>{format!("{title}: now {}, max {max:.0} {unit}", last.map(|v| format!("{v:.0}")).unwrap_or_else(|| "–".into()))}</div>
            <svg width=w.to_string() height=h.to_string() viewBox=format!("0 0 {w} {h}") role="img" aria-label=format!("{title} over the last {} seconds", values.len())>
                <polyline points=points.join(" ")></polyline>
            </svg>
        </div>
    }
}

fn node_body(d: NodeDetail) -> impl IntoView {
    let n = d.node.clone();
    let ops: Vec<f64> = d.history.iter().map(|s| s.ops_per_sec).collect();
    let p99: Vec<f64> = d.history.iter().map(|s| s.p99_us as f64).collect();
    view! {
        {d.error.map(|e| view! { <p class="errors" role="alert">{format!("unhealthy: {e}")}</p> })}
        <div class="facts">
            <div><span>"Address"</span><b class="mono">{n.addr.clone()}</b></div>
            <div><span>"Shard"</span><b>{format!("shard-{}", d.shard)}</b></div>
            <div><span>"Role"</span><b id="node-role">{n.role.clone()}</b></div>
            <div><span>"Connected clients"</span><b>{opt(n.clients)}</b></div>
            <div><span>"Memory"</span><b>{n.used_memory.map(human_bytes).unwrap_or_else(|| "–".into())}</b></div>
            <div><span>"Ops/s"</span><b>{fmt_ops(n.ops_per_sec)}</b></div>
            <div><span>"p50 / p99"</span><b>{format!("{} / {}", fmt_us(n.p50_us), fmt_us(n.p99_us))}</b></div>
        </div>
        <div class="charts">
            {chart("Throughput", ops, "ops/s")}
            {chart("p99 latency", p99, "µs")}
        </div>
        <h2>"INFO"</h2>
        <div class="info">
            {d.info.into_iter().map(|(section, fields)| view! {
                <table>
                    <thead><tr><th colspan="2">{section}</th></tr></thead>
                    <tbody>{fields.into_iter().map(|(k, v)| view! { <tr><td>{k}</td><td class="mono">{v}</td></tr> }).collect_view()}</tbody>
                </table>
            }).collect_view()}
        </div>
    }
}
