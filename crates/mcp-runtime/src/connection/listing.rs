//! `tools/list` on one connection: every page, read tool by tool, bounded.
//!
//! A server's tools are read one by one so that one malformed tool costs only that
//! tool. rmcp's typed `Peer::list_tools` cannot do that: it decodes a page into
//! `Vec<Tool>` as a whole, so a single tool with, say, `"inputSchema": null` makes the
//! whole answer fail to decode as a `tools/list` result and the server fails with
//! "Unexpected response type". Here a page is sent as a custom request with the same
//! method and params, and its result comes back as its JSON text (the transports
//! hand it over raw, see [`crate::transport::raw_answers`]; a 2026-07-28 answer over
//! Streamable HTTP arrives typed for rmcp's transport, its text beside it), so each
//! tool is checked on its own, and keeps the fields rmcp's [`Tool`] does not model
//! ([`ListedTool::unmodelled`]).
//!
//! Invariants:
//! 1. A listed entry that is not a usable tool (not a JSON object; `name` missing,
//!    not a string or empty; `inputSchema` missing or not a JSON object; another
//!    field of the wrong shape) is left out with a warning naming the server, the
//!    tool and the reason; the rest of the listing stands.
//! 2. Names are unique within a listing: the first tool listed under a name is kept,
//!    every later one is left out with a warning. A tool rmcp's Streamable HTTP
//!    transport left out of a 2026-07-28 page (it refuses the tool's `x-mcp-header`
//!    annotations, so it could not send the tool's calls their headers) is left out
//!    too.
//! 3. A listing is bounded: at most [`MAX_LIST_PAGES`] pages and `max_tools` entries
//!    ([`Bounds`]; counted as the server sent them, usable or not), no cursor twice, and
//!    each page answered within the page timeout. Past any bound the listing fails.
//!    An empty `nextCursor` ends the listing, as a missing one does.
//! 4. A page whose answer is no longer awaited (timeout, dropped future) is followed
//!    by `notifications/cancelled` for its request.

use std::{
    collections::HashSet,
    fmt,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use rmcp::{
    Peer, RoleClient,
    model::{CacheScope, ClientRequest, CustomRequest, ServerResult, Tool},
    service::PeerRequestOptions,
};
use serde::Deserialize;
use serde_json::{Map, Value, value::RawValue};
use tokio_util::task::AbortOnDropHandle;
use tracing::{Instrument, instrument::WithSubscriber};

use super::MAX_LIST_PAGES;
use super::{cancellation::Cancellations, failure};
use crate::{
    catalog::{ListedTool, unmodelled_in, unmodelled_in_text},
    shared_listing::Grant,
    transport::{error::ListToolsError, raw_answers::raw_result},
};

/// How many characters of a tool's name a warning quotes.
const LABEL_CHARS: usize = 64;
/// How many left-out tools of one listing get a warning each; the rest are counted
/// in one more, so a hostile listing cannot flood the log.
const MAX_WARNINGS: usize = 10;

/// The tools of one listing, and the reuse the server granted for it (see
/// [`crate::shared_listing`]): `None` unless every page carried a positive `ttlMs`.
#[derive(Debug)]
pub(crate) struct Listing {
    pub(crate) tools: Vec<ListedTool>,
    pub(crate) grant: Option<Grant>,
}

/// The bounds of one listing.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bounds {
    /// How long each page may take.
    pub(super) page_timeout: Duration,
    /// `max_tools`: how many entries the server may list.
    pub(super) max_tools: usize,
}

