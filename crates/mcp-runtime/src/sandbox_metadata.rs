//! The wire types of sandbox request metadata: the capability a server advertises to
//! receive it, the `_meta` keys of a `tools/call`, and their values.
//!
//! A server asks for sandbox metadata by advertising the experimental capability
//! [`SANDBOX_STATE_CAPABILITY`] (or its deprecated alias
//! [`SANDBOX_STATE_META_CAPABILITY`]; either opts into the same contract). Each
//! `tools/call` to such a server then carries in its `_meta`:
//!
//! | key | value |
//! |---|---|
//! | [`SANDBOX_STATE_KEY`] | the host's sandbox policy for this call, opaque |
//! | [`SANDBOX_STATE_META_KEY`] | an identical copy under the deprecated name |
//! | [`SANDBOX_LAUNCHER_KEY`] | when available, [`SandboxLauncher`]: the absolute path of a verified Codex CLI on the server's host |
//!
//! The state is forwarded byte for byte as the host gave it ([`SandboxState`] keeps the
//! JSON text), so unknown fields, key order, number spelling and escapes survive; nothing
//! is added to it. Keys with these names that come from anywhere but the runtime are
//! removed ([`strip_reserved_keys`]).

use std::sync::Arc;

use rmcp::model::ExperimentalCapabilities;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The experimental capability a server advertises to receive sandbox metadata.
pub const SANDBOX_STATE_CAPABILITY: &str = "codex/sandbox-state";
/// The deprecated name of [`SANDBOX_STATE_CAPABILITY`]; it opts into the same contract.
pub const SANDBOX_STATE_META_CAPABILITY: &str = "codex/sandbox-state-meta";
/// The `_meta` key of the sandbox state.
pub(crate) const SANDBOX_STATE_KEY: &str = "codex/sandbox-state";
/// The deprecated `_meta` key carrying an identical copy of the sandbox state.
pub(crate) const SANDBOX_STATE_META_KEY: &str = "codex/sandbox-state-meta";
/// The `_meta` key of the sandbox launcher.
pub(crate) const SANDBOX_LAUNCHER_KEY: &str = "codex/sandbox-launcher";
/// Every `_meta` key only the runtime may set.
pub(crate) const RESERVED_META_KEYS: [&str; 3] = [
    SANDBOX_STATE_KEY,
    SANDBOX_STATE_META_KEY,
    SANDBOX_LAUNCHER_KEY,
];

/// Whether a server's `capabilities.experimental` opts into sandbox metadata.
pub(crate) fn opts_in(experimental: Option<&ExperimentalCapabilities>) -> bool {
    experimental.is_some_and(|experimental| {
        experimental.contains_key(SANDBOX_STATE_CAPABILITY)
            || experimental.contains_key(SANDBOX_STATE_META_CAPABILITY)
    })
}

/// Removes the reserved keys from a `_meta` object that did not come from the runtime.
pub(crate) fn strip_reserved_keys(meta: &mut serde_json::Map<String, serde_json::Value>) {
    for key in RESERVED_META_KEYS {
        meta.remove(key);
    }
}

/// Removes the reserved keys from tool arguments (written by the model): at their top
/// level and in an `_meta` object there, so no server can mistake them for the
/// runtime's.
pub(crate) fn strip_reserved_arguments(arguments: &mut serde_json::Map<String, serde_json::Value>) {
    strip_reserved_keys(arguments);
    if let Some(serde_json::Value::Object(meta)) = arguments.get_mut("_meta") {
        strip_reserved_keys(meta);
    }
}

/// The host's sandbox policy for one call: opaque JSON, kept as the exact text the host
/// gave. Cheap to clone. Two states are equal when their texts are.
#[derive(Clone)]
pub struct SandboxState(Arc<RawValue>);

/// The sandbox state cannot be forwarded.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the sandbox state cannot be used: {message}")]
pub struct InvalidSandboxState {
    message: String,
}

