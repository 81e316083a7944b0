//! `[serve] expose = "search"`: a client's `tools/list` holds a tool that searches the
//! catalog ([`SEARCH_TOOLS`]), one that calls any tool by its qualified name
//! ([`CALL_TOOL`]), the `always_expose` tools, and, for a handshake session, the
//! tools it has found ([`Found`]), so that a host with thousands of tools shows its
//! model a few.
//!
//! Invariants:
//! 1. A handshake session's list holds the tools its searches found, at most
//!    `max_exposed_tools` of them, the least recently found leaving first; each
//!    search that changes the set tells the client its list changed. The list is
//!    the session's own: `cacheScope: private`, `ttlMs: 0`.
//! 2. A 2026-07-28 client has no session, and a list result must not depend on the
//!    connection: its list is fixed (the two tools and `always_expose`), and it calls
//!    what it found through [`CALL_TOOL`].
//! 3. A tool the client was not shown is refused when called by its own name; any
//!    tool of the catalog can be called through [`CALL_TOOL`]. Tools are named by
//!    their qualified names in this mode.

use std::{
    collections::{HashSet, VecDeque},
    sync::{Arc, Mutex},
};

use mcp_runtime::{Catalog, config::Expose};
use rmcp::model::{JsonObject, Tool};
use serde_json::json;

use crate::sync::lock;

/// The gateway's tool that searches the catalog.
pub(crate) const SEARCH_TOOLS: &str = "search_tools";
/// The gateway's tool that calls a tool by its qualified name.
pub(crate) const CALL_TOOL: &str = "call_tool";
/// How many tools a search returns when the client names no limit.
const DEFAULT_LIMIT: usize = 10;
/// The most tools one search returns.
const MAX_LIMIT: usize = 50;
/// The longest query a search takes, in bytes: a query is a few words or a name.
const MAX_QUERY: usize = 1024;

/// What the clients' lists hold (`[serve] expose`, `always_expose`,
/// `max_exposed_tools`).
#[derive(Clone, Debug, Default)]
pub struct Exposure {
    expose: Expose,
    always: Vec<String>,
    max_found: usize,
}

impl Exposure {
    /// Lists hold `expose`; in search mode, also the tools named `always` and up to
    /// `max_found` found ones (at least one).
    pub fn new(expose: Expose, always: Vec<String>, max_found: usize) -> Self {
        Self {
            expose,
            always,
            max_found: max_found.max(1),
        }
    }

    pub(crate) fn searching(&self) -> bool {
        self.expose == Expose::Search
    }

    /// Whether the client may call `qualified` by its own name: it is always
    /// exposed, or the session found it (invariant 3).
    pub(crate) fn shown(&self, qualified: &str, found: Option<&Found>) -> bool {
        self.always.iter().any(|name| name == qualified)
            || found.is_some_and(|found| found.contains(qualified))
    }

    /// The list: the gateway's two tools, the `always_expose` tools of `catalog`,
    /// then the found ones (`None` for a client without a session), each once.
    pub(crate) fn list(&self, catalog: &Catalog, found: Option<&Found>) -> Vec<Tool> {
        let mut tools = vec![search_tools(), call_tool()];
        let found = found.map(Found::names).unwrap_or_default();
        let mut named: Vec<&str> = Vec::new();
        for name in self
            .always
            .iter()
            .map(String::as_str)
            .chain(found.iter().map(|n| &**n))
        {
            if named.contains(&name) {
                continue;
            }
            if let Some(tool) = catalog.resolve(name) {
                named.push(name);
                tools.push(qualified(tool));
            }
        }
        tools
    }

    /// Runs a search's `arguments` (`query`, `limit`) over `catalog`: the tools found,
    /// best first, as the client lists them; for a session, also remembered in
    /// `found`, with whether its set changed (invariant 1).
    pub(crate) fn search(
        &self,
        catalog: &Catalog,
        arguments: Option<&JsonObject>,
        found: Option<&Found>,
    ) -> Result<(Vec<Tool>, bool), String> {
        let arguments = arguments.cloned().unwrap_or_default();
        let Some(query) = arguments.get("query").and_then(|query| query.as_str()) else {
            return Err(format!("`{SEARCH_TOOLS}` takes a `query` string"));
        };
        if query.len() > MAX_QUERY {
            return Err(format!(
                "`{SEARCH_TOOLS}`'s `query` is at most {MAX_QUERY} bytes: a few words, or a tool's name"
            ));
        }
        let limit = match arguments.get("limit") {
            None => DEFAULT_LIMIT,
            Some(limit) => match limit.as_u64() {
                Some(limit @ 1..) => usize::try_from(limit).unwrap_or(MAX_LIMIT).min(MAX_LIMIT),
                _ => return Err(format!("`{SEARCH_TOOLS}`'s `limit` is a positive integer")),
            },
        };
        let hits = catalog.search(query, limit);
        let changed = found.is_some_and(|found| {
            found.add(
                hits.iter().map(|hit| hit.tool.qualified_name.clone()),
                self.max_found,
            )
        });
        Ok((
            hits.iter().map(|hit| qualified(&hit.tool)).collect(),
            changed,
        ))
    }
}

