//! What the host knows of authentication: the `--requirepass` a node starts with (handed
//! to the engine as a SHA-256, never in plaintext) and protected mode. Users, AUTH and
//! enforcement live in the engine (`memoria_core::server::acl`), so every node that replays the
//! log enforces the same users.

/// Authentication options of a node.
#[derive(Clone, Debug)]
pub struct AuthOptions {
    /// The default user's password when the log has not set the default user.
    pub requirepass: Option<String>,
    /// Redis's protected mode: refuse to listen beyond loopback without a password, and
    /// refuse non-loopback clients while the default user has none.
    pub protected_mode: bool,
    /// Token of `memoria up`'s supervisor for its health probes (MEMORIA_INTERNAL_TOKEN).
    pub internal_token: Option<String>,
}

impl Default for AuthOptions {
    fn default() -> Self {
        AuthOptions { requirepass: None, protected_mode: true, internal_token: None }
    }
}

/// The environment variable that hands the supervisor's token to its node processes.
pub const INTERNAL_TOKEN_ENV: &str = "MEMORIA_INTERNAL_TOKEN";

/// A fresh random token (128 bits from the OS).
pub fn new_internal_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// `AUTH __memoria_internal <token>` as RESP, when this process has the token: the
/// supervisor's probes authenticate whatever users and passwords the log holds.
pub fn internal_auth_command() -> Option<Vec<u8>> {
    let t = std::env::var(INTERNAL_TOKEN_ENV).ok().filter(|t| !t.is_empty())?;
    let mut out = Vec::new();
    memoria_core::protocol::resp::encode_command(&mut out, &[&b"AUTH"[..], memoria_core::server::acl::INTERNAL_USER, t.as_bytes()]);
    Some(out)
}

impl AuthOptions {
    /// Lines for the engine's server facts (`REC_SERVER_INFO`).
    pub fn facts(&self) -> String {
        let mut t = format!("protected_mode:{}\n", if self.protected_mode { "yes" } else { "no" });
        if let Some(p) = self.requirepass.as_deref().filter(|p| !p.is_empty()) {
            let h = memoria_core::server::acl::hash_password(p.as_bytes());
            t.push_str(&format!("requirepass_sha256:{}\n", String::from_utf8_lossy(&h)));
        }
        if let Some(tok) = self.internal_token.as_deref().filter(|t| !t.is_empty()) {
            let h = memoria_core::server::acl::hash_password(tok.as_bytes());
            t.push_str(&format!("internal_sha256:{}\n", String::from_utf8_lossy(&h)));
        }
        t
    }

    /// Refuses to expose a node beyond loopback with no password (protected mode).
    pub fn check_bind(&self, bind: &str) -> anyhow::Result<()> {
        if !self.protected_mode || is_loopback_host(bind) || self.requirepass.as_deref().is_some_and(|p| !p.is_empty()) {
            return Ok(());
        }
        anyhow::bail!(
            "refusing to listen on {bind} without a password (protected mode): anyone who can reach this address could read and change every key. \
             Set a password for the default user with --requirepass <password> (or the MEMORIA_REQUIREPASS environment variable), \
             or bind to loopback (--bind 127.0.0.1), or, on a trusted network only, pass --protected-mode no"
        )
    }
}

/// Whether a bind address only accepts local connections.
pub fn is_loopback_host(bind: &str) -> bool {
    let h = bind.trim_start_matches('[').trim_end_matches(']');
    h == "localhost" || h == "::1" || h.parse::<std::net::Ipv4Addr>().is_ok_and(|a| a.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposure_needs_a_password() {
        let open = AuthOptions::default();
        assert!(open.check_bind("127.0.0.1").is_ok());
        assert!(open.check_bind("::1").is_ok());
        let e = open.check_bind("0.0.0.0").unwrap_err().to_string();
        assert!(e.contains("--requirepass") && e.contains("--protected-mode no"), "{e}");
        assert!(AuthOptions { requirepass: Some("pw".into()), ..Default::default() }.check_bind("0.0.0.0").is_ok());
        assert!(AuthOptions { requirepass: Some(String::new()), ..Default::default() }.check_bind("10.0.0.1").is_err());
        assert!(AuthOptions { protected_mode: false, ..Default::default() }.check_bind("0.0.0.0").is_ok());
    }

    #[test]
    fn facts_carry_only_the_hash() {
        let f = AuthOptions { requirepass: Some("secret".into()), protected_mode: false, internal_token: None }.facts();
        assert_eq!(f, "protected_mode:no\nrequirepass_sha256:2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b\n");
    }
}
