//! [`ConfigError`]: why a configuration file could not be read or does not describe a
//! valid set of servers. Every message names the file, and where it applies the
//! `[mcp_servers.NAME]` table and the key.

use std::{path::PathBuf, sync::Arc};

use crate::redact::shown;

/// A configuration file could not be read or does not describe a valid set of servers.
///
/// Every variant names the file, and where it applies the `[mcp_servers.NAME]` table
/// and the key.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The file is not valid TOML.
    #[error("`{}` is not valid TOML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's description, with line and column.
        message: String,
    },
    /// A server name does not match `^[A-Za-z0-9_-]+$`.
    #[error(
        "`{}`: server name `{}` in `[mcp_servers]` may only contain letters, digits, `_` and `-`",
        path.display(),
        shown(name)
    )]
    InvalidServerName {
        /// The file.
        path: PathBuf,
        /// The offending name.
        name: String,
    },
    /// A server name is longer than [`crate::config::MAX_SERVER_NAME_BYTES`].
    #[error(
        "`{}`: server name `{}` in `[mcp_servers]` is {} bytes long, more than the {limit} allowed (use a shorter name)",
        path.display(),
        shown(&excerpt(name)),
        name.len()
    )]
    ServerNameTooLong {
        /// The file.
        path: PathBuf,
        /// The offending name (the message shows only its start).
        name: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// A table has a key that neither mcp-runtime nor Codex knows.
    #[error(
        "`{}`: unknown key `{}` in `[{table}]` ({})",
        path.display(),
        shown(key),
        spelling_hint(suggestion.as_deref())
    )]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// The table, for example `mcp_servers.github`.
        table: String,
        /// The unknown key.
        key: String,
        /// The known key closest to it, when one is close.
        suggestion: Option<String>,
    },
    /// A key that only a Streamable HTTP server can use is in a stdio server's table.
    #[error(
        "`{}`: key `{key}` in `[{table}]` applies only to a server with `url` (remove it from this stdio server)",
        path.display()
    )]
    UrlOnlyKey {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// The key.
        key: String,
    },
    /// A top-level key has a value of the wrong type or out of range.
    #[error("`{}`: top-level key `{key}` must be {expected}", path.display())]
    InvalidTopLevelValue {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
        /// What the value must be.
        expected: String,
    },
    /// A key has a value of the wrong type or out of range.
    #[error(
        "`{}`: key `{}` in `[{table}]` must be {expected}",
        path.display(),
        shown(key)
    )]
    InvalidValue {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// The key.
        key: String,
        /// What the value must be, for example `a positive number of seconds`.
        expected: String,
    },
    /// A value, or one item or entry of an array or table, cannot work where it is used:
    /// a NUL byte in an argument, `=` in a variable name, an invalid HTTP header.
    #[error("`{}`: key `{key}` in `[{table}]`: {entry} {problem}", path.display())]
    InvalidEntry {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// The key.
        key: String,
        /// Which value, item or entry, for example `item 2` or ``variable `A=B` ``; never
        /// a value that may be secret.
        entry: String,
        /// What is wrong with it and what to do.
        problem: String,
    },
    /// A server table mixes stdio and Streamable HTTP keys.
    #[error(
        "`{}`: `[{table}]` mixes stdio key `{stdio_key}` with HTTP key `{http_key}` (a server is either `command` or `url`)",
        path.display()
    )]
    MixedTransport {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// A stdio key present in the table.
        stdio_key: String,
        /// An HTTP key present in the table.
        http_key: String,
    },
    /// A server table has neither `command` nor `url`.
    #[error(
        "`{}`: `[{table}]` needs key `command` (a stdio server) or key `url` (a Streamable HTTP server)",
        path.display()
    )]
    MissingTransport {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
    },
    /// A bearer token was written into the file.
    #[error(
        "`{}`: key `{key}` in `[{table}]` holds a literal token, which is refused (name an environment variable with `bearer_token_env_var`)",
        path.display()
    )]
    LiteralToken {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// The key that held the token.
        key: String,
    },
    /// A server names an execution environment that is not defined.
    #[error(
        "`{}`: key `environment` in `[{table}]` names `{environment}`, which is neither `local` nor a defined `[environments.{environment}]`",
        path.display()
    )]
    UnknownEnvironment {
        /// The file.
        path: PathBuf,
        /// The table.
        table: String,
        /// The name that was not found.
        environment: String,
    },
    /// A JSON file of another host is not valid JSON.
    #[error("`{}` is not valid JSON: {message}", path.display())]
    JsonSyntax {
        /// The file.
        path: PathBuf,
        /// The parser's description, with line and column.
        message: String,
    },
    /// A file is not one of the formats mcp-runtime reads, or its top level is not
    /// what that format needs (see [`Config::load`](crate::Config::load)).
    #[error("`{}` {problem}", path.display())]
    HostFile {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do, finishing a sentence about the file.
        problem: String,
    },
    /// A server name of another host's JSON file cannot name an mcp-runtime server.
    #[error(
        "`{}`: server name `{}` in `{table}` {}",
        path.display(),
        shown(&excerpt(name)),
        shown(problem)
    )]
    HostServerName {
        /// The file.
        path: PathBuf,
        /// The object holding the servers, for example `mcpServers`.
        table: String,
        /// The name (the message shows only its start).
        name: String,
        /// What is wrong and what to do.
        problem: String,
    },
    /// A key of a server in another host's JSON file: unknown, of the wrong type, or
    /// holding a `${…}` reference that cannot be resolved.
    #[error(
        "`{}`: key `{}` in `[{}]`{} {}",
        path.display(),
        shown(key),
        shown(table),
        shown(&entry_of(entry)),
        shown(problem)
    )]
    HostKey {
        /// The file.
        path: PathBuf,
        /// The server's object, for example `servers.github`.
        table: String,
        /// The key.
        key: String,
        /// Which item or entry of the key, for example `item 2` or ``variable `A` ``.
        entry: Option<String>,
        /// What is wrong and what to do, finishing a sentence about the key; never a
        /// value that may be secret.
        problem: String,
    },
    /// Several errors, all found in one file: parsing goes on after an error so that
    /// the user can fix every one at once. The message is one line per error, each a
    /// whole message that names the file.
    #[error("{}", join(errors))]
    Several {
        /// Each error, none of them [`ConfigError::Several`].
        errors: Vec<ConfigError>,
    },
}

impl ConfigError {
    /// The errors this one stands for: each of [`ConfigError::Several`], or itself.
    pub fn errors(&self) -> &[ConfigError] {
        match self {
            Self::Several { errors } => errors,
            error => std::slice::from_ref(error),
        }
    }
}

/// What to do about an unknown key.
fn spelling_hint(suggestion: Option<&str>) -> String {
    match suggestion {
        Some(known) => format!("did you mean `{known}`?"),
        None => "check its spelling".to_owned(),
    }
}

/// The start of a name too long to show whole.
fn excerpt(name: &str) -> String {
    const SHOWN_CHARS: usize = 32;
    match name.char_indices().nth(SHOWN_CHARS) {
        Some((end, _)) => format!("{}…", &name[..end]),
        None => name.to_owned(),
    }
}

/// `: ENTRY`, naming an item or entry after its key.
fn entry_of(entry: &Option<String>) -> String {
    entry
        .as_ref()
        .map_or_else(String::new, |entry| format!(": {entry}"))
}

fn join(errors: &[ConfigError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}
