//! The credentials the runtime sends, masked in every text a server sends back.
//!
//! A server may echo what it was sent: an HTTP error page that quotes the request's
//! headers, a JSON-RPC error that quotes the token it refused, a challenge, a line on
//! stderr, a log message. Each credential the runtime sends (a bearer token, a header
//! marked sensitive, an OAuth access or refresh token, an OAuth client secret, a
//! credential passed to a local server in its environment) is registered here while
//! something that sends it lives; [`credentials`] masks every registered value in a
//! text.
//!
//! Invariants:
//! 1. A credential is registered before it is first sent, and stays registered while
//!    its [`Registered`] guard (or a clone of it) lives: a connection, its endpoint
//!    and its OAuth login hold the guards of what they send.
//! 2. The registry is the process's: a value is masked in the text of every server and
//!    of every runtime of the process, which can only mask more than needed.
//! 3. [`credentials`] replaces each occurrence of a registered value by `*****`, the
//!    longest values first, so that a value holding another is masked whole. A value
//!    is also masked in the form it takes inside a JSON string, when that differs.
//! 4. A value shorter than [`MIN_CREDENTIAL_CHARS`], or made of digits alone, is not
//!    registered: masking it would mask ordinary words and numbers (in JSON output,
//!    a number masked is no longer JSON), and it protects little.

use std::{
    borrow::Cow,
    collections::HashMap,
    sync::{
        Arc, RwLock,
        atomic::{AtomicUsize, Ordering},
    },
};

use super::MASK;

/// The fewest characters a registered credential has (invariant 4).
pub const MIN_CREDENTIAL_CHARS: usize = 8;

/// The registered values, each with the number of its guards alive.
static REGISTRY: RwLock<Registry> = RwLock::new(Registry {
    values: Vec::new(),
    counts: None,
});

/// How many values are registered: read without the lock, so that a process without
/// credentials pays nothing.
static REGISTERED: AtomicUsize = AtomicUsize::new(0);

struct Registry {
    /// The values, longest first (invariant 3).
    values: Vec<Arc<str>>,
    counts: Option<HashMap<Arc<str>, usize>>,
}

/// A credential registered for masking (invariant 1): masked while this guard or a
/// clone of it lives.
#[derive(Clone)]
pub(crate) struct Registered {
    _guard: Arc<Guard>,
}

struct Guard {
    /// The value, and its form inside a JSON string when that differs.
    forms: Vec<Arc<str>>,
}

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Registered(<redacted>)")
    }
}

/// Whether a header or variable named `name` holds a credential, as its name says:
/// one of its words (split at `_`, `-` and `.`, whatever the case) is `auth`,
/// `authorization`, `cookie`, `credential(s)` or `passwd`, or ends with `token`,
/// `key`, `secret` or `password` (`Authorization`, `X-Api-Key`, `GITHUB_TOKEN`,
/// `CLIENT_SECRET`, `DB_PASSWORD`, `APIKEY`). `MAX_TOKENS`, `TOKENIZERS_PARALLELISM`
/// and `OAUTH_ENABLED` do not.
pub fn names_a_credential(name: &str) -> bool {
    const WORDS: [&str; 6] = [
        "auth",
        "authorization",
        "cookie",
        "credential",
        "credentials",
        "passwd",
    ];
    const ENDINGS: [&str; 4] = ["token", "key", "secret", "password"];
    name.split(['_', '-', '.']).any(|word| {
        let word = word.to_ascii_lowercase();
        WORDS.contains(&word.as_str()) || ENDINGS.iter().any(|ending| word.ends_with(ending))
    })
}

/// Registers `value` as a credential until the guard is dropped; `None` when it is
/// too short to be one (invariant 4).
pub(crate) fn register(value: &str) -> Option<Registered> {
    if value.chars().count() < MIN_CREDENTIAL_CHARS || value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut forms: Vec<Arc<str>> = vec![Arc::from(value)];
    let quoted = serde_json::to_string(value).expect("a string serializes");
    let escaped = &quoted[1..quoted.len() - 1];
    if escaped != value {
        forms.push(Arc::from(escaped));
    }
    let mut registry = write();
    for form in &forms {
        let counts = registry.counts.get_or_insert_with(HashMap::new);
        let count = counts.entry(form.clone()).or_insert(0);
        *count += 1;
        if *count == 1 {
            let at = registry
                .values
                .partition_point(|held| held.len() >= form.len());
            registry.values.insert(at, form.clone());
        }
    }
    REGISTERED.store(registry.values.len(), Ordering::Release);
    Some(Registered {
        _guard: Arc::new(Guard { forms }),
    })
}

