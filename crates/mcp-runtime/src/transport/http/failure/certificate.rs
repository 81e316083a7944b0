//! Why a server's certificate was refused, for [`HttpFailure::Certificate`]: the
//! verifier's reason, by its name, with what it means and what to do.
//!
//! The reason is read from the types rustls and webpki report it with (webpki's own,
//! such as `CaUsedAsEndEntity`, travel inside rustls's `Other`), and shown by the name
//! the debug log gives it ([`crate::tls_refusal`]), so a message and the log can be
//! matched. Every reason a
//! user can mend by naming a certificate says so: `ca_certificate`.
//!
//! [`HttpFailure::Certificate`]: crate::error::HttpFailure::Certificate

use rustls::{CertificateError as E, pki_types::UnixTime};

use crate::{tls_refusal::variant_name, transport::http::network::trust::NamedRefusal};

/// The fix of a certificate that is not trusted: naming it, or its CA.
const NAME_IT: &str = "name the certificate itself, or the CA that issued it, as a PEM file with `ca_certificate` (or `SSL_CERT_FILE`)";

/// The most names of a certificate a message lists.
const NAMES_SHOWN: usize = 5;

/// What is wrong with a server certificate the TLS stream refused with `error`, if
/// `error` is that: what it means, the verifier's reason, and what to do.
pub(super) fn problem(error: &rustls::Error) -> Option<String> {
    let rustls::Error::InvalidCertificate(error) = error else {
        return None;
    };
    #[allow(deprecated)] // Still reported by verifiers of other platforms.
    let problem = match error {
        E::UnknownIssuer => format!(
            "it is self-signed or issued by a CA that is not trusted (`UnknownIssuer`): {NAME_IT}"
        ),
        E::NotValidForName => format!(
            "it does not name the host of `url` (`NotValidForName`): {}",
            name_fix(None)
        ),
        E::NotValidForNameContext {
            expected,
            presented,
        } => not_valid_for_name(&expected.to_str(), presented),
        E::Expired => {
            "it has expired (`Expired`): the server needs a new certificate (or check this machine's clock)".to_owned()
        }
        E::ExpiredContext { not_after, .. } => format!(
            "it expired on {} (`Expired`): the server needs a new certificate (or check this machine's clock)",
            date(*not_after)
        ),
        E::NotValidYet => {
            "it is not valid yet (`NotValidYet`): check this machine's clock".to_owned()
        }
        E::NotValidYetContext { not_before, .. } => format!(
            "it is not valid before {} (`NotValidYet`): check this machine's clock",
            date(*not_before)
        ),
        E::Revoked => {
            "it has been revoked (`Revoked`): the server needs a new certificate".to_owned()
        }
        E::InvalidPurpose | E::InvalidPurposeContext { .. } => {
            "it is not for a TLS server: its extended key usage does not name `serverAuth` (`InvalidPurpose`): the server needs a certificate made for `serverAuth`".to_owned()
        }
        E::UnhandledCriticalExtension => {
            "it has a critical extension that cannot be checked (`UnhandledCriticalExtension`): the server needs a certificate without it".to_owned()
        }
        E::BadEncoding => {
            "it is not a valid X.509 certificate (`BadEncoding`): the server needs a valid certificate".to_owned()
        }
        E::BadSignature => format!(
            "its signature does not verify (`BadSignature`): it was not issued by the certificate trusted for it; {NAME_IT}"
        ),
        E::UnsupportedSignatureAlgorithm
        | E::UnsupportedSignatureAlgorithmContext { .. }
        | E::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => {
            "it is signed with an algorithm mcp-runtime does not accept (`UnsupportedSignatureAlgorithm`): the server needs a certificate signed with ECDSA, Ed25519 or RSA (SHA-256 or stronger)".to_owned()
        }
        E::Other(other) => other_problem(other),
        other => format!(
            "it cannot be verified (`{}`): {NAME_IT}",
            variant_name(other)
        ),
    };
    Some(problem)
}

/// A reason carried as rustls's `Other`: webpki's own, or a check of a named
/// certificate ([`NamedRefusal`]).
fn other_problem(other: &rustls::OtherError) -> String {
    let source: &(dyn std::error::Error + 'static) = &*other.0;
    if let Some(refusal) = source.downcast_ref::<NamedRefusal>() {
        return match refusal {
            NamedRefusal::KeyUsage => format!(
                "it is not for a TLS server: its key usage allows neither signatures nor key exchange (`{refusal}`): the server needs a certificate whose key usage includes `digitalSignature`"
            ),
        };
    }
    match source.downcast_ref::<webpki::Error>() {
        Some(webpki::Error::CaUsedAsEndEntity) => {
            "it is a CA's certificate (`CA:TRUE`) in the server's place, as a self-signed one made by `openssl req -x509` is (`CaUsedAsEndEntity`): to trust the server's own self-signed certificate, name that very certificate as a PEM file with `ca_certificate`; else the server needs a certificate issued by a CA".to_owned()
        }
        Some(webpki::Error::CertDistrusted) => {
            "its key is distrusted (`CertDistrusted`): the server needs a certificate from another CA".to_owned()
        }
        Some(
            webpki::Error::UnsupportedCriticalExtension
            | webpki::Error::UnsupportedCertVersion,
        ) => format!(
            "it cannot be read as a TLS server's certificate (`{}`): the server needs an X.509 version 3 certificate without unknown critical extensions",
            crate::redact::one_line(&source.to_string())
        ),
        _ => format!(
            "it cannot be verified (`{}`): {NAME_IT}",
            crate::redact::one_line(&source.to_string())
        ),
    }
}

/// A certificate that does not name `host`, which names `presented`.
fn not_valid_for_name(host: &str, presented: &[String]) -> String {
    let names = match presented {
        [] => "it names no host in a subjectAltName".to_owned(),
        names => {
            let mut shown: Vec<String> = names
                .iter()
                .take(NAMES_SHOWN)
                .map(|name| format!("`{}`", crate::redact::one_line(name)))
                .collect();
            if names.len() > NAMES_SHOWN {
                shown.push(format!("{} more", names.len() - NAMES_SHOWN));
            }
            format!("it names {}", shown.join(", "))
        }
    };
    format!(
        "it does not name the host `{}` of `url` (`NotValidForName`: {names}): {}",
        crate::redact::one_line(host),
        name_fix(Some(host))
    )
}

/// What to do about a certificate that does not name `host`.
fn name_fix(host: Option<&str>) -> String {
    match host {
        Some(host) => format!(
            "use a host it names in `url`, or give the server a certificate whose subjectAltName names `{}`",
            crate::redact::one_line(host)
        ),
        None => {
            "use a host it names in `url`, or give the server a certificate that names the host"
                .to_owned()
        }
    }
}

/// `time` as a UTC date and time.
fn date(time: UnixTime) -> String {
    i64::try_from(time.as_secs())
        .ok()
        .and_then(|seconds| x509_parser::time::ASN1Time::from_timestamp(seconds).ok())
        .map_or_else(
            || format!("{} seconds after 1970", time.as_secs()),
            |time| format!("`{time}`"),
        )
}

#[cfg(test)]
mod tests;
