//! `add` and `remove`: editing the `[mcp_servers]` of a configuration file in place.
//!
//! Like `codex mcp add` and `codex mcp remove` (Codex's `cli/src/mcp_cmd.rs` at commit
//! 727d896f was the reference followed), with these rules:
//!
//! 1. Only the server's own table changes. Everything else in the file (comments,
//!    blank lines, key order, quoting, other tables) is kept byte for byte, because the
//!    file is edited as a document (`toml_edit`), never parsed and written back out.
//! 2. `add` of a name that exists replaces that server's table, in place, keeping the
//!    comment lines above its header (as Codex replaces the entry). `remove` of a name
//!    that does not exist changes nothing and exits 0, as in Codex.
//! 3. The edited text must load ([`mcp_runtime::Config::parse`]) before it is written:
//!    an edit that would leave the file with an error writes nothing.
//! 4. The file is replaced atomically (a temporary file in the same directory, then a
//!    rename), so a crash or a concurrent reader never sees half a file. An existing
//!    file keeps its permissions; a new one is created readable by its owner only,
//!    since `env` values are written into it. A symbolic link is followed: its target
//!    is replaced, the link stays.
//! 5. No value given with `--env` is ever printed, in a message or in output.

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::{Context, bail};
use mcp_runtime::{Config, config::MAX_SERVER_NAME_BYTES, redact};
use toml_edit::{Array, DocumentMut, Item, Table, Value, value};

use crate::config_file::{exists, print_warnings};

/// How the added server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A command speaking MCP on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Literal variables, in the order given; a name given twice keeps its last value.
        env: Vec<(String, String)>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        url: String,
        bearer_token_env_var: Option<String>,
    },
}

/// `add NAME …`.
#[derive(Debug)]
pub struct Add {
    pub path: PathBuf,
    pub name: String,
    pub transport: Transport,
}

/// `remove NAME`.
#[derive(Debug)]
pub struct Remove {
    pub path: PathBuf,
    pub name: String,
}

/// Checks `name` as the loader does: `[A-Za-z0-9_-]`, at most
/// [`MAX_SERVER_NAME_BYTES`] bytes. The message shows the name on one line, its
/// control characters escaped.
pub fn check_name(name: &str) -> anyhow::Result<()> {
    if name.len() > MAX_SERVER_NAME_BYTES {
        let start: String = name.chars().take(32).collect();
        let shown = redact::one_line(&start);
        bail!(
            "server name `{shown}…` is {} bytes long, more than the {MAX_SERVER_NAME_BYTES} allowed (use a shorter name)",
            name.len()
        );
    }
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        bail!(
            "server name `{}` may only contain letters, digits, `_` and `-`",
            redact::one_line(name)
        );
    }
    Ok(())
}

/// Splits each `--env KEY=VALUE` at its first `=`. A message names an entry by its
/// position, never by its text, which may be a secret.
pub fn parse_env(entries: Vec<String>) -> anyhow::Result<Vec<(String, String)>> {
    entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| {
            let number = index + 1;
            match entry.split_once('=') {
                Some(("", _)) => {
                    bail!("`--env` number {number} has no name before `=` (write `KEY=VALUE`)")
                }
                Some((key, value)) => Ok((key.to_owned(), value.to_owned())),
                None => bail!("`--env` number {number} has no `=` (write `KEY=VALUE`)"),
            }
        })
        .collect()
}

impl Add {
    /// Adds or replaces the server; the line to print on success.
    pub fn apply(self) -> anyhow::Result<String> {
        let target = Target::new(&self.path)?;
        let text = target.read()?.unwrap_or_default();
        let (edited, replaced) = add_to(&text, &self.path, &self.name, &self.transport)?;
        let config = check(&edited, &self.path, "adding", &self.name)?;
        target.write(&edited)?;
        print_warnings(&config.warnings);
        Ok(if replaced {
            format!(
                "Replaced server `{}` in `{}`.\n",
                self.name,
                self.path.display()
            )
        } else {
            format!(
                "Added server `{}` to `{}`.\n",
                self.name,
                self.path.display()
            )
        })
    }
}

/// What `remove` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Removal {
    /// The line to print on stdout.
    Removed(String),
    /// The warning to print on stderr: nothing was removed.
    NotFound(String),
}

