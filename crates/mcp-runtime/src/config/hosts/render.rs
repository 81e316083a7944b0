//! The TOML text of converted servers, written by hand so that each table can carry
//! the comments that explain what was not converted as it was.
//!
//! A comment quotes names from the JSON file (a server, a file, a variable), which may
//! hold any character: each comment is one line with its control characters escaped
//! ([`shown`]), since TOML allows none in a comment but tab.

use std::{collections::BTreeMap, fmt::Write as _};

use crate::redact::shown;

/// One `[mcp_servers.NAME]` table to write.
#[derive(Debug)]
pub(super) struct Table {
    pub(super) name: String,
    pub(super) comments: Vec<String>,
    pub(super) entries: Vec<(&'static str, Item)>,
}

/// A TOML value to write.
#[derive(Debug)]
pub(super) enum Item {
    Str(String),
    Strs(Vec<String>),
    Map(BTreeMap<String, String>),
    Bool(bool),
}

/// The TOML text of `tables`.
pub(super) fn render(label: &str, format: &str, tables: &[Table]) -> String {
    let mut out = format!(
        "# The servers of `{}` ({format}) in Codex's `config.toml` form, by `mcp-runtime import`.\n",
        shown(label)
    );
    for table in tables {
        let _ = writeln!(out, "\n[mcp_servers.{}]", key(&table.name));
        for comment in &table.comments {
            let _ = writeln!(out, "# {}", shown(comment));
        }
        for (name, item) in &table.entries {
            let value = match item {
                Item::Str(value) => string(value),
                Item::Bool(value) => value.to_string(),
                Item::Strs(values) => {
                    let values: Vec<String> = values.iter().map(|value| string(value)).collect();
                    format!("[{}]", values.join(", "))
                }
                Item::Map(entries) => {
                    let entries: Vec<String> = entries
                        .iter()
                        .map(|(name, value)| format!("{} = {}", key(name), string(value)))
                        .collect();
                    format!("{{ {} }}", entries.join(", "))
                }
            };
            let _ = writeln!(out, "{name} = {value}");
        }
    }
    out
}

/// `name` as a TOML key: bare when it can be, else quoted.
fn key(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        name.to_owned()
    } else {
        string(name)
    }
}

/// `value` as a TOML basic string.
fn string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