/// A call of [`CALL_TOOL`]: the qualified name and arguments it carries.
pub(crate) fn unwrap_call(
    arguments: Option<&JsonObject>,
) -> Result<(String, Option<JsonObject>), String> {
    let arguments = arguments.cloned().unwrap_or_default();
    let Some(name) = arguments.get("name").and_then(|name| name.as_str()) else {
        return Err(format!(
            "`{CALL_TOOL}` takes the tool's qualified `name` (as `{SEARCH_TOOLS}` gives it)"
        ));
    };
    let inner = match arguments.get("arguments") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Object(inner)) => Some(inner.clone()),
        Some(_) => return Err(format!("`{CALL_TOOL}`'s `arguments` is an object")),
    };
    Ok((name.to_owned(), inner))
}

/// A tool of the catalog as the client lists it: its definition under its
/// qualified name (invariant 3).
fn qualified(tool: &mcp_runtime::QualifiedTool) -> Tool {
    let mut listed = Tool::clone(&tool.tool);
    listed.name = tool.qualified_name.to_string().into();
    listed
}

fn object(value: serde_json::Value) -> Arc<JsonObject> {
    match value {
        serde_json::Value::Object(object) => Arc::new(object),
        _ => unreachable!("a schema literal is an object"),
    }
}

fn search_tools() -> Tool {
    Tool::new(
        SEARCH_TOOLS,
        "Search the available tools by what they do or by name. Returns the best \
         matching tools' full definitions, best first. Call a tool found by its name, \
         or through `call_tool` if it is not in your tool list.",
        object(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What the tool should do, or its name"},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "description": "The most tools to return (default 10)",
                },
            },
            "required": ["query"],
        })),
    )
}

fn call_tool() -> Tool {
    Tool::new(
        CALL_TOOL,
        "Call any available tool by the qualified name `search_tools` gave it, with its \
         arguments.",
        object(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's qualified name"},
                "arguments": {"type": "object", "description": "The tool's arguments"},
            },
            "required": ["name"],
        })),
    )
}

/// The tools a session has found, least recently found first (invariant 1).
#[derive(Debug, Default)]
pub(crate) struct Found(Mutex<VecDeque<Arc<str>>>);

impl Found {
    /// Adds `names` as the most recently found, in their order, keeping at most `max`;
    /// whether the set changed.
    fn add(&self, names: impl Iterator<Item = Arc<str>>, max: usize) -> bool {
        let mut found = lock(&self.0);
        let before: HashSet<Arc<str>> = found.iter().cloned().collect();
        let names: Vec<Arc<str>> = names.collect();
        // The best hit is the most recent: it leaves last.
        for name in names.iter().rev() {
            found.retain(|kept| kept != name);
            found.push_back(name.clone());
        }
        while found.len() > max {
            found.pop_front();
        }
        found.len() != before.len() || found.iter().any(|name| !before.contains(name))
    }

    fn contains(&self, name: &str) -> bool {
        lock(&self.0).iter().any(|found| &**found == name)
    }

    /// Most recently found first.
    fn names(&self) -> Vec<Arc<str>> {
        lock(&self.0).iter().rev().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(found: &Found) -> Vec<String> {
        found.names().iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn the_least_recently_found_leave_first() {
        let found = Found::default();
        let add = |names: &[&str]| found.add(names.iter().map(|name| Arc::from(*name)), 3);
        assert!(add(&["a", "b"]));
        assert_eq!(names(&found), ["a", "b"]);
        assert!(!add(&["b", "a"]), "the same set: no change");
        assert_eq!(names(&found), ["b", "a"], "found again, b now the best");
        assert!(add(&["c", "d"]));
        // `a` was found least recently and leaves.
        assert_eq!(names(&found), ["c", "d", "b"]);
        assert!(found.contains("d") && !found.contains("a"));
    }

    #[test]
    fn a_search_takes_a_query_of_a_few_words_and_a_bounded_limit() {
        let exposure = Exposure::new(Expose::Search, Vec::new(), 8);
        let catalog = Catalog::default();
        let search =
            |arguments: serde_json::Value| exposure.search(&catalog, arguments.as_object(), None);
        assert!(search(json!({"query": "read a file"})).is_ok());
        assert!(search(json!({"query": "read", "limit": 1_000_000})).is_ok());
        for refused in [
            json!({}),
            json!({"query": 3}),
            json!({"query": "read", "limit": 0}),
            json!({"query": "read", "limit": "ten"}),
            json!({"query": "word ".repeat(300)}),
        ] {
            assert!(search(refused.clone()).is_err(), "{refused}");
        }
    }

    #[test]
    fn a_call_of_call_tool_carries_a_name_and_an_object() {
        let arguments = |value: serde_json::Value| value.as_object().cloned();
        let (name, inner) =
            unwrap_call(arguments(json!({"name": "mcp__a__b", "arguments": {"x": 1}})).as_ref())
                .unwrap();
        assert_eq!(name, "mcp__a__b");
        assert_eq!(inner, arguments(json!({"x": 1})));
        assert!(unwrap_call(arguments(json!({"arguments": {}})).as_ref()).is_err());
        assert!(unwrap_call(arguments(json!({"name": "x", "arguments": [1]})).as_ref()).is_err());
    }
}
