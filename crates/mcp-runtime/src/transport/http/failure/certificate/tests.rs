use std::{sync::Arc, time::Duration};

use rustls::{OtherError, pki_types::ServerName};

use super::*;

fn refused(error: E) -> String {
    problem(&rustls::Error::InvalidCertificate(error)).expect("a certificate's refusal")
}

fn other(error: impl std::error::Error + Send + Sync + 'static) -> E {
    E::Other(OtherError(Arc::new(error)))
}

fn at(seconds: u64) -> UnixTime {
    UnixTime::since_unix_epoch(Duration::from_secs(seconds))
}

#[test]
fn every_certificate_refusal_names_the_verifiers_reason_and_what_to_do() {
    #[allow(deprecated)]
    let refusals = [
        (E::UnknownIssuer, "`UnknownIssuer`", "`ca_certificate`"),
        (
            other(webpki::Error::CaUsedAsEndEntity),
            "`CaUsedAsEndEntity`",
            "`ca_certificate`",
        ),
        (E::NotValidForName, "`NotValidForName`", "`url`"),
        (
            E::NotValidForNameContext {
                expected: ServerName::try_from("mcp.test").unwrap(),
                presented: vec!["other.test".into()],
            },
            "`NotValidForName`",
            "`url`",
        ),
        (E::Expired, "`Expired`", "new certificate"),
        (
            E::ExpiredContext {
                time: at(1_700_000_000),
                not_after: at(1_600_000_000),
            },
            "`Expired`",
            "new certificate",
        ),
        (E::NotValidYet, "`NotValidYet`", "clock"),
        (
            E::NotValidYetContext {
                time: at(1_600_000_000),
                not_before: at(1_700_000_000),
            },
            "`NotValidYet`",
            "clock",
        ),
        (E::Revoked, "`Revoked`", "new certificate"),
        (E::InvalidPurpose, "`InvalidPurpose`", "`serverAuth`"),
        (
            E::UnhandledCriticalExtension,
            "`UnhandledCriticalExtension`",
            "certificate without it",
        ),
        (E::BadEncoding, "`BadEncoding`", "valid certificate"),
        (E::BadSignature, "`BadSignature`", "`ca_certificate`"),
        (
            E::UnsupportedSignatureAlgorithm,
            "`UnsupportedSignatureAlgorithm`",
            "ECDSA",
        ),
        (
            other(NamedRefusal::KeyUsage),
            "`KeyUsage`",
            "`digitalSignature`",
        ),
        (
            other(webpki::Error::CertDistrusted),
            "`CertDistrusted`",
            "another CA",
        ),
        (
            other(webpki::Error::UnsupportedCriticalExtension),
            "`UnsupportedCriticalExtension`",
            "version 3",
        ),
        (
            other(webpki::Error::PathLenConstraintViolated),
            "`PathLenConstraintViolated`",
            "`ca_certificate`",
        ),
        (
            E::UnknownRevocationStatus,
            "`UnknownRevocationStatus`",
            "`ca_certificate`",
        ),
        (
            E::ApplicationVerificationFailure,
            "`ApplicationVerificationFailure`",
            "`ca_certificate`",
        ),
    ];
    // The reasons said in the general words, with the general fix; every other one
    // is said in words of its own.
    let general = [
        "`PathLenConstraintViolated`",
        "`UnknownRevocationStatus`",
        "`ApplicationVerificationFailure`",
    ];
    for (error, reason, fix) in refusals {
        let debug = format!("{error:?}");
        let problem = refused(error);
        assert!(problem.contains(reason), "{debug}: {problem}");
        assert!(problem.contains(fix), "{debug}: {problem}");
        if general.contains(&reason) {
            assert_eq!(
                problem,
                format!("it cannot be verified ({reason}): {NAME_IT}"),
                "{debug}"
            );
        } else {
            assert!(
                !problem.contains("cannot be verified"),
                "{debug} is said in words of its own: {problem}"
            );
        }
    }
}

#[test]
fn a_name_refusal_says_which_names_the_certificate_has() {
    let problem = refused(E::NotValidForNameContext {
        expected: ServerName::try_from("mcp.test").unwrap(),
        presented: (0..7).map(|n| format!("host{n}.test")).collect(),
    });
    assert_eq!(
        problem,
        "it does not name the host `mcp.test` of `url` (`NotValidForName`: it names `host0.test`, `host1.test`, `host2.test`, `host3.test`, `host4.test`, 2 more): use a host it names in `url`, or give the server a certificate whose subjectAltName names `mcp.test`"
    );
    let none = refused(E::NotValidForNameContext {
        expected: ServerName::try_from("127.0.0.1").unwrap(),
        presented: Vec::new(),
    });
    assert!(
        none.contains("(`NotValidForName`: it names no host in a subjectAltName)"),
        "{none}"
    );
}

#[test]
fn an_expiry_is_said_as_a_date() {
    let problem = refused(E::ExpiredContext {
        time: at(1_700_000_000),
        not_after: at(978_307_200),
    });
    assert!(problem.starts_with("it expired on `"), "{problem}");
    assert!(problem.contains("2001"), "{problem}");
}

#[test]
fn an_error_that_is_not_a_certificates_is_left_to_the_caller() {
    assert_eq!(problem(&rustls::Error::General("x".into())), None);
}