impl Drop for Guard {
    fn drop(&mut self) {
        let mut registry = write();
        for form in &self.forms {
            let Some(counts) = registry.counts.as_mut() else {
                continue;
            };
            let Some(count) = counts.get_mut(form) else {
                continue;
            };
            *count -= 1;
            if *count == 0 {
                counts.remove(form);
                registry.values.retain(|held| held != form);
            }
        }
        REGISTERED.store(registry.values.len(), Ordering::Release);
    }
}

/// Whether any credential is registered: when none is, [`credentials`] never changes
/// a text. A program that masks a large output whole (it cannot mask it piece by
/// piece: a credential may straddle two pieces) checks this first, and streams the
/// output unbuffered when nothing can need masking.
pub fn credentials_in_use() -> bool {
    REGISTERED.load(Ordering::Acquire) != 0
}

/// `text` with every registered credential masked (invariant 3); borrowed when it
/// holds none.
pub fn credentials(text: &str) -> Cow<'_, str> {
    if !credentials_in_use() {
        return Cow::Borrowed(text);
    }
    let registry = REGISTRY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut masked = Cow::Borrowed(text);
    for value in &registry.values {
        if memchr::memmem::find(masked.as_bytes(), value.as_bytes()).is_some() {
            masked = Cow::Owned(masked.replace(&**value, MASK));
        }
    }
    masked
}

/// [`credentials`] of a text cut at its end: a credential the cut went through leaves
/// its start at the end, which is masked too when it is at least
/// [`CUT_PREFIX_CHARS`] long.
pub(crate) fn credentials_cut(text: &str) -> Cow<'_, str> {
    let masked = credentials(text);
    if !credentials_in_use() {
        return masked;
    }
    let registry = REGISTRY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // The longest start of a registered value that the text ends with.
    let start = registry
        .values
        .iter()
        .filter_map(|value| {
            (CUT_PREFIX_CHARS..value.len())
                .rev()
                .filter(|&len| value.is_char_boundary(len))
                .find(|&len| masked.ends_with(&value[..len]))
        })
        .max();
    match start {
        Some(len) => Cow::Owned(format!("{}{MASK}", &masked[..masked.len() - len])),
        None => masked,
    }
}

/// How long the start of a credential left at the end of a cut text must be to be
/// masked ([`credentials_cut`]): shorter, it says nothing of the credential, and
/// ends of ordinary text match one by chance.
const CUT_PREFIX_CHARS: usize = 4;

/// [`credentials`] for bytes that may not all be UTF-8 (a line a server wrote).
pub(crate) fn credentials_in_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    if !credentials_in_use() {
        return Cow::Borrowed(bytes);
    }
    let registry = REGISTRY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut masked = Cow::Borrowed(bytes);
    for value in &registry.values {
        let value = value.as_bytes();
        if memchr::memmem::find(&masked, value).is_none() {
            continue;
        }
        let mut out = Vec::with_capacity(masked.len());
        let mut rest: &[u8] = &masked;
        while let Some(at) = memchr::memmem::find(rest, value) {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(MASK.as_bytes());
            rest = &rest[at + value.len()..];
        }
        out.extend_from_slice(rest);
        masked = Cow::Owned(out);
    }
    masked
}

/// `value` with every registered credential masked in its strings, keys included;
/// unchanged (and not copied) when it holds none.
pub fn credentials_in_json(value: &serde_json::Value) -> Cow<'_, serde_json::Value> {
    use serde_json::Value;
    if !credentials_in_use() {
        return Cow::Borrowed(value);
    }
    match value {
        Value::String(text) => match credentials(text) {
            Cow::Borrowed(_) => Cow::Borrowed(value),
            Cow::Owned(masked) => Cow::Owned(Value::String(masked)),
        },
        Value::Array(items) => {
            let masked: Vec<_> = items.iter().map(credentials_in_json).collect();
            if masked.iter().all(|item| matches!(item, Cow::Borrowed(_))) {
                return Cow::Borrowed(value);
            }
            Cow::Owned(Value::Array(
                masked.into_iter().map(Cow::into_owned).collect(),
            ))
        }
        Value::Object(fields) => {
            let masked: Vec<_> = fields
                .iter()
                .map(|(key, item)| (credentials(key), credentials_in_json(item)))
                .collect();
            if masked.iter().all(|(key, item)| {
                matches!(key, Cow::Borrowed(_)) && matches!(item, Cow::Borrowed(_))
            }) {
                return Cow::Borrowed(value);
            }
            Cow::Owned(Value::Object(
                masked
                    .into_iter()
                    .map(|(key, item)| (key.into_owned(), item.into_owned()))
                    .collect(),
            ))
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => Cow::Borrowed(value),
    }
}

