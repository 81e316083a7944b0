//! What the runtime says of the protocol before any server is reached: the
//! handshake revisions it offers and reads, and the `initialize` parameters it sends.
//! A leaf of the crate: every layer that names a revision or the client's
//! capabilities reads them here.

use rmcp::model::{ClientConfig, Implementation, JsonObject, ProtocolVersion};

use crate::host::HostHandlers;

/// The protocol version offered in `initialize`.
pub(crate) const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The handshake revisions a server may answer `initialize` with, newest first:
/// [`PROTOCOL_VERSION`], which is offered, and the older ones whose messages
/// mcp-runtime reads. rmcp takes any answer (even a revision it does not know), so the
/// answer is checked here, as the specification's version negotiation asks of a
/// client that does not speak the revision a server answers with.
pub(crate) const ACCEPTED_PROTOCOL_VERSIONS: [ProtocolVersion; 4] = [
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2024_11_05,
];

/// The `initialize` parameters the runtime sends: the client capabilities of the
/// host's `handlers` (see [`crate::host`]) and the tasks extension (2026-07-28: a
/// server may answer a call with a task, which the runtime follows), the pinned
/// protocol version.
pub(crate) fn client_config(handlers: &HostHandlers) -> ClientConfig {
    let mut capabilities = handlers.capabilities();
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(
            rmcp::model::TASKS_EXTENSION_ID.to_owned(),
            JsonObject::new(),
        );
    ClientConfig::new(
        capabilities,
        Implementation::new("mcp-runtime", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(PROTOCOL_VERSION)
}