/// Lists every tool of `server` through `peer`, following `nextCursor` to the end and
/// counting each request in `sent`, within `bounds`. Unusable and duplicate tools are
/// left out with a warning; a repeated cursor, more than [`MAX_LIST_PAGES`] pages,
/// more than `max_tools` listed tools or a page that is not a `tools/list` result is
/// an error.
///
/// # Cancel safety
///
/// Dropping the future owes `notifications/cancelled` for the page in flight, written
/// through `cancellations` (so before the connection closes).
pub(super) async fn list_tools(
    peer: &Peer<RoleClient>,
    cancellations: &Cancellations,
    server: &str,
    bounds: Bounds,
    sent: &AtomicUsize,
) -> Result<Listing, ListToolsError> {
    let Bounds {
        page_timeout,
        max_tools,
    } = bounds;
    let mut listed = ListedTools::default();
    let mut hints = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    let mut left_out_count = 0;
    for _ in 0..MAX_LIST_PAGES {
        sent.fetch_add(1, Ordering::Relaxed);
        let result = tokio::time::timeout(
            page_timeout,
            request_page(peer, cancellations, cursor.as_deref()),
        )
        .await
        .map_err(|_| ListToolsError::Timeout {
            after: page_timeout,
        })??;
        let Answered { text: result, kept } = result;
        let read = if result.len() < READ_APART_BYTES {
            read_page(&result, listed, kept.as_ref(), max_tools)
        } else {
            // A large page is read on a task of its own, so that the listings of many
            // servers starting together are read on every worker thread rather than
            // on the one that drives the startups. Dropping this future aborts it.
            // Its warnings go where this future's would.
            let reading = AbortOnDropHandle::new(tokio::spawn(
                async move { read_page(&result, listed, kept.as_ref(), max_tools) }
                    .in_current_span()
                    .with_current_subscriber(),
            ));
            match reading.await {
                Ok(read) => read,
                Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
                Err(error) => {
                    return Err(ListToolsError::RuntimeShutDown {
                        source: Arc::new(error),
                    });
                }
            }
        }?;
        listed = read.listed;
        hints.push(read.hint);
        for left_out in read
            .left_out
            .iter()
            .take(MAX_WARNINGS.saturating_sub(left_out_count))
        {
            tracing::warn!(
                server,
                tool = %left_out.label,
                reason = %left_out.reason,
                "left out a tool the server listed"
            );
        }
        left_out_count += read.left_out_count;
        // An empty cursor names no next page: the list ends, as without one.
        match read.next_cursor.filter(|next| !next.is_empty()) {
            None => {
                if left_out_count > MAX_WARNINGS {
                    tracing::warn!(
                        server,
                        count = left_out_count - MAX_WARNINGS,
                        "left out more tools the server listed (only the first {MAX_WARNINGS} are named)"
                    );
                }
                return Ok(Listing {
                    tools: listed.into_tools(),
                    grant: Grant::of_pages(hints),
                });
            }
            Some(next) => {
                // Digests, not the cursors: a cursor may be as large as a message,
                // and a listing may take a hundred pages.
                if !seen.insert(<sha2::Sha256 as sha2::Digest>::digest(next.as_bytes())) {
                    return Err(ListToolsError::RepeatedCursor {
                        cursor: shown(&next),
                    });
                }
                cursor = Some(next);
            }
        }
    }
    Err(ListToolsError::TooManyPages {
        limit: MAX_LIST_PAGES,
    })
}

/// The size from which a page's text is read on a task of its own (a few hundred
/// tools): below it, reading costs little more than handing it over.
const READ_APART_BYTES: usize = 64 * 1024;

/// One page read into the listing.
struct PageRead {
    /// The listing with the page's usable tools added.
    listed: ListedTools,
    /// The page's `ttlMs` and `cacheScope`.
    hint: (Option<u64>, Option<CacheScope>),
    next_cursor: Option<String>,
    /// The first [`MAX_WARNINGS`] of the page's entries that were left out, in
    /// listed order (a hostile page cannot make the list long).
    left_out: Vec<LeftOut>,
    /// How many of the page's entries were left out.
    left_out_count: usize,
}

