//! `mcp-runtime import FILE`: the Codex `config.toml` form of another host's JSON
//! config, printed so that it can be added to a Codex config.
//!
//! The conversion is the library's ([`mcp_runtime::config::import_file`]), the very one
//! `--config FILE` goes through, so what is printed is what mcp-runtime validates;
//! a `${…}` that Codex's format cannot express is kept, with a comment, and no
//! variable's value is ever printed.

use std::path::Path;

/// The TOML to print for `file`.
pub fn toml(file: &Path) -> anyhow::Result<String> {
    Ok(mcp_runtime::config::import_file(file)?)
}
