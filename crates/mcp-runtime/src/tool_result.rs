//! A tool's result as the server returned it ([`ToolResult`]), with typed views of
//! what mcp-runtime knows of it.
//!
//! What a newer revision of the protocol or an extension adds to a result passes
//! through untouched. rmcp's `CallToolResult` cannot carry it: its content blocks
//! are a closed enum (a `{"type": "video", …}` block fails to decode, and the whole
//! result with it), and its types drop every field they do not model. So a result
//! is kept as the JSON object the server sent, and the parts the runtime and a host
//! read (the content blocks, `structuredContent`, `isError`, `_meta`) are views of
//! that object: a block of a type rmcp models reads as rmcp's type, any other is
//! handed over as its JSON ([`Content::Unknown`]).
//!
//! Invariants:
//! 1. The object is the server's result: every field, every block, in the server's
//!    order (JSON numbers are kept as `serde_json` reads them: an integer or an
//!    `f64`). Serializing a [`ToolResult`] writes that object.
//! 2. The fields the runtime reads have the shape the MCP schema gives them, checked
//!    once, when the result is made: `content` an array, `isError` a boolean,
//!    `_meta` an object, `resultType` (when present) `complete`. Each content block
//!    is read on its own: one that does not read as a type rmcp models is
//!    [`Content::Unknown`], never an error.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool's result, as the server returned it (see the module docs).
///
/// `Runtime::call_tool` and its siblings return it. [`ToolResult::as_object`] is
/// the result whole, fields this runtime does not know included;
/// [`ToolResult::content`], [`ToolResult::structured_content`],
/// [`ToolResult::is_error`] and [`ToolResult::meta`] read its known parts.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    fields: JsonObject,
}

/// The fields of a tool result that this runtime reads.
const KNOWN_FIELDS: [&str; 3] = ["content", "structuredContent", "isError"];

/// Why a JSON object is not a tool result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidToolResult {
    /// It has none of a tool result's fields (`content`, `structuredContent`,
    /// `isError`), and fields of its own: another kind of result.
    #[error("the server's answer is not a tool result")]
    NotAToolResult,
    /// One of the fields the runtime reads does not have its schema's shape.
    #[error(
        "the tool result's `{field}` is {found}, not {expected} (the server does not follow the MCP schema; report it to its author)"
    )]
    Malformed {
        /// The field.
        field: &'static str,
        /// The kind of JSON value it is.
        found: &'static str,
        /// The kind the schema gives it.
        expected: &'static str,
    },
    /// Its `resultType` names a kind of result this runtime does not know.
    #[error(
        "the server answered with a result of type `{result_type}`, which mcp-runtime does not know"
    )]
    UnknownResultType {
        /// The type, as the server named it (escaped, cut).
        result_type: String,
    },
}

impl ToolResult {
    /// `fields` as a tool result, when the fields the runtime reads have their
    /// schema's shape (invariant 2). An object with only `_meta` (or `resultType`),
    /// or none at all, is a result without content.
    pub fn from_object(fields: JsonObject) -> Result<Self, InvalidToolResult> {
        let malformed = |field, value: &Value, expected| InvalidToolResult::Malformed {
            field,
            found: crate::json::kind(value),
            expected,
        };
        match fields.get("content") {
            None | Some(Value::Null | Value::Array(_)) => {}
            Some(other) => return Err(malformed("content", other, "an array")),
        }
        match fields.get("isError") {
            None | Some(Value::Null | Value::Bool(_)) => {}
            Some(other) => return Err(malformed("isError", other, "a boolean")),
        }
        match fields.get("_meta") {
            None | Some(Value::Null | Value::Object(_)) => {}
            Some(other) => return Err(malformed("_meta", other, "an object")),
        }
        match fields.get("resultType") {
            None => {}
            Some(Value::String(kind)) if kind == "complete" => {}
            Some(Value::String(kind)) => {
                return Err(InvalidToolResult::UnknownResultType {
                    result_type: kind.chars().take(64).flat_map(char::escape_debug).collect(),
                });
            }
            Some(other) => return Err(malformed("resultType", other, "a string")),
        }
        let known = KNOWN_FIELDS.iter().any(|field| fields.contains_key(*field));
        let empty = fields
            .keys()
            .all(|key| matches!(key.as_str(), "_meta" | "resultType"));
        if !known && !empty {
            return Err(InvalidToolResult::NotAToolResult);
        }
        Ok(Self { fields })
    }

