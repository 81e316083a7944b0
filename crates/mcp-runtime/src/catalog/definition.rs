//! A tool's definition as its server listed it: rmcp's [`Tool`] and the fields
//! [`Tool`] does not model, kept apart ([`ListedTool::unmodelled`]).
//!
//! rmcp's [`Tool`] and `ToolAnnotations` drop every field they do not model: the
//! 2025-11-25 `execution`, and whatever a newer revision or an extension adds to a
//! tool or to its annotations. What is dropped passes through untouched here: it is
//! read beside the [`Tool`] (from the same text, without building a JSON tree of the
//! tool, as a listing of thousands of tools is read), kept as one small object,
//! usually absent, and written back by [`Definition`].
//!
//! Invariants:
//! 1. The unmodelled object holds the tool's fields that [`TOOL_FIELDS`] does not
//!    name, as listed, and under `annotations` the annotations' fields that
//!    [`ANNOTATION_FIELDS`] does not name (only when there is one). It is `None`
//!    when there is nothing, never an empty object.
//! 2. [`TOOL_FIELDS`] and [`ANNOTATION_FIELDS`] are exactly the fields rmcp's types
//!    write (a test holds them to it), so a field is either in the [`Tool`] or in the
//!    unmodelled object, never in both nor in neither.

use rmcp::model::{JsonObject, Tool};
use serde::{Deserialize, Serialize, de::IgnoredAny};
use serde_json::Value;

use super::ListedTool;

/// The fields of a tool that rmcp's [`Tool`] models.
pub(crate) const TOOL_FIELDS: [&str; 8] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "icons",
    "_meta",
];

