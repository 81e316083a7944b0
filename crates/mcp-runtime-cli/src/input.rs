//! The grammar `--args` and `--sandbox-state` share: JSON text, `@FILE`, or `-` for
//! stdin.
//!
//! One command-line argument is limited by the kernel (128 KiB on Linux), so large
//! JSON comes from a file or stdin. The JSON is kept as the exact text given (only
//! surrounding whitespace goes), so numbers, key order and escapes reach the server
//! unchanged. `--sandbox-state` also takes a bare file path, its form before `@FILE`:
//! a value that does not start with `{` or `[` names a file.

use std::{fmt, io::Read, path::PathBuf};

use anyhow::{Context, anyhow, bail};
use mcp_runtime::SandboxState;
use serde_json::value::RawValue;

/// Where a flag's JSON comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    Text(String),
    File(PathBuf),
    Stdin,
}

/// A JSON-valued flag as given, before its file or stdin is read. Displays as the
/// flag and where its value comes from, for messages: `` `--args` file `a.json` ``.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonFlag {
    flag: &'static str,
    source: Source,
}

impl JsonFlag {
    /// `value` of `flag`: `-` is stdin, `@FILE` a file, anything else JSON text.
    pub fn new(flag: &'static str, value: String) -> Self {
        let source = if value == "-" {
            Source::Stdin
        } else if let Some(path) = value.strip_prefix('@') {
            Source::File(path.into())
        } else {
            Source::Text(value)
        };
        Self { flag, source }
    }

    /// Like [`JsonFlag::new`], but a value that is not JSON text (it does not start
    /// with `{` or `[`) is a file path too.
    pub fn with_bare_path(flag: &'static str, value: String) -> Self {
        let parsed = Self::new(flag, value);
        match parsed.source {
            Source::Text(text) if !text.trim_start().starts_with(['{', '[']) => Self {
                flag,
                source: Source::File(text.into()),
            },
            _ => parsed,
        }
    }

    /// Whether the value is read from stdin.
    pub fn reads_stdin(&self) -> bool {
        self.source == Source::Stdin
    }

    /// The JSON text, read from its file or from `stdin` when it says so.
    fn text(self, stdin: &mut dyn Read) -> anyhow::Result<String> {
        let described = self.to_string();
        let cannot_read = || format!("cannot read {described}");
        match self.source {
            Source::Text(text) => Ok(text),
            Source::File(path) => std::fs::read_to_string(path).with_context(cannot_read),
            Source::Stdin => {
                let mut text = String::new();
                stdin.read_to_string(&mut text).with_context(cannot_read)?;
                Ok(text)
            }
        }
    }

    /// `--args`: a JSON object, kept as the exact text given.
    pub fn object(self, stdin: &mut dyn Read) -> anyhow::Result<Box<RawValue>> {
        let described = self.to_string();
        let raw = RawValue::from_string(self.text(stdin)?)
            .map_err(|error| anyhow!("{described} is not valid JSON: {error}"))?;
        if !raw.get().starts_with('{') {
            bail!("{described} must be a JSON object, like '{{\"a\": 1}}'");
        }
        Ok(raw)
    }

    /// A JSON object, parsed (`prompt --args`).
    pub fn object_value(
        self,
        stdin: &mut dyn Read,
    ) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
        let described = self.to_string();
        match serde_json::from_str(self.object(stdin)?.get()) {
            Ok(serde_json::Value::Object(object)) => Ok(object),
            Ok(_) => bail!("{described} must be a JSON object, like '{{\"a\": 1}}'"),
            Err(error) => bail!("{described} is not valid JSON: {error}"),
        }
    }

    /// `--sandbox-state`: one JSON value, kept as the exact text given.
    pub fn sandbox_state(self, stdin: &mut dyn Read) -> anyhow::Result<SandboxState> {
        let described = self.to_string();
        SandboxState::from_json(self.text(stdin)?).with_context(|| format!("in {described}"))
    }
}

impl fmt::Display for JsonFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Source::Text(_) => write!(f, "`{}`", self.flag),
            Source::File(path) => write!(f, "`{}` file `{}`", self.flag, path.display()),
            Source::Stdin => write!(f, "`{}` from stdin", self.flag),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: &str, stdin: &str) -> anyhow::Result<String> {
        JsonFlag::new("--args", value.to_owned())
            .object(&mut stdin.as_bytes())
            .map(|raw| raw.get().to_owned())
    }

    fn message(result: anyhow::Result<impl fmt::Debug>) -> String {
        format!("{:#}", result.unwrap_err())
    }

    #[test]
    fn json_text_is_kept_exactly() {
        let text = r#" {"n": 123456789012345678901234567890, "s": "caf\u00e9"} "#;
        assert_eq!(args(text, "").unwrap(), text.trim());
    }

    #[test]
    fn at_file_reads_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, "{\"b\": 1.50}\n").unwrap();
        assert_eq!(
            args(&format!("@{}", path.display()), "").unwrap(),
            "{\"b\": 1.50}"
        );
    }

    #[test]
    fn a_dash_reads_stdin() {
        assert_eq!(args("-", "{\"c\": [1]}\n").unwrap(), "{\"c\": [1]}");
        assert!(JsonFlag::new("--args", "-".into()).reads_stdin());
        assert!(!JsonFlag::new("--args", "{}".into()).reads_stdin());
    }

    #[test]
    fn errors_name_the_flag_and_where_its_value_came_from() {
        assert_eq!(
            message(args("{", "")),
            "`--args` is not valid JSON: EOF while parsing an object at line 1 column 1"
        );
        assert_eq!(
            message(args("-", "[1]")),
            "`--args` from stdin must be a JSON object, like '{\"a\": 1}'"
        );
        assert_eq!(
            message(args("@/nonexistent/a.json", "")),
            "cannot read `--args` file `/nonexistent/a.json`: No such file or directory (os error 2)"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        std::fs::write(&path, "nope").unwrap();
        assert_eq!(
            message(args(&format!("@{}", path.display()), "")),
            format!(
                "`--args` file `{}` is not valid JSON: expected ident at line 1 column 2",
                path.display()
            )
        );
    }

    #[test]
    fn the_sandbox_state_also_takes_a_bare_file_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        std::fs::write(&path, "{\"mode\": \"ro\"}\n").unwrap();
        let state = |value: String| {
            JsonFlag::with_bare_path("--sandbox-state", value)
                .sandbox_state(&mut "[\"stdin\"]".as_bytes())
        };
        let bare = state(path.display().to_string()).unwrap();
        let at = state(format!("@{}", path.display())).unwrap();
        assert_eq!(bare.as_json(), "{\"mode\": \"ro\"}");
        assert_eq!(at, bare);
        assert_eq!(state("-".into()).unwrap().as_json(), "[\"stdin\"]");
        assert_eq!(state(" [2]".into()).unwrap().as_json(), "[2]");
        assert_eq!(
            message(state("null-file".into())),
            "cannot read `--sandbox-state` file `null-file`: No such file or directory (os error 2)"
        );
        assert_eq!(
            message(state("{x".into())),
            "in `--sandbox-state`: the sandbox state cannot be used: key must be a string at line 1 column 2"
        );
    }
}
