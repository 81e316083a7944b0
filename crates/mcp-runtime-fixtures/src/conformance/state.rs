//! The `requestState` of the server's `input_required` results: a conversation's
//! state, readable but sealed with an HMAC-SHA256 tag, so that a client can carry it
//! to the next round but not change it (SEP-2322 asks servers to refuse a state
//! that fails its integrity check).
//!
//! The sealing is rmcp's `RequestStateCodec` (its `request-state` feature): the state
//! is JSON, the name of the tool or prompt it belongs to is the associated data (in
//! the tag, not in the token), and the key is drawn when the process starts, so a
//! state is good for the conversation that made it, in this process only. States do
//! not expire.

use rmcp::{
    ErrorData as McpError,
    model::{RequestStateCodec, SealOptions},
};
use serde_json::Value;

/// Seals and opens request states with one key (see the module docs).
#[derive(Clone)]
pub(crate) struct Sealer {
    codec: RequestStateCodec,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer").finish_non_exhaustive()
    }
}

impl Sealer {
    /// A sealer with a fresh random key.
    pub(crate) fn new() -> Self {
        let mut key = [0_u8; RequestStateCodec::MIN_KEY_LENGTH];
        getrandom::fill(&mut key).expect("the OS has a random source");
        let codec = RequestStateCodec::try_new(key).expect("the key has the minimum length");
        Self { codec }
    }

    /// `state`, sealed for the conversation `binding`.
    pub(crate) fn seal(&self, binding: &str, state: &Value) -> String {
        let options = SealOptions::new().associated_data(binding.as_bytes());
        self.codec
            .seal_json_with(state, &options)
            .expect("a JSON value serializes")
    }

    /// The state in `sealed`, if it was sealed by this sealer for `binding`;
    /// `-32602` otherwise, whatever the reason (rmcp asks for one client-facing error).
    pub(crate) fn open(&self, binding: &str, sealed: &str) -> Result<Value, McpError> {
        self.codec
            .open_json_with(sealed, binding.as_bytes())
            .map_err(|_| {
                McpError::invalid_params(
                    "requestState failed its integrity check (changed, or not this server's)",
                    None,
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Sealer;

    #[test]
    fn a_sealed_state_opens_for_its_binding_only() {
        let sealer = Sealer::new();
        let sealed = sealer.seal("tool", &json!({ "round": 1 }));
        assert_eq!(sealer.open("tool", &sealed).unwrap(), json!({ "round": 1 }));
        assert!(sealer.open("other", &sealed).is_err());
        assert!(sealer.open("tool", &format!("{sealed}-TAMPERED")).is_err());
        assert!(Sealer::new().open("tool", &sealed).is_err());
    }
}