impl SandboxState {
    /// Takes the state as the host wrote it: one JSON value other than `null`, on one
    /// line (stdio carries one message per line, so a line break could not be forwarded
    /// as it is). The text, without surrounding whitespace, is forwarded exactly.
    pub fn from_json(text: impl Into<String>) -> Result<Self, InvalidSandboxState> {
        let invalid = |message: String| InvalidSandboxState { message };
        let raw = RawValue::from_string(text.into()).map_err(|error| invalid(error.to_string()))?;
        if raw.get().contains(['\n', '\r']) {
            return Err(invalid(
                "it spans several lines; write it on one line (for example with `jq -c`)"
                    .to_owned(),
            ));
        }
        if raw.get() == "null" {
            return Err(invalid("it is `null`".to_owned()));
        }
        Ok(Self(Arc::from(raw)))
    }

    /// The exact JSON text.
    pub fn as_json(&self) -> &str {
        self.0.get()
    }

    pub(crate) fn raw(&self) -> Arc<RawValue> {
        self.0.clone()
    }
}

impl PartialEq for SandboxState {
    fn eq(&self, other: &Self) -> bool {
        self.as_json() == other.as_json()
    }
}

impl Eq for SandboxState {}

impl std::fmt::Debug for SandboxState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SandboxState")
            .field(&self.as_json())
            .finish()
    }
}

/// The value of the `codex/sandbox-launcher` key of a request's `_meta`: where the server finds the Codex CLI that runs
/// commands under the state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SandboxLauncher {
    /// The absolute path of a verified full Codex CLI on the server's host.
    #[serde(rename = "codexExecutable")]
    pub codex_executable: String,
}

impl SandboxLauncher {
    /// A launcher at `codex_executable`.
    pub fn new(codex_executable: impl Into<String>) -> Self {
        Self {
            codex_executable: codex_executable.into(),
        }
    }
}

/// What one `tools/call` carries for a server that opted in: the state, and the launcher
/// when one may be offered.
#[derive(Debug, Clone)]
pub(crate) struct CallSandbox {
    pub(crate) state: SandboxState,
    pub(crate) launcher: Option<SandboxLauncher>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_keeps_its_exact_text() {
        let text = "{ \"b\": 1, \"a\": 123456789012345678901234567890, \"s\": \"\\u00e9\" }";
        let state = SandboxState::from_json(text).unwrap();
        assert_eq!(state.as_json(), text);
        assert!(SandboxState::from_json("{\"a\":").is_err());
        assert_ne!(state, SandboxState::from_json("{\"b\":1}").unwrap());
    }

    #[test]
    fn a_state_on_several_lines_or_null_is_refused() {
        let error = SandboxState::from_json("{\n  \"a\": 1\n}").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the sandbox state cannot be used: it spans several lines; write it on one line (for example with `jq -c`)"
        );
        assert!(SandboxState::from_json("{\"a\":\r1}").is_err());
        assert!(SandboxState::from_json(" null ").is_err());
        assert_eq!(SandboxState::from_json(" {} \n").unwrap().as_json(), "{}");
    }

    #[test]
    fn either_capability_opts_in() {
        let caps = |name: &str| {
            let mut experimental = ExperimentalCapabilities::new();
            experimental.insert(name.into(), Default::default());
            experimental
        };
        assert!(opts_in(Some(&caps(SANDBOX_STATE_CAPABILITY))));
        assert!(opts_in(Some(&caps(SANDBOX_STATE_META_CAPABILITY))));
        assert!(!opts_in(Some(&caps("codex/other"))));
        assert!(!opts_in(None));
    }

    #[test]
    fn reserved_keys_are_stripped_and_others_kept() {
        let mut meta = serde_json::json!({
            "codex/sandbox-state": {"mode": "danger-full-access"},
            "codex/sandbox-state-meta": {},
            "codex/sandbox-launcher": {"codexExecutable": "/tmp/evil"},
            "traceparent": "00-abc",
        })
        .as_object()
        .cloned()
        .unwrap();
        strip_reserved_keys(&mut meta);
        assert_eq!(meta.keys().collect::<Vec<_>>(), ["traceparent"]);
    }

    #[test]
    fn the_launcher_uses_the_wire_name() {
        let launcher = SandboxLauncher::new("/opt/codex/bin/codex");
        assert_eq!(
            serde_json::to_string(&launcher).unwrap(),
            r#"{"codexExecutable":"/opt/codex/bin/codex"}"#
        );
    }
}