/// Reads the page `text` (a `tools/list` result's JSON) into `listed`, which may hold
/// `max_tools` entries; when `kept` is given, a tool whose name it does not hold is
/// left out (invariant 2).
fn read_page(
    text: &str,
    mut listed: ListedTools,
    kept: Option<&HashSet<String>>,
    max_tools: usize,
) -> Result<PageRead, ListToolsError> {
    let page = Page::parse(text)?;
    if listed.entries + page.tools.len() > max_tools {
        return Err(ListToolsError::TooManyTools { limit: max_tools });
    }
    let mut left_out = Vec::new();
    let mut left_out_count = 0;
    for raw in page.tools {
        if let Err(entry) = listed.push(raw, kept) {
            left_out_count += 1;
            if left_out.len() < MAX_WARNINGS {
                left_out.push(entry);
            }
        }
    }
    Ok(PageRead {
        listed,
        hint: (page.ttl_ms, page.cache_scope),
        next_cursor: page.next_cursor,
        left_out,
        left_out_count,
    })
}

/// One page's answer.
struct Answered {
    /// The result's JSON text.
    text: String,
    /// The names of the tools rmcp's transport kept, when it read the page itself
    /// (invariant 2).
    kept: Option<HashSet<String>>,
}

/// Sends one `tools/list` request and returns its result's JSON text.
///
/// # Cancel safety
///
/// Dropping the future after the request was sent owes its `notifications/cancelled`.
async fn request_page(
    peer: &Peer<RoleClient>,
    cancellations: &Cancellations,
    cursor: Option<&str>,
) -> Result<Answered, ListToolsError> {
    let failed = |error| ListToolsError::Failed(failure::from_service(error));
    // The same request the typed call sends (`_meta` with the progress token is added
    // by rmcp either way); only the decoding of the answer differs.
    let params = cursor.map(|cursor| {
        let mut params = Map::new();
        params.insert("cursor".into(), cursor.into());
        Value::Object(params)
    });
    let request = ClientRequest::CustomRequest(CustomRequest::new("tools/list", params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .map_err(failed)?;
    // Queued: from here on, dropping this future owes the cancellation.
    let in_flight = cancellations.register(handle.id.clone());
    let result = handle.await_response().await;
    in_flight.answered();
    // The transport hands the answer over raw (rmcp's `Tool` drops what it does not
    // model), or, when rmcp read it too, beside rmcp's reading.
    let mut answer = result.map_err(failed)?;
    if let Some(text) = raw_result(&mut answer) {
        let kept = match &answer {
            ServerResult::ListToolsResult(list) => Some(
                list.tools
                    .iter()
                    .map(|tool| tool.name.to_string())
                    .collect(),
            ),
            _ => None,
        };
        // A credential the runtime sent is never data for the host: masked wherever
        // a tool (its description, its schema) quotes it. Inside the JSON text, a
        // credential is found in the form a JSON string gives it.
        let text = crate::redact::masked_text(text);
        return Ok(Answered { text, kept });
    }
    // A transport that did not rewrite the answer (a test's in-process pipe): rmcp
    // decoded it; an answer that rmcp reads as another result type is not a
    // `tools/list` result and fails in `Page::parse`.
    let decoded = match &answer {
        ServerResult::CustomResult(custom) => serde_json::to_string(&custom.0),
        typed => serde_json::to_string(typed),
    };
    decoded
        .map(|text| Answered {
            text: crate::redact::masked_text(text),
            kept: None,
        })
        .map_err(|error| ListToolsError::Unreadable {
            source: Arc::new(error),
        })
}

/// One page of a `tools/list` answer, its tools still unchecked (as the server wrote
/// them: each is read straight into a [`Tool`]).
#[derive(Debug)]
struct Page<'a> {
    tools: Vec<Entry<'a>>,
    next_cursor: Option<String>,
    /// `ttlMs`, when it is a non-negative integer (a negative one reads as 0).
    ttl_ms: Option<u64>,
    /// `cacheScope`, when it is one rmcp knows.
    cache_scope: Option<CacheScope>,
}

/// The fields of a `tools/list` result the runtime reads, the tools left as text.
#[derive(Deserialize)]
struct PageFields<'a> {
    #[serde(borrow)]
    tools: Vec<&'a RawValue>,
    #[serde(rename = "nextCursor", default)]
    next_cursor: Option<String>,
    #[serde(rename = "ttlMs", default)]
    ttl_ms: Option<Value>,
    #[serde(rename = "cacheScope", default)]
    cache_scope: Option<Value>,
}

