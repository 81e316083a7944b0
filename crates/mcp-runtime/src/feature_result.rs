//! A resource read and a prompt as the server returned them ([`ReadResult`],
//! [`PromptResult`]), with typed views of what mcp-runtime knows of them.
//!
//! As for a tool's result ([`crate::ToolResult`]), what a newer revision or an
//! extension adds passes through untouched: rmcp's `ReadResourceResult` and
//! `GetPromptResult` fail whole on one resource contents or one message content of a
//! kind they do not model, and drop every field they do not. So each result is kept
//! as the JSON object the server sent, and each part is read on its own: as rmcp's
//! type when it reads as one, else as its JSON.
//!
//! Invariants:
//! 1. The object is the server's result, every field, in the server's order.
//! 2. The list the result is about (`contents`, `messages`) must be an array, and
//!    `_meta`, when present, an object, checked once, when the result is made; each
//!    entry of the list is read on its own, and one that does not read as rmcp's type
//!    is handed over as its JSON, never an error.

use rmcp::model::{JsonObject, ResourceContents};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{json::kind, tool_result::Content};

/// A `resources/read` result, as the server returned it (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct ReadResult {
    fields: JsonObject,
}

/// A `prompts/get` result, as the server returned it (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct PromptResult {
    fields: JsonObject,
}

/// `fields` checked as a result whose list is `list` (invariant 2); why not.
fn checked(fields: &JsonObject, list: &str) -> Result<(), String> {
    let schema = "(the server does not follow the MCP schema; report it to its author)";
    if fields.get("resultType").and_then(Value::as_str) == Some("input_required") {
        return Err(
            "the server asked for input before it answers, which mcp-runtime does not give here"
                .to_owned(),
        );
    }
    match fields.get(list) {
        Some(Value::Array(_)) => {}
        Some(other) => {
            return Err(format!(
                "the answer's `{list}` is {}, not an array {schema}",
                kind(other)
            ));
        }
        None => return Err(format!("the answer has no `{list}` {schema}")),
    }
    match fields.get("_meta") {
        None | Some(Value::Null | Value::Object(_)) => Ok(()),
        Some(other) => Err(format!(
            "the answer's `_meta` is {}, not an object {schema}",
            kind(other)
        )),
    }
}

/// The entries of the list `list` of `fields`.
fn entries<'a>(fields: &'a JsonObject, list: &str) -> &'a [Value] {
    match fields.get(list) {
        Some(Value::Array(entries)) => entries,
        _ => &[],
    }
}

impl ReadResult {
    /// `fields` as a read result (invariant 2), or why not.
    pub(crate) fn from_object(fields: JsonObject) -> Result<Self, String> {
        checked(&fields, "contents")?;
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

    /// The resource's contents, in order, each read on its own.
    pub fn contents(&self) -> impl ExactSizeIterator<Item = ResourceContent<'_>> + '_ {
        entries(&self.fields, "contents").iter().map(
            |contents| match ResourceContents::deserialize(contents) {
                Ok(known) => ResourceContent::Known(known),
                Err(_) => ResourceContent::Unknown(contents),
            },
        )
    }

    /// `_meta`, when the result has it.
    pub fn meta(&self) -> Option<&JsonObject> {
        self.fields.get("_meta").and_then(Value::as_object)
    }
}

/// One of a [`ReadResult`]'s contents.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ResourceContent<'a> {
    /// Text or a blob, read as rmcp's type, which keeps only the fields it models
    /// (the contents whole are in [`ReadResult::as_object`]).
    Known(ResourceContents),
    /// Contents of another kind (a newer revision's, an extension's), or that do not
    /// read as their kind: their JSON, as the server sent it.
    Unknown(&'a Value),
}

impl ResourceContent<'_> {
    /// The text of text contents.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Known(ResourceContents::TextResourceContents { text, .. }) => Some(text),
            _ => None,
        }
    }
}

