//! The `requestState` of the server's `input_required` results: a conversation's
//! state, readable but sealed with an HMAC-SHA256 tag, so that a client can carry it
//! to the next round but not change it (SEP-2322 asks servers to refuse a state
//! that fails its integrity check).
//!
//! A state is `BASE64URL(json).BASE64URL(tag)`, the tag over the name of the tool or
//! prompt it belongs to and the JSON, with a key drawn when the process starts: a
//! state is good for the conversation that made it, in this process only.
//!
//! rmcp's `RequestStateCodec` does the same, but its `request-state` feature needs
//! crates (`hmac` 0.13 and what it pulls) that this workspace does not lock; `sha2`
//! and `base64` it already has.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use rmcp::ErrorData as McpError;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// Seals and opens request states with one key (see the module docs).
#[derive(Clone)]
pub(crate) struct Sealer {
    key: [u8; 32],
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer").finish_non_exhaustive()
    }
}

impl Sealer {
    /// A sealer with a fresh random key.
    pub(crate) fn new() -> Self {
        let mut key = [0_u8; 32];
        getrandom::fill(&mut key).expect("the OS has a random source");
        Self { key }
    }

    /// `state`, sealed for the conversation `binding`.
    pub(crate) fn seal(&self, binding: &str, state: &Value) -> String {
        let payload = state.to_string();
        let tag = self.tag(binding, payload.as_bytes());
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The state in `sealed`, if it was sealed by this sealer for `binding`;
    /// `-32602` otherwise.
    pub(crate) fn open(&self, binding: &str, sealed: &str) -> Result<Value, McpError> {
        let refused = || {
            McpError::invalid_params(
                "requestState failed its integrity check (changed, or not this server's)",
                None,
            )
        };
        let (payload, tag) = sealed.split_once('.').ok_or_else(refused)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| refused())?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| refused())?;
        let expected = self.tag(binding, &payload);
        // Compared in constant time: every byte is looked at whatever differs.
        let same = tag.len() == expected.len()
            && tag
                .iter()
                .zip(expected)
                .fold(0_u8, |differ, (a, b)| differ | (a ^ b))
                == 0;
        if !same {
            return Err(refused());
        }
        serde_json::from_slice(&payload).map_err(|_| refused())
    }

    /// HMAC-SHA256 (RFC 2104) of `binding`, a zero byte and `payload`.
    fn tag(&self, binding: &str, payload: &[u8]) -> [u8; 32] {
        const BLOCK: usize = 64;
        let mut inner_key = [0x36_u8; BLOCK];
        let mut outer_key = [0x5c_u8; BLOCK];
        for (index, byte) in self.key.iter().enumerate() {
            inner_key[index] ^= byte;
            outer_key[index] ^= byte;
        }
        let inner = Sha256::new()
            .chain_update(inner_key)
            .chain_update(binding.as_bytes())
            .chain_update([0])
            .chain_update(payload)
            .finalize();
        Sha256::new()
            .chain_update(outer_key)
            .chain_update(inner)
            .finalize()
            .into()
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