impl<'a> Page<'a> {
    /// Reads a page from a `tools/list` result's JSON text: `tools` must be an array
    /// and `nextCursor`, if present and not null, a string.
    ///
    /// A well-formed page is read without building a JSON tree of it; any other (or
    /// one serde cannot read at once, such as one with a field twice) is read as a
    /// [`Value`] and checked field by field, which says what is wrong.
    fn parse(text: &'a str) -> Result<Self, ListToolsError> {
        // A derived `Deserialize` also reads a struct from an array: only an object
        // takes the quick way.
        let object = text.trim_start().starts_with('{');
        let fields = object
            .then(|| serde_json::from_str::<PageFields<'a>>(text).ok())
            .flatten();
        match fields {
            Some(fields) => Ok(Self {
                tools: fields.tools.into_iter().map(Entry::Raw).collect(),
                next_cursor: fields.next_cursor,
                ttl_ms: fields.ttl_ms.and_then(ttl_ms),
                cache_scope: fields
                    .cache_scope
                    .and_then(|scope| serde_json::from_value(scope).ok()),
            }),
            None => {
                let result =
                    serde_json::from_str(text).map_err(|error| ListToolsError::Unreadable {
                        source: Arc::new(error),
                    })?;
                Self::parse_value(result)
            }
        }
    }

    /// Reads a page from a `tools/list` result: `tools` must be an array and
    /// `nextCursor`, if present and not null, a string.
    fn parse_value(result: Value) -> Result<Self, ListToolsError> {
        let malformed = |problem: String| ListToolsError::Malformed { problem };
        let Value::Object(mut result) = result else {
            return Err(malformed(format!(
                "is {}, not a JSON object",
                crate::json::kind(&result)
            )));
        };
        let tools = match result.remove("tools") {
            Some(Value::Array(tools)) => tools,
            Some(other) => {
                return Err(malformed(format!(
                    "has `tools` that is {}, not an array",
                    crate::json::kind(&other)
                )));
            }
            None => return Err(malformed("has no `tools` array".to_owned())),
        };
        let next_cursor = match result.remove("nextCursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(cursor)) => Some(cursor),
            Some(other) => {
                return Err(malformed(format!(
                    "has a `nextCursor` that is {}, not a string",
                    crate::json::kind(&other)
                )));
            }
        };
        let ttl_ms = result.remove("ttlMs").and_then(ttl_ms);
        let cache_scope = result
            .remove("cacheScope")
            .and_then(|scope| serde_json::from_value(scope).ok());
        Ok(Self {
            tools: tools.into_iter().map(Entry::Parsed).collect(),
            next_cursor,
            ttl_ms,
            cache_scope,
        })
    }
}

/// A page's `ttlMs`, when it is a non-negative integer (a negative one reads as 0).
/// Caching hints are hints: a malformed one grants nothing, as an absent one.
fn ttl_ms(ttl: Value) -> Option<u64> {
    match ttl {
        Value::Number(ttl) if ttl.as_i64().is_some_and(|ttl| ttl < 0) => Some(0),
        Value::Number(ttl) => ttl.as_u64(),
        _ => None,
    }
}

/// One listed entry, unchecked.
#[derive(Debug)]
enum Entry<'a> {
    /// As the server wrote it.
    Raw(&'a RawValue),
    /// Read already.
    Parsed(Value),
}

impl Entry<'_> {
    /// The entry, the `position`th of the listing, as a usable tool, or why it is left
    /// out.
    ///
    /// A raw entry that reads as a [`Tool`] with a name is read straight from its
    /// text; any other is read as a [`Value`] and checked field by field
    /// ([`usable_tool`]), which says what is wrong with it.
    fn read(self, position: usize) -> Result<ListedTool, LeftOut> {
        let value = match self {
            Entry::Raw(raw) => {
                // A derived `Deserialize` also reads a struct from an array.
                if raw.get().trim_start().starts_with('{')
                    && let Ok(tool) = serde_json::from_str::<Tool>(raw.get())
                    && !tool.name.is_empty()
                {
                    let unmodelled = unmodelled_in_text(raw.get());
                    warn_unusable_execution(unmodelled.as_ref(), &tool.name);
                    return Ok(ListedTool::new(tool, unmodelled));
                }
                serde_json::from_str(raw.get()).map_err(|_| LeftOut {
                    label: Label::Position(position),
                    reason: Reason::Malformed,
                })?
            }
            Entry::Parsed(value) => value,
        };
        usable_tool(&value).map_err(|reason| LeftOut {
            label: Label::of(&value, position),
            reason,
        })
    }
}

