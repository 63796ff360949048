//! The flags that point an offline command (`memoria snapshot`, `memoria reshard`) at
//! remote log services.

use memoria_log::{LogClient, LogHandle};

#[derive(clap::Args, Clone, Debug, Default)]
pub struct RemoteLogArgs {
    /// Log service endpoints (comma-separated, one per AZ) instead of the --data-dir's log.
    #[arg(long, value_delimiter = ',')]
    pub log_url: Vec<String>,
    /// Bearer token of the log service.
    #[arg(long, env = "MEMORIA_LOG_TOKEN", hide_env_values = true, default_value = "")]
    pub log_token: String,
    /// CA certificates (PEM) to trust for an https:// log service, besides the system's.
    #[arg(long, env = "MEMORIA_LOG_CA_CERT_FILE", value_name = "PEM")]
    pub log_ca_cert_file: Option<std::path::PathBuf>,
}

impl RemoteLogArgs {
    /// A client of `urls` with `token` (the --log-ca-cert-file trusted).
    pub fn client_of(&self, urls: &[&str], token: &str) -> anyhow::Result<LogHandle> {
        let ca = self.log_ca_cert_file.as_deref().map(crate::tls::read_ca_pem).transpose()?;
        Ok(LogHandle::Remote(LogClient::with_endpoints_ca(urls, token, ca.as_deref()).map_err(|e| anyhow::anyhow!("log service: {e}"))?))
    }

    /// The client of --log-url, if given.
    pub fn client(&self) -> anyhow::Result<Option<LogHandle>> {
        if self.log_url.is_empty() {
            return Ok(None);
        }
        let urls: Vec<&str> = self.log_url.iter().map(|s| s.as_str()).collect();
        self.client_of(&urls, &self.log_token).map(Some)
    }
}
