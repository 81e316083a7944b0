//! The server side: a request's captured authority, sandboxed commands, and things
//! bound to the authority that created them.

use std::{
    collections::HashMap,
    ffi::{OsStr, OsString},
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::{Map, Value, value::RawValue};

use crate::{
    authority::error::AuthorityError,
    sandbox_metadata::{
        SANDBOX_LAUNCHER_KEY, SANDBOX_STATE_KEY, SANDBOX_STATE_META_KEY, SandboxLauncher,
        SandboxState,
    },
};

/// What a server may do when the host supplied no launcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Unsandboxed {
    /// Fail closed: refuse to run the command. The default.
    #[default]
    Refuse,
    /// The server's operator explicitly allowed running commands unsandboxed when no
    /// launcher is available. Set only from operator configuration, never from a
    /// request.
    AllowedByOperator,
}

/// The sandbox state and launcher a request carried: the authority of the call that
/// issued it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedAuthority {
    state: SandboxState,
    launcher: Option<PathBuf>,
}

impl CapturedAuthority {
    /// An authority from its parts. A launcher must be an absolute path.
    pub fn new(state: SandboxState, launcher: Option<PathBuf>) -> Result<Self, AuthorityError> {
        if let Some(path) = &launcher
            && !path.is_absolute()
        {
            return Err(AuthorityError::RelativeLauncher {
                path: path.display().to_string(),
            });
        }
        Ok(Self { state, launcher })
    }

    /// Captures the authority from the exact JSON text of a request's `_meta`, keeping
    /// the state byte for byte. `Ok(None)` when the request carries no state.
    ///
    /// `codex/sandbox-state` is preferred; the deprecated `codex/sandbox-state-meta`
    /// alone is accepted; both present with different texts is an error, as is a
    /// `null` state or launcher.
    pub fn from_meta_json(meta: &str) -> Result<Option<Self>, AuthorityError> {
        let meta: HashMap<String, &RawValue> =
            serde_json::from_str(meta).map_err(|error| AuthorityError::Malformed {
                key: "_meta",
                message: error.to_string(),
            })?;
        let state = match (
            meta.get(SANDBOX_STATE_KEY),
            meta.get(SANDBOX_STATE_META_KEY),
        ) {
            (Some(state), Some(copy)) if state.get() != copy.get() => {
                return Err(AuthorityError::MismatchedCopies);
            }
            (Some(state), _) | (None, Some(state)) => state.get(),
            (None, None) => return Ok(None),
        };
        let launcher = meta
            .get(SANDBOX_LAUNCHER_KEY)
            .map(|launcher| parse_launcher(serde_json::from_str(launcher.get())))
            .transpose()?;
        Self::new(parse_state(state)?, launcher).map(Some)
    }

    /// Captures the authority from a parsed `_meta`, as rmcp hands it to a request
    /// handler, with the same rules as [`Self::from_meta_json`] (the two copies are
    /// compared as values).
    ///
    /// The state text is rebuilt from the parsed value, so it is the host's only as far
    /// as a `serde_json::Value` keeps it: key order survives, but escapes come out
    /// decoded and a number that does not fit an `f64` (such as
    /// `123456789012345678901234567890`) comes out rounded — a different value. Use
    /// [`Self::from_meta_json`] on the raw request text when the policy may hold such
    /// numbers.
    pub fn from_meta(meta: &Map<String, Value>) -> Result<Option<Self>, AuthorityError> {
        let state = match (
            meta.get(SANDBOX_STATE_KEY),
            meta.get(SANDBOX_STATE_META_KEY),
        ) {
            (Some(state), Some(copy)) if state != copy => {
                return Err(AuthorityError::MismatchedCopies);
            }
            (Some(state), _) | (None, Some(state)) => state,
            (None, None) => return Ok(None),
        };
        let launcher = meta
            .get(SANDBOX_LAUNCHER_KEY)
            .map(|launcher| parse_launcher(serde_json::from_value(launcher.clone())))
            .transpose()?;
        Self::new(parse_state(&state.to_string())?, launcher).map(Some)
    }

