//! Configured text made safe to show in output, messages, logs and `Debug`: secrets
//! masked, control characters escaped.
//!
//! A name from a file or the command line may hold any character: [`one_line`] writes
//! its control characters as escapes (`\r`, `\u{1b}`), so that it can neither split a
//! one-line message nor drive the terminal. The configuration's own messages do the
//! same.
//!
//! A server's URL can carry a credential in its user information (a token as the
//! user name, `https://TOKEN@host`, or a password, `https://user:PASSWORD@host`), in
//! its query (`?api_key=…`, `?token=…`) and in its fragment. [`url()`] masks all three
//! and keeps the rest of the text as written, so that the URL can still be recognised:
//!
//! 1. The whole user information before the last `@` of the authority is `*****`.
//! 2. Every query value is `*****`, and the key names are kept (`?api_key=*****`); an
//!    item without `=` may be a value on its own and is masked whole. An empty value
//!    stays empty.
//! 3. A non-empty fragment is `*****`.
//!
//! The text is not parsed as a URL (a parser would normalise it, and a URL read from
//! a file as written may hold a `${…}` that no parser accepts): each part is found
//! where the URL syntax puts it, `://`, then `/`, `?` or `#`.
//!
//! What a server sends back may quote a credential the runtime sent it: [`credentials`]
//! masks every credential in use (bearer tokens, headers marked sensitive, OAuth
//! tokens and client secrets, credentials in a local server's environment) wherever a
//! server's text is shown.

use std::borrow::Cow;

mod credentials;

pub use self::credentials::{
    MIN_CREDENTIAL_CHARS, credentials, credentials_in_json, credentials_in_use, names_a_credential,
};
pub(crate) use self::credentials::{
    Registered, credentials_cut, credentials_in_bytes, masked_json, masked_text, register,
};

/// What stands for a hidden value.
const MASK: &str = "*****";

/// How many characters of a server's text (a JSON-RPC error's message) an error
/// quotes.
pub const SERVER_TEXT_CHARS: usize = 1000;

/// `text`, sent by a server, as an error quotes it: every credential masked, and at
/// most [`SERVER_TEXT_CHARS`] characters, then how many were left out. A text that is
/// cut is logged whole (masked) at `debug`.
pub(crate) fn server_text(text: &str) -> String {
    let text = credentials(text);
    let Some((cut, _)) = text.char_indices().nth(SERVER_TEXT_CHARS) else {
        return text.into_owned();
    };
    let total = text.chars().count();
    tracing::debug!(text = %text, "a server's text, cut in its error");
    format!(
        "{}… ({} more characters, logged at debug level)",
        &text[..cut],
        total - SERVER_TEXT_CHARS
    )
}

/// `text` with its control characters escaped, to be quoted in a one-line message.
pub fn one_line(text: &str) -> Cow<'_, str> {
    if text.chars().any(char::is_control) {
        Cow::Owned(shown(text))
    } else {
        Cow::Borrowed(text)
    }
}

