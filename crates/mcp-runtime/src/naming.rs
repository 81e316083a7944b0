//! The names the model sees for servers' tools: Codex's names, never changed once given.
//!
//! A Codex user already knows their tools by the names Codex gives them, so mcp-runtime
//! gives the same ones. The rule followed is `qualify_tools` of Codex commit
//! `52a0ab1201c2c3fda775f9b45d4c3326a4d9b806` (`codex-rs/codex-mcp/src/mcp_tool_names.rs`),
//! with what it calls: `sanitize_responses_api_tool_name` (`codex-mcp/src/mcp/mod.rs`)
//! and `ToolName::namespaced(..).display()` (`codex-rs/protocol`), which joins namespace
//! and name as they are. Its input for a server without connector (every server of a
//! config file) is the namespace `mcp__SERVER__` and the raw tool name, as Codex's
//! connection manager builds them (`normalize_codex_apps_callable_namespace` and
//! `normalize_codex_apps_callable_name`, `mcp_connection_manager.rs`):
//!
//! 1. A server's namespace is `mcp__SERVER__` and a tool's own part is its raw name, both
//!    [sanitized](sanitize): every character outside `[A-Za-z0-9_]` becomes one `_`.
//!    The qualified name is the two joined: `my-server` / `get-item` gives
//!    `mcp__my_server__get_item`.
//! 2. When the namespaces of several servers sanitize alike (`basic-server`,
//!    `basic_server`), each of them gets `_` and 12 hex digits of the SHA-1 of the
//!    server's raw identity before its closing `__`.
//! 3. When tools of one namespace sanitize alike (`tool-name`, `tool_name`), each gets
//!    `_` and 12 hex digits of the SHA-1 of the tool's raw identity appended.
//! 4. Tools are then named in the order of their raw identities. A name longer than
//!    [`MAX_TOOL_NAME_LEN`] bytes, or already taken, is cut to make room for `_` and 12
//!    hex digits of the hash of the raw identity: the tool part is cut, or, when the
//!    namespace leaves it no room, the namespace is cut to 51 characters and followed
//!    by the hash alone. While that is taken too, the hash input gets a counter
//!    (`IDENTITY\0N`): no tool is ever left without a name.
//!
//! The raw identity of a server `S` is `S\0mcp__S__\0`; that of its tool `T` is the
//! server's followed by `\0T\0T`. Hashes are over the raw names, so tools that sanitize
//! alike still get different names, the same in every run.
//!
//! # Where mcp-runtime differs from Codex, on purpose
//!
//! Codex names the whole set of tools afresh each time. mcp-runtime's catalog changes
//! while a host uses it (a server that starts late joins it, a server's tool list is
//! refreshed), and a model that was shown a name must be able to call it. So the
//! catalog keeps a registry of every name it gave:
//!
//! - **A name once given never changes.** A tool already named keeps its name; a server
//!   already named keeps its namespace. When a newcomer collides with them, the
//!   newcomer alone takes the hash suffix (rule 2 or 3 for the newcomer, never for
//!   the tool already named).
//! - **A name is never given to another tool**, even after its tool left the catalog;
//!   the tool gets it back if it returns. (The names of the last 50,000 tools that
//!   left are remembered; older departures are forgotten, so that a server renaming
//!   its tools at every refresh cannot grow memory without bound.)
//! - **No tool is dropped**: rule 4's counter always ends on a free name.
//!
//! Tools named together, with nothing named before, get exactly Codex's names, the
//! same whatever the order in which servers answered. So do the tools of servers
//! declared up front (a runtime declares every server it starts, since its set of
//! servers is fixed when it starts): each declared server's namespace is decided by
//! rule 2 among all declared servers, not only among those named so far, so it does
//! not depend on which server's tools are named first.
//!
//! # Invariants of the registry
//!
//! 1. A (server, raw tool name) pair, once named, keeps its name for as long as it is
//!    remembered: while every naming lists it, and, once a naming leaves it out,
//!    until 50,000 (`REMEMBERED_DEPARTURES`) later departures push it out.
//! 2. A name is given to one remembered (server, raw tool name) pair at most, and is
//!    at most [`MAX_TOOL_NAME_LEN`] bytes of `[A-Za-z0-9_]`.
//! 3. A server, once given a namespace, keeps it; its later tools are named in it.
//! 4. Every namespace is `mcp__SERVER__` sanitized, or that with the hash suffix of rule
//!    2: what [`servers_for_qualified_name`] relies on.
//! 5. Rule 2 counts the declared servers as if they were named with every naming. So
//!    among servers that are all declared, a server's namespace is hashed exactly when
//!    another's sanitizes alike, whichever of them is named first.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use sha1::{Digest, Sha1};

