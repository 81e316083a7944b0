//! The `${…}` references in the hosts' JSON values, parsed once for every host.
//!
//! One grammar serves every format, since a file is recognised by its shape and the
//! `mcpServers` shape is shared by Claude Desktop, Claude Code and Cursor:
//!
//! | written | means | from |
//! |---|---|---|
//! | `${NAME}` | environment variable `NAME` | Claude Code |
//! | `${NAME:-default}` | `NAME` when set and non-empty, else `default` | Claude Code |
//! | `${env:NAME}` | environment variable `NAME` | VS Code, Cursor |
//! | `${input:ID}` | input `ID` of `inputs` | VS Code |
//! | `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}`, `${pathSeparator}`, `${/}` | the predefined values | VS Code, Cursor |
//!
//! Any other `${kind:…}` (VS Code's `${config:…}`, `${command:…}`) cannot be resolved
//! outside the editor and is an error. A `${` without a closing `}` is plain text, as
//! in Claude Code.

/// A piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Part<'a> {
    /// Plain text.
    Text(&'a str),
    /// A reference, with the whole `${…}` text it was written as.
    Ref(Ref<'a>, &'a str),
}

/// What a `${…}` refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ref<'a> {
    /// An environment variable, with the default used when it is unset or empty.
    Env {
        name: &'a str,
        default: Option<&'a str>,
    },
    /// An input of VS Code's `inputs`.
    Input(&'a str),
    /// A value known without the environment's variables.
    Predefined(Predefined),
    /// A reference mcp-runtime cannot resolve: the text between the braces.
    Unsupported(&'a str),
}

/// The predefined variables of VS Code and Cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Predefined {
    /// `${workspaceFolder}`.
    WorkspaceFolder,
    /// `${workspaceFolderBasename}`.
    WorkspaceFolderBasename,
    /// `${userHome}`.
    UserHome,
    /// `${pathSeparator}` or `${/}`.
    PathSeparator,
}

/// `text` as text and references.
pub(super) fn parse(text: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(length) = rest[start..].find('}') else {
            break;
        };
        if start > 0 {
            parts.push(Part::Text(&rest[..start]));
        }
        let whole = &rest[start..start + length + 1];
        parts.push(Part::Ref(reference(&whole[2..whole.len() - 1]), whole));
        rest = &rest[start + length + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest));
    }
    parts
}

/// The reference written as `${inner}`.
fn reference(inner: &str) -> Ref<'_> {
    let (body, default) = match inner.split_once(":-") {
        Some((body, default)) => (body, Some(default)),
        None => (inner, None),
    };
    match body.split_once(':') {
        Some(("env", name)) if !name.is_empty() => Ref::Env { name, default },
        Some(("input", id)) if !id.is_empty() && default.is_none() => Ref::Input(id),
        Some(_) => Ref::Unsupported(inner),
        None if default.is_some() => match body {
            "" => Ref::Unsupported(inner),
            name => Ref::Env { name, default },
        },
        None => match body {
            "workspaceFolder" => Ref::Predefined(Predefined::WorkspaceFolder),
            "workspaceFolderBasename" => Ref::Predefined(Predefined::WorkspaceFolderBasename),
            "userHome" => Ref::Predefined(Predefined::UserHome),
            "pathSeparator" | "/" => Ref::Predefined(Predefined::PathSeparator),
            "" => Ref::Unsupported(inner),
            name => Ref::Env {
                name,
                default: None,
            },
        },
    }
}

/// The environment variable that mcp-runtime reads for VS Code input `id`:
/// `MCP_RUNTIME_INPUT_` and the id in upper case, each character outside
/// `[A-Za-z0-9_]` written as `_`.
pub(crate) fn input_variable(id: &str) -> String {
    let id: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("MCP_RUNTIME_INPUT_{id}")
}

#[cfg(test)]
mod tests {
    use super::{Part::*, Predefined::*, Ref::*, *};

    #[test]
    fn every_reference_form_is_told_apart() {
        assert_eq!(
            parse("a${X}b${Y:-d:e}${env:Z}${input:api-key}"),
            [
                Text("a"),
                Ref(
                    Env {
                        name: "X",
                        default: None
                    },
                    "${X}"
                ),
                Text("b"),
                Ref(
                    Env {
                        name: "Y",
                        default: Some("d:e")
                    },
                    "${Y:-d:e}"
                ),
                Ref(
                    Env {
                        name: "Z",
                        default: None
                    },
                    "${env:Z}"
                ),
                Ref(Input("api-key"), "${input:api-key}"),
            ]
        );
        assert_eq!(
            parse("${workspaceFolder}${/}${userHome}${pathSeparator}${workspaceFolderBasename}"),
            [
                Ref(Predefined(WorkspaceFolder), "${workspaceFolder}"),
                Ref(Predefined(PathSeparator), "${/}"),
                Ref(Predefined(UserHome), "${userHome}"),
                Ref(Predefined(PathSeparator), "${pathSeparator}"),
                Ref(
                    Predefined(WorkspaceFolderBasename),
                    "${workspaceFolderBasename}"
                ),
            ]
        );
    }

    #[test]
    fn editor_only_references_are_unsupported() {
        for (text, inner) in [
            ("${config:editor.tabSize}", "config:editor.tabSize"),
            ("${command:pick}", "command:pick"),
            ("${}", ""),
            ("${:-x}", ":-x"),
            ("${env:}", "env:"),
            ("${input:a:-b}", "input:a:-b"),
        ] {
            assert_eq!(parse(text), [Ref(Unsupported(inner), text)], "{text}");
        }
    }

    #[test]
    fn an_unclosed_reference_is_plain_text() {
        assert_eq!(parse("a${X"), [Text("a${X")]);
        assert_eq!(parse("$X ${"), [Text("$X ${")]);
        assert_eq!(parse(""), []);
    }

    #[test]
    fn an_input_s_variable_is_its_id_in_upper_case() {
        assert_eq!(input_variable("api-key"), "MCP_RUNTIME_INPUT_API_KEY");
        assert_eq!(input_variable("gh.token_2"), "MCP_RUNTIME_INPUT_GH_TOKEN_2");
    }
}
