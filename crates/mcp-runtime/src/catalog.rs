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
//!    first names them, so whatever the order in which the servers' tools arrive —
//!    unless a tool's whole name is also another server's tool's (possible only when
//!    one namespace and the start of a tool's name sanitize like another namespace:
//!    servers `a` and `a_`, tools `_b` and `b`): the tool named first then keeps the
//!    plain name, where Codex, naming every tool at once, gives it to the first in
//!    raw-identity order.
//! 4. [`Catalog::with_server`] names a server declared by [`Catalog::for_servers`] (or
//!    already named in the lineage) as a [`Catalog::build`] of the same catalog with
//!    that server's tools replaced would, and shares every other server's entries
//!    unchanged. A server new to the lineage and undeclared is named by rule 2 among
//!    the declared servers and those already given its namespace only: beside servers
//!    `a-b` and `a_b` named together (both hashed), a later `a.b` alone keeps the
//!    plain namespace. A runtime declares all its servers, so this never arises there.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, OnceLock},
};

use imbl::OrdMap;
use rmcp::model::{JsonObject, Tool};

use crate::{
    config::{ApprovalMode, ServerConfig},
    naming::Registry,
    sync::lock,
};

/// A tool as a server listed it, every field: rmcp's [`Tool`], and the fields of the
/// listing that [`Tool`] does not model (see [`Definition`]): the 2025-11-25
/// `execution` (rmcp 3.11 has none; it says whether the tool runs as a task), and
/// whatever a newer revision or an extension adds to the tool or to its annotations.
/// [`ListedTool::definition`] is the tool as listed.
///
/// Both are shared, never copied: a catalog built from a listing holds the listing's
/// [`Tool`], or, for a tool listed unchanged, the one the previous catalog held (so
/// what is keyed by that `Arc`, such as a compiled output-schema validator, stays).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ListedTool {
    /// The tool, as rmcp reads it.
    pub tool: Arc<Tool>,
    /// The listed fields [`Tool`] does not model: the tool's own (its `execution`
    /// among them) and, under `annotations`, its annotations' own; `None` when there
    /// are none.
    pub unmodelled: Option<Arc<JsonObject>>,
}

impl ListedTool {
    /// `tool`, listed with the fields `unmodelled` beside it (see
    /// [`ListedTool::unmodelled`]; an empty object is none).
    pub fn new(tool: Tool, unmodelled: Option<JsonObject>) -> Self {
        Self {
            tool: Arc::new(tool),
            unmodelled: unmodelled
                .filter(|unmodelled| !unmodelled.is_empty())
                .map(Arc::new),
        }
    }

    /// The tool's `execution` object, as listed, when it is an object.
    pub fn execution(&self) -> Option<&JsonObject> {
        execution(self.unmodelled.as_deref())
    }

    /// Whether the tool runs as a task: its `execution.taskSupport`, `forbidden` when
    /// absent or not one of the three values (the schema's default).
    pub fn task_support(&self) -> TaskSupport {
        task_support(self.execution())
    }

    /// The tool as its server listed it, every field (it serializes as the listed
    /// JSON object).
    pub fn definition(&self) -> Definition<'_> {
        Definition {
            tool: &self.tool,
            unmodelled: self.unmodelled.as_deref(),
        }
    }
}

/// The `execution` object among a tool's `unmodelled` fields.
fn execution(unmodelled: Option<&JsonObject>) -> Option<&JsonObject> {
    unmodelled?.get("execution")?.as_object()
}