impl Remove {
    pub fn apply(self) -> anyhow::Result<Removal> {
        let target = Target::new(&self.path)?;
        let not_found = || {
            Removal::NotFound(format!(
                "no server `{}` in `{}`; nothing was removed",
                self.name,
                self.path.display()
            ))
        };
        let Some(text) = target.read()? else {
            return Ok(not_found());
        };
        let Some(edited) = remove_from(&text, &self.path, &self.name)? else {
            return Ok(not_found());
        };
        let config = check(&edited, &self.path, "removing", &self.name)?;
        target.write(&edited)?;
        print_warnings(&config.warnings);
        Ok(Removal::Removed(format!(
            "Removed server `{}` from `{}`.\n",
            self.name,
            self.path.display()
        )))
    }
}

/// The TOML document of `text`, or why it is not one.
fn document(text: &str, path: &Path) -> anyhow::Result<DocumentMut> {
    text.parse::<DocumentMut>().map_err(|error| {
        if text.trim_start().starts_with('{') {
            return anyhow::anyhow!(
                "`{}` holds JSON, and `add` and `remove` edit TOML files only (print it as TOML with `mcp-runtime import {}`, or edit it by hand)",
                path.display(),
                path.display()
            );
        }
        // The loader's message gives line and column the same way as for every
        // other command; the editor's own is the fallback.
        match Config::parse(text, path) {
            Err(load_error @ mcp_runtime::ConfigError::Syntax { .. }) => {
                anyhow::Error::from(load_error)
            }
            _ => anyhow::anyhow!(
                "`{}` cannot be edited as TOML: {} (`add` and `remove` edit TOML files only; edit this one by hand)",
                path.display(),
                error.message().trim_end()
            ),
        }
    })
}

/// `text` with server `name` added or replaced, and whether it replaced one.
fn add_to(
    text: &str,
    path: &Path,
    name: &str,
    transport: &Transport,
) -> anyhow::Result<(String, bool)> {
    let mut document = document(text, path)?;
    let root = document.as_table_mut();
    if !root.contains_key("mcp_servers") {
        let mut servers = Table::new();
        // Only the `[mcp_servers.NAME]` header is written, as people write it.
        servers.set_implicit(true);
        root.insert("mcp_servers", Item::Table(servers));
    }
    let item = &mut root["mcp_servers"];
    let inline = item.is_inline_table();
    let Some(servers) = item.as_table_like_mut() else {
        bail!(
            "`{}`: `mcp_servers` is not a table (write servers as `[mcp_servers.NAME]` tables)",
            path.display()
        );
    };
    let mut table = server_table(transport);
    let replaced = match servers.get(name) {
        Some(old) => {
            if let Some(old) = old.as_table() {
                // In place, under the comments that introduced it.
                if let Some(position) = old.position() {
                    table.set_position(position);
                }
                *table.decor_mut() = old.decor().clone();
            }
            true
        }
        None => false,
    };
    let table = if inline {
        Item::Value(Value::InlineTable(table.into_inline_table()))
    } else {
        Item::Table(table)
    };
    servers.insert(name, table);
    Ok((document.to_string(), replaced))
}

/// `text` without server `name`; `None` when it has no such server.
fn remove_from(text: &str, path: &Path, name: &str) -> anyhow::Result<Option<String>> {
    let mut document = document(text, path)?;
    let Some(servers) = document
        .get_mut("mcp_servers")
        .and_then(Item::as_table_like_mut)
    else {
        return Ok(None);
    };
    if servers.remove(name).is_none() {
        return Ok(None);
    }
    Ok(Some(document.to_string()))
}

/// The new server's table, keys in the order Codex writes them.
fn server_table(transport: &Transport) -> Table {
    let mut table = Table::new();
    match transport {
        Transport::Stdio { command, args, env } => {
            table.insert("command", value(command.as_str()));
            if !args.is_empty() {
                table.insert(
                    "args",
                    value(args.iter().map(String::as_str).collect::<Array>()),
                );
            }
            if !env.is_empty() {
                let mut variables = Table::new();
                for (key, variable) in env {
                    variables.insert(key, value(variable.as_str()));
                }
                table.insert("env", Item::Table(variables));
            }
        }
        Transport::Http {
            url,
            bearer_token_env_var,
        } => {
            table.insert("url", value(url.as_str()));
            if let Some(variable) = bearer_token_env_var {
                table.insert("bearer_token_env_var", value(variable.as_str()));
            }
        }
    }
    table
}

