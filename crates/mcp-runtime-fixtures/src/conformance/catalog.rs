//! What the conformance server answers without asking anyone: the tools whose
//! result is fixed, the resources and the prompts, with the names and contents the
//! suite's scenarios look for.

use std::sync::Arc;

use rmcp::{
    ErrorData as McpError,
    model::{
        CallToolResult, ContentBlock, GetPromptResult, JsonObject, Prompt, PromptArgument,
        PromptMessage, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role,
        Tool,
    },
};
use serde_json::{Value, json};

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV file with one silent sample.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// The tools whose result does not depend on the client, in their listed order.
const FIXED_TOOLS: &[(&str, &str)] = &[
    (
        "test_simple_text",
        "Answers one text block (tools-call-simple-text)",
    ),
    ("test_image_content", "Answers one PNG image block"),
    ("test_audio_content", "Answers one WAV audio block"),
    (
        "test_embedded_resource",
        "Answers one embedded text resource",
    ),
    (
        "test_multiple_content_types",
        "Answers a text, an image and an embedded resource block",
    ),
    (
        "test_error_handling",
        "Always fails, as a tool error (`isError: true`)",
    ),
];

/// A tool whose input schema uses the JSON Schema 2020-12 vocabulary, which a
/// server must list unchanged (SEP-1613, SEP-2106).
pub(crate) const SCHEMA_TOOL: &str = "json_schema_2020_12_tool";

/// A tool with a parameter mirrored into the `Mcp-Param-Region` header (SEP-2243),
/// which rmcp checks against the body on 2026-07-28 requests.
pub(crate) const HEADER_TOOL: &str = "test_header_parameter";

/// A tool named `name` with `description`, taking `schema`.
pub(crate) fn tool(name: &'static str, description: &'static str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else {
        unreachable!("a schema literal is an object")
    };
    Tool::new(name, description, Arc::new(schema))
}

/// An input schema without parameters.
pub(crate) fn no_parameters() -> Value {
    json!({ "type": "object", "properties": {} })
}

/// The fixed tools and the two schema tools, in their listed order.
pub(crate) fn tools() -> impl Iterator<Item = Tool> {
    let fixed = FIXED_TOOLS
        .iter()
        .map(|(name, description)| tool(name, description, no_parameters()));
    fixed.chain([
        tool(
            SCHEMA_TOOL,
            "Lists a JSON Schema 2020-12 input schema ($schema, $defs, composition, \
             conditionals); answers its arguments",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": { "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
                } },
                "properties": {
                    "name": { "type": "string" },
                    "address": { "$ref": "#/$defs/address" },
                    "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                    "phone": { "type": "string" },
                    "email": { "type": "string" }
                },
                "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
                "if": { "properties": { "contactMethod": { "const": "phone" } },
                        "required": ["contactMethod"] },
                "then": { "required": ["phone"] },
                "else": { "required": ["email"] },
                "additionalProperties": false
            }),
        ),
        tool(
            HEADER_TOOL,
            "Answers its `region`, which a 2026-07-28 client also sends as the \
             `Mcp-Param-Region` header",
            json!({
                "type": "object",
                "properties": { "region": { "type": "string", "x-mcp-header": "Region" } },
                "required": ["region"]
            }),
        ),
    ])
}

/// The result of the fixed tool `name` called with `arguments`, if it is one.
pub(crate) fn call(name: &str, arguments: &JsonObject) -> Option<CallToolResult> {
    let text = |text: &str| ContentBlock::text(text);
    Some(match name {
        "test_simple_text" => {
            CallToolResult::success(vec![text("This is a simple text response for testing.")])
        }
        "test_image_content" => {
            CallToolResult::success(vec![ContentBlock::image(PNG, "image/png")])
        }
        "test_audio_content" => {
            CallToolResult::success(vec![ContentBlock::audio(WAV, "audio/wav")])
        }
        "test_embedded_resource" => CallToolResult::success(vec![ContentBlock::resource(
            ResourceContents::text(
                "This is an embedded resource content.",
                "test://embedded-resource",
            )
            .with_mime_type("text/plain"),
        )]),
        "test_multiple_content_types" => CallToolResult::success(vec![
            text("Multiple content types test:"),
            ContentBlock::image(PNG, "image/png"),
            ContentBlock::resource(
                ResourceContents::text(
                    json!({ "test": "data", "value": 123 }).to_string(),
                    "test://mixed-content-resource",
                )
                .with_mime_type("application/json"),
            ),
        ]),
        "test_error_handling" => CallToolResult::error(vec![text(
            "This tool intentionally returns an error for testing",
        )]),
        SCHEMA_TOOL | HEADER_TOOL => CallToolResult::success(vec![text(&format!(
            "{name} called with: {}",
            Value::Object(arguments.clone())
        ))]),
        _ => return None,
    })
}

