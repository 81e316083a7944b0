//! A tool's result checked against the tool's `outputSchema` (JSON Schema, 2020-12
//! unless the schema's `$schema` names another draft), as the specification asks of
//! clients: a server that declares an output schema must answer with
//! `structuredContent` that conforms to it.
//!
//! Invariants:
//! 1. Each tool's validator is compiled once per listing of the tool (the catalog's
//!    `Arc<Tool>`: a new listing that changes the tool compiles again) and shared by
//!    every call; calls never wait for one another to compile.
//! 2. A result with `isError: true` is not checked: it reports a failure, not output.
//! 3. A schema that is not a usable JSON Schema (or refers to another document: no
//!    `$ref` is fetched) checks nothing; it is named in a warning, once per listing.
//! 4. What a mismatch error says is the validator's description of each of the first
//!    [`MAX_REPORTED`] errors, with where in the result it is.
//! 5. A build without the `output-schema` feature (no JSON Schema validator) checks
//!    only that a tool with an output schema answers with `structuredContent`.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use rmcp::model::Tool;

use crate::{sync::lock, tool_result::ToolResult};

/// How many errors a mismatch names.
#[cfg(feature = "output-schema")]
const MAX_REPORTED: usize = 3;

/// The validators of a runtime's tools, by qualified name.
#[derive(Default)]
pub(crate) struct Validators {
    compiled: Mutex<HashMap<String, (Arc<Tool>, Compiled)>>,
}

impl std::fmt::Debug for Validators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validators")
            .field("tools", &lock(&self.compiled).len())
            .finish()
    }
}

#[derive(Clone)]
enum Compiled {
    /// The tool declares no output schema.
    Nothing,
    #[cfg(feature = "output-schema")]
    Usable(Arc<jsonschema::Validator>),
    /// The tool declares an output schema, which this build cannot check
    /// (invariant 5).
    #[cfg(not(feature = "output-schema"))]
    Declared,
    /// The schema cannot be used (invariant 3).
    #[cfg(feature = "output-schema")]
    Unusable,
}

impl Validators {
    /// Whether `result` of `tool` (listed by `server` under `qualified_name`)
    /// conforms to the tool's output schema; the errors when it does not.
    pub(crate) fn check(
        &self,
        server: &str,
        qualified_name: &str,
        tool: &Arc<Tool>,
        result: &ToolResult,
    ) -> Result<(), String> {
        if result.is_error() || tool.output_schema.is_none() {
            return Ok(());
        }
        let compiled = self.compiled(server, qualified_name, tool);
        #[cfg(feature = "output-schema")]
        if matches!(compiled, Compiled::Unusable) {
            return Ok(());
        }
        if matches!(compiled, Compiled::Nothing) {
            return Ok(());
        }
        let Some(structured) = result.structured_content() else {
            return Err(
                "it has no `structuredContent`, which the tool's `outputSchema` asks for"
                    .to_owned(),
            );
        };
        #[cfg(not(feature = "output-schema"))]
        {
            let _ = structured;
            Ok(())
        }
        #[cfg(feature = "output-schema")]
        {
            let Compiled::Usable(validator) = compiled else {
                unreachable!("a tool without a usable schema was not checked");
            };
            conforms(&validator, structured)
        }
    }

    /// The validator of `tool`, compiled on its first call (invariant 1).
    fn compiled(&self, server: &str, qualified_name: &str, tool: &Arc<Tool>) -> Compiled {
        if let Some((listed, compiled)) = lock(&self.compiled).get(qualified_name)
            && Arc::ptr_eq(listed, tool)
        {
            return compiled.clone();
        }
        // Compiled outside the lock: another tool's call does not wait for it.
        let compiled = match &tool.output_schema {
            None => Compiled::Nothing,
            Some(schema) => compile(server, tool, schema),
        };
        lock(&self.compiled).insert(qualified_name.to_owned(), (tool.clone(), compiled.clone()));
        compiled
    }
}

/// Whether `structured` conforms to the schema of `validator`; the errors when not.
#[cfg(feature = "output-schema")]
fn conforms(
    validator: &jsonschema::Validator,
    structured: &serde_json::Value,
) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(structured)
        .take(MAX_REPORTED + 1)
        .map(|error| {
            let at = error.instance_path().to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            // The error quotes the server's value, which may be large or hold a
            // credential sent to it.
            crate::redact::server_text(&format!("at `{at}`: {error}"))
        })
        .collect();
    match errors.len() {
        0 => Ok(()),
        n if n > MAX_REPORTED => Err(format!("{}; and more", errors[..MAX_REPORTED].join("; "))),
        _ => Err(errors.join("; ")),
    }
}

/// The validator of `schema`, `tool`'s output schema (invariant 3).
#[cfg(feature = "output-schema")]
fn compile(server: &str, tool: &Tool, schema: &Arc<rmcp::model::JsonObject>) -> Compiled {
    let schema = serde_json::Value::Object(schema.as_ref().clone());
    match jsonschema::validator_for(&schema) {
        Ok(validator) => Compiled::Usable(Arc::new(validator)),
        Err(error) => {
            tracing::warn!(
                server,
                tool = %tool.name,
                reason = %error,
                "the tool's outputSchema is not a usable JSON Schema: its results are not checked"
            );
            Compiled::Unusable
        }
    }
}

