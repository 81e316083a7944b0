//! `login` and `logout`: a remote server's OAuth login, kept in the token store that
//! `mcp_oauth_credentials_store` chooses (the OS keyring when usable, else a `0600`
//! file in the user's configuration directory), and the store every command that
//! starts servers reads.
//!
//! 1. The store is opened only when the configuration has an enabled remote server:
//!    a configuration of local servers never touches the keyring.
//! 2. Nothing printed holds a token: `login` prints the issuer, the client id, the
//!    scopes, when the token expires and the account, where the authorization server
//!    names it; `logout` says whether the tokens were revoked, and why not.
//! 3. `logout` deletes the stored login even when the revocation fails: the failure is
//!    a warning line on stderr.
//! 4. `tools` and `call` log in again in place ([`Relogin`]) only where
//!    a login was made before and can no longer serve (expired beyond refresh, or
//!    short of a scope the server asks for), only when a person can finish it (a
//!    `$BROWSER` is named or stderr is a terminal), and at most once per command: a
//!    server that goes on refusing fails the command as it would have.

use std::{
    sync::Arc,
    time::{Duration, SystemTime},
};

use anyhow::Context;
use mcp_runtime::{
    Config, ServerConfig, ServerStatus,
    auth::{
        CredentialSource,
        logout::{Logout, Revocation},
        store::{Store, StoreOptions},
    },
    config::TransportConfig,
    error::HttpFailure,
    login::{Login, LoginSummary},
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

/// What a token store holds of a server a replica of a fleet may not serve.
pub(crate) enum Stored {
    /// A login of the server: its tokens are this machine's alone.
    Login(String),
    /// An entry of the server the store cannot read, `error` saying why (no token:
    /// the store's errors hold none).
    Unreadable { server: String, error: String },
}

/// The first enabled remote server of `config` that `source` holds a login of, or
/// an entry it cannot read.
pub(crate) async fn logged_in(config: &Config, source: &dyn CredentialSource) -> Option<Stored> {
    for server in config.enabled_servers() {
        let TransportConfig::StreamableHttp(http) = &server.transport else {
            continue;
        };
        let store = source.store_for(&server.name, &http.url, &server.oauth);
        match store.load().await {
            Ok(None) => {}
            Ok(Some(_)) => return Some(Stored::Login(server.name.clone())),
            Err(error) => {
                return Some(Stored::Unreadable {
                    server: server.name.clone(),
                    error: error.to_string(),
                });
            }
        }
    }
    None
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

/// How long a login made in place waits for the person.
const RELOGIN_WAIT: Duration = Duration::from_secs(120);

/// A login a command needs before it runs again (invariant 4): the server's stored
/// one can no longer serve it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Relogin {
    server: String,
    /// The scopes the server asked for beyond the login's (empty: a new login).
    more_scopes: Vec<String>,
}

impl Relogin {
    /// The login `failure` asks for, when another login can mend it.
    pub(crate) fn for_failure(failure: &HttpFailure) -> Option<Self> {
        match failure {
            HttpFailure::NeedsLogin { server } => Some(Self {
                server: server.clone(),
                more_scopes: Vec::new(),
            }),
            HttpFailure::InsufficientScope { server, scopes } if !scopes.is_empty() => Some(Self {
                server: server.clone(),
                more_scopes: scopes.clone(),
            }),
            _ => None,
        }
    }

    /// The login the first server of `servers` that failed so needs.
    pub(crate) fn for_servers(servers: &[ServerStatus]) -> Option<Self> {
        servers
            .iter()
            .filter_map(|server| server.error.as_ref()?.http_failure())
            .find_map(Self::for_failure)
    }

    /// Whether a person can finish a login now: a `$BROWSER` is named, or stderr is
    /// a terminal (where the URL is shown, and the system's opener tried).
    pub(crate) fn can_reach_person() -> bool {
        use std::io::IsTerminal as _;
        Browser::from_env(false).browser_variable.is_some() || std::io::stderr().is_terminal()
    }

    /// Logs in to the server again, saying why on stderr first.
    pub(crate) async fn run(&self, config: &Config) -> anyhow::Result<()> {
        let server = config
            .servers
            .get(&self.server)
            .with_context(|| format!("no server is named `{}`", self.server))?;
        if self.more_scopes.is_empty() {
            eprintln!(
                "mcp-runtime: server `{}` needs a new login; logging in",
                self.server
            );
        } else {
            eprintln!(
                "mcp-runtime: server `{}` asks for more scopes ({}); logging in again",
                self.server,
                self.more_scopes.join(" ")
            );
        }
        let mut login = Login::new(server, entry(config, server).await?);
        login.wait = RELOGIN_WAIT;
        login.more_scopes = self.more_scopes.clone();
        login.run(&Browser::from_env(false)).await?;
        Ok(())
    }
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

/// Revokes `server`'s tokens where its authorization server offers it and forgets
/// its stored login; what to print. A failed revocation is a warning on stderr
/// (invariant 3).
pub(crate) async fn logout(config: &Config, server: &ServerConfig) -> anyhow::Result<String> {
    let entry = entry(config, server).await?;
    let done = mcp_runtime::auth::logout::logout(server, entry).await?;
    let (text, warning) = describe_logout(&server.name, &done);
    if let Some(warning) = warning {
        eprintln!("mcp-runtime: warning: {warning}");
    }
    Ok(text)
}

/// What `logout` prints: the line for stdout, and a warning for stderr.
fn describe_logout(server: &str, done: &Logout) -> (String, Option<String>) {
    let revocation = match done {
        Logout::LoggedOut(revocation) => revocation,
        Logout::NotLoggedIn => return (format!("no login of `{server}` is stored\n"), None),
        _ => return (format!("logged out of `{server}`\n"), None),
    };
    let (how, warning) = match revocation {
        Revocation::Revoked => (" (its tokens were revoked)", None),
        Revocation::NotOffered => (
            " (its authorization server offers no revocation: the tokens stay valid there until they expire)",
            None,
        ),
        Revocation::Failed { reason } => (
            "",
            Some(format!(
                "the tokens of `{server}` were not revoked: {reason}; the login was deleted all the same"
            )),
        ),
        _ => ("", None),
    };
    (format!("logged out of `{server}`{how}\n"), warning)
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
    fn a_logout_says_what_became_of_the_tokens_and_warns_when_revocation_failed() {
        let line = |revocation| describe_logout("web", &Logout::LoggedOut(revocation));
        assert_eq!(
            line(Revocation::Revoked),
            (
                "logged out of `web` (its tokens were revoked)\n".into(),
                None
            )
        );
        assert_eq!(
            line(Revocation::NothingToRevoke),
            ("logged out of `web`\n".into(), None)
        );
        assert!(
            line(Revocation::NotOffered)
                .0
                .contains("offers no revocation")
        );
        let (text, warning) = line(Revocation::Failed {
            reason: "the authorization server cannot be reached".into(),
        });
        assert_eq!(text, "logged out of `web`\n");
        assert_eq!(
            warning.as_deref(),
            Some(
                "the tokens of `web` were not revoked: the authorization server cannot be reached; the login was deleted all the same"
            )
        );
        assert_eq!(
            describe_logout("web", &Logout::NotLoggedIn),
            ("no login of `web` is stored\n".into(), None)
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
