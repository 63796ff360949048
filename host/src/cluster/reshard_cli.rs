//! `memoria reshard`: the command line of `reshard` (finding the log, the progress bar).

use std::path::Path;
use std::time::Duration;

use memoria_log::LogHandle;

use memoria_admin::cluster_file::TOKEN_FILE;
use memoria_admin::reshard::{self, Options, Request};

#[derive(clap::Args, Clone, Debug)]
pub struct ReshardArgs {
    /// Slots to move: inclusive ranges and single slots, e.g. 0-999,2000.
    #[arg(long, required_unless_present = "resume")]
    pub slots: Option<String>,
    /// The shard that owns the slots now.
    #[arg(long, required_unless_present = "resume")]
    pub from: Option<u16>,
    /// The shard that takes them.
    #[arg(long, required_unless_present = "resume")]
    pub to: Option<u16>,
    /// Finish the migration in progress (after `memoria reshard` itself was stopped).
    #[arg(long, conflicts_with_all = ["slots", "from", "to"])]
    pub resume: bool,
    /// Data directory of a running `memoria up`: its log service is found from
    /// cluster.json and log.token there.
    #[arg(long, default_value = "./memoria-data")]
    pub data_dir: String,
    // An https:// log service of `memoria up --log-tls` needs --log-ca-cert-file (its
    // --tls-ca-cert-file).
    #[command(flatten)]
    pub log: crate::log_args::RemoteLogArgs,
    /// User to authenticate to the nodes as (needs the @admin commands).
    #[arg(long, env = "MEMORIA_NODE_USER")]
    pub user: Option<String>,
    /// Password for the nodes (if they have one).
    #[arg(long, env = "MEMORIA_NODE_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// Keys per export batch.
    #[arg(long, default_value_t = 200)]
    pub batch: usize,
    /// Give up after this many seconds without a successful step (the migration stays
    /// open; --resume goes on).
    #[arg(long, default_value_t = 60)]
    pub stall_timeout_secs: u64,
    /// Fault injection for tests: at this step (started, imported, moved) print
    /// "paused at <step>" and wait for a line on stdin.
    #[arg(long, hide = true)]
    pub pause_at: Option<String>,
}

fn open_log(a: &ReshardArgs) -> anyhow::Result<LogHandle> {
    if let Some(remote) = a.log.client()? {
        return Ok(remote);
    }
    let dir = Path::new(&a.data_dir);
    let state = dir.join("cluster.json");
    let file: memoria_admin::cluster_file::ClusterFile = match std::fs::read(&state) {
        Ok(b) => serde_json::from_slice(&b).map_err(|e| anyhow::anyhow!("{}: {e}", state.display()))?,
        Err(_) => anyhow::bail!("no running `memoria up` in {} (no cluster.json): give its --data-dir, or --log-url", dir.display()),
    };
    if !file.running {
        anyhow::bail!("the `memoria up` of {} is not running: slots move between running nodes", dir.display());
    }
    let token = std::fs::read_to_string(dir.join(TOKEN_FILE)).map_err(|e| anyhow::anyhow!("{}: {e}", dir.join(TOKEN_FILE).display()))?;
    a.log.client_of(&[file.log.url.as_str()], token.trim())
}

/// Runs the subcommand on its own runtime.
pub fn run(a: ReshardArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async move {
        let api = open_log(&a)?;
        let req = match (&a.slots, a.from, a.to) {
            (Some(s), Some(from), Some(to)) => Some(Request { slots: reshard::parse_slots(s).map_err(|e| anyhow::anyhow!("--slots: {e}"))?, from, to }),
            _ => None,
        };
        let opts =
            Options { batch: a.batch.max(1), user: a.user.clone(), password: a.password.clone(), stall_timeout: Duration::from_secs(a.stall_timeout_secs) };
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("template"));
        bar.enable_steady_tick(Duration::from_millis(200));
        let mut paused = false;
        let pause = |step: &str| {
            if !paused && a.pause_at.as_deref() == Some(step) {
                paused = true;
                println!("paused at {step}");
                let _ = std::io::Write::flush(&mut std::io::stdout());
                let _ = std::io::stdin().read_line(&mut String::new());
            }
        };
        let mv = reshard::run(&api, req, &opts, |p| bar.set_message(format!("{} keys moved, {} exported again, pass {}", p.moved, p.retried, p.passes)), pause)
            .await;
        bar.finish();
        let mv = mv?;
        println!("slots {} moved from shard {} to shard {}", memoria_admin::topology::ranges_text(&mv.slots), mv.from, mv.to);
        Ok(())
    })
}