/// A declared schema, which this build cannot check (invariant 5).
#[cfg(not(feature = "output-schema"))]
fn compile(_server: &str, _tool: &Tool, _schema: &Arc<rmcp::model::JsonObject>) -> Compiled {
    Compiled::Declared
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock};
    use serde_json::json;

    use super::*;

    fn tool(output_schema: Option<serde_json::Value>) -> Arc<Tool> {
        let mut tool = Tool::new("t", "", Arc::new(Default::default()));
        tool.output_schema = output_schema.map(|schema| match schema {
            serde_json::Value::Object(object) => Arc::new(object),
            _ => unreachable!(),
        });
        Arc::new(tool)
    }

    fn a_result_without_structured_content_is_refused(validators: &Validators, tool: &Arc<Tool>) {
        let missing = ToolResult::from(CallToolResult::success(vec![ContentBlock::text("3")]));
        assert!(
            validators
                .check("s", "mcp__s__t", tool, &missing)
                .unwrap_err()
                .contains("no `structuredContent`")
        );
    }

    fn hits_schema() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {"hits": {"type": "integer", "minimum": 0}},
            "required": ["hits"]
        })
    }

    #[test]
    #[cfg(feature = "output-schema")]
    fn a_conforming_result_passes_and_a_wrong_one_is_named_where_it_is_wrong() {
        let validators = Validators::default();
        let tool = tool(Some(hits_schema()));
        let ok = ToolResult::from(CallToolResult::structured(json!({"hits": 3})));
        assert_eq!(validators.check("s", "mcp__s__t", &tool, &ok), Ok(()));
        let wrong = ToolResult::from(CallToolResult::structured(json!({"hits": "three"})));
        assert_eq!(
            validators.check("s", "mcp__s__t", &tool, &wrong),
            Err(r#"at `/hits`: "three" is not of type "integer""#.to_owned())
        );
        a_result_without_structured_content_is_refused(&validators, &tool);
    }

    #[test]
    fn errors_and_tools_without_a_schema_are_not_checked() {
        let validators = Validators::default();
        let mut failed = CallToolResult::structured(json!({"hits": "x"}));
        failed.is_error = Some(true);
        let failed = ToolResult::from(failed);
        assert_eq!(
            validators.check("s", "a", &tool(Some(hits_schema())), &failed),
            Ok(())
        );
        let anything = ToolResult::from(CallToolResult::structured(json!([1, 2])));
        assert_eq!(validators.check("s", "b", &tool(None), &anything), Ok(()));
    }

    #[test]
    #[cfg(feature = "output-schema")]
    fn a_validator_is_compiled_once_per_listing_of_the_tool() {
        let validators = Validators::default();
        let first = tool(Some(hits_schema()));
        let result = ToolResult::from(CallToolResult::structured(json!({"hits": 1})));
        validators.check("s", "n", &first, &result).unwrap();
        let kept = |validators: &Validators| match &lock(&validators.compiled)["n"].1 {
            Compiled::Usable(validator) => Arc::as_ptr(validator),
            _ => unreachable!(),
        };
        let compiled = kept(&validators);
        validators.check("s", "n", &first, &result).unwrap();
        assert_eq!(
            kept(&validators),
            compiled,
            "the same listing: compiled once"
        );
        // A new listing whose schema asks for a string.
        let relisted = tool(Some(
            json!({"type": "object", "properties": {"hits": {"type": "string"}}}),
        ));
        assert!(validators.check("s", "n", &relisted, &result).is_err());
    }

    #[test]
    #[cfg(feature = "output-schema")]
    fn an_unusable_schema_checks_nothing() {
        let validators = Validators::default();
        let tool = tool(Some(json!({"type": "no-such-type"})));
        let result = ToolResult::from(CallToolResult::structured(json!({"anything": true})));
        assert_eq!(validators.check("s", "u", &tool, &result), Ok(()));
    }

    #[test]
    #[cfg(feature = "output-schema")]
    fn only_the_first_errors_are_named() {
        let validators = Validators::default();
        let tool = tool(Some(json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer"}, "b": {"type": "integer"},
                "c": {"type": "integer"}, "d": {"type": "integer"}
            }
        })));
        let result = ToolResult::from(CallToolResult::structured(
            json!({"a": "", "b": "", "c": "", "d": ""}),
        ));
        let error = validators.check("s", "m", &tool, &result).unwrap_err();
        assert!(error.ends_with("; and more"), "{error}");
        assert_eq!(error.matches("at `").count(), MAX_REPORTED, "{error}");
    }

    #[test]
    #[cfg(not(feature = "output-schema"))]
    fn without_a_validator_only_the_presence_of_structured_content_is_checked() {
        let validators = Validators::default();
        let tool = tool(Some(hits_schema()));
        let unchecked = ToolResult::from(CallToolResult::structured(json!({"hits": "three"})));
        assert_eq!(
            validators.check("s", "mcp__s__t", &tool, &unchecked),
            Ok(())
        );
        a_result_without_structured_content_is_refused(&validators, &tool);
    }
}
