//! Whether a configured value can work where it is used: passed to a program, set as an
//! environment variable, sent as an HTTP header, connected to as a URL.
//!
//! Each check answers with what is wrong, in words that finish a sentence about the
//! value ("… contains a NUL byte, …"), and never repeats the value: a header value or
//! an argument may be a secret. The same checks run on the file at load time and on
//! the values read from the environment at connect time, so a value the file accepts
//! is one the transport accepts.

use http::{HeaderName, HeaderValue};

/// What is wrong with `value` as a program, an argument, a path or a variable's value.
pub(crate) fn os_string_problem(value: &str) -> Option<&'static str> {
    value.contains('\0').then_some(
        "contains a NUL byte, which no program argument, path or environment variable can hold (remove it)",
    )
}

/// What is wrong with `name` as an environment variable's name.
pub(crate) fn env_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("is empty (write the variable's name)")
    } else if name.contains('=') {
        Some("contains `=`, which no variable name can hold (write the variable's name alone)")
    } else {
        os_string_problem(name)
    }
}

/// What is wrong with `name` as an HTTP header's name.
pub(crate) fn header_name_problem(name: &str) -> Option<&'static str> {
    HeaderName::from_bytes(name.as_bytes())
        .is_err()
        .then_some("is not a valid HTTP header name (use letters, digits and `-`)")
}

/// What is wrong with `value` as an HTTP header's value.
pub(crate) fn header_value_problem(value: &str) -> Option<&'static str> {
    if HeaderValue::from_bytes(value.as_bytes()).is_ok() {
        None
    } else if value.contains(['\n', '\r']) {
        Some("contains a line break, which an HTTP header cannot hold (remove it)")
    } else {
        Some("contains a control character, which an HTTP header cannot hold (remove it)")
    }
}

/// What is wrong with `url` as a Streamable HTTP endpoint, as what it must be instead.
///
/// The URL is parsed by the same parser the HTTP client uses, so a URL accepted here
/// is one the client can connect to (it still may not answer).
#[cfg(feature = "http")]
pub(crate) fn url_problem(url: &str) -> Option<String> {
    const EXPECTED: &str = "an `http://` or `https://` URL";
    match url::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => None,
        Ok(_) | Err(url::ParseError::RelativeUrlWithoutBase) => Some(EXPECTED.to_owned()),
        Err(error) => Some(format!("{EXPECTED} ({error})")),
    }
}

/// What is wrong with `url` as a Streamable HTTP endpoint, in a build without the
/// `http` feature (and its URL parser): read as an HTTP URI. Such a server cannot
/// start in this build (its start fails, naming the feature), but the file is checked
/// as any build checks it.
#[cfg(not(feature = "http"))]
pub(crate) fn url_problem(url: &str) -> Option<String> {
    const EXPECTED: &str = "an `http://` or `https://` URL";
    match url.parse::<http::Uri>() {
        // The URI parser takes any digits for a port.
        Ok(uri) if !port_fits(&uri) => Some(format!("{EXPECTED} (invalid port)")),
        Ok(uri)
            if matches!(uri.scheme_str(), Some("http" | "https"))
                && uri.host().is_some_and(|host| !host.is_empty()) =>
        {
            None
        }
        // Not an absolute URL at all: said as the URL parser says it.
        Ok(_) => Some(EXPECTED.to_owned()),
        Err(_) if !url.contains("://") => Some(EXPECTED.to_owned()),
        Err(error) => Some(format!("{EXPECTED} ({error})")),
    }
}

/// Whether `uri`'s port, if it names one, is a port number.
#[cfg(not(feature = "http"))]
fn port_fits(uri: &http::Uri) -> bool {
    let Some(authority) = uri.authority() else {
        return true;
    };
    let host_port = authority
        .as_str()
        .rsplit_once('@')
        .map_or(authority.as_str(), |(_, host_port)| host_port);
    // An IPv6 address is in brackets, with colons of its own.
    let after_host = match host_port.rfind(']') {
        Some(end) => &host_port[end + 1..],
        None => host_port.rfind(':').map_or("", |at| &host_port[at..]),
    };
    match after_host.strip_prefix(':') {
        Some(port) => port.is_empty() || port.parse::<u16>().is_ok(),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_with_a_nul_byte_cannot_reach_a_program() {
        assert_eq!(os_string_problem("a b/c=d"), None);
        assert!(os_string_problem("a\0b").unwrap().contains("NUL byte"));
    }

    #[test]
    fn a_variable_name_is_non_empty_without_equals_or_nul() {
        assert_eq!(env_name_problem("GITHUB_TOKEN"), None);
        assert!(env_name_problem("").unwrap().starts_with("is empty"));
        assert!(env_name_problem("A=B").unwrap().contains("`=`"));
        assert!(env_name_problem("A\0B").unwrap().contains("NUL byte"));
    }

    #[test]
    fn header_checks_agree_with_the_http_types() {
        assert_eq!(header_name_problem("X-Team"), None);
        assert!(header_name_problem("bad header").is_some());
        assert!(header_name_problem("").is_some());
        assert_eq!(header_value_problem("core team\tä"), None);
        assert!(header_value_problem("a\nb").unwrap().contains("line break"));
        assert!(header_value_problem("a\rb").unwrap().contains("line break"));
        assert!(
            header_value_problem("a\u{7f}b")
                .unwrap()
                .contains("control character")
        );
    }

    /// The parser's reason: the URL parser's with HTTP, else the HTTP URI parser's.
    fn reason(with_http: &'static str, without: &'static str) -> &'static str {
        if cfg!(feature = "http") {
            with_http
        } else {
            without
        }
    }

    #[test]
    fn a_url_needs_an_http_scheme_and_a_host() {
        assert_eq!(url_problem("https://example.com/mcp"), None);
        assert_eq!(url_problem("http://127.0.0.1:8080"), None);
        assert_eq!(
            url_problem("http://"),
            Some(format!(
                "an `http://` or `https://` URL ({})",
                reason("empty host", "empty string")
            ))
        );
        assert_eq!(
            url_problem("http://host:99999/"),
            Some(format!(
                "an `http://` or `https://` URL ({})",
                reason("invalid port number", "invalid port")
            ))
        );
        assert_eq!(
            url_problem("ftp://x").as_deref(),
            Some("an `http://` or `https://` URL")
        );
        assert_eq!(
            url_problem("").as_deref(),
            Some("an `http://` or `https://` URL")
        );
    }
}