/// The longest qualified name, in bytes (the Responses API's limit, which Codex keeps).
pub const MAX_TOOL_NAME_LEN: usize = 64;
const PREFIX: &str = "mcp__";
const DELIMITER: &str = "__";
/// Hex digits of a hash suffix.
const HASH_LEN: usize = 12;
/// `_` and the hex digits.
const SUFFIX_LEN: usize = HASH_LEN + 1;

/// `name` with every character outside `[A-Za-z0-9_]` replaced by `_` (one `_` per
/// character, so `é` gives one), and `_` for an empty name: Codex's
/// `sanitize_responses_api_tool_name`.
pub fn sanitize(name: &str) -> String {
    if name.is_empty() {
        return "_".to_owned();
    }
    if name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return name.to_owned();
    }
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

/// The qualified names of `items`, (server, raw name) pairs each given once, named
/// together by the rules above as tools named with nothing before them are: exactly
/// Codex's names, whatever the order of `items`. For what a host names like tools
/// (prompts): unlike the catalog's, these names are decided afresh at each call.
pub fn qualify(items: &[(&str, &str)]) -> Vec<String> {
    let servers: BTreeSet<String> = items
        .iter()
        .map(|(server, _)| (*server).to_owned())
        .collect();
    Registry::default()
        .declaring(servers)
        .name(items)
        .iter()
        .map(|name| name.to_string())
        .collect()
}

/// The servers among `servers` whose tools the qualified name `qualified` may belong
/// to, judged from the name alone (no server needs to run): every server whose
/// namespace, plain or hashed (rule 2), may begin it, or whose namespace cut to make
/// room for a hash (rule 4) may. The server a name was given for is always among
/// them; when there is more than one (`mcp__a__b__c` may be server `a`'s or server
/// `a__b`'s) or none, the caller cannot tell and should start every server.
pub fn servers_for_qualified_name<'a>(
    qualified: &str,
    servers: impl IntoIterator<Item = &'a str>,
) -> Vec<&'a str> {
    servers
        .into_iter()
        .filter(|server| {
            let plain = plain_namespace(server);
            let hashed = hashed_namespace(&plain, server);
            [plain, hashed]
                .iter()
                .any(|namespace| may_be_named_in(qualified, namespace))
        })
        .collect()
}

