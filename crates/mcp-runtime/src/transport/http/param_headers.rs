//! The `Mcp-Name` and `Mcp-Param-*` headers (2026-07-28) of a request whose body was
//! spliced: computed from the values actually sent, never from a placeholder.

use std::collections::HashMap;

use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;

/// Sets the `Mcp-Name` and `Mcp-Param-*` headers of `message` from `spliced`, the
/// body actually sent for it.
///
/// rmcp computes these headers from its message, where an exact argument is still a
/// placeholder (a plain ASCII string, so the header holds it verbatim). Each header
/// whose value is one of the message's placeholders gets the value the header
/// stands for, computed from the leaf the placeholder became in `spliced`, the way the
/// 2026-07-28 revision computes it from a body (a string as it is, a number or a
/// boolean as JSON text; Base64-wrapped when a header cannot carry it). A leaf that no
/// JSON reader can hold as a value (`1e400`) has no such form: its header is left out
/// rather than sent with a placeholder, which a server must never see.
pub(super) fn headers_for_spliced(
    message: &ClientJsonRpcMessage,
    spliced: &[u8],
    headers: &mut HashMap<HeaderName, HeaderValue>,
) {
    let derived =
        |name: &HeaderName| name.as_str() == "mcp-name" || name.as_str().starts_with("mcp-param-");
    if !headers.keys().any(derived) {
        return;
    }
    let Ok(original) = serde_json::to_value(message) else {
        return;
    };
    // The placeholders the splice replaced, each with the value it became.
    let mut replaced = HashMap::new();
    match serde_json::from_slice::<serde_json::Value>(spliced) {
        Ok(sent) => replaced_leaves(&original, &sent, &mut replaced),
        // A leaf no reader holds as a value: every placeholder counts as replaced by
        // a value without a header form.
        Err(_) => placeholder_strings(&original, &mut replaced),
    }
    headers.retain(|name, value| {
        if !derived(name) {
            return true;
        }
        let Some(leaf) = value.to_str().ok().and_then(|text| replaced.get(text)) else {
            return true;
        };
        let Some(exact) = header_text(leaf) else {
            return false;
        };
        match HeaderValue::from_str(&exact) {
            Ok(exact) => {
                *value = exact;
                true
            }
            Err(_) => false,
        }
    });
}

/// Every string leaf of `original` whose place in `sent` holds another value, mapped
/// to that value: the placeholders the splice replaced.
fn replaced_leaves(
    original: &serde_json::Value,
    sent: &serde_json::Value,
    out: &mut HashMap<String, serde_json::Value>,
) {
    use serde_json::Value;
    match (original, sent) {
        (Value::String(text), other) if other.as_str() != Some(text.as_str()) => {
            out.insert(text.clone(), other.clone());
        }
        (Value::Object(original), Value::Object(sent)) => {
            for (key, value) in original {
                if let Some(other) = sent.get(key) {
                    replaced_leaves(value, other, out);
                }
            }
        }
        (Value::Array(original), Value::Array(sent)) => {
            for (value, other) in original.iter().zip(sent) {
                replaced_leaves(value, other, out);
            }
        }
        _ => {}
    }
}

/// Every string leaf of `value` that looks like a placeholder of the splice (see
/// [`super::splice`], invariant 1), mapped to `null`.
fn placeholder_strings(value: &serde_json::Value, out: &mut HashMap<String, serde_json::Value>) {
    use serde_json::Value;
    match value {
        Value::String(text) if text.starts_with("mcp-runtime-raw-") => {
            out.insert(text.clone(), Value::Null);
        }
        Value::Object(object) => object
            .values()
            .for_each(|value| placeholder_strings(value, out)),
        Value::Array(array) => array
            .iter()
            .for_each(|value| placeholder_strings(value, out)),
        _ => {}
    }
}

/// The header form of a primitive JSON value (2026-07-28, "Value Encoding"): a
/// string as it is, a number or a boolean as its JSON text, wrapped as
/// `=?base64?…?=` when a header cannot carry it plainly. `None` for other values.
fn header_text(value: &serde_json::Value) -> Option<String> {
    use base64::Engine as _;
    let text = match value {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Number(number) => number.to_string(),
        serde_json::Value::Bool(flag) => flag.to_string(),
        _ => return None,
    };
    let edge_space = text.starts_with([' ', '\t']) || text.ends_with([' ', '\t']);
    let unprintable = text.chars().any(|c| !(' '..='~').contains(&c));
    let looks_wrapped = text.starts_with("=?base64?") && text.ends_with("?=");
    if edge_space || unprintable || looks_wrapped {
        let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
        Some(format!("=?base64?{encoded}?="))
    } else {
        Some(text)
    }
}
