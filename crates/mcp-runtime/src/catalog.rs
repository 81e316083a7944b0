//! The tool catalog: the tools the model may see, under their qualified names, with
//! what the host needs to call each.
//!
//! Each server's tools pass its `enabled_tools` / `disabled_tools` filters and are
//! named by [`naming`](crate::naming): Codex's names, which a catalog built from
//! another never changes. [`Catalog::resolve`] routes a qualified name back to its
//! server and raw tool name.
//!
//! Each [`QualifiedTool`] also carries the settings of the server's table that are
//! for the host to apply; mcp-runtime only reports them:
//! - `approval_mode`: the tool's `[mcp_servers.X.tools.T] approval_mode`, else the
//!   server's `default_tools_approval_mode`: whether the host asks a person before
//!   the tool runs. `prompt`: ask before every call; `writes`: ask unless the tool
//!   declares itself read-only; `approve`: call without asking; `auto`, or unset: the
//!   host's own policy decides from the tool's annotations. mcp-runtime never asks anyone
//!   itself, and calls a tool whatever its mode.
//! - `output_token_limit`: the most tokens of the tool's output the host should give
//!   the model.
//! - `supports_parallel_tool_calls`: the host may run several calls of this server's
//!   tools at once (mcp-runtime always can; this says the server's tools tolerate it).
//!
//! # Invariants
//!
//! 1. Every exposed tool of every server is in the catalog once, under one name;
//!    two tools never share a name (naming invariant 2).
//! 2. A catalog built from another keeps every name that one gave, and gives no name
//!    that one, or any catalog it was built from, gave to another tool: they share
//!    one name registry (which remembers the tools that left for a while; see
//!    [`naming`](crate::naming)).
//! 3. Tools named together for the first time get the same names whatever the order
//!    of servers and of their tools. In a lineage begun by [`Catalog::for_servers`],
//!    the tools of those servers get the same names whichever catalog of the lineage
//!    first names them, so whatever the order in which the servers' tools arrive.

use std::{
    collections::{BTreeMap, btree_map::Entry},
    sync::{Arc, Mutex},
};

use rmcp::model::{JsonObject, Tool};

pub use crate::naming::MAX_TOOL_NAME_LEN;
use crate::{
    config::{ApprovalMode, ServerConfig},
    naming::Registry,
    sync::lock,
};

/// A tool as a server listed it: rmcp's [`Tool`], and the fields of the listing that
/// [`Tool`] does not model (rmcp 3.11 has no `execution`, which says whether the tool
/// runs as a task in the 2025-11-25 revision).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ListedTool {
    /// The tool, as rmcp reads it.
    pub tool: Tool,
    /// The tool's `execution` object, as listed.
    pub execution: Option<JsonObject>,
}

impl ListedTool {
    /// `tool`, listed with `execution`.
    pub fn new(tool: Tool, execution: Option<JsonObject>) -> Self {
        Self { tool, execution }
    }

    /// Whether the tool runs as a task: its `execution.taskSupport`, `forbidden` when
    /// absent or not one of the three values (the schema's default).
    pub fn task_support(&self) -> TaskSupport {
        match self
            .execution
            .as_ref()
            .and_then(|execution| execution.get("taskSupport"))
            .and_then(serde_json::Value::as_str)
        {
            Some("required") => TaskSupport::Required,
            Some("optional") => TaskSupport::Optional,
            _ => TaskSupport::Forbidden,
        }
    }
}

impl From<Tool> for ListedTool {
    fn from(tool: Tool) -> Self {
        Self::new(tool, None)
    }
}

/// Whether a tool is called as a task (its listed `execution.taskSupport`, 2025-11-25):
/// mcp-runtime calls a `Required` tool through the task API, and the others as plain
/// calls. Under 2026-07-28 the server decides per call, whatever the listing says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TaskSupport {
    /// The tool must not be called as a task (the default).
    #[default]
    Forbidden,
    /// The tool may be called as a task.
    Optional,
    /// The tool must be called as a task.
    Required,
}

impl TaskSupport {
    /// The value as the listing spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

/// A tool as the model sees it, with the settings the host applies to it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct QualifiedTool {
    /// The qualified name, Codex's (see [`naming`](crate::naming)).
    pub qualified_name: String,
    /// The server that provides it.
    pub server: String,
    /// The tool as the server listed it (its raw name is `tool.name`); shared with the
    /// catalogs built from this one while the server lists it unchanged.
    pub tool: Arc<Tool>,
    /// The tool's `execution` object as listed, which rmcp's [`Tool`] does not keep.
    pub execution: Option<Arc<JsonObject>>,
    /// Whether the tool is called as a task (from `execution`).
    pub task_support: TaskSupport,
    /// Whether the host asks before it runs: the tool's `approval_mode`, else the
    /// server's `default_tools_approval_mode`; `None` when neither is set (the host's
    /// own policy applies).
    pub approval_mode: Option<ApprovalMode>,
    /// The tool's `output_token_limit`: the most tokens of its output the host should
    /// give the model.
    pub output_token_limit: Option<u64>,
    /// The server's `supports_parallel_tool_calls`: the host may run several calls of
    /// the server's tools at once.
    pub supports_parallel_tool_calls: bool,
}

