//! Execution-environment selection: where each server runs, and so which sandbox
//! metadata is truthful for it.
//!
//! A launcher path names a file on *this* host. It is meaningful only to a server that
//! shares this host's filesystem: a local stdio child. An HTTP endpoint (loopback
//! included) and a stdio server run through an `[environments.NAME]` wrapper (for
//! example `ssh -T host`) run elsewhere, so they are never offered a launcher; they still
//! receive the sandbox state, which describes the call, not the host.

use crate::{
    config::{Config, Environment, ServerConfig, TransportConfig},
    transport::error::StartupError,
};

/// Where a server runs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum Binding {
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
    /// environment that `config` does not define (or defines without a wrapper) cannot
    /// run at all: running it here instead would run it in the wrong place.
    pub(crate) fn of(server: &ServerConfig, config: &Config) -> Result<Self, StartupError> {
        match (&server.transport, &server.environment) {
            (TransportConfig::StreamableHttp(_), _) => Ok(Self::Http),
            (TransportConfig::Stdio(_), Environment::Local) => Ok(Self::Local),
            (TransportConfig::Stdio(_), Environment::Named(name)) => {
                match config.environments.get(name) {
                    Some(environment) if !environment.wrapper.is_empty() => Ok(Self::Wrapped {
                        environment: name.clone(),
                        wrapper: environment.wrapper.clone(),
                    }),
                    _ => Err(StartupError::UndefinedEnvironment {
                        environment: name.clone(),
                    }),
                }
            }
        }
    }

    /// The command prefix a stdio server is run through, if any.
    pub(crate) fn wrapper(&self) -> Option<&[String]> {
        match self {
            Self::Wrapped { wrapper, .. } => Some(wrapper),
            _ => None,
        }
    }

    /// Whether a launcher path on this host may be offered to the server.
    pub(crate) fn may_offer_launcher(&self) -> bool {
        matches!(self, Self::Local)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::EnvironmentConfig;

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
        let binding = |name: &str| Binding::of(&config.servers[name], &config).unwrap();
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

    #[test]
    fn an_undefined_or_empty_environment_is_an_error_not_this_host() {
        let mut config = Config::default();
        let mut server = ServerConfig::stdio("s", "server", vec![]);
        server.environment = Environment::Named("typo".into());
        config.servers.insert("s".into(), server.clone());
        let error = Binding::of(&server, &config).unwrap_err();
        assert_eq!(
            error.to_string(),
            "environment `typo` is not defined or has an empty `wrapper` (add `[environments.typo]` with a `wrapper`)"
        );
        config
            .environments
            .insert("typo".into(), EnvironmentConfig::new(Vec::new()));
        assert!(Binding::of(&server, &config).is_err());
    }
}
