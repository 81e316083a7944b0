//! The bearer token of an `Authorization` header (RFC 6750 §2.1).

/// The token of `authorization`: after the scheme `Bearer`, in any case (an
/// authentication scheme is case-insensitive, RFC 9110 §11.1), and one or more
/// spaces; `None` for another scheme or an empty token.
pub(crate) fn token(authorization: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = authorization.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"Bearer") || rest.first() != Some(&b' ') {
        return None;
    }
    let token = rest.trim_ascii_start();
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::token;

    #[test]
    fn the_scheme_is_read_in_any_case_and_the_token_whole() {
        for (header, expected) in [
            (&b"Bearer abc"[..], Some(&b"abc"[..])),
            (b"bearer abc", Some(b"abc")),
            (b"BEARER  abc", Some(b"abc")),
            (b"Bearer abc ", Some(b"abc ")),
            (b"Bearer", None),
            (b"Bearer ", None),
            (b"Bearerabc", None),
            (b"Basic abc", None),
            (b"abc", None),
        ] {
            assert_eq!(
                token(header),
                expected,
                "{:?}",
                String::from_utf8_lossy(header)
            );
        }
    }
}