/// The edited text loaded; an error saying nothing was written when it does not.
fn check(edited: &str, path: &Path, doing: &str, name: &str) -> anyhow::Result<Config> {
    Config::parse(edited, path).with_context(|| {
        format!("{doing} server `{name}` would leave the file with errors, so nothing was written")
    })
}

/// The file being edited: the path as given, and the file actually replaced (the
/// target of a symbolic link).
struct Target {
    real: PathBuf,
}

impl Target {
    fn new(path: &Path) -> anyhow::Result<Self> {
        let real = match std::fs::canonicalize(path) {
            Ok(real) => real,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => path.to_owned(),
            Err(error) => {
                return Err(error).with_context(|| format!("cannot open `{}`", path.display()));
            }
        };
        Ok(Self { real })
    }

    /// The file's text; `None` when it does not exist.
    fn read(&self) -> anyhow::Result<Option<String>> {
        if !exists(&self.real)? {
            return Ok(None);
        }
        std::fs::read_to_string(&self.real)
            .map(Some)
            .with_context(|| format!("cannot read config file `{}`", self.real.display()))
    }

    /// Replaces the file with `text` atomically, creating it (and its directory).
    fn write(&self, text: &str) -> anyhow::Result<()> {
        let path = &self.real;
        let directory = match path.parent() {
            Some(directory) if !directory.as_os_str().is_empty() => directory,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(directory)
            .with_context(|| format!("cannot create directory `{}`", directory.display()))?;
        let permissions = match std::fs::metadata(path) {
            Ok(metadata) => Some(metadata.permissions()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => {
                return Err(error).with_context(|| format!("cannot open `{}`", path.display()));
            }
        };
        let cannot_write = || format!("cannot write `{}`", path.display());
        // Created readable by its owner only, as a new file stays.
        let mut temporary = tempfile::Builder::new()
            .prefix(".mcp-runtime-edit-")
            .tempfile_in(directory)
            .with_context(cannot_write)?;
        temporary
            .write_all(text.as_bytes())
            .and_then(|()| temporary.as_file().sync_all())
            .with_context(cannot_write)?;
        if let Some(permissions) = permissions {
            temporary
                .as_file()
                .set_permissions(permissions)
                .with_context(cannot_write)?;
        }
        temporary
            .persist(path)
            .map_err(|error| error.error)
            .with_context(cannot_write)?;
        // The rename reaches the disk with its directory; failing that, the edit is
        // still made, only not yet durable.
        if let Ok(directory) = std::fs::File::open(directory) {
            let _ = directory.sync_all();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(command: &str, args: &[&str], env: &[(&str, &str)]) -> Transport {
        Transport::Stdio {
            command: command.into(),
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env: env
                .iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                .collect(),
        }
    }

    fn add(text: &str, name: &str, transport: &Transport) -> (String, bool) {
        add_to(text, Path::new("c.toml"), name, transport).unwrap()
    }

    #[test]
    fn a_server_is_added_after_the_last_server_and_nothing_else_moves() {
        let text = "# top\nmodel = \"x\"   # trailing\n\n[mcp_servers.a]\ncommand = 'a'  # keep\n\n# profiles below\n[profiles.p]\nmodel = \"y\"\n";
        let (edited, replaced) = add(text, "b", &stdio("b", &["-v"], &[]));
        assert!(!replaced);
        assert_eq!(
            edited,
            "# top\nmodel = \"x\"   # trailing\n\n[mcp_servers.a]\ncommand = 'a'  # keep\n\n[mcp_servers.b]\ncommand = \"b\"\nargs = [\"-v\"]\n\n# profiles below\n[profiles.p]\nmodel = \"y\"\n"
        );
        let removed = remove_from(&edited, Path::new("c.toml"), "b").unwrap();
        assert_eq!(removed.as_deref(), Some(text), "remove undoes add exactly");
    }

    #[test]
    fn a_file_without_servers_gets_only_the_server_s_own_header() {
        let (edited, _) = add(
            "model = \"x\"\n",
            "web",
            &Transport::Http {
                url: "http://h/mcp".into(),
                bearer_token_env_var: Some("TOKEN".into()),
            },
        );
        assert_eq!(
            edited,
            "model = \"x\"\n\n[mcp_servers.web]\nurl = \"http://h/mcp\"\nbearer_token_env_var = \"TOKEN\"\n"
        );
        let (edited, _) = add("", "s", &stdio("run", &[], &[("K", "v"), ("A.B", "w")]));
        assert_eq!(
            edited,
            "[mcp_servers.s]\ncommand = \"run\"\n\n[mcp_servers.s.env]\nK = \"v\"\n\"A.B\" = \"w\"\n"
        );
    }

    #[test]
    fn replacing_a_server_keeps_its_place_and_the_comment_above_it() {
        let text = "[mcp_servers.a]\ncommand = \"a\"\n\n# the b server\n[mcp_servers.b]\ncommand = \"old\"\nenabled_tools = [\"x\"]\n\n[mcp_servers.b.env]\nK = \"v\"\n\n[mcp_servers.c]\ncommand = \"c\"\n";
        let (edited, replaced) = add(text, "b", &stdio("new", &[], &[]));
        assert!(replaced);
        assert_eq!(
            edited,
            "[mcp_servers.a]\ncommand = \"a\"\n\n# the b server\n[mcp_servers.b]\ncommand = \"new\"\n\n[mcp_servers.c]\ncommand = \"c\"\n"
        );
    }

    #[test]
    fn inline_and_dotted_server_tables_are_edited_in_their_own_form() {
        let (edited, _) = add(
            "mcp_servers = { a = { command = \"a\" } }\n",
            "b",
            &stdio("b", &[], &[]),
        );
        assert_eq!(
            Config::parse(&edited, Path::new("c.toml"))
                .unwrap()
                .servers
                .keys()
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        // The space before `,` is `a`'s own, kept as it was written.
        assert_eq!(
            edited,
            "mcp_servers = { a = { command = \"a\" } , b = { command = \"b\" } }\n"
        );

        let text = "[mcp_servers]\na.command = \"a\"\nb.command = \"b\"\n";
        let removed = remove_from(text, Path::new("c.toml"), "a").unwrap();
        assert_eq!(
            removed.as_deref(),
            Some("[mcp_servers]\nb.command = \"b\"\n")
        );
    }

    #[test]
    fn removing_an_unknown_server_changes_nothing() {
        for text in ["", "model = 1\n", "[mcp_servers.a]\ncommand = \"a\"\n"] {
            assert_eq!(remove_from(text, Path::new("c.toml"), "b").unwrap(), None);
        }
    }

    #[test]
    fn names_are_checked_as_the_loader_checks_them() {
        check_name("good_name-2").unwrap();
        for bad in ["", "a.b", "a b", "ü"] {
            assert!(
                check_name(bad)
                    .unwrap_err()
                    .to_string()
                    .contains("may only contain letters, digits, `_` and `-`"),
                "{bad:?}"
            );
        }
        check_name(&"n".repeat(MAX_SERVER_NAME_BYTES)).unwrap();
        let error = check_name(&"n".repeat(MAX_SERVER_NAME_BYTES + 1)).unwrap_err();
        assert!(error.to_string().contains("257 bytes long"), "{error}");
    }

    #[test]
    fn env_entries_split_at_the_first_equals_and_errors_never_show_the_entry() {
        assert_eq!(
            parse_env(vec!["A=1".into(), "B=x=y".into(), "C=".into()]).unwrap(),
            [
                ("A".to_owned(), "1".to_owned()),
                ("B".to_owned(), "x=y".to_owned()),
                ("C".to_owned(), String::new())
            ]
        );
        for (bad, expected) in [
            (
                "secret-token",
                "`--env` number 2 has no `=` (write `KEY=VALUE`)",
            ),
            (
                "=secret-token",
                "`--env` number 2 has no name before `=` (write `KEY=VALUE`)",
            ),
        ] {
            let error = parse_env(vec!["A=1".into(), bad.into()]).unwrap_err();
            assert_eq!(error.to_string(), expected);
        }
    }
}