/// `execution.taskSupport`, `forbidden` when absent or not one of the three values.
fn task_support(execution: Option<&JsonObject>) -> TaskSupport {
    match execution
        .and_then(|execution| execution.get("taskSupport"))
        .and_then(serde_json::Value::as_str)
    {
        Some("required") => TaskSupport::Required,
        Some("optional") => TaskSupport::Optional,
        _ => TaskSupport::Forbidden,
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
    /// The qualified name, Codex's (see [`naming`](crate::naming)): the catalog's key
    /// for it, shared.
    pub qualified_name: Arc<str>,
    /// The server that provides it: one allocation for the server's tools, the one
    /// the catalog indexes the server by.
    pub server: Arc<str>,
    /// The tool as rmcp reads it (its raw name is `tool.name`); shared with the
    /// catalogs built from this one while the server lists it unchanged.
    pub tool: Arc<Tool>,
    /// The listed fields rmcp's [`Tool`] does not keep (see
    /// [`ListedTool::unmodelled`]); [`QualifiedTool::definition`] is the tool whole.
    pub unmodelled: Option<Arc<JsonObject>>,
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
///
/// Its maps are persistent: a catalog built from another shares every entry it keeps
/// with it, so [`Catalog::with_server`] costs the tools of the server it replaces, not
/// the whole catalog, and cloning a catalog copies nothing.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Every tool by qualified name, in qualified-name order.
    tools: OrdMap<Arc<str>, Arc<QualifiedTool>>,
    /// Each server's tools.
    servers: OrdMap<Arc<str>, Arc<ServerTools>>,
    /// Every name this catalog's lineage gave (invariant 2).
    names: Arc<Mutex<Registry>>,
}

/// One server's tools in a catalog: their qualified names, and the search index of
/// them once a search needed it (see [`search`]'s invariant 1). Catalogs built from
/// one another share it while the server's tools stay as they are.
struct ServerTools {
    /// The qualified names of the server's tools, in order.
    names: Box<[Arc<str>]>,
    /// What the server says about how to use it, which its index holds too.
    instructions: Option<Arc<str>>,
    index: OnceLock<search::ServerIndex>,
}

impl ServerTools {
    fn new(names: Vec<Arc<str>>, instructions: Option<Arc<str>>) -> Arc<Self> {
        Arc::new(Self {
            names: names.into_boxed_slice(),
            instructions,
            index: OnceLock::new(),
        })
    }
}

impl std::fmt::Debug for ServerTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTools")
            .field("names", &self.names)
            .field("instructions", &self.instructions.is_some())
            .field("indexed", &self.index.get().is_some())
            .finish()
    }
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
    /// Build from [`Catalog::default`] for a first catalog. This names every tool of
    /// every server; to replace one server's tools, [`Catalog::with_server`] costs
    /// only that server's.
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
        let mut entries: Vec<(&ServerConfig, &ListedTool)> = Vec::new();
        for (config, tools) in servers {
            entries.extend(exposed(config, tools).map(|listed| (config, listed)));
        }
        first_of_each(&mut entries);
        let pairs: Vec<(&str, &str)> = entries.iter().map(identity).collect();
        let names = lock(&previous.names).name(&pairs);

        let mut catalog = Self {
            names: previous.names.clone(),
            ..Self::default()
        };
        let mut by_server: BTreeMap<&str, (Arc<str>, Vec<Arc<str>>)> = BTreeMap::new();
        for ((config, listed), qualified_name) in entries.into_iter().zip(names) {
            let (server, keys) = by_server.entry(config.name.as_str()).or_insert_with(|| {
                // The name the previous catalog has for it, which its entries hold.
                let name = previous.servers.get_key_value(config.name.as_str());
                let name =
                    name.map_or_else(|| config.name.as_str().into(), |(name, _)| name.clone());
                (name, Vec::new())
            });
            let tool = qualify(config, server, listed, qualified_name, Some(previous));
            keys.push(tool.qualified_name.clone());
            catalog.insert(tool);
        }
        for (server, mut keys) in by_server.into_values() {
            keys.sort_unstable();
            // The server's instructions stay until it is told others.
            let instructions = previous
                .servers
                .get(&server)
                .and_then(|tools| tools.instructions.clone());
            catalog
                .servers
                .insert(server, ServerTools::new(keys, instructions));
        }
        catalog.check();
        catalog
    }

    /// This catalog with `config`'s server's tools replaced by `tools` (none: the
    /// server leaves it), the other servers' tools kept as they are. The names of
    /// the server's tools follow the same rules as in [`Catalog::build`]; the cost is
    /// in proportion to the server's tools, old and new, not to the catalog's.
    pub fn with_server(&self, config: &ServerConfig, tools: &[ListedTool]) -> Self {
        let server = config.name.as_str();
        let mut listed: Vec<(&ServerConfig, &ListedTool)> = exposed(config, tools)
            .map(|listed| (config, listed))
            .collect();
        first_of_each(&mut listed);
        let raw: Vec<&str> = listed.iter().map(|entry| identity(entry).1).collect();
        let names = lock(&self.names).name_server(server, &raw);

        let mut catalog = self.clone();
        // A server new to the catalog has no entry to share: its tools are not
        // looked up in it.
        let (server, previous, instructions) = match catalog.servers.remove_with_key(server) {
            Some((key, old)) => {
                for name in &old.names {
                    catalog.tools.remove(name);
                }
                (key, Some(self), old.instructions.clone())
            }
            None => (Arc::from(server), None, None),
        };
        let mut keys = Vec::with_capacity(listed.len());
        for ((_, listed), qualified_name) in listed.into_iter().zip(names) {
            let tool = qualify(config, &server, listed, qualified_name, previous);
            keys.push(tool.qualified_name.clone());
            catalog.insert(tool);
        }
        if !keys.is_empty() {
            keys.sort_unstable();
            catalog
                .servers
                .insert(server, ServerTools::new(keys, instructions));
        }
        catalog.check();
        catalog
    }

    /// This catalog with `server`'s instructions (what it says about how to use it)
    /// set to `instructions`, for [`Catalog::search`] to match: every tool of the
    /// server holds their words, weighted below its own. Its tools and names are
    /// unchanged; the server's index is built again only when they differ. A server
    /// the catalog has no tool of is left out.
    pub fn with_server_instructions(&self, server: &str, instructions: Option<&str>) -> Self {
        let Some((key, tools)) = self.servers.get_key_value(server) else {
            return self.clone();
        };
        if tools.instructions.as_deref() == instructions {
            return self.clone();
        }
        let entry = Arc::new(ServerTools {
            names: tools.names.clone(),
            instructions: instructions.map(Arc::from),
            index: OnceLock::new(),
        });
        let mut catalog = self.clone();
        catalog.servers.insert(key.clone(), entry);
        catalog
    }

    /// This catalog with the tools of `other`'s servers added: for a host that
    /// serves the servers of two runtimes as one (`mcp-runtime serve`'s shared
    /// connections beside a session's own). Each runtime should name its tools as if
    /// the other's servers were started too
    /// ([`StartOptions::with_other_configured_servers`](crate::StartOptions::with_other_configured_servers)),
    /// so that every name is the one a runtime of all of them gives. A server both
    /// catalogs hold, and a name both give, keep this catalog's tool.
    ///
    /// Both maps are persistent: the cost is in proportion to `other`'s tools.
    pub fn joined(&self, other: &Catalog) -> Self {
        let mut catalog = self.clone();
        for (server, theirs) in &other.servers {
            if catalog.servers.contains_key(server) {
                continue;
            }
            let mut kept = Vec::with_capacity(theirs.names.len());
            for name in &theirs.names {
                if catalog.tools.contains_key(name) {
                    continue;
                }
                catalog.insert(other.tools[name].clone());
                kept.push(name.clone());
            }
            if kept.len() == theirs.names.len() {
                // Every tool kept: the entry, and its index, are shared.
                catalog.servers.insert(server.clone(), theirs.clone());
            } else if !kept.is_empty() {
                catalog.servers.insert(
                    server.clone(),
                    ServerTools::new(kept, theirs.instructions.clone()),
                );
            }
        }
        catalog.check();
        catalog
    }

    /// Every tool, in qualified-name order.
    pub fn tools(
        &self,
    ) -> impl ExactSizeIterator<Item = &QualifiedTool> + DoubleEndedIterator + '_ {
        self.tools.values().map(|tool| &**tool)
    }

    /// How many tools the catalog has.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the catalog has no tool.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools of `server`, in qualified-name order.
    pub fn server_tools(&self, server: &str) -> impl ExactSizeIterator<Item = &QualifiedTool> + '_ {
        self.servers
            .get(server)
            .map_or(&[][..], |tools| &tools.names[..])
            .iter()
            .map(|name| &*self.tools[name])
    }

    /// The tool with this qualified name.
    pub fn resolve(&self, qualified_name: &str) -> Option<&QualifiedTool> {
        self.tools.get(qualified_name).map(|tool| &**tool)
    }

    /// The `limit` tools that best match `query`, best first, with their scores: the
    /// tools whose qualified or original name is the query itself (case, and `-`
    /// against `_`, aside) first, then by BM25F score over their names, titles,
    /// descriptions, parameters and server names and instructions. Tools no term of
    /// the query matches are left out.
    ///
    /// The first search indexes the catalog's servers, each once; later catalogs of
    /// the lineage index only the servers whose tools changed.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        search::search(query, limit, self.indexes(self.servers.iter()), &self.tools)
    }

    /// [`Catalog::search`] among the tools of `server` only.
    pub fn search_server(&self, server: &str, query: &str, limit: usize) -> Vec<SearchHit> {
        let servers = self.servers.get_key_value(server).into_iter();
        search::search(query, limit, self.indexes(servers), &self.tools)
    }

    /// Each of `servers` with its index, built when it has none yet.
    fn indexes<'a>(
        &'a self,
        servers: impl Iterator<Item = (&'a Arc<str>, &'a Arc<ServerTools>)> + 'a,
    ) -> impl Iterator<Item = (&'a search::ServerIndex, &'a [Arc<str>])> + 'a {
        servers.map(|(server, tools)| {
            let index = tools.index.get_or_init(|| {
                let instructions = tools.instructions.as_deref();
                search::ServerIndex::build(server, instructions, &tools.names, &self.tools)
            });
            (index, &tools.names[..])
        })
    }

    /// [`Catalog::resolve`], shared: what a call keeps of its tool while it runs.
    pub(crate) fn resolve_shared(&self, qualified_name: &str) -> Option<Arc<QualifiedTool>> {
        self.tools.get(qualified_name).cloned()
    }

    fn insert(&mut self, tool: Arc<QualifiedTool>) {
        let previous = self.tools.insert(tool.qualified_name.clone(), tool);
        debug_assert!(
            previous.is_none(),
            "invariant 1: two tools never share a name"
        );
    }

    /// Invariant 1, and the server index agreeing with the tools.
    fn check(&self) {
        debug_assert_eq!(
            self.servers
                .values()
                .map(|tools| tools.names.len())
                .sum::<usize>(),
            self.tools.len(),
            "invariant 1: every tool is its server's, once"
        );
    }
}