/// The resources, in their listed order.
pub(crate) fn resources() -> Vec<Resource> {
    vec![
        Resource::new("test://static-text", "static-text")
            .with_title("Static Text Resource")
            .with_description("A static text resource")
            .with_mime_type("text/plain"),
        Resource::new("test://static-binary", "static-binary")
            .with_title("Static Binary Resource")
            .with_description("A static binary resource (a PNG image)")
            .with_mime_type("image/png"),
        Resource::new("test://watched-resource", "watched-resource")
            .with_title("Watched Resource")
            .with_description("A resource a handshake-era client may subscribe to")
            .with_mime_type("text/plain"),
    ]
}

/// The one resource template: `test://template/{id}/data`.
pub(crate) fn resource_templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("test://template/{id}/data", "template")
            .with_title("Resource Template")
            .with_description("JSON data for any `id`")
            .with_mime_type("application/json"),
    ]
}

/// The contents at `uri`; `-32002` (which rmcp turns into `-32602` for 2026-07-28
/// clients, SEP-2164) with the `uri` in its data when there is no such resource.
pub(crate) fn read(uri: &str) -> Result<ReadResourceResult, McpError> {
    let contents = match uri {
        "test://static-text" => {
            ResourceContents::text("This is the content of the static text resource.", uri)
                .with_mime_type("text/plain")
        }
        "test://static-binary" => ResourceContents::blob(PNG, uri).with_mime_type("image/png"),
        "test://watched-resource" => {
            ResourceContents::text("Watched resource content", uri).with_mime_type("text/plain")
        }
        _ => match template_id(uri) {
            Some(id) => ResourceContents::text(
                json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") })
                    .to_string(),
                uri,
            )
            .with_mime_type("application/json"),
            None => {
                return Err(McpError::resource_not_found(
                    format!("no resource at `{uri}`"),
                    Some(json!({ "uri": uri })),
                ));
            }
        },
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// The `{id}` of a URI of the template, if it is one.
fn template_id(uri: &str) -> Option<&str> {
    uri.strip_prefix("test://template/")?
        .strip_suffix("/data")
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

/// The prompts that do not ask, in their listed order.
pub(crate) fn prompts() -> Vec<Prompt> {
    let argument = |name: &str, description: &str| {
        PromptArgument::new(name)
            .with_description(description)
            .with_required(true)
    };
    vec![
        Prompt::new(
            "test_simple_prompt",
            Some("A prompt without arguments"),
            None,
        ),
        Prompt::new(
            "test_prompt_with_arguments",
            Some("A prompt with two required arguments"),
            Some(vec![
                argument("arg1", "First test argument"),
                argument("arg2", "Second test argument"),
            ]),
        ),
        Prompt::new(
            "test_prompt_with_embedded_resource",
            Some("A prompt that embeds a resource"),
            Some(vec![argument(
                "resourceUri",
                "URI of the resource to embed",
            )]),
        ),
        Prompt::new(
            "test_prompt_with_image",
            Some("A prompt with an image"),
            None,
        ),
    ]
}

/// The prompt `name` with `arguments`; `None` when there is no such prompt that
/// does not ask.
pub(crate) fn prompt(
    name: &str,
    arguments: &serde_json::Map<String, Value>,
) -> Option<Result<GetPromptResult, McpError>> {
    let argument = |key: &str| {
        arguments
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| McpError::invalid_params(format!("missing argument `{key}`"), None))
    };
    let user = |content| PromptMessage::new(Role::User, content);
    let messages = match name {
        "test_simple_prompt" => Ok(vec![user(ContentBlock::text(
            "This is a simple prompt for testing.",
        ))]),
        "test_prompt_with_arguments" => argument("arg1").and_then(|arg1| {
            Ok(vec![user(ContentBlock::text(format!(
                "Prompt with arguments: arg1='{arg1}', arg2='{}'",
                argument("arg2")?
            )))])
        }),
        "test_prompt_with_embedded_resource" => argument("resourceUri").map(|uri| {
            vec![
                user(ContentBlock::resource(
                    ResourceContents::text("Embedded resource content for testing.", uri)
                        .with_mime_type("text/plain"),
                )),
                user(ContentBlock::text(
                    "Please process the embedded resource above.",
                )),
            ]
        }),
        "test_prompt_with_image" => Ok(vec![
            user(ContentBlock::image(PNG, "image/png")),
            user(ContentBlock::text("Please analyze the image above.")),
        ]),
        _ => return None,
    };
    Some(messages.map(GetPromptResult::new))
}