/// The usable tools of one listing so far, first of each name, in listed order.
#[derive(Debug, Default)]
struct ListedTools {
    tools: Vec<ListedTool>,
    names: HashSet<String>,
    /// Every entry the server listed, usable or not.
    entries: usize,
}

impl ListedTools {
    /// Takes the next listed entry: keeps it if it is a usable tool whose name is new
    /// (and in `kept`, when given), else says why it is left out.
    fn push(&mut self, entry: Entry<'_>, kept: Option<&HashSet<String>>) -> Result<(), LeftOut> {
        self.entries += 1;
        let listed = entry.read(self.entries)?;
        if kept.is_some_and(|kept| !kept.contains(listed.tool.name.as_ref())) {
            return Err(LeftOut {
                label: Label::Name(shown(&listed.tool.name)),
                reason: Reason::HeadersRefused,
            });
        }
        if !self.names.insert(listed.tool.name.to_string()) {
            return Err(LeftOut {
                label: Label::Name(shown(&listed.tool.name)),
                reason: Reason::Duplicate,
            });
        }
        debug_assert!(
            !listed.tool.name.is_empty(),
            "invariant 1: only named tools are kept"
        );
        self.tools.push(listed);
        debug_assert_eq!(
            self.names.len(),
            self.tools.len(),
            "invariant 2: one kept tool per name"
        );
        Ok(())
    }

    /// The kept tools, in listed order.
    fn into_tools(self) -> Vec<ListedTool> {
        self.tools
    }
}

/// A listed entry that was left out, and why.
#[derive(Debug, Clone, PartialEq)]
struct LeftOut {
    /// The tool's name as a warning shows it, or its position in the listing.
    label: Label,
    /// Why it was left out.
    reason: Reason,
}

impl fmt::Display for LeftOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool {}: {}", self.label, self.reason)
    }
}

/// How a warning names a listed entry: its name (escaped, cut to [`LABEL_CHARS`]
/// characters) when that is a non-empty string, else its position in the listing.
#[derive(Debug, Clone, PartialEq)]
enum Label {
    /// The entry's name.
    Name(String),
    /// The entry's 1-based position in the listing.
    Position(usize),
}

impl Label {
    fn of(raw: &Value, position: usize) -> Self {
        match raw.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => Self::Name(shown(name)),
            _ => Self::Position(position),
        }
    }
}

/// `text` as a message may quote it: escaped, cut to [`LABEL_CHARS`] characters.
fn shown(text: &str) -> String {
    let mut shown: String = text
        .chars()
        .take(LABEL_CHARS)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().nth(LABEL_CHARS).is_some() {
        shown.push('…');
    }
    shown
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => write!(f, "`{name}`"),
            Self::Position(position) => write!(f, "number {position} in the listing"),
        }
    }
}

