//! `tools/list` on one connection: every page, bounded.

use std::{
    collections::HashSet,
    sync::atomic::{AtomicUsize, Ordering},
    time::Duration,
};

use rmcp::{
    Peer, RoleClient,
    model::{PaginatedRequestParams, Tool},
};

use super::{MAX_LIST_PAGES, MAX_LISTED_TOOLS};
use crate::error::{ListToolsError, chain};

/// Lists every tool of `server` through `peer`, following `nextCursor` to the end and
/// counting each request in `sent`. Each page is bounded by `page_timeout`. A
/// repeated cursor, more than [`MAX_LIST_PAGES`] pages or more than
/// [`MAX_LISTED_TOOLS`] tools is an error.
///
/// # Cancel safety
///
/// Dropping the future sends `notifications/cancelled` for the page in flight.
pub(super) async fn list_tools(
    peer: &Peer<RoleClient>,
    _server: &str,
    page_timeout: Duration,
    sent: &AtomicUsize,
) -> Result<Vec<Tool>, ListToolsError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    for _ in 0..MAX_LIST_PAGES {
        sent.fetch_add(1, Ordering::Relaxed);
        let params = cursor
            .clone()
            .map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)));
        let page = tokio::time::timeout(page_timeout, peer.list_tools(params))
            .await
            .map_err(|_| ListToolsError::Request {
                message: format!(
                    "no answer to `tools/list` within {} (raise `startup_timeout_sec`)",
                    crate::error::secs(page_timeout)
                ),
            })?
            .map_err(|error| ListToolsError::Request {
                message: chain(&error),
            })?;
        tools.extend(page.tools);
        if tools.len() > MAX_LISTED_TOOLS {
            return Err(ListToolsError::TooManyTools {
                limit: MAX_LISTED_TOOLS,
            });
        }
        match page.next_cursor {
            None => return Ok(tools),
            Some(next) => {
                if !seen.insert(next.clone()) {
                    return Err(ListToolsError::RepeatedCursor { cursor: next });
                }
                cursor = Some(next);
            }
        }
    }
    Err(ListToolsError::TooManyPages {
        limit: MAX_LIST_PAGES,
    })
}
