//! `memoria-console`: serves the console. `memoria up` starts it next to its nodes
//! (`--data-dir` of the run); on its own it watches a deployment given by flags
//! (`--log-url`, `--node`, `--snapshot-store`).

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use clap::Parser;
use leptos::prelude::*;
use leptos_axum::{LeptosRoutes, generate_route_list};
use memoria_console::app::{App, STYLE, shell};
use memoria_console::server::{self, Args, Console, auth};

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_target(false)
        .init();
    let args = Args::parse();
    // Two threads are plenty for a page or two a second; the console must stay light
    // next to the nodes it watches.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind((args.bind.as_str(), args.port))
        .await
        .map_err(|e| anyhow::anyhow!("console: cannot listen on {}:{}: {e}", args.bind, args.port))?;
    let addr = listener.local_addr()?;
    let console = Console::new(args.clone());
    tokio::spawn(console.clone().sample_forever());
    let options = LeptosOptions::builder().output_name("console").site_pkg_dir("pkg").site_addr(addr).build();
    let routes = generate_route_list(App);
    let pages = Router::new()
        .leptos_routes_with_context(
            &options,
            routes,
            {
                let c = console.clone();
                move || provide_context(c.clone())
            },
            {
                let o = options.clone();
                let login = args.token.is_some();
                move || shell(o.clone(), login)
            },
        )
        .with_state(options.clone());
    let other = Router::new()
        .route("/login", get(auth::login_page).post(auth::login))
        .route("/logout", get(auth::logout))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/pkg/console.js", get(|| async { ([(CONTENT_TYPE, "text/javascript")], server::CONSOLE_JS) }))
        .route("/pkg/console_bg.wasm", get(|| async { ([(CONTENT_TYPE, "application/wasm")], server::CONSOLE_WASM) }))
        .route("/pkg/console.css", get(|| async { ([(CONTENT_TYPE, "text/css")], STYLE) }))
        .with_state(console.clone());
    let app = pages.merge(other).layer(axum::middleware::from_fn_with_state(console.clone(), auth::require));
    println!("console: http://{addr}/{}", if args.token.is_some() { " (log in with the console token)" } else { "" });
    axum::serve(listener, app).await?;
    Ok(())
}