/// Why a listed entry is not a usable tool.
#[derive(Debug, Clone, PartialEq)]
enum Reason {
    /// The entry is not a JSON object; the kind it is.
    NotAnObject(&'static str),
    /// It has no `name`.
    NoName,
    /// Its `name` is not a string; the kind it is.
    NameNotAString(&'static str),
    /// Its `name` is the empty string.
    EmptyName,
    /// It has no `inputSchema`.
    NoInputSchema,
    /// Its `inputSchema` is not a JSON object; the kind it is.
    InputSchemaNotAnObject(&'static str),
    /// This field does not have the shape the MCP schema gives it.
    BadField(String),
    /// The fields do not read as a tool together, although each does alone.
    Malformed,
    /// An earlier tool in the listing has the same name.
    Duplicate,
    /// rmcp's Streamable HTTP transport refused its `x-mcp-header` annotations.
    HeadersRefused,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAnObject(kind) => write!(f, "it is {kind}, not a JSON object"),
            Self::NoName => write!(f, "it has no `name`"),
            Self::NameNotAString(kind) => write!(f, "its `name` is {kind}, not a string"),
            Self::EmptyName => write!(f, "its `name` is empty"),
            Self::NoInputSchema => write!(f, "it has no `inputSchema`"),
            Self::InputSchemaNotAnObject(kind) => {
                write!(f, "its `inputSchema` is {kind}, not a JSON object")
            }
            Self::BadField(field) => {
                let field: String = field
                    .chars()
                    .take(LABEL_CHARS)
                    .flat_map(char::escape_debug)
                    .collect();
                write!(
                    f,
                    "its `{field}` does not have the shape the MCP schema gives it"
                )
            }
            Self::Malformed => write!(f, "it does not have the shape the MCP schema gives a tool"),
            Self::Duplicate => write!(f, "an earlier tool has the same name; the first is kept"),
            Self::HeadersRefused => write!(
                f,
                "its `x-mcp-header` annotations are not valid, so its calls could not carry their headers"
            ),
        }
    }
}

/// `raw` as a tool, if it is one the runtime can expose, with the fields rmcp's
/// [`Tool`] drops (its `execution` among them). An `execution` that is not an object
/// is ignored with a warning: the tool is still usable.
fn usable_tool(raw: &Value) -> Result<ListedTool, Reason> {
    let Value::Object(fields) = raw else {
        return Err(Reason::NotAnObject(crate::json::kind(raw)));
    };
    match fields.get("name") {
        None => return Err(Reason::NoName),
        Some(Value::String(name)) if name.is_empty() => return Err(Reason::EmptyName),
        Some(Value::String(_)) => {}
        Some(other) => return Err(Reason::NameNotAString(crate::json::kind(other))),
    }
    match fields.get("inputSchema") {
        None => return Err(Reason::NoInputSchema),
        Some(Value::Object(_)) => {}
        Some(other) => {
            return Err(Reason::InputSchemaNotAnObject(crate::json::kind(other)));
        }
    }
    let tool = Tool::deserialize(raw)
        .map_err(|_| bad_field(fields).map_or(Reason::Malformed, Reason::BadField))?;
    let unmodelled = unmodelled_in(fields);
    warn_unusable_execution(unmodelled.as_ref(), &tool.name);
    Ok(ListedTool::new(tool, unmodelled))
}

/// Warns when a listed tool's `execution` (among its `unmodelled` fields) is not an
/// object: it then says nothing of how the tool runs (it is called plainly), and is
/// kept as listed.
fn warn_unusable_execution(unmodelled: Option<&Map<String, Value>>, tool: &str) {
    if let Some(execution) = unmodelled.and_then(|unmodelled| unmodelled.get("execution"))
        && !execution.is_object()
    {
        tracing::warn!(
            tool = %shown(tool),
            "the tool's `execution` is {}, not an object; ignored",
            crate::json::kind(execution)
        );
    }
}

/// The first optional field of `fields` that does not read as a tool's field, found
/// by reading each alone next to a valid name and input schema (`fields` as a whole
/// did not read as a tool).
fn bad_field(fields: &Map<String, Value>) -> Option<String> {
    fields
        .iter()
        .filter(|(key, _)| !matches!(key.as_str(), "name" | "inputSchema"))
        .find(|(key, value)| {
            let mut alone = Map::new();
            alone.insert("name".into(), "probe".into());
            alone.insert("inputSchema".into(), Value::Object(Map::new()));
            alone.insert((*key).clone(), (*value).clone());
            Tool::deserialize(&Value::Object(alone)).is_err()
        })
        .map(|(key, _)| key.clone())
}

#[cfg(test)]
mod tests;
