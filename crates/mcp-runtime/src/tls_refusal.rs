//! Why a server's TLS certificate was refused, by the name the verifier gives it
//! (`UnknownIssuer`, `CaUsedAsEndEntity`…), read from the error of any HTTP client:
//! the runtime's own, or rmcp's, which reaches an authorization server during a login
//! and a token refresh.
//!
//! The HTTP transport and the login each say what a refused certificate means for
//! them; the reason, and the name a message and the debug log both give it, live here,
//! below both, so that neither imports the other for it.

/// The verifier's reason when `error`, from any HTTP client, comes of a refused
/// server certificate: read in its `source` chain, as the HTTP transport reads its
/// own client's failures.
#[cfg(feature = "oauth")]
pub(crate) fn refused_certificate(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cause = Some(error);
    while let Some(error) = cause {
        #[cfg(feature = "tls")]
        if let Some(reason) = error.downcast_ref::<rustls::Error>().and_then(reason) {
            return Some(reason);
        }
        cause = match error.downcast_ref::<std::io::Error>() {
            // An I/O error's `source` skips the error it wraps.
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => error.source(),
        };
    }
    None
}

/// The verifier's reason for refusing a certificate, if `error` is that refusal: its
/// name, as the debug log gives it (webpki's own reasons travel inside rustls's
/// `Other`).
#[cfg(all(feature = "tls", feature = "oauth"))]
fn reason(error: &rustls::Error) -> Option<String> {
    let rustls::Error::InvalidCertificate(error) = error else {
        return None;
    };
    Some(match error {
        rustls::CertificateError::Other(other) => {
            crate::redact::one_line(&other.0.to_string()).into_owned()
        }
        other => variant_name(other),
    })
}

/// The name of `error`'s variant, as the debug log shows it.
#[cfg(feature = "tls")]
pub(crate) fn variant_name(error: &rustls::CertificateError) -> String {
    let debug = format!("{error:?}");
    let end = debug.find([' ', '(', '{']).unwrap_or(debug.len());
    debug[..end].to_owned()
}