/// Whether a tool named in `namespace` may have been given `qualified`.
fn may_be_named_in(qualified: &str, namespace: &str) -> bool {
    let whole = qualified.len() > namespace.len() && qualified.starts_with(namespace);
    // Rule 4 with no room left for the tool part: the namespace cut, then the hash.
    let cut = MAX_TOOL_NAME_LEN - SUFFIX_LEN;
    let hashed_alone = namespace.len() > cut
        && qualified.len() == MAX_TOOL_NAME_LEN
        && qualified.starts_with(&namespace[..cut])
        && qualified[cut..].starts_with('_')
        && qualified[cut + 1..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    whole || hashed_alone
}

/// `mcp__SERVER__` sanitized.
fn plain_namespace(server: &str) -> String {
    sanitize(&format!("{PREFIX}{server}{DELIMITER}"))
}

/// Rule 2: `plain` (which ends in `__`) with the server's hash before the `__`.
fn hashed_namespace(plain: &str, server: &str) -> String {
    let open = plain.strip_suffix(DELIMITER).unwrap_or(plain);
    format!("{open}{}{DELIMITER}", hash_suffix(&server_identity(server)))
}

fn server_identity(server: &str) -> String {
    format!("{server}\0{PREFIX}{server}{DELIMITER}\0")
}

fn tool_identity(server: &str, tool: &str) -> String {
    format!("{}\0{tool}\0{tool}", server_identity(server))
}

/// `_` and the first 12 hex digits of the SHA-1 of `identity`.
fn hash_suffix(identity: &str) -> String {
    let digest = Sha1::digest(identity.as_bytes());
    format!("_{}", hex::encode(&digest[..HASH_LEN / 2]))
}

/// Rule 4: `namespace` and `tool` cut to end in the hash of `hash_input`.
fn fit_with_hash(namespace: &str, tool: &str, hash_input: &str) -> String {
    let suffix = hash_suffix(hash_input);
    // Sanitized names are ASCII: any byte index is a character boundary.
    let room = MAX_TOOL_NAME_LEN.saturating_sub(namespace.len());
    if room >= suffix.len() {
        let keep = tool.len().min(room - suffix.len());
        format!("{namespace}{}{suffix}", &tool[..keep])
    } else {
        let keep = namespace.len().min(MAX_TOOL_NAME_LEN - suffix.len());
        format!("{}{suffix}", &namespace[..keep])
    }
}

/// How many tools that left the catalog keep their names reserved: the oldest
/// departures beyond this are forgotten, so a server that renames its tools at every
/// refresh cannot grow the registry without bound.
pub(crate) const REMEMBERED_DEPARTURES: usize = 50_000;

/// Every name given so far, by server and raw tool name (see the module's invariants).
#[derive(Debug)]
pub(crate) struct Registry {
    servers: HashMap<String, ServerNames>,
    /// The server each namespace was given to.
    namespace_owners: HashMap<String, String>,
    /// Every name given and remembered: the same allocation as [`Named::name`] and
    /// the catalog's key.
    taken: HashSet<Arc<str>>,
    /// Tools absent from the last naming, oldest first, with the departure number
    /// their [`Named::departed`] holds (an entry whose tool came back since is stale).
    departures: VecDeque<(u64, String, String)>,
    /// How many tools are absent now (`departed` set).
    absent: usize,
    next_departure: u64,
    remembered_departures: usize,
    /// The servers declared up front (invariant 5).
    declared: BTreeSet<String>,
    /// How many declared servers have each plain namespace (rule 2 among them),
    /// counted once when they are declared rather than at every naming.
    declared_plain: HashMap<String, usize>,
    /// How many namings there were: [`Named::seen`] says which last listed a tool.
    namings: u64,
}

impl Default for Registry {
    fn default() -> Self {
        Self::remembering(REMEMBERED_DEPARTURES)
    }
}

#[derive(Debug)]
struct ServerNames {
    namespace: String,
    /// By raw tool name.
    tools: HashMap<String, Named>,
}

#[derive(Debug)]
struct Named {
    name: Arc<str>,
    /// Set while the tool is absent: its departure number.
    departed: Option<u64>,
    /// The last naming that listed it.
    seen: u64,
}

impl Registry {
    /// A registry that remembers the names of the last `departures` tools that left.
    pub(crate) fn remembering(departures: usize) -> Self {
        Self {
            servers: HashMap::new(),
            namespace_owners: HashMap::new(),
            taken: HashSet::new(),
            departures: VecDeque::new(),
            absent: 0,
            next_departure: 0,
            remembered_departures: departures,
            declared: BTreeSet::new(),
            declared_plain: HashMap::new(),
            namings: 0,
        }
    }

    /// This registry with `servers` declared: their namespaces are decided among all
    /// of them (invariant 5), before any of their tools is named.
    pub(crate) fn declaring(mut self, servers: impl IntoIterator<Item = String>) -> Self {
        for server in servers {
            let plain = plain_namespace(&server);
            if self.declared.insert(server) {
                *self.declared_plain.entry(plain).or_default() += 1;
            }
        }
        self
    }

    /// How many tools have a name reserved: those of the last naming, and the last
    /// departed ones.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.taken.len()
    }

    /// The qualified name of each of `tools`, (server, raw tool name) pairs given each
    /// once, in their order: the name already given, else a new one by the rules.
    /// Tools named before and absent from `tools` keep their names reserved, up to
    /// the last [`REMEMBERED_DEPARTURES`] of them.
    pub(crate) fn name(&mut self, tools: &[(&str, &str)]) -> Vec<Arc<str>> {
        let names = self.assign(tools);
        self.note_departures(None);
        names
    }

    /// The qualified name of each of `tools`, the raw names of `server`'s tools given
    /// each once, as [`Registry::name`] gives them when it is given every other
    /// server's tools as they were last named, provided `server` is declared or
    /// already has a namespace (else rule 2 counts only the declared servers and the
    /// namespaces given): only `server`'s tools may depart. Costs `server`'s tools,
    /// not every server's.
    pub(crate) fn name_server(&mut self, server: &str, tools: &[&str]) -> Vec<Arc<str>> {
        let pairs: Vec<(&str, &str)> = tools.iter().map(|tool| (server, *tool)).collect();
        let names = self.assign(&pairs);
        self.note_departures(Some(server));
        names
    }

    /// Marks the named tools of server `only` (of every server when `None`) that the
    /// last naming did not list departed, and those it listed present, then forgets
    /// the oldest departures beyond the number remembered.
    fn note_departures(&mut self, only: Option<&str>) {
        let listed = self.namings;
        let Self {
            servers,
            departures,
            next_departure,
            absent,
            ..
        } = self;
        let mut note = |server: &str, names: &mut ServerNames| {
            note_server_departures(server, names, listed, departures, next_departure, absent);
        };
        match only {
            None => servers
                .iter_mut()
                .for_each(|(server, names)| note(server, names)),
            Some(server) => {
                if let Some(names) = servers.get_mut(server) {
                    note(server, names);
                }
            }
        }
        self.forget_departures();
    }

    /// The names of `tools`, the one given before or a new one, marking each listed
    /// in this naming.
    fn assign(&mut self, tools: &[(&str, &str)]) -> Vec<Arc<str>> {
        self.namings += 1;
        let naming = self.namings;
        let mut names: Vec<Option<Arc<str>>> = Vec::with_capacity(tools.len());
        for (server, tool) in tools {
            let known = self
                .servers
                .get_mut(*server)
                .and_then(|known| known.tools.get_mut(*tool));
            names.push(known.map(|named| {
                named.seen = naming;
                named.name.clone()
            }));
        }
        // In the order of their identities (`tool_identity` orders as the pair does,
        // for names without NUL characters), whatever the order of `tools`: which of
        // two tools that would get the same name takes it does not depend on the
        // listing's order.
        let mut newcomers: Vec<usize> = names
            .iter()
            .enumerate()
            .filter(|(_, name)| name.is_none())
            .map(|(index, _)| index)
            .collect();
        newcomers.sort_unstable_by_key(|&index| tools[index]);
        let namespaces = self.namespaces(tools);
        let crowded: HashSet<&str> = newcomers
            .iter()
            .map(|index| namespaces[tools[*index].0].as_str())
            .collect();
        let own_parts = own_parts(tools, &namespaces, &crowded);
        self.taken.reserve(newcomers.len());
        let mut whole = String::with_capacity(MAX_TOOL_NAME_LEN);
        // One server's newcomers at a time (they are sorted by server first).
        for group in newcomers.chunk_by(|a, b| tools[*a].0 == tools[*b].0) {
            let server = tools[group[0]].0;
            let namespace = &namespaces[server];
            if !self.servers.contains_key(server) {
                self.namespace_owners
                    .entry(namespace.clone())
                    .or_insert_with(|| server.to_owned());
                let names = ServerNames {
                    namespace: namespace.clone(),
                    tools: HashMap::new(),
                };
                self.servers.insert(server.to_owned(), names);
            }
            let known = self.servers.get_mut(server).expect("inserted above");
            known.tools.reserve(group.len());
            for &index in group {
                let tool = tools[index].1;
                let own = own_parts[index]
                    .as_ref()
                    .expect("a newcomer's namespace is crowded");
                let name = fresh_name(&self.taken, &mut whole, namespace, own, server, tool);
                debug_assert!(
                    name.len() <= MAX_TOOL_NAME_LEN,
                    "invariant 2: `{name}` is too long"
                );
                self.taken.insert(name.clone());
                let named = Named {
                    name: name.clone(),
                    departed: None,
                    seen: naming,
                };
                known.tools.insert(tool.to_owned(), named);
                names[index] = Some(name);
            }
        }
        names
            .into_iter()
            .map(|name| name.expect("every tool was named above"))
            .collect()
    }

    /// Forgets the oldest departures beyond the number remembered.
    fn forget_departures(&mut self) {
        while self.absent > self.remembered_departures {
            let (departure, server, tool) = self
                .departures
                .pop_front()
                .expect("every absent tool has a departure queued");
            let Some(names) = self.servers.get_mut(&server) else {
                continue;
            };
            if names
                .tools
                .get(&tool)
                .is_some_and(|named| named.departed == Some(departure))
            {
                let named = names.tools.remove(&tool).expect("just found");
                self.taken.remove(&named.name);
                self.absent -= 1;
            }
        }
        // Entries of tools that came back are stale: dropped once they are as many
        // as the current ones, so a tool that comes and goes cannot grow the queue.
        if self.departures.len() > 2 * self.absent + 16 {
            let servers = &self.servers;
            self.departures.retain(|(departure, server, tool)| {
                servers
                    .get(server)
                    .and_then(|names| names.tools.get(tool))
                    .is_some_and(|named| named.departed == Some(*departure))
            });
        }
        debug_assert!(
            self.departures.len() >= self.absent,
            "every absent tool has a departure queued"
        );
    }

    /// The namespace of each server of `tools`: the one it was given, else rule 2
    /// among the servers of `tools` and the declared ones (invariant 5), hashed also
    /// when another server was given it.
    fn namespaces<'a>(&self, tools: &[(&'a str, &str)]) -> HashMap<&'a str, String> {
        let servers: BTreeSet<&str> = tools.iter().map(|(server, _)| *server).collect();
        // Rule 2 among the declared servers (counted when declared) and the others
        // of `tools`: the cost is `tools`' servers, not every declared one.
        let mut undeclared: HashMap<String, usize> = HashMap::new();
        for server in servers
            .iter()
            .filter(|server| !self.declared.contains(**server))
        {
            *undeclared.entry(plain_namespace(server)).or_default() += 1;
        }
        let sharing = |plain: &str| {
            self.declared_plain.get(plain).copied().unwrap_or(0)
                + undeclared.get(plain).copied().unwrap_or(0)
        };
        servers
            .iter()
            .map(|&server| {
                let namespace = match self.servers.get(server) {
                    Some(known) => known.namespace.clone(),
                    None => {
                        let plain = plain_namespace(server);
                        let given_to_another = self
                            .namespace_owners
                            .get(&plain)
                            .is_some_and(|owner| owner != server);
                        if sharing(&plain) > 1 || given_to_another {
                            hashed_namespace(&plain, server)
                        } else {
                            plain
                        }
                    }
                };
                (server, namespace)
            })
            .collect()
    }
}