/// `name` for a message, with control characters (which made it invalid) escaped.
pub(crate) fn shown(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `url` with its user information, query values and fragment masked (the module's
/// rules 1 to 3); borrowed when there is nothing to mask.
pub fn url(url: &str) -> Cow<'_, str> {
    let mut shown = String::with_capacity(url.len());
    let mut rest = url;
    if let Some(start) = url.find("://").map(|at| at + 3) {
        shown.push_str(&url[..start]);
        rest = &url[start..];
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some(at) = rest[..authority_end].rfind('@') {
            shown.push_str(MASK);
            rest = &rest[at..];
        }
    }
    let path_end = rest.find(['?', '#']).unwrap_or(rest.len());
    shown.push_str(&rest[..path_end]);
    rest = &rest[path_end..];
    if let Some(query) = rest.strip_prefix('?') {
        let end = query.find('#').unwrap_or(query.len());
        let items: Vec<Cow<'_, str>> = query[..end]
            .split('&')
            .map(|item| match item.split_once('=') {
                Some((key, value)) if !value.is_empty() => Cow::Owned(format!("{key}={MASK}")),
                None if !item.is_empty() => Cow::Borrowed(MASK),
                _ => Cow::Borrowed(item),
            })
            .collect();
        shown.push('?');
        shown.push_str(&items.join("&"));
        rest = &query[end..];
    }
    if let Some(fragment) = rest.strip_prefix('#') {
        shown.push('#');
        if !fragment.is_empty() {
            shown.push_str(MASK);
        }
    }
    if shown == url {
        Cow::Borrowed(url)
    } else {
        Cow::Owned(shown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_information_query_values_and_fragment_are_masked() {
        for (written, shown) in [
            (
                "https://me:s3cret@h.example/mcp",
                "https://*****@h.example/mcp",
            ),
            (
                "https://ghp_t0ken@h.example/mcp",
                "https://*****@h.example/mcp",
            ),
            (
                "https://h.example/mcp?api_key=k3y&token=t0k&mode=fast",
                "https://h.example/mcp?api_key=*****&token=*****&mode=*****",
            ),
            (
                "http://h:8080/mcp?ghp_bare&empty=&&x=a=b#s3cret",
                "http://h:8080/mcp?*****&empty=&&x=*****#*****",
            ),
            ("https://u:p@h/?q=a:b@c#", "https://*****@h/?q=*****#"),
            (
                "https://${TOKEN}@${HOST}/mcp?key=${KEY}",
                "https://*****@${HOST}/mcp?key=*****",
            ),
            ("https://h.example#frag?x=1", "https://h.example#*****"),
        ] {
            assert_eq!(url(written), shown, "{written}");
        }
    }

    #[test]
    fn a_url_without_a_secret_part_is_unchanged() {
        for unchanged in [
            "https://h.example/mcp",
            "http://h:8080/a@b",
            "http://[::1]:8080/mcp",
            "https://h.example/mcp?",
            "not a url",
            "",
        ] {
            assert!(matches!(url(unchanged), Cow::Borrowed(_)), "{unchanged}");
            assert_eq!(url(unchanged), unchanged);
        }
    }

    #[test]
    fn a_long_server_text_is_cut_saying_how_much_was_left_out() {
        let long = format!("{}{}", "é".repeat(SERVER_TEXT_CHARS), "x".repeat(299_000));
        assert_eq!(
            server_text(&long),
            format!(
                "{}… (299000 more characters, logged at debug level)",
                "é".repeat(SERVER_TEXT_CHARS)
            )
        );
        let short = "é".repeat(SERVER_TEXT_CHARS);
        assert_eq!(server_text(&short), short);
    }

    #[test]
    fn shown_names_escape_control_characters() {
        assert_eq!(shown("A\0B\n"), "A\\u{0}B\\n");
        assert_eq!(shown("X-Tëam"), "X-Tëam");
    }

    #[test]
    fn one_line_escapes_control_characters_only() {
        assert_eq!(one_line("a\r\nb\u{1b}[2J\t"), "a\\r\\nb\\u{1b}[2J\\t");
        assert!(matches!(
            one_line("plain ü `x`"),
            Cow::Borrowed("plain ü `x`")
        ));
    }

    #[test]
    #[cfg(feature = "http")]
    fn debug_output_of_a_configured_url_is_masked() {
        let written = "https://ghp_T0KEN@h.example/mcp?api_key=K3Y#FRAG";
        let server = crate::ServerConfig::http("s", written);
        let crate::config::TransportConfig::StreamableHttp(http) = &server.transport else {
            unreachable!("an HTTP server");
        };
        let resolved = crate::transport::http::resolve(http, |_| None).unwrap();
        for debug in [format!("{server:?}"), format!("{resolved:?}")] {
            assert!(
                debug.contains("https://*****@h.example/mcp?api_key=*****#*****"),
                "{debug}"
            );
            for secret in ["T0KEN", "K3Y", "FRAG"] {
                assert!(!debug.contains(secret), "{debug}");
            }
        }
    }
}