    /// The result whole, as the server returned it.
    pub fn as_object(&self) -> &JsonObject {
        &self.fields
    }

    /// The result whole, as the server returned it.
    pub fn into_object(self) -> JsonObject {
        self.fields
    }

    /// The content blocks, in order, each read on its own: as rmcp's
    /// [`ContentBlock`] when it is of a type rmcp models and reads as one, else
    /// [`Content::Unknown`]. None when the result has no `content`.
    pub fn content(&self) -> impl ExactSizeIterator<Item = Content<'_>> + '_ {
        let blocks = match self.fields.get("content") {
            Some(Value::Array(blocks)) => blocks.as_slice(),
            _ => &[],
        };
        blocks.iter().map(Content::read)
    }

    /// `structuredContent`, when the result has it (a `null` is kept as one).
    pub fn structured_content(&self) -> Option<&Value> {
        self.fields.get("structuredContent")
    }

    /// Whether the result reports a failure of the tool (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.fields.get("isError") == Some(&Value::Bool(true))
    }

    /// `_meta`, when the result has it.
    pub fn meta(&self) -> Option<&JsonObject> {
        self.fields.get("_meta").and_then(Value::as_object)
    }
}

impl TryFrom<JsonObject> for ToolResult {
    type Error = InvalidToolResult;

    fn try_from(fields: JsonObject) -> Result<Self, Self::Error> {
        Self::from_object(fields)
    }
}

/// rmcp's result, as it serializes.
impl From<CallToolResult> for ToolResult {
    fn from(result: CallToolResult) -> Self {
        match serde_json::to_value(result) {
            Ok(Value::Object(fields)) => Self { fields },
            _ => unreachable!("a `CallToolResult` serializes to a JSON object"),
        }
    }
}

impl Serialize for ToolResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.fields.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolResult {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::from_object(JsonObject::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

/// One content block of a [`ToolResult`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[allow(
    clippy::large_enum_variant,
    reason = "a view made per block as it is read, not stored: a box would only add an allocation"
)]
pub enum Content<'a> {
    /// A block of a type rmcp models (`text`, `image`, `audio`, `resource`,
    /// `resource_link`), read as rmcp's type, which keeps only the fields it models
    /// (the block whole is in [`ToolResult::as_object`]).
    Known(ContentBlock),
    /// A block of another type (a newer revision's, an extension's), or one that
    /// does not read as its type: its JSON, as the server sent it.
    Unknown(&'a Value),
}

impl<'a> Content<'a> {
    /// `block` read as rmcp's type when it reads as one, else as its JSON.
    pub(crate) fn read(block: &'a Value) -> Self {
        match ContentBlock::deserialize(block) {
            Ok(known) => Self::Known(known),
            Err(_) => Self::Unknown(block),
        }
    }