/// The tools of `tools` that `config`'s filters let through.
fn exposed<'a>(
    config: &'a ServerConfig,
    tools: &'a [ListedTool],
) -> impl Iterator<Item = &'a ListedTool> + 'a {
    tools
        .iter()
        .filter(|listed| config.exposes_tool(&listed.tool.name))
}

/// A tool's (server, raw tool name).
fn identity<'a>((config, listed): &(&'a ServerConfig, &'a ListedTool)) -> (&'a str, &'a str) {
    (config.name.as_str(), listed.tool.name.as_ref())
}

/// Sorts `entries` by (server, raw tool name), so that the order of servers and of
/// tools cannot change a name, and keeps each tool once: of two with one name on one
/// server, the first listed, as in a listing (`connection::listing`).
fn first_of_each(entries: &mut Vec<(&ServerConfig, &ListedTool)>) {
    entries.sort_by(|a, b| identity(a).cmp(&identity(b)));
    entries.dedup_by(|later, earlier| {
        let twice = identity(later) == identity(earlier);
        if twice {
            let (server, tool) = identity(later);
            tracing::warn!(
                server,
                tool,
                "server listed a tool twice; keeping the first"
            );
        }
        twice
    });
}

/// `listed`, of `config`'s server (`server`, its name), as `qualified_name`: the
/// entry `previous` holds when it is the same (a tool listed unchanged is shared, not
/// copied), else a new one sharing the listing's [`Tool`].
fn qualify(
    config: &ServerConfig,
    server: &Arc<str>,
    listed: &ListedTool,
    qualified_name: Arc<str>,
    previous: Option<&Catalog>,
) -> Arc<QualifiedTool> {
    let tool = QualifiedTool {
        task_support: listed.task_support(),
        unmodelled: listed.unmodelled.clone(),
        approval_mode: config.approval_mode(&listed.tool.name),
        output_token_limit: config
            .tools
            .get(listed.tool.name.as_ref())
            .and_then(|settings| settings.output_token_limit),
        supports_parallel_tool_calls: config.supports_parallel_tool_calls,
        qualified_name,
        server: server.clone(),
        tool: listed.tool.clone(),
    };
    match previous.and_then(|previous| previous.tools.get(&*tool.qualified_name)) {
        Some(known) if known.same_as(&tool) => known.clone(),
        _ => Arc::new(tool),
    }
}

