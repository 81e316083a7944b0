//! How messages name JSON values: a leaf that every layer describing a server's
//! answer reads.

/// The kind of a JSON value, as a message names it (`an object`, `null`).
pub(crate) fn kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