impl PromptResult {
    /// `fields` as a prompt (invariant 2), or why not.
    pub(crate) fn from_object(fields: JsonObject) -> Result<Self, String> {
        checked(&fields, "messages")?;
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

    /// The prompt's `description`, when it is a string.
    pub fn description(&self) -> Option<&str> {
        self.fields.get("description").and_then(Value::as_str)
    }

    /// The prompt's messages, in order, each read on its own.
    pub fn messages(&self) -> impl ExactSizeIterator<Item = Message<'_>> + '_ {
        static NONE: Value = Value::Null;
        entries(&self.fields, "messages")
            .iter()
            .map(|message| Message {
                role: message.get("role").and_then(Value::as_str),
                content: Content::read(message.get("content").unwrap_or(&NONE)),
            })
    }

    /// `_meta`, when the result has it.
    pub fn meta(&self) -> Option<&JsonObject> {
        self.fields.get("_meta").and_then(Value::as_object)
    }
}

/// One message of a [`PromptResult`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Message<'a> {
    /// Its `role` (`user`, `assistant`, or a later revision's), when it is a string.
    pub role: Option<&'a str>,
    /// Its content block, read as a tool result's are.
    pub content: Content<'a>,
}

impl Serialize for ReadResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.fields.serialize(serializer)
    }
}

impl Serialize for PromptResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.fields.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(object) => object,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn a_read_keeps_contents_of_an_unknown_kind_and_every_field() {
        let sent = json!({
            "contents": [
                {"uri": "a://1", "text": "one\r\n", "futureField": 1},
                {"uri": "a://2", "video": "…", "mimeType": "video/mp4"},
                {"uri": "a://3", "blob": "AA=="}
            ],
            "futureField": {"kept": true}
        });
        let read = ReadResult::from_object(object(sent.clone())).unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap(), sent);
        let contents: Vec<ResourceContent<'_>> = read.contents().collect();
        assert_eq!(contents[0].as_text(), Some("one\r\n"));
        assert_eq!(contents[1], ResourceContent::Unknown(&sent["contents"][1]));
        assert!(matches!(
            contents[2],
            ResourceContent::Known(ResourceContents::BlobResourceContents { .. })
        ));
    }

    #[test]
    fn a_prompt_keeps_messages_of_an_unknown_kind_and_every_field() {
        let sent = json!({
            "description": "d",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "narrator", "content": {"type": "video", "uri": "v"}},
                {"role": "assistant"}
            ],
            "futureField": 1
        });
        let prompt = PromptResult::from_object(object(sent.clone())).unwrap();
        assert_eq!(serde_json::to_value(&prompt).unwrap(), sent);
        assert_eq!(prompt.description(), Some("d"));
        let messages: Vec<Message<'_>> = prompt.messages().collect();
        assert_eq!(messages[0].role, Some("user"));
        assert_eq!(messages[0].content.as_text(), Some("hi"));
        assert_eq!(messages[1].role, Some("narrator"));
        assert_eq!(messages[1].content.kind(), Some("video"));
        assert_eq!(messages[2].content, Content::Unknown(&Value::Null));
    }

    #[test]
    fn a_result_without_its_list_or_asking_for_input_is_refused() {
        let error = ReadResult::from_object(object(json!({"contents": {}}))).unwrap_err();
        assert!(
            error.starts_with("the answer's `contents` is an object, not an array"),
            "{error}"
        );
        let error = PromptResult::from_object(object(json!({"tools": []}))).unwrap_err();
        assert!(error.starts_with("the answer has no `messages`"), "{error}");
        let error = PromptResult::from_object(object(
            json!({"resultType": "input_required", "inputRequests": {}}),
        ))
        .unwrap_err();
        assert!(error.contains("asked for input"), "{error}");
        assert!(ReadResult::from_object(object(json!({"contents": [], "_meta": 1}))).is_err());
    }
}
