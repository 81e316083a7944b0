//! Execution-environment selection: where each server runs, and so which sandbox
//! metadata is truthful for it.
//!
//! A launcher path names a file on *this* host. It is meaningful only to a server that
//! shares this host's filesystem: a local stdio child. An HTTP endpoint (loopback
//! included) and a stdio server run through an `[environments.NAME]` wrapper (for
//! example `ssh -T host`) run elsewhere, so they are never offered a launcher; they still
//! receive the sandbox state, which describes the call, not the host.

use crate::config::{Config, Environment, ServerConfig, TransportConfig};

/// Where a server runs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Binding {
    /// A stdio child process on this host.
    Local,
    /// A Streamable HTTP endpoint, wherever it is.
    Http,
    /// A stdio server run through the command prefix of a named environment.
    Wrapped {
        /// The environment's name.
        environment: String,
        /// Its command prefix.
        wrapper: Vec<String>,
    },
}

impl Binding {
    /// The binding of `server` under `config`'s environments. A server naming an
    /// environment that `config` does not define was refused when the config was
    /// parsed; if it is met here anyway it is treated as remote, never as local.
    pub fn of(server: &ServerConfig, config: &Config) -> Self {
        match (&server.transport, &server.environment) {
            (TransportConfig::StreamableHttp(_), _) => Self::Http,
            (TransportConfig::Stdio(_), Environment::Local) => Self::Local,
            (TransportConfig::Stdio(_), Environment::Named(name)) => Self::Wrapped {
                environment: name.clone(),
                wrapper: config
                    .environments
                    .get(name)
                    .map(|environment| environment.wrapper.clone())
                    .unwrap_or_default(),
            },
        }
    }

    /// The command prefix a stdio server is run through, if any.
    pub fn wrapper(&self) -> Option<&[String]> {
        match self {
            Self::Wrapped { wrapper, .. } => Some(wrapper),
            _ => None,
        }
    }

    /// Whether a launcher path on this host may be offered to the server.
    pub fn may_offer_launcher(&self) -> bool {
        matches!(self, Self::Local)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn only_local_stdio_servers_may_be_offered_a_launcher() {
        let config = Config::parse(
            r#"
            [environments.devbox]
            wrapper = ["ssh", "-T", "devbox"]
            [mcp_servers.here]
            command = "server"
            [mcp_servers.there]
            command = "server"
            environment = "devbox"
            [mcp_servers.web]
            url = "http://127.0.0.1:8080/mcp"
            "#,
            Path::new("test.toml"),
        )
        .unwrap();
        let binding = |name: &str| Binding::of(&config.servers[name], &config);
        assert_eq!(binding("here"), Binding::Local);
        assert!(binding("here").may_offer_launcher());
        assert_eq!(binding("web"), Binding::Http);
        assert!(!binding("web").may_offer_launcher(), "not even on loopback");
        let there = binding("there");
        assert_eq!(
            there.wrapper(),
            Some(&["ssh".to_owned(), "-T".into(), "devbox".into()][..])
        );
        assert!(!there.may_offer_launcher());
    }
}