    /// The sandbox state.
    pub fn state(&self) -> &SandboxState {
        &self.state
    }

    /// The Codex CLI to run commands with, when the host supplied one.
    pub fn launcher(&self) -> Option<&Path> {
        self.launcher.as_deref()
    }

    /// The argv that runs `program` with `args` under this authority:
    /// `<launcher> sandbox --sandbox-state-json <state> -- <program> <args…>`, the state
    /// as one argument, exactly as the host sent it.
    ///
    /// Without a launcher this fails closed ([`AuthorityError::NoLauncher`]) unless
    /// `unsandboxed` is [`Unsandboxed::AllowedByOperator`], in which case the argv is
    /// `program` and `args` alone. `PATH` is never searched for a launcher.
    pub fn argv(
        &self,
        program: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = impl AsRef<OsStr>>,
        unsandboxed: Unsandboxed,
    ) -> Result<Vec<OsString>, AuthorityError> {
        let command = std::iter::once(program.as_ref().to_owned())
            .chain(args.into_iter().map(|arg| arg.as_ref().to_owned()));
        match (&self.launcher, unsandboxed) {
            (Some(launcher), _) => Ok([
                launcher.as_os_str().to_owned(),
                "sandbox".into(),
                "--sandbox-state-json".into(),
                self.state.as_json().into(),
                "--".into(),
            ]
            .into_iter()
            .chain(command)
            .collect()),
            (None, Unsandboxed::AllowedByOperator) => {
                tracing::warn!(
                    "no sandbox launcher supplied; running unsandboxed as the operator allowed"
                );
                Ok(command.collect())
            }
            (None, Unsandboxed::Refuse) => Err(AuthorityError::NoLauncher),
        }
    }

    /// [`Self::argv`] as a [`Command`], ready for its stdio and environment to be set.
    pub fn command(
        &self,
        program: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = impl AsRef<OsStr>>,
        unsandboxed: Unsandboxed,
    ) -> Result<Command, AuthorityError> {
        let argv = self.argv(program, args, unsandboxed)?;
        let (program, args) = argv.split_first().expect("argv holds at least the program");
        let mut command = Command::new(program);
        command.args(args);
        Ok(command)
    }
}

fn parse_state(text: &str) -> Result<SandboxState, AuthorityError> {
    SandboxState::from_json(text).map_err(|error| AuthorityError::Malformed {
        key: SANDBOX_STATE_KEY,
        message: error.to_string(),
    })
}

fn parse_launcher(
    launcher: Result<SandboxLauncher, serde_json::Error>,
) -> Result<PathBuf, AuthorityError> {
    launcher
        .map(|launcher| PathBuf::from(launcher.codex_executable))
        .map_err(|error| AuthorityError::Malformed {
            key: SANDBOX_LAUNCHER_KEY,
            message: error.to_string(),
        })
}

/// A value created under one authority — a long-lived subprocess, a cached result —
/// that is handed out again only under that same authority.
#[derive(Debug)]
pub struct AuthorityBound<T> {
    authority: CapturedAuthority,
    value: T,
}

impl<T> AuthorityBound<T> {
    /// Binds `value` to the authority it was created under.
    pub fn new(authority: CapturedAuthority, value: T) -> Self {
        Self { authority, value }
    }

    /// The authority the value was created under.
    pub fn authority(&self) -> &CapturedAuthority {
        &self.authority
    }

    /// The value, if `current` (the authority of the call asking for it) is the one it
    /// was created under.
    pub fn get(&self, current: &CapturedAuthority) -> Result<&T, AuthorityError> {
        if *current == self.authority {
            Ok(&self.value)
        } else {
            Err(AuthorityError::Changed)
        }
    }

