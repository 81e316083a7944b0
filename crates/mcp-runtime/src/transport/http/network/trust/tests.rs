use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose, date_time_ymd,
};

use super::*;

/// A self-signed `CA:TRUE` certificate as `openssl req -x509` makes one, naming
/// `localhost` and `127.0.0.1`, valid in 2020 only, changed by `change`.
fn self_signed(change: impl FnOnce(&mut CertificateParams)) -> CertificateDer<'static> {
    let mut params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    params.not_before = date_time_ymd(2020, 1, 1);
    params.not_after = date_time_ymd(2021, 1, 1);
    change(&mut params);
    let key = KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().der().clone()
}

/// 2020-07-01, when [`self_signed`] certificates are valid.
fn mid_2020() -> UnixTime {
    UnixTime::since_unix_epoch(Duration::from_secs(1_593_561_600))
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// The verifier of a server whose named files hold `named`.
fn verifier(named: &[&CertificateDer<'static>]) -> NamedCertificates {
    let named: Vec<_> = named.iter().map(|&der| der.clone()).collect();
    let platform =
        rustls_platform_verifier::Verifier::new_with_extra_roots(named.clone(), provider())
            .unwrap();
    NamedCertificates::new(Arc::new(platform), named)
}

fn name(host: &str) -> ServerName<'static> {
    ServerName::try_from(host.to_owned()).unwrap()
}

fn verify(
    verifier: &impl ServerCertVerifier,
    certificate: &CertificateDer<'_>,
    host: &str,
    now: UnixTime,
) -> Result<(), rustls::Error> {
    verifier
        .verify_server_cert(certificate, &[], &name(host), &[], now)
        .map(|_| ())
}

fn webpki_refusal(error: &rustls::Error) -> Option<webpki::Error> {
    match error {
        rustls::Error::InvalidCertificate(CertificateError::Other(other)) => {
            other.0.downcast_ref::<webpki::Error>().cloned()
        }
        _ => None,
    }
}

#[test]
fn a_named_self_signed_ca_certificate_is_the_servers_own_for_the_hosts_it_names() {
    let certificate = self_signed(|_| {});
    // The platform's verifier alone refuses it in the server's place.
    let platform =
        rustls_platform_verifier::Verifier::new_with_extra_roots([certificate.clone()], provider())
            .unwrap();
    let refused = verify(&platform, &certificate, "localhost", mid_2020()).unwrap_err();
    assert_eq!(
        webpki_refusal(&refused),
        Some(webpki::Error::CaUsedAsEndEntity),
        "{refused:?}"
    );

    let verifier = verifier(&[&certificate]);
    verify(&verifier, &certificate, "localhost", mid_2020()).unwrap();
    verify(&verifier, &certificate, "127.0.0.1", mid_2020()).unwrap();
}

#[test]
fn a_certificate_that_was_not_named_keeps_the_platforms_refusal() {
    let named = self_signed(|_| {});
    let presented = self_signed(|_| {});
    let verifier = verifier(&[&named]);
    let refused = verify(&verifier, &presented, "localhost", mid_2020()).unwrap_err();
    assert_eq!(
        webpki_refusal(&refused),
        Some(webpki::Error::CaUsedAsEndEntity),
        "{refused:?}"
    );
    // Nor does naming a certificate vouch for one with the same subject and key
    // usage but another key.
    let unrelated = self_signed(|params| params.is_ca = IsCa::NoCa);
    let refused = verify(&verifier, &unrelated, "localhost", mid_2020());
    assert!(refused.is_err(), "{refused:?}");
}

#[test]
fn a_named_certificate_must_name_the_host() {
    let certificate = self_signed(|_| {});
    let verifier = verifier(&[&certificate]);
    let refused = verify(&verifier, &certificate, "example.com", mid_2020()).unwrap_err();
    assert!(
        matches!(
            refused,
            rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })
        ),
        "{refused:?}"
    );
    assert!(verify(&verifier, &certificate, "127.0.0.2", mid_2020()).is_err());
}

