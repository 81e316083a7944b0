//! Which configuration file a command reads or edits, and loading it.
//!
//! 1. `--config FILE` is always that file; `--demo` is always the built-in demo.
//! 2. Otherwise the file is the one Codex reads: `$CODEX_HOME/config.toml` when
//!    `CODEX_HOME` is set and not empty, else `~/.codex/config.toml`. As in Codex,
//!    `CODEX_HOME` replaces `~/.codex` rather than adding to it: when it is set,
//!    `~/.codex/config.toml` is never read.
//! 3. When that file does not exist, the commands that start servers (`tools`,
//!    `servers`, `call`, `bench`) run the demo, `list` and `get` find no server, and
//!    `add` creates it. An existing file is always used, even one without
//!    `[mcp_servers]`: it lists nothing, and the demo is not run instead (a command
//!    that starts servers says so on stderr).
//! 4. Whatever loads a configuration prints its warnings on stderr, one
//!    `mcp-runtime: warning: …` line each, before anything else happens; stdout stays
//!    free for the output (and its JSON).
//! 5. `list` and `get` read a host's JSON file without expanding its variables, as
//!    `import` does: the value of a `${TOKEN}` in `args` or `url` is never shown.

use std::{
    fmt::Display,
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::Context;
use mcp_runtime::Config;

use crate::demo::demo_config;

/// Where a configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// This file, which was read.
    File(PathBuf),
    /// The built-in demo servers.
    Demo,
    /// No file: the default file (when there is one) does not exist.
    Missing(Option<PathBuf>),
}

/// A configuration and where it came from.
pub struct Loaded {
    pub config: Config,
    pub origin: Origin,
}

/// The file Codex reads: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`;
/// `None` when neither `CODEX_HOME` nor a home directory is known.
pub fn codex_config_path() -> Option<PathBuf> {
    codex_config_path_from(
        std::env::var_os("CODEX_HOME").map(PathBuf::from),
        std::env::home_dir(),
    )
}

fn codex_config_path_from(codex_home: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    match codex_home {
        Some(codex_home) if !codex_home.as_os_str().is_empty() => {
            Some(codex_home.join("config.toml"))
        }
        _ => home
            .filter(|home| !home.as_os_str().is_empty())
            .map(|home| home.join(".codex").join("config.toml")),
    }
}

/// The configuration of a command that starts servers: `--config`, `--demo`, else the
/// default file when it exists, else the demo when `demo_fallback` holds.
pub fn read(config: Option<&Path>, demo: bool, demo_fallback: bool) -> anyhow::Result<Loaded> {
    read_with(config, demo, demo_fallback, Config::load)
}

/// The configuration `list` and `get` show: as [`read`] without the demo fallback
/// (no file, no server), and with every `${…}` of a host's JSON file kept as written
/// rather than expanded (invariant 5).
pub fn read_as_written(config: Option<&Path>, demo: bool) -> anyhow::Result<Loaded> {
    read_with(config, demo, false, Config::load_as_written)
}

fn read_with(
    config: Option<&Path>,
    demo: bool,
    demo_fallback: bool,
    load: fn(&Path) -> Result<Config, mcp_runtime::ConfigError>,
) -> anyhow::Result<Loaded> {
    if demo {
        return Ok(Loaded {
            config: demo_config()?,
            origin: Origin::Demo,
        });
    }
    let path = match config {
        Some(path) => path.to_owned(),
        None => match codex_config_path() {
            Some(path) if exists(&path)? => path,
            _ if demo_fallback => {
                return Ok(Loaded {
                    config: demo_config()?,
                    origin: Origin::Demo,
                });
            }
            missing => {
                return Ok(Loaded {
                    config: Config::default(),
                    origin: Origin::Missing(missing),
                });
            }
        },
    };
    let config = load(&path)?;
    print_warnings(&config.warnings);
    if demo_fallback && config.servers.is_empty() {
        // Otherwise an empty table would be all the user sees, where they may have
        // expected the demo of the README.
        print_warnings(&[format!(
            "`{}` configures no server (add one with `mcp-runtime add`, or pass `--demo` for the built-in demo servers)",
            path.display()
        )]);
    }
    Ok(Loaded {
        config,
        origin: Origin::File(path),
    })
}

/// The file `add` and `remove` edit: `--config`, else the default file (which `add`
/// creates when it does not exist).
pub fn edit_target(config: Option<&Path>) -> anyhow::Result<PathBuf> {
    match config {
        Some(path) => Ok(path.to_owned()),
        None => codex_config_path().context(
            "no home directory is known to find `~/.codex/config.toml` (set `CODEX_HOME` or pass `--config FILE`)",
        ),
    }
}

/// Whether `path` exists; an error when that cannot be told (a directory on the way
/// cannot be read), rather than silently running the demo instead of the user's file.
pub fn exists(path: &Path) -> anyhow::Result<bool> {
    path.try_exists()
        .with_context(|| format!("cannot tell whether `{}` exists", path.display()))
}

/// Prints one `mcp-runtime: warning: …` line per warning on stderr.
///
/// Written directly rather than logged: a warning is about the user's own file, like
/// an error, and stays visible whatever `MCP_RUNTIME_LOG` selects.
pub fn print_warnings<W: Display>(warnings: &[W]) {
    let text = warning_lines(warnings);
    if !text.is_empty() {
        // Nothing is left to tell the user if stderr itself is gone.
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}

fn warning_lines<W: Display>(warnings: &[W]) -> String {
    warnings
        .iter()
        .map(|warning| {
            let line = warning.to_string();
            format!(
                "mcp-runtime: warning: {}\n",
                crate::output::printable(&line).replace('\n', " ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_home_replaces_the_home_directory_s_codex_folder() {
        let path = |codex_home: Option<&str>, home: Option<&str>| {
            codex_config_path_from(codex_home.map(PathBuf::from), home.map(PathBuf::from))
        };
        assert_eq!(
            path(Some("/c"), Some("/h")),
            Some(PathBuf::from("/c/config.toml"))
        );
        assert_eq!(
            path(None, Some("/h")),
            Some(PathBuf::from("/h/.codex/config.toml"))
        );
        assert_eq!(
            path(Some(""), Some("/h")),
            Some(PathBuf::from("/h/.codex/config.toml")),
            "an empty `CODEX_HOME` is unset, as in Codex"
        );
        assert_eq!(path(None, None), None);
        assert_eq!(path(Some(""), Some("")), None);
    }

    #[test]
    fn each_warning_is_one_plain_line() {
        assert_eq!(
            warning_lines(&["a: [t] `k` is not used", "two\nlines\u{1b}[2J"]),
            "mcp-runtime: warning: a: [t] `k` is not used\nmcp-runtime: warning: two lines\\u{1b}[2J\n"
        );
        assert_eq!(warning_lines::<&str>(&[]), "");
    }
}