/// [`credentials`] of an owned text: `text`, masked (not copied when it holds none).
pub(crate) fn masked_text(text: String) -> String {
    match credentials(&text) {
        Cow::Owned(masked) => masked,
        Cow::Borrowed(_) => text,
    }
}

/// [`credentials_in_json`] of an owned value: `value`, masked.
pub(crate) fn masked_json(value: serde_json::Value) -> serde_json::Value {
    match credentials_in_json(&value) {
        Cow::Owned(masked) => masked,
        Cow::Borrowed(_) => value,
    }
}

fn write() -> std::sync::RwLockWriteGuard<'static, Registry> {
    REGISTRY
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_registered_value_is_masked_until_its_last_guard_drops() {
        let text = "refused token rd-T0KEN-unique-1 from the client";
        let first = register("rd-T0KEN-unique-1").unwrap();
        let second = first.clone();
        let third = register("rd-T0KEN-unique-1").unwrap();
        assert_eq!(credentials(text), "refused token ***** from the client");
        drop(first);
        drop(second);
        assert_eq!(credentials(text), "refused token ***** from the client");
        drop(third);
        assert_eq!(credentials(text), text);
    }

    #[test]
    fn bytes_that_are_not_all_utf8_are_masked_too() {
        let _secret = register("rd-bytes-5-secret").unwrap();
        assert_eq!(
            &*credentials_in_bytes(b"\xff rd-bytes-5-secret and rd-bytes-5-secret"),
            b"\xff ***** and *****"
        );
    }

    #[test]
    fn the_start_of_a_credential_a_cut_went_through_is_masked() {
        let _secret = register("rd-cut-6-secret-value").unwrap();
        assert_eq!(credentials_cut("line ends rd-cut-6-se"), "line ends *****");
        assert_eq!(
            credentials_cut("whole rd-cut-6-secret-value"),
            "whole *****"
        );
        // Three characters say nothing of it.
        assert_eq!(credentials_cut("ends rd-"), "ends rd-");
    }

    #[test]
    fn a_value_holding_another_is_masked_whole() {
        let _short = register("rd-abcd-2").unwrap();
        let _long = register("Bearer rd-abcd-2-long").unwrap();
        assert_eq!(
            credentials("sent `Bearer rd-abcd-2-long` and rd-abcd-2"),
            "sent `*****` and *****"
        );
    }

    #[test]
    fn a_value_is_masked_in_its_json_string_form() {
        let _secret = register(r#"rd-q"uote\3"#).unwrap();
        assert_eq!(
            credentials(r#"{"echo":"rd-q\"uote\\3"}"#),
            r#"{"echo":"*****"}"#
        );
    }

    #[test]
    fn names_of_credentials_are_known_whatever_their_case() {
        for name in [
            "authorization",
            "X-Api-Key",
            "GITHUB_TOKEN",
            "client_secret",
            "Cookie",
            "DB_PASSWD",
        ] {
            assert!(names_a_credential(name), "{name}");
        }
        for name in ["x-team", "LOG_LEVEL", "HOME", "accept"] {
            assert!(!names_a_credential(name), "{name}");
        }
    }

    #[test]
    fn a_value_too_short_or_of_digits_alone_is_not_registered() {
        assert!(register("abc").is_none());
        assert!(register("").is_none());
        assert!(register("seven77").is_none());
        assert!(register("1234567890").is_none());
        assert!(register("eight888").is_some());
    }

    #[test]
    fn json_strings_and_keys_are_masked_and_the_rest_is_kept() {
        let _secret = register("rd-json-4-secret").unwrap();
        let value = json!({
            "message": "bad token rd-json-4-secret",
            "rd-json-4-secret": [1, true, null, {"nested": "rd-json-4-secret"}],
            "plain": "kept",
        });
        assert_eq!(
            credentials_in_json(&value).into_owned(),
            json!({
                "message": "bad token *****",
                "*****": [1, true, null, {"nested": "*****"}],
                "plain": "kept",
            })
        );
        let clean = json!({"plain": ["kept", 1]});
        assert!(matches!(credentials_in_json(&clean), Cow::Borrowed(_)));
    }
}