#[test]
fn a_named_certificate_without_alternative_names_must_have_the_host_as_its_common_name() {
    // As curl reads a certificate made with `openssl req -x509 -subj /CN=localhost`.
    let certificate = self_signed(|params| params.subject_alt_names.clear());
    let verifier = verifier(&[&certificate]);
    verify(&verifier, &certificate, "localhost", mid_2020()).unwrap();
    verify(&verifier, &certificate, "LOCALHOST", mid_2020()).unwrap();
    for host in ["127.0.0.1", "sub.localhost", "example.com"] {
        let refused = verify(&verifier, &certificate, host, mid_2020()).unwrap_err();
        let rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            presented,
            ..
        }) = refused
        else {
            panic!("{host}: {refused:?}");
        };
        assert_eq!(presented, ["localhost"], "{host}");
    }
    // A wildcard common name is not one.
    let wildcard = self_signed(|params| {
        params.subject_alt_names.clear();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, "*.test");
    });
    let verifier = self::verifier(&[&wildcard]);
    assert!(verify(&verifier, &wildcard, "a.test", mid_2020()).is_err());
}

#[test]
fn a_named_certificate_must_be_valid_now() {
    let certificate = self_signed(|_| {});
    let verifier = verifier(&[&certificate]);
    let after = UnixTime::since_unix_epoch(Duration::from_secs(1_640_995_200)); // 2022
    let refused = verify(&verifier, &certificate, "localhost", after).unwrap_err();
    assert!(
        matches!(
            refused,
            rustls::Error::InvalidCertificate(CertificateError::ExpiredContext { .. })
        ),
        "{refused:?}"
    );
    let before = UnixTime::since_unix_epoch(Duration::from_secs(1_546_300_800)); // 2019
    let refused = verify(&verifier, &certificate, "localhost", before).unwrap_err();
    assert!(
        matches!(
            refused,
            rustls::Error::InvalidCertificate(CertificateError::NotValidYetContext { .. })
        ),
        "{refused:?}"
    );
}

#[test]
fn a_named_certificate_must_be_usable_by_a_tls_server() {
    let client_only = self_signed(|params| {
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth]
    });
    let verifier = verifier(&[&client_only]);
    assert_eq!(
        verify(&verifier, &client_only, "localhost", mid_2020()).unwrap_err(),
        rustls::Error::InvalidCertificate(CertificateError::InvalidPurpose)
    );

    let signing_only = self_signed(|params| {
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    });
    let verifier = self::verifier(&[&signing_only]);
    let refused = verify(&verifier, &signing_only, "localhost", mid_2020()).unwrap_err();
    let rustls::Error::InvalidCertificate(CertificateError::Other(other)) = &refused else {
        panic!("{refused:?}");
    };
    assert_eq!(
        other.0.downcast_ref::<NamedRefusal>(),
        Some(&NamedRefusal::KeyUsage)
    );

    let server = self_signed(|params| {
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyCertSign,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    });
    let verifier = self::verifier(&[&server]);
    verify(&verifier, &server, "localhost", mid_2020()).unwrap();
}

/// A verifier that refuses every certificate with one error.
#[derive(Debug)]
struct Refusing(rustls::Error);

impl ServerCertVerifier for Refusing {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Err(self.0.clone())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(self.0.clone())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Err(self.0.clone())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        Vec::new()
    }
}

#[test]
fn a_revocation_or_a_refusal_that_is_not_of_the_certificate_is_never_overridden() {
    let certificate = self_signed(|_| {});
    for refusal in [
        rustls::Error::InvalidCertificate(CertificateError::Revoked),
        rustls::Error::General("the platform failed".into()),
    ] {
        let verifier = NamedCertificates::new(
            Arc::new(Refusing(refusal.clone())),
            vec![certificate.clone()],
        );
        assert_eq!(
            verify(&verifier, &certificate, "localhost", mid_2020()).unwrap_err(),
            refusal
        );
    }
    let refusal = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
    let verifier = NamedCertificates::new(Arc::new(Refusing(refusal)), vec![certificate.clone()]);
    verify(&verifier, &certificate, "localhost", mid_2020()).unwrap();
}
