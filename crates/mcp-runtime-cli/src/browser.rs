//! Showing a login's authorization URL: the CLI's [`OpenUrl`].
//!
//! As other command-line tools do, the program named by `$BROWSER` opens it when that
//! is set: a `:`-separated list of commands, each tried in turn, where `%s` stands for
//! the URL (appended when absent) and a command is split on white space. Otherwise
//! the system's opener (`open` on macOS, `xdg-open` elsewhere) opens it. The URL is
//! also printed on stderr, always, so a person on a machine without a browser (or
//! with `--no-browser`) can open it elsewhere.
//!
//! Invariants:
//! 1. The URL is passed as one argument, never through a shell.
//! 2. An opener is started and not waited for beyond its start: a browser that stays
//!    open does not hold the login up. Its output is discarded.

use std::process::{Command, Stdio};

use mcp_runtime::login::OpenUrl;

/// The CLI's way of showing the authorization URL.
#[derive(Debug, Clone, Default)]
pub(crate) struct Browser {
    /// Whether to print the URL only (`--no-browser`).
    pub(crate) print_only: bool,
    /// `$BROWSER`, as read when the command started.
    pub(crate) browser_variable: Option<String>,
}

impl Browser {
    /// The opener for this process: `$BROWSER` from the environment.
    pub(crate) fn from_env(print_only: bool) -> Self {
        Self {
            print_only,
            browser_variable: std::env::var("BROWSER")
                .ok()
                .filter(|value| !value.is_empty()),
        }
    }

    /// The commands to try for `url`, in order: each a program and its arguments.
    fn commands(&self, url: &str) -> Vec<Vec<String>> {
        if self.print_only {
            return Vec::new();
        }
        match &self.browser_variable {
            Some(list) => list
                .split(':')
                .filter_map(|entry| {
                    let mut words: Vec<String> =
                        entry.split_whitespace().map(str::to_owned).collect();
                    if words.is_empty() {
                        return None;
                    }
                    if words.iter().any(|word| word.contains("%s")) {
                        for word in &mut words {
                            *word = word.replace("%s", url);
                        }
                    } else {
                        words.push(url.to_owned());
                    }
                    Some(words)
                })
                .collect(),
            None => {
                let opener = if cfg!(target_os = "macos") {
                    "open"
                } else {
                    "xdg-open"
                };
                vec![vec![opener.to_owned(), url.to_owned()]]
            }
        }
    }
}

impl Browser {
    /// Starts the first command of [`Browser::commands`] that starts; `None` when
    /// there is none to try.
    fn spawn_first(&self, url: &str) -> std::io::Result<Option<std::process::Child>> {
        let mut last = None;
        for command in self.commands(url) {
            let started = Command::new(&command[0])
                .args(&command[1..])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn();
            match started {
                Ok(child) => return Ok(Some(child)),
                Err(error) => last = Some(error),
            }
        }
        last.map_or(Ok(None), Err)
    }
}

impl Browser {
    /// Opens `url` in the browser, printing nothing (a server's link, which the
    /// person was shown and agreed to open).
    pub(crate) fn open_link(&self, url: &str) -> std::io::Result<()> {
        match self.spawn_first(url)? {
            Some(_) => Ok(()),
            None => Err(std::io::Error::other("no browser to open it with")),
        }
    }
}

impl OpenUrl for Browser {
    fn open(&self, url: &str) -> std::io::Result<()> {
        eprintln!("mcp-runtime: to log in, open this URL in a browser:\n  {url}");
        // The child is not waited for (invariant 2); it is reaped by the system when
        // this process exits.
        self.spawn_first(url).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn browser(variable: Option<&str>) -> Browser {
        Browser {
            print_only: false,
            browser_variable: variable.map(str::to_owned),
        }
    }

    #[test]
    fn browser_entries_are_tried_in_order_with_the_url_appended_or_substituted() {
        let url = "https://as.example/authorize?a=1&b=2";
        assert_eq!(
            browser(Some("firefox --new-tab:w3m %s::")).commands(url),
            [
                vec!["firefox".to_owned(), "--new-tab".to_owned(), url.to_owned()],
                vec!["w3m".to_owned(), url.to_owned()],
            ]
        );
    }

    #[test]
    fn without_browser_the_systems_opener_is_used_and_no_browser_opens_nothing() {
        let commands = browser(None).commands("u");
        assert_eq!(commands.len(), 1);
        assert_eq!(commands[0][1], "u");
        let print_only = Browser {
            print_only: true,
            ..browser(Some("firefox"))
        };
        assert!(print_only.commands("u").is_empty());
        assert!(print_only.open("u").is_ok());
    }

    #[test]
    fn the_url_reaches_the_program_as_one_argument_without_a_shell() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("argv");
        let script = dir.path().join("record");
        std::fs::write(
            &script,
            format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > {}\n", out.display()),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let url = "http://127.0.0.1:1/authorize?x=$(touch /tmp/no)&y=`id`";
        let mut child = browser(Some(script.to_str().unwrap()))
            .spawn_first(url)
            .unwrap()
            .expect("a command to run");
        assert!(child.wait().unwrap().success());
        let recorded = std::fs::read_to_string(&out).unwrap();
        assert_eq!(recorded, format!("{url}\n"));
    }
}