/// Marks each of `server`'s named tools that the naming `listed` did not list
/// departed, and those it listed present.
fn note_server_departures(
    server: &str,
    names: &mut ServerNames,
    listed: u64,
    departures: &mut VecDeque<(u64, String, String)>,
    next_departure: &mut u64,
    absent: &mut usize,
) {
    for (tool, named) in &mut names.tools {
        match (named.seen == listed, named.departed) {
            (true, Some(_)) => {
                named.departed = None;
                *absent -= 1;
            }
            (false, None) => {
                named.departed = Some(*next_departure);
                departures.push_back((*next_departure, server.to_owned(), tool.clone()));
                *next_departure += 1;
                *absent += 1;
            }
            _ => {}
        }
    }
}

/// A name for `server`'s newcomer `tool` that is not in `taken`: its namespace and
/// own part as they are when that fits and is free, else with a hash of its identity
/// (rule 3), counted on until free. `whole` is a reused buffer.
fn fresh_name(
    taken: &HashSet<Arc<str>>,
    whole: &mut String,
    namespace: &str,
    own: &str,
    server: &str,
    tool: &str,
) -> Arc<str> {
    whole.clear();
    whole.push_str(namespace);
    whole.push_str(own);
    if whole.len() <= MAX_TOOL_NAME_LEN && !taken.contains(whole.as_str()) {
        return whole.as_str().into();
    }
    let identity = tool_identity(server, tool);
    (0_u64..)
        .map(|attempt| {
            let input = if attempt == 0 {
                identity.clone()
            } else {
                format!("{identity}\0{attempt}")
            };
            fit_with_hash(namespace, own, &input)
        })
        .find(|name| !taken.contains(name.as_str()))
        .expect("a counter finds a free name: there are fewer names than hashes")
        .into()
}