    /// [`Self::get`], mutably.
    pub fn get_mut(&mut self, current: &CapturedAuthority) -> Result<&mut T, AuthorityError> {
        if *current == self.authority {
            Ok(&mut self.value)
        } else {
            Err(AuthorityError::Changed)
        }
    }

    /// Takes the value out, for teardown, whatever the current authority.
    pub fn into_inner(self) -> T {
        self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATE: &str = r#"{"sandbox_policy":{"type":"workspace-write","writable_roots":["/w"]},"future_field":[1,2]}"#;

    fn meta(entries: &[(&str, &str)]) -> String {
        let body: Vec<String> = entries
            .iter()
            .map(|(k, v)| format!("\"{k}\":{v}"))
            .collect();
        format!("{{{}}}", body.join(","))
    }

    #[test]
    fn the_new_name_is_preferred_and_the_state_kept_exactly() {
        let spaced = "{ \"b\" : 1 , \"a\":\"\\u00e9\", \"n\": 123456789012345678901234567890 }";
        let json = meta(&[
            (SANDBOX_STATE_KEY, spaced),
            (SANDBOX_STATE_META_KEY, spaced),
            (SANDBOX_LAUNCHER_KEY, r#"{"codexExecutable":"/opt/codex"}"#),
        ]);
        let authority = CapturedAuthority::from_meta_json(&json).unwrap().unwrap();
        assert_eq!(authority.state().as_json(), spaced);
        assert_eq!(authority.launcher(), Some(Path::new("/opt/codex")));
    }

    #[test]
    fn the_deprecated_name_alone_is_accepted() {
        let json = meta(&[(SANDBOX_STATE_META_KEY, STATE)]);
        let authority = CapturedAuthority::from_meta_json(&json).unwrap().unwrap();
        assert_eq!(authority.state().as_json(), STATE);
        assert_eq!(authority.launcher(), None);
        let parsed: Map<String, Value> = serde_json::from_str(&json).unwrap();
        assert_eq!(
            CapturedAuthority::from_meta(&parsed)
                .unwrap()
                .unwrap()
                .state()
                .as_json(),
            STATE
        );
    }

    #[test]
    fn differing_copies_are_rejected() {
        let json = meta(&[(SANDBOX_STATE_KEY, STATE), (SANDBOX_STATE_META_KEY, "{}")]);
        assert_eq!(
            CapturedAuthority::from_meta_json(&json).unwrap_err(),
            AuthorityError::MismatchedCopies
        );
        let parsed: Map<String, Value> = serde_json::from_str(&json).unwrap();
        assert_eq!(
            CapturedAuthority::from_meta(&parsed).unwrap_err(),
            AuthorityError::MismatchedCopies
        );
    }

    #[test]
    fn both_parsers_agree_on_null_and_presence() {
        let parse_both = |json: &str| {
            let parsed: Map<String, Value> = serde_json::from_str(json).unwrap();
            (
                CapturedAuthority::from_meta_json(json),
                CapturedAuthority::from_meta(&parsed),
            )
        };
        // A null state is present and differs from its copy.
        let (raw, parsed) = parse_both(&meta(&[
            (SANDBOX_STATE_KEY, "null"),
            (SANDBOX_STATE_META_KEY, STATE),
        ]));
        assert_eq!(raw.unwrap_err(), AuthorityError::MismatchedCopies);
        assert_eq!(parsed.unwrap_err(), AuthorityError::MismatchedCopies);
        // A null state alone is malformed, not absent.
        for result in <[_; 2]>::from(parse_both(&meta(&[(SANDBOX_STATE_KEY, "null")]))) {
            assert!(matches!(
                result.unwrap_err(),
                AuthorityError::Malformed {
                    key: SANDBOX_STATE_KEY,
                    ..
                }
            ));
        }
        // A null launcher is malformed, not absent.
        let json = meta(&[(SANDBOX_STATE_KEY, STATE), (SANDBOX_LAUNCHER_KEY, "null")]);
        for result in <[_; 2]>::from(parse_both(&json)) {
            assert!(matches!(
                result.unwrap_err(),
                AuthorityError::Malformed {
                    key: SANDBOX_LAUNCHER_KEY,
                    ..
                }
            ));
        }
    }

    #[test]
    fn no_state_is_no_authority() {
        assert_eq!(
            CapturedAuthority::from_meta_json("{\"progressToken\":1}").unwrap(),
            None
        );
        assert_eq!(CapturedAuthority::from_meta(&Map::new()).unwrap(), None);
    }

    #[test]
    fn a_relative_or_malformed_launcher_is_rejected() {
        let json = meta(&[
            (SANDBOX_STATE_KEY, STATE),
            (SANDBOX_LAUNCHER_KEY, r#"{"codexExecutable":"bin/codex"}"#),
        ]);
        assert_eq!(
            CapturedAuthority::from_meta_json(&json)
                .unwrap_err()
                .to_string(),
            "the sandbox launcher `bin/codex` is not an absolute path"
        );
        let json = meta(&[
            (SANDBOX_STATE_KEY, STATE),
            (SANDBOX_LAUNCHER_KEY, "\"/opt/codex\""),
        ]);
        assert!(matches!(
            CapturedAuthority::from_meta_json(&json).unwrap_err(),
            AuthorityError::Malformed {
                key: SANDBOX_LAUNCHER_KEY,
                ..
            }
        ));
    }

    #[test]
    fn the_sandboxed_argv_passes_the_state_as_one_argument() {
        let state = SandboxState::from_json(STATE).unwrap();
        let authority = CapturedAuthority::new(state, Some("/opt/codex".into())).unwrap();
        let argv = authority
            .argv("ls", ["-la", "/w"], Unsandboxed::Refuse)
            .unwrap();
        assert_eq!(
            argv,
            [
                "/opt/codex",
                "sandbox",
                "--sandbox-state-json",
                STATE,
                "--",
                "ls",
                "-la",
                "/w"
            ]
        );
    }

    #[test]
    fn without_a_launcher_it_fails_closed_unless_the_operator_allows() {
        let state = SandboxState::from_json(STATE).unwrap();
        let authority = CapturedAuthority::new(state, None).unwrap();
        let error = authority
            .argv("ls", ["/"], Unsandboxed::Refuse)
            .unwrap_err();
        assert_eq!(error, AuthorityError::NoLauncher);
        assert!(
            error
                .to_string()
                .contains("the host supplied no sandbox launcher")
        );
        assert_eq!(
            authority
                .argv("ls", ["/"], Unsandboxed::AllowedByOperator)
                .unwrap(),
            ["ls", "/"]
        );
    }

    #[test]
    fn a_bound_value_is_refused_under_a_changed_authority() {
        let state = |text: &str| SandboxState::from_json(text).unwrap();
        let created = CapturedAuthority::new(state(STATE), Some("/opt/codex".into())).unwrap();
        let mut bound = AuthorityBound::new(created.clone(), vec![1]);
        assert_eq!(bound.get(&created).unwrap(), &[1]);
        bound.get_mut(&created).unwrap().push(2);

        let other_state = CapturedAuthority::new(state("{}"), Some("/opt/codex".into())).unwrap();
        assert_eq!(
            bound.get(&other_state).unwrap_err(),
            AuthorityError::Changed
        );
        let other_launcher =
            CapturedAuthority::new(state(STATE), Some("/usr/bin/codex".into())).unwrap();
        assert_eq!(
            bound.get(&other_launcher).unwrap_err(),
            AuthorityError::Changed
        );
        let no_launcher = CapturedAuthority::new(state(STATE), None).unwrap();
        assert!(bound.get_mut(&no_launcher).is_err());
        assert_eq!(bound.into_inner(), [1, 2]);
    }
}
