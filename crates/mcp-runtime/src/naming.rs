//! The names the model sees for servers and tools, compatible with Codex's.
//!
//! (Being rewritten to follow a pinned Codex commit exactly: see issue 8.)

/// `name` with every character outside `[A-Za-z0-9_]` replaced by `_`, as Codex
/// sanitizes a server or tool name.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The servers among `servers` whose tools a qualified name `qualified` may belong to,
/// judged from its `mcp__SERVER__` prefix alone: exactly one when the name can only be
/// that server's, more than one (or none) when it cannot be told from the name.
pub fn servers_for_qualified_name<'a>(
    qualified: &str,
    servers: impl IntoIterator<Item = &'a str>,
) -> Vec<&'a str> {
    servers
        .into_iter()
        .filter(|server| {
            qualified
                .strip_prefix("mcp__")
                .and_then(|rest| rest.strip_prefix(sanitize(server).as_str()))
                .is_some_and(|rest| rest.starts_with("__"))
        })
        .collect()
}
