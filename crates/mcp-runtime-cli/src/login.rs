//! `login` and `logout`: a remote server's OAuth login, kept in the token store that
//! `mcp_oauth_credentials_store` chooses (the OS keyring when usable, else a `0600`
//! file in the user's configuration directory), and the store every command that
//! starts servers reads.
//!
//! 1. The store is opened only when the configuration has an enabled remote server:
//!    a configuration of local servers never touches the keyring.
//! 2. Nothing printed holds a token: `login` prints the issuer, the client id, the
//!    scopes, when the token expires and the account, where the authorization server
//!    names it.

use std::{
    sync::Arc,
    time::{Duration, SystemTime},
};

use anyhow::Context;
use mcp_runtime::{
    Config, ServerConfig,
    auth::{
        CredentialSource,
        login::{Login, LoginSummary},
        store::{Store, StoreOptions},
    },
    config::TransportConfig,
};

use crate::browser::Browser;

/// The token store `config` chooses.
async fn open(config: &Config) -> anyhow::Result<Store> {
    Store::open(config.oauth_credentials_store, StoreOptions::default())
        .await
        .context("cannot open the OAuth token store")
}

/// The token store for the servers of `config`, when one of them is an enabled
/// remote server (invariant 1). A store that cannot be opened is said once on stderr,
/// and the servers start without their logins: one that needs its login then fails
/// alone.
pub(crate) async fn credentials(config: &Config) -> Option<Arc<dyn CredentialSource>> {
    let remote = config
        .enabled_servers()
        .any(|server| matches!(server.transport, TransportConfig::StreamableHttp(_)));
    if !remote {
        return None;
    }
    match open(config).await {
        Ok(store) => Some(Arc::new(store)),
        Err(error) => {
            eprintln!("mcp-runtime: warning: {error:#}; servers start without their OAuth logins");
            None
        }
    }
}

/// Logs in to `server` and stores the login; what to print.
pub(crate) async fn login(
    config: &Config,
    server: &ServerConfig,
    scopes: Option<Vec<String>>,
    no_browser: bool,
    wait: Duration,
) -> anyhow::Result<String> {
    let mut login = Login::new(server, entry(config, server).await?);
    login.scopes = scopes;
    login.wait = wait;
    let summary = login.run(&Browser::from_env(no_browser)).await?;
    Ok(describe(&server.name, &summary, SystemTime::now()))
}

/// The token store's entry of `server`, a remote one.
async fn entry(
    config: &Config,
    server: &ServerConfig,
) -> anyhow::Result<Arc<dyn mcp_runtime::auth::CredentialStore>> {
    let TransportConfig::StreamableHttp(http) = &server.transport else {
        anyhow::bail!("server `{}` is not a remote server", server.name);
    };
    Ok(open(config)
        .await?
        .store_for(&server.name, &http.url, &server.oauth))
}

/// Forgets `server`'s stored login; what to print.
pub(crate) async fn logout(config: &Config, server: &ServerConfig) -> anyhow::Result<String> {
    let entry = entry(config, server).await?;
    let stored = entry
        .load()
        .await
        .context("cannot read the OAuth token store")?;
    if stored.is_none() {
        return Ok(format!("no login of `{}` is stored\n", server.name));
    }
    entry
        .clear()
        .await
        .context("cannot change the OAuth token store")?;
    Ok(format!("logged out of `{}`\n", server.name))
}

/// The lines `login` prints.
fn describe(server: &str, summary: &LoginSummary, now: SystemTime) -> String {
    let mut text = format!("logged in to `{server}`\n");
    if let Some(issuer) = &summary.issuer {
        text.push_str(&format!("  issuer:  {issuer}\n"));
    }
    if let Some(account) = &summary.account {
        text.push_str(&format!("  account: {account}\n"));
    }
    text.push_str(&format!("  client:  {}\n", summary.client_id));
    let scopes = if summary.scopes.is_empty() {
        "-".to_owned()
    } else {
        summary.scopes.join(" ")
    };
    text.push_str(&format!("  scopes:  {scopes}\n"));
    if let Some(expires_at) = summary.expires_at {
        let left = expires_at.duration_since(now).unwrap_or_default();
        text.push_str(&format!(
            "  expires: in {} (refreshed when needed)\n",
            humanize(left)
        ));
    }
    text
}

/// `duration` in its largest whole unit: `59m`, `2h`, `30s`.
fn humanize(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        3600..86400 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_the_account_where_the_server_names_one() {
        let now = SystemTime::UNIX_EPOCH;
        let summary = LoginSummary::new(None, "client-1".into(), vec![], None)
            .with_account(Some("alice".into()));
        assert_eq!(
            describe("github", &summary, now),
            "logged in to `github`\n  account: alice\n  client:  client-1\n  scopes:  -\n"
        );
    }

    #[test]
    fn the_summary_names_issuer_client_scopes_and_expiry_never_a_token() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let summary = LoginSummary::new(
            Some("https://as.example".into()),
            "client-1".into(),
            vec!["mcp".into(), "offline_access".into()],
            Some(now + Duration::from_secs(3599)),
        );
        assert_eq!(
            describe("github", &summary, now),
            "logged in to `github`\n  issuer:  https://as.example\n  client:  client-1\n  scopes:  mcp offline_access\n  expires: in 59m (refreshed when needed)\n"
        );
    }
}