/// Rule 3, for the tools in a `crowded` namespace (one where a tool is to be named):
/// each tool's own part, sanitized, with its hash when another tool's in the same
/// namespace sanitizes alike. Other tools keep the names they have: `None`.
fn own_parts(
    tools: &[(&str, &str)],
    namespaces: &HashMap<&str, String>,
    crowded: &HashSet<&str>,
) -> Vec<Option<String>> {
    let sanitized: Vec<Option<String>> = tools
        .iter()
        .map(|(server, tool)| {
            crowded
                .contains(namespaces[server].as_str())
                .then(|| sanitize(tool))
        })
        .collect();
    let mut sharing: HashMap<(&str, &str), usize> = HashMap::with_capacity(tools.len());
    for ((server, _), own) in tools.iter().zip(&sanitized) {
        if let Some(own) = own {
            *sharing
                .entry((namespaces[server].as_str(), own.as_str()))
                .or_default() += 1;
        }
    }
    let shared: Vec<bool> = tools
        .iter()
        .zip(&sanitized)
        .map(|((server, _), own)| {
            own.as_ref()
                .is_some_and(|own| sharing[&(namespaces[server].as_str(), own.as_str())] > 1)
        })
        .collect();
    tools
        .iter()
        .zip(sanitized)
        .zip(shared)
        .map(|(((server, tool), own), shared)| {
            let mut own = own?;
            if shared {
                own.push_str(&hash_suffix(&tool_identity(server, tool)));
            }
            Some(own)
        })
        .collect()
}

#[cfg(test)]
mod tests;