/// The fields of a tool's annotations that rmcp's `ToolAnnotations` models.
pub(crate) const ANNOTATION_FIELDS: [&str; 5] = [
    "title",
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// A tool's fields, those of [`TOOL_FIELDS`] skipped unread, the others kept.
#[derive(Deserialize)]
struct ToolFields {
    #[serde(default, rename = "name")]
    _name: IgnoredAny,
    #[serde(default, rename = "title")]
    _title: IgnoredAny,
    #[serde(default, rename = "description")]
    _description: IgnoredAny,
    #[serde(default, rename = "inputSchema")]
    _input_schema: IgnoredAny,
    #[serde(default, rename = "outputSchema")]
    _output_schema: IgnoredAny,
    #[serde(default)]
    annotations: Option<AnnotationFields>,
    #[serde(default, rename = "icons")]
    _icons: IgnoredAny,
    #[serde(default, rename = "_meta")]
    _meta: IgnoredAny,
    #[serde(flatten)]
    rest: JsonObject,
}

/// A tool's annotations, those of [`ANNOTATION_FIELDS`] skipped unread, the others
/// kept.
#[derive(Deserialize)]
struct AnnotationFields {
    #[serde(default, rename = "title")]
    _title: IgnoredAny,
    #[serde(default, rename = "readOnlyHint")]
    _read_only_hint: IgnoredAny,
    #[serde(default, rename = "destructiveHint")]
    _destructive_hint: IgnoredAny,
    #[serde(default, rename = "idempotentHint")]
    _idempotent_hint: IgnoredAny,
    #[serde(default, rename = "openWorldHint")]
    _open_world_hint: IgnoredAny,
    #[serde(flatten)]
    rest: JsonObject,
}

impl ToolFields {
    fn into_unmodelled(self) -> Option<JsonObject> {
        let mut unmodelled = self.rest;
        if let Some(annotations) = self.annotations
            && !annotations.rest.is_empty()
        {
            unmodelled.insert("annotations".to_owned(), Value::Object(annotations.rest));
        }
        (!unmodelled.is_empty()).then_some(unmodelled)
    }
}

/// The unmodelled fields of the tool whose JSON text is `text` (which reads as a
/// [`Tool`]); `None` when it has none.
pub(crate) fn unmodelled_in_text(text: &str) -> Option<JsonObject> {
    serde_json::from_str::<ToolFields>(text)
        .ok()
        .and_then(ToolFields::into_unmodelled)
}

/// The unmodelled fields of the tool `fields` (which read as a [`Tool`]); `None`
/// when it has none.
pub(crate) fn unmodelled_in(fields: &JsonObject) -> Option<JsonObject> {
    let mut unmodelled: JsonObject = fields
        .iter()
        .filter(|(key, _)| !TOOL_FIELDS.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    if let Some(Value::Object(annotations)) = fields.get("annotations") {
        let extra: JsonObject = annotations
            .iter()
            .filter(|(key, _)| !ANNOTATION_FIELDS.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        if !extra.is_empty() {
            unmodelled.insert("annotations".to_owned(), Value::Object(extra));
        }
    }
    (!unmodelled.is_empty()).then_some(unmodelled)
}

impl ListedTool {
    /// The tool whose listed JSON is `definition`, every field kept: what rmcp's
    /// [`Tool`] reads, and the rest ([`ListedTool::unmodelled`]). An error when it
    /// does not read as a [`Tool`].
    pub fn from_definition(definition: JsonObject) -> Result<Self, serde_json::Error> {
        let unmodelled = unmodelled_in(&definition);
        let tool = Tool::deserialize(Value::Object(definition))?;
        Ok(Self::new(tool, unmodelled))
    }
}

/// A tool's definition as its server listed it, every field: it serializes as the
/// listed JSON object (rmcp's fields in rmcp's order, then the others; within
/// `annotations` likewise).
#[derive(Debug, Clone, Copy)]
pub struct Definition<'a> {
    pub(super) tool: &'a Tool,
    pub(super) unmodelled: Option<&'a JsonObject>,
}

impl Serialize for Definition<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let extra_annotations = self
            .unmodelled
            .and_then(|unmodelled| unmodelled.get("annotations"))
            .and_then(Value::as_object);
        let Some(extra_annotations) = extra_annotations else {
            // The common case, written straight from the tool.
            #[derive(Serialize)]
            struct Flat<'a> {
                #[serde(flatten)]
                tool: &'a Tool,
                #[serde(flatten)]
                unmodelled: Option<&'a JsonObject>,
            }
            return Flat {
                tool: self.tool,
                unmodelled: self.unmodelled,
            }
            .serialize(serializer);
        };
        let mut definition = match serde_json::to_value(self.tool) {
            Ok(Value::Object(definition)) => definition,
            _ => return Err(serde::ser::Error::custom("a tool serializes to an object")),
        };
        match definition.get_mut("annotations") {
            Some(Value::Object(annotations)) => annotations.extend(extra_annotations.clone()),
            _ => {
                let extra = Value::Object(extra_annotations.clone());
                definition.insert("annotations".to_owned(), extra);
            }
        }
        for (key, value) in self.unmodelled.into_iter().flatten() {
            if key != "annotations" {
                definition.insert(key.clone(), value.clone());
            }
        }
        definition.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use std::{borrow::Cow, sync::Arc};

    use rmcp::model::{Icon, ToolAnnotations};
    use serde_json::json;

    use super::*;

    #[test]
    fn the_field_lists_are_exactly_what_rmcp_writes() {
        let mut tool = Tool::new("t", "d", Arc::new(JsonObject::new()));
        tool.title = Some("T".into());
        tool.output_schema = Some(Arc::new(JsonObject::new()));
        let mut annotations = ToolAnnotations::default();
        annotations.title = Some("A".into());
        annotations.read_only_hint = Some(true);
        annotations.destructive_hint = Some(true);
        annotations.idempotent_hint = Some(true);
        annotations.open_world_hint = Some(true);
        tool.annotations = Some(annotations);
        tool.icons = Some(vec![Icon::new("https://example.com/i.png")]);
        tool.meta = Some(Default::default());
        tool.description = Some(Cow::Borrowed("d"));
        let written = serde_json::to_value(&tool).unwrap();
        let keys: Vec<&str> = written
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, TOOL_FIELDS, "invariant 2");
        let keys: Vec<&str> = written["annotations"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ANNOTATION_FIELDS, "invariant 2");
    }

    fn listed() -> Value {
        json!({
            "name": "search",
            "description": "Find things",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "futureHint": {"kept": true}},
            "execution": {"taskSupport": "optional"},
            "futureField": [1, 2]
        })
    }

    #[test]
    fn what_rmcp_does_not_model_is_kept_apart_from_text_and_from_json_alike() {
        let expected = json!({
            "execution": {"taskSupport": "optional"},
            "futureField": [1, 2],
            "annotations": {"futureHint": {"kept": true}}
        });
        let from_text = unmodelled_in_text(&listed().to_string()).unwrap();
        assert_eq!(Value::Object(from_text), expected);
        let from_json = unmodelled_in(listed().as_object().unwrap()).unwrap();
        assert_eq!(Value::Object(from_json), expected);
        let plain = json!({"name": "p", "inputSchema": {}, "annotations": {"title": "P"}});
        assert_eq!(unmodelled_in_text(&plain.to_string()), None, "invariant 1");
        assert_eq!(unmodelled_in(plain.as_object().unwrap()), None);
    }

    #[test]
    fn the_definition_is_the_tool_as_listed() {
        let tool = ListedTool::from_definition(listed().as_object().unwrap().clone()).unwrap();
        assert_eq!(
            tool.execution().unwrap()["taskSupport"],
            "optional",
            "execution is read from what rmcp does not model"
        );
        let written = serde_json::to_value(tool.definition()).unwrap();
        assert_eq!(written, listed());
        let plain =
            json!({"name": "p", "inputSchema": {}, "execution": {"taskSupport": "required"}});
        let tool = ListedTool::from_definition(plain.as_object().unwrap().clone()).unwrap();
        assert_eq!(serde_json::to_value(tool.definition()).unwrap(), plain);
        let bare = ListedTool::from(Tool::new("b", "", Arc::new(JsonObject::new())));
        assert_eq!(
            serde_json::to_value(bare.definition()).unwrap(),
            json!({"name": "b", "description": "", "inputSchema": {}})
        );
    }
}
