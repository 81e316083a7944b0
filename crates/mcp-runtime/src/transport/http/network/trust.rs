//! The TLS verifier of a server with named certificates (`ca_certificate`,
//! `SSL_CERT_FILE`): the one the HTTP client would build, and a certificate the user
//! named trusted as the server's own, as OpenSSL (and so curl) trusts it.
//!
//! The HTTP client verifies a certificate by building a path from it to a trust
//! anchor, and refuses a certificate marked as a CA's (`CA:TRUE`) in the server's
//! place (`CaUsedAsEndEntity`), even when it is the trust anchor itself. A
//! self-signed certificate made by `openssl req -x509` is such a certificate, and
//! `curl --cacert` accepts it: OpenSSL takes a certificate of its trust store that
//! the server presents as verified, and then checks the rest. This verifier does the
//! same, only for a certificate the user named:
//!
//! 1. Every certificate is verified first by the verifier the HTTP client builds
//!    itself (the platform's, with the named certificates as extra roots). What it
//!    accepts is accepted; what it refuses as revoked, or for another reason than
//!    the certificate itself, stays refused.
//! 2. A certificate it refuses otherwise is accepted only when it is, byte for byte,
//!    one of the named certificates, and when the checks OpenSSL and curl make of
//!    such a certificate pass: it is valid now; it names the host (its
//!    subjectAltName, or, as curl reads one without it, its last common name, which
//!    must then be the host exactly); its key usage, if it has one, allows a TLS
//!    server's key, and its extended key usage, if it has one, names `serverAuth`;
//!    it has no critical extension that cannot be checked. A failed check is that
//!    check's error; a certificate that cannot be read keeps the first verifier's.
//! 3. The server proves it holds the certificate's key: the handshake's signature
//!    is verified with the presented certificate's key, by the first verifier,
//!    whatever path accepted the certificate.
//! 4. Only a client of a server with named certificates has this verifier; every
//!    other client keeps the HTTP client's own.

use std::sync::Arc;

use rustls::{
    CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme,
    client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    pki_types::{CertificateDer, ServerName, UnixTime},
};

/// A check of rule 2 that a named certificate failed and rustls has no error for:
/// carried as the verifier's `Other` error, read by the failure's classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NamedRefusal {
    /// Its key usage allows neither signing nor key exchange.
    #[error("KeyUsage")]
    KeyUsage,
}

/// The verifier of the module's rules.
#[derive(Debug)]
pub(super) struct NamedCertificates {
    /// The verifier the HTTP client would build (rule 1).
    inner: Arc<dyn ServerCertVerifier>,
    /// The certificates of the named files, DER.
    named: Vec<CertificateDer<'static>>,
}

impl NamedCertificates {
    pub(super) fn new(
        inner: Arc<dyn ServerCertVerifier>,
        named: Vec<CertificateDer<'static>>,
    ) -> Self {
        Self { inner, named }
    }
}

impl ServerCertVerifier for NamedCertificates {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let refused = match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(verified) => return Ok(verified),
            Err(refused) => refused,
        };
        // Only a refusal of the certificate itself, and not as revoked (rule 1).
        let certificate_refused = matches!(
            &refused,
            rustls::Error::InvalidCertificate(error) if *error != CertificateError::Revoked
        );
        let named = self
            .named
            .iter()
            .any(|named| named.as_ref() == end_entity.as_ref());
        if !certificate_refused || !named {
            return Err(refused);
        }
        check_named(end_entity, server_name, now, refused)?;
        tracing::debug!(server_name = %server_name.to_str(), "the server presented a certificate named as trusted");
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }

    fn root_hint_subjects(&self) -> Option<&[DistinguishedName]> {
        self.inner.root_hint_subjects()
    }
}

/// The checks of rule 2 of `certificate`, a named one, for `server_name` at `now`;
/// `refused` is the first verifier's error, kept for a certificate that cannot be
/// read.
fn check_named(
    certificate: &CertificateDer<'_>,
    server_name: &ServerName<'_>,
    now: UnixTime,
    refused: rustls::Error,
) -> Result<(), rustls::Error> {
    use x509_parser::prelude::{ASN1Time, FromDer as _, X509Certificate};
    let invalid = |error: CertificateError| rustls::Error::InvalidCertificate(error);
    let Ok((_, parsed)) = X509Certificate::from_der(certificate.as_ref()) else {
        return Err(refused);
    };
    // Time first, as every verifier checks it.
    let validity = parsed.validity();
    let seconds = |time: ASN1Time| {
        UnixTime::since_unix_epoch(std::time::Duration::from_secs(
            u64::try_from(time.timestamp()).unwrap_or(0),
        ))
    };
    let at = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    if at < validity.not_before.timestamp() {
        return Err(invalid(CertificateError::NotValidYetContext {
            time: now,
            not_before: seconds(validity.not_before),
        }));
    }
    if at > validity.not_after.timestamp() {
        return Err(invalid(CertificateError::ExpiredContext {
            time: now,
            not_after: seconds(validity.not_after),
        }));
    }
    let (Ok(alternative_names), Ok(key_usage), Ok(extended_key_usage)) = (
        parsed.subject_alternative_name(),
        parsed.key_usage(),
        parsed.extended_key_usage(),
    ) else {
        return Err(refused);
    };
    if let Some(key_usage) = key_usage {
        let usage = key_usage.value;
        // OpenSSL's rule for a TLS server's key.
        if !(usage.digital_signature() || usage.key_encipherment() || usage.key_agreement()) {
            return Err(invalid(CertificateError::Other(rustls::OtherError(
                Arc::new(NamedRefusal::KeyUsage),
            ))));
        }
    }
    if let Some(extended) = extended_key_usage
        && !extended.value.server_auth
    {
        return Err(invalid(CertificateError::InvalidPurpose));
    }
    // The checks above are the only ones made of the extensions: one that is
    // critical and unknown here cannot be honoured.
    let unknown_critical = parsed.extensions().iter().any(|extension| {
        extension.critical
            && matches!(
                extension.parsed_extension(),
                x509_parser::extensions::ParsedExtension::UnsupportedExtension { .. }
                    | x509_parser::extensions::ParsedExtension::ParseError { .. }
            )
    });
    if unknown_critical {
        return Err(invalid(CertificateError::UnhandledCriticalExtension));
    }
    match alternative_names {
        Some(_) => {
            let parsed = rustls::server::ParsedCertificate::try_from(certificate)?;
            rustls::client::verify_server_name(&parsed, server_name)
        }
        // curl reads the common name of a certificate without a subjectAltName.
        None => {
            let common_name = parsed
                .subject()
                .iter_common_name()
                .last()
                .and_then(|name| name.as_str().ok());
            let host = server_name.to_str();
            match common_name {
                Some(name) if name.eq_ignore_ascii_case(&host) => Ok(()),
                _ => Err(invalid(CertificateError::NotValidForNameContext {
                    expected: server_name.to_owned(),
                    presented: common_name.map(str::to_owned).into_iter().collect(),
                })),
            }
        }
    }
}

#[cfg(test)]
mod tests;
