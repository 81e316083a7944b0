//! The keys a configuration file may hold, by table, and the closest known key to a
//! misspelt one.
//!
//! Every key of Codex's `[mcp_servers.NAME]` tables is known here, so that a Codex
//! `config.toml` loads unchanged: the keys mcp-runtime acts on, and the ones it only
//! accepts with a warning (see the parser of each). A key in none of these lists is a
//! mistake, and its message suggests the closest known key.

/// Keys that make a server a stdio server.
pub(crate) const STDIO_KEYS: &[&str] = &["command", "args", "env", "env_vars", "cwd"];
/// Keys that make a server a Streamable HTTP server.
pub(crate) const HTTP_KEYS: &[&str] = &[
    "url",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
];
/// Keys only a server with `url` may hold, which do not by themselves make it one.
pub(crate) const URL_ONLY_KEYS: &[&str] = &[
    "transport",
    "http_headers_helper",
    "auth",
    "oauth",
    "oauth_resource",
    // mcp-runtime's own.
    "ca_certificate",
];
/// Keys any server may hold.
pub(crate) const COMMON_KEYS: &[&str] = &[
    "enabled",
    "required",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "supports_parallel_tool_calls",
    "default_tools_approval_mode",
    "tools",
    "scopes",
    "name",
    "environment_id",
    "experimental_environment",
    "omit_tools_from",
    // mcp-runtime's own.
    "environment",
    "share_tool_listing",
    "max_message_bytes",
    "max_tools",
    "protocol",
    "connections",
];
/// Keys that would carry a secret in clear text: known, and refused.
pub(crate) const LITERAL_TOKEN_KEYS: &[&str] = &["bearer_token"];
/// Keys of a `[mcp_servers.NAME.tools.TOOL]` table.
pub(crate) const TOOL_KEYS: &[&str] = &["approval_mode", "output_token_limit"];
/// Keys of a `[mcp_servers.NAME.oauth]` table.
pub(crate) const OAUTH_KEYS: &[&str] = &[
    "client_id",
    "client_secret_env_var",
    "client_metadata_url",
    "callback_url",
    "callback_port",
    "grant_type",
    "private_key_env_var",
    "signing_algorithm",
    "assertion_env_var",
    "assertion_file",
];
/// Keys of an `env_vars` entry written as a table.
pub(crate) const ENV_VAR_KEYS: &[&str] = &["name", "source"];

/// Every key a server table may hold.
pub(crate) fn server_keys() -> impl Iterator<Item = &'static str> + Clone {
    [
        STDIO_KEYS,
        HTTP_KEYS,
        URL_ONLY_KEYS,
        COMMON_KEYS,
        LITERAL_TOKEN_KEYS,
    ]
    .into_iter()
    .flatten()
    .copied()
}

/// `name` as a part of a table's name in a message: bare when TOML allows it (`search`),
/// else quoted (`"read.file"`, `""`), with control characters escaped.
pub(crate) fn table_part(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        return name.to_owned();
    }
    let mut quoted = String::from("\"");
    for c in name.chars() {
        match c {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            c if c.is_control() => quoted.push_str(&c.escape_default().to_string()),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// The known key closest to `key`, when it is close enough to be what was meant: by
/// edit distance, at most one edit per three characters (and at least one), case
/// ignored; else a known key that `key` is the first or last word of (`headers` for
/// `http_headers`). Ties go to the first key in `known`.
pub(crate) fn closest<'k>(
    key: &str,
    known: impl IntoIterator<Item = &'k str> + Clone,
) -> Option<&'k str> {
    let key = key.to_lowercase();
    let limit = (key.chars().count() / 3).max(1);
    let by_distance = known
        .clone()
        .into_iter()
        .map(|candidate| (strsim::damerau_levenshtein(&key, candidate), candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate);
    let (prefix, suffix) = (format!("{key}_"), format!("_{key}"));
    by_distance.or_else(|| {
        known.into_iter().find(|candidate| {
            key.len() >= 4 && (candidate.starts_with(&prefix) || candidate.ends_with(&suffix))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_key_suggests_the_closest_known_key() {
        assert_eq!(closest("comand", server_keys()), Some("command"));
        assert_eq!(closest("Command", server_keys()), Some("command"));
        assert_eq!(
            closest("startup_timeout", server_keys()),
            Some("startup_timeout_ms")
        );
        assert_eq!(
            closest("bearer_token_env", server_keys()),
            Some("bearer_token_env_var")
        );
        assert_eq!(
            closest("aproval_mode", TOOL_KEYS.iter().copied()),
            Some("approval_mode")
        );
        assert_eq!(closest("headers", server_keys()), Some("http_headers"));
    }

    #[test]
    fn a_key_far_from_every_known_key_suggests_nothing() {
        assert_eq!(closest("x", server_keys()), None);
        assert_eq!(closest("shell", ["wrapper"]), None);
        assert_eq!(closest("env_", server_keys()), Some("env"));
        assert_eq!(closest("tool", TOOL_KEYS.iter().copied()), None);
    }

    #[test]
    fn a_table_part_is_quoted_unless_bare() {
        assert_eq!(table_part("search-2_x"), "search-2_x");
        assert_eq!(table_part("read.file"), "\"read.file\"");
        assert_eq!(table_part(""), "\"\"");
        assert_eq!(table_part("a\"b\\\n"), "\"a\\\"b\\\\\\n\"");
    }

    #[test]
    fn no_key_is_in_two_lists() {
        let mut keys: Vec<_> = server_keys().collect();
        let count = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), count);
    }
}