impl QualifiedTool {
    /// The tool as its server listed it, every field (it serializes as the listed
    /// JSON object).
    pub fn definition(&self) -> Definition<'_> {
        Definition {
            tool: &self.tool,
            unmodelled: self.unmodelled.as_deref(),
        }
    }

    /// The tool's `execution` object, as listed, when it is an object.
    pub fn execution(&self) -> Option<&JsonObject> {
        execution(self.unmodelled.as_deref())
    }

    /// Whether `other` is this tool, listed and configured alike.
    fn same_as(&self, other: &QualifiedTool) -> bool {
        let same_unmodelled = match (&self.unmodelled, &other.unmodelled) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a == b,
            (a, b) => a.is_none() && b.is_none(),
        };
        (Arc::ptr_eq(&self.tool, &other.tool) || self.tool == other.tool)
            && same_unmodelled
            && self.qualified_name == other.qualified_name
            && self.server == other.server
            && self.task_support == other.task_support
            && self.approval_mode == other.approval_mode
            && self.output_token_limit == other.output_token_limit
            && self.supports_parallel_tool_calls == other.supports_parallel_tool_calls
    }
}

mod definition;
mod search;

pub use search::SearchHit;

pub use definition::Definition;
pub(crate) use definition::{unmodelled_in, unmodelled_in_text};

#[cfg(test)]
mod tests;