    /// The block's `type`: `text`, `image`…, or the unknown block's own (`video`);
    /// `None` for an unknown block whose `type` is not a string.
    pub fn kind(&self) -> Option<&'a str> {
        match self {
            Self::Known(ContentBlock::Text(_)) => Some("text"),
            Self::Known(ContentBlock::Image(_)) => Some("image"),
            Self::Known(ContentBlock::Audio(_)) => Some("audio"),
            Self::Known(ContentBlock::Resource(_)) => Some("resource"),
            Self::Known(ContentBlock::ResourceLink(_)) => Some("resource_link"),
            Self::Known(_) => None,
            Self::Unknown(block) => block.get("type").and_then(Value::as_str),
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Known(ContentBlock::Text(text)) => Some(&text.text),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(value: Value) -> Result<ToolResult, InvalidToolResult> {
        match value {
            Value::Object(fields) => ToolResult::from_object(fields),
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn a_result_keeps_every_field_and_block_in_its_order() {
        let sent = json!({
            "futureField": {"n": 1},
            "content": [
                {"type": "video", "uri": "https://example.com/v.mp4"},
                {"type": "text", "text": "hi", "futureField": true, "annotations": {"futureHint": 1}}
            ],
            "structuredContent": {"a": [1, 2]},
            "isError": false,
            "_meta": {"k": "v"}
        });
        let result = result(sent.clone()).unwrap();
        assert_eq!(serde_json::to_value(&result).unwrap(), sent);
        assert_eq!(
            serde_json::to_string(&result).unwrap(),
            sent.to_string(),
            "key order too"
        );
        let blocks: Vec<Content<'_>> = result.content().collect();
        assert_eq!(blocks[0], Content::Unknown(&sent["content"][0]));
        assert_eq!(blocks[0].kind(), Some("video"));
        assert_eq!(blocks[1].as_text(), Some("hi"));
        assert_eq!(blocks[1].kind(), Some("text"));
        assert_eq!(result.structured_content(), Some(&json!({"a": [1, 2]})));
        assert!(!result.is_error());
        assert_eq!(result.meta().unwrap()["k"], "v");
    }

    #[test]
    fn a_block_that_does_not_read_as_its_type_is_unknown_not_an_error() {
        let sent = json!({"content": [{"type": "text"}, {"type": 7}, "text", {"type": "image", "data": "AA==", "mimeType": "image/png"}]});
        let result = result(sent.clone()).unwrap();
        let kinds: Vec<Option<&str>> = result.content().map(|block| block.kind()).collect();
        assert_eq!(kinds, [Some("text"), None, None, Some("image")]);
        assert!(matches!(
            result.content().next(),
            Some(Content::Unknown(block)) if *block == sent["content"][0]
        ));
        assert!(matches!(
            result.content().nth(3),
            Some(Content::Known(ContentBlock::Image(_)))
        ));
    }

    #[test]
    fn a_result_without_content_is_a_result_with_no_blocks() {
        for empty in [
            json!({}),
            json!({"_meta": {"k": 1}}),
            json!({"resultType": "complete"}),
        ] {
            let result = result(empty.clone()).unwrap();
            assert_eq!(result.content().len(), 0, "{empty}");
            assert!(!result.is_error());
            assert_eq!(result.structured_content(), None);
        }
        let result = result(json!({"isError": true})).unwrap();
        assert!(result.is_error());
        let result = super::tests::result(json!({"structuredContent": null})).unwrap();
        assert_eq!(result.structured_content(), Some(&Value::Null));
    }

    #[test]
    fn another_kind_of_answer_or_a_malformed_field_is_refused() {
        assert_eq!(
            result(json!({"tools": []})).unwrap_err(),
            InvalidToolResult::NotAToolResult
        );
        assert_eq!(
            result(json!({"content": "text"})).unwrap_err().to_string(),
            "the tool result's `content` is a string, not an array (the server does not follow the MCP schema; report it to its author)"
        );
        assert!(matches!(
            result(json!({"content": [], "isError": "yes"})),
            Err(InvalidToolResult::Malformed {
                field: "isError",
                ..
            })
        ));
        assert!(matches!(
            result(json!({"content": [], "_meta": []})),
            Err(InvalidToolResult::Malformed { field: "_meta", .. })
        ));
        assert_eq!(
            result(json!({"resultType": "later", "content": []}))
                .unwrap_err()
                .to_string(),
            "the server answered with a result of type `later`, which mcp-runtime does not know"
        );
    }

    #[test]
    fn rmcps_result_and_json_text_convert() {
        let mut rmcp = CallToolResult::success(vec![ContentBlock::text("a")]);
        rmcp.structured_content = Some(json!({"x": 1}));
        let result = ToolResult::from(rmcp);
        assert_eq!(result.content().next().unwrap().as_text(), Some("a"));
        assert_eq!(result.structured_content(), Some(&json!({"x": 1})));
        let read: ToolResult = serde_json::from_str(r#"{"content":[{"type":"x"}],"y":2}"#).unwrap();
        assert_eq!(read.as_object()["y"], 2);
        assert!(serde_json::from_str::<ToolResult>(r#"{"tools":[]}"#).is_err());
    }
}