/// The qualified tools of every server.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// In qualified-name order, which [`Catalog::resolve`] searches.
    tools: Vec<QualifiedTool>,
    /// Every name this catalog's lineage gave (invariant 2).
    names: Arc<Mutex<Registry>>,
}

impl Catalog {
    /// An empty catalog that begins a lineage for the servers `servers`: each of
    /// them gets the namespace Codex gives it among all of them (one is hashed
    /// exactly when another's name sanitizes alike), even when the catalogs built
    /// from this one name their tools one server at a time. Build the catalog of a
    /// set of servers known in advance from it; a server not in `servers` is named
    /// as a newcomer when its tools arrive.
    ///
    /// [`Catalog::default`] begins a lineage that knows no server in advance.
    pub fn for_servers(servers: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            names: Arc::new(Mutex::new(
                Registry::default().declaring(servers.into_iter().map(Into::into)),
            )),
            ..Self::default()
        }
    }

    /// The catalog of `servers`' tools (each server's configuration and its listing),
    /// replacing `previous`: every name `previous` gave stays; a tool new to the
    /// lineage that collides with one takes the suffix. Tools are listed in
    /// qualified-name order.
    ///
    /// Build from [`Catalog::default`] for a first catalog.
    ///
    /// # Concurrent calls
    ///
    /// Builds from catalogs of one lineage take turns naming tools (they share the
    /// registry), so two catalogs built at once from the same `previous` still agree
    /// on every name either gave.
    pub fn build<'a>(
        previous: &Catalog,
        servers: impl IntoIterator<Item = (&'a ServerConfig, &'a [ListedTool])>,
    ) -> Self {
        // Sorted by (server, raw name), so the order of servers and of tools cannot
        // change a name; of two tools with one name on one server, the first listed
        // is kept, as in a listing (`connection::listing`).
        let mut entries: BTreeMap<(&str, &str), (&ServerConfig, &ListedTool)> = BTreeMap::new();
        for (config, tools) in servers {
            let server = config.name.as_str();
            for listed in tools
                .iter()
                .filter(|listed| config.exposes_tool(&listed.tool.name))
            {
                let tool = &listed.tool;
                match entries.entry((server, tool.name.as_ref())) {
                    Entry::Vacant(entry) => {
                        entry.insert((config, listed));
                    }
                    Entry::Occupied(_) => {
                        tracing::warn!(server, tool = %tool.name, "server listed a tool twice; keeping the first");
                    }
                }
            }
        }
        let pairs: Vec<(&str, &str)> = entries.keys().copied().collect();
        let names = lock(&previous.names).name(&pairs);

        let mut tools: Vec<QualifiedTool> = entries
            .into_values()
            .zip(names)
            .map(|((config, listed), qualified_name)| {
                // A tool listed unchanged keeps the copy the previous catalog holds.
                let (tool, execution) = match previous.resolve(&qualified_name) {
                    Some(known)
                        if known.server == config.name
                            && *known.tool == listed.tool
                            && known.execution.as_deref() == listed.execution.as_ref() =>
                    {
                        (known.tool.clone(), known.execution.clone())
                    }
                    _ => (
                        Arc::new(listed.tool.clone()),
                        listed.execution.clone().map(Arc::new),
                    ),
                };
                QualifiedTool {
                    task_support: listed.task_support(),
                    execution,
                    approval_mode: config.approval_mode(&tool.name),
                    output_token_limit: config
                        .tools
                        .get(tool.name.as_ref())
                        .and_then(|settings| settings.output_token_limit),
                    supports_parallel_tool_calls: config.supports_parallel_tool_calls,
                    qualified_name,
                    server: config.name.clone(),
                    tool,
                }
            })
            .collect();
        tools.sort_unstable_by(|a, b| a.qualified_name.cmp(&b.qualified_name));
        debug_assert!(
            tools
                .windows(2)
                .all(|pair| pair[0].qualified_name != pair[1].qualified_name),
            "invariant 1: two tools never share a name"
        );
        Self {
            tools,
            names: previous.names.clone(),
        }
    }

    /// Every tool, in qualified-name order.
    pub fn tools(&self) -> &[QualifiedTool] {
        &self.tools
    }

    /// The tool with this qualified name.
    pub fn resolve(&self, qualified_name: &str) -> Option<&QualifiedTool> {
        self.tools
            .binary_search_by(|tool| tool.qualified_name.as_str().cmp(qualified_name))
            .ok()
            .map(|index| &self.tools[index])
    }
}

#[cfg(test)]
mod tests;
