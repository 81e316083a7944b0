use std::time::Duration;

use super::*;

#[test]
fn the_chain_goes_through_our_errors_shared_in_an_arc() {
    let error = CallError::Restart(RestartError::Failed {
        server: "s".into(),
        attempt: 1,
        limit: 5,
        source: Arc::new(StartupError::Exited {
            status: ProcessExit::Code(7),
            stderr_tail: vec!["cannot open the tool database".into()],
        }),
    });
    let text = chain(&error);
    assert!(text.contains("exit status: 7"), "{text}");
    assert!(text.contains("cannot open the tool database"), "{text}");
}

#[test]
fn every_public_error_type_of_the_crate_is_ours() {
    // Each type deriving `thiserror::Error` and public, read from the sources: the
    // derive, then the type's name within the next few lines.
    fn walk(path: &std::path::Path, found: &mut Vec<String>) {
        if path.is_dir() {
            for entry in std::fs::read_dir(path).unwrap() {
                walk(&entry.unwrap().path(), found);
            }
            return;
        }
        if path.extension().is_none_or(|extension| extension != "rs") {
            return;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            if !(line.trim_start().starts_with("#[derive(") && line.contains("thiserror::Error")) {
                continue;
            }
            let declared = lines[at..].iter().take(8).find_map(|line| {
                let line = line.trim_start();
                ["pub enum ", "pub struct "]
                    .iter()
                    .find_map(|public| line.strip_prefix(public))
            });
            if let Some(rest) = declared {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                found.push(name);
            }
        }
    }
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut public = Vec::new();
    walk(&src, &mut public);
    assert!(public.len() >= 10, "{public:?}");
    let error_rs = std::fs::read_to_string(src.join("error.rs")).unwrap();
    let is_ours = &error_rs[error_rs.find("pub fn is_ours").unwrap()..];
    // With the errors of OAuth, in a function of their own.
    let is_ours = &is_ours[..is_ours.find("#[cfg(not(feature = \"oauth\"))]").unwrap()];
    for name in public {
        assert!(
            is_ours.contains(&format!("{name}>(error)")),
            "`{name}` is a public error of the crate missing from `is_ours`"
        );
    }
}

#[test]
#[cfg(feature = "oauth")]
fn the_errors_of_a_login_and_of_the_token_store_are_ours() {
    use crate::auth::{logout::LogoutError, store::StoreError};
    let store = StoreError::reported(rmcp::transport::auth::AuthError::CredentialStoreError(
        "could not read `/home/u/.config/mcp-runtime/oauth-credentials.json`".into(),
    ));
    let logout = LogoutError::Store {
        action: "read",
        source: store.clone(),
    };
    assert!(is_ours(&logout) && is_ours(&store));
    assert_eq!(
        chain(&logout),
        "cannot read the OAuth token store: could not read `/home/u/.config/mcp-runtime/oauth-credentials.json`"
    );
}

/// The protocol library's error for a JSON-RPC error from the server.
fn server_error() -> Arc<dyn std::error::Error + Send + Sync> {
    Arc::new(rmcp::ServiceError::McpError(
        rmcp::model::ErrorData::internal_error("boom", None),
    ))
}

fn request_errors() -> Vec<RequestError> {
    let server = || "web".to_owned();
    let http = [
        HttpFailure::Unauthorized {
            server: server(),
            challenge: None,
        },
        HttpFailure::Forbidden {
            server: server(),
            challenge: None,
        },
        HttpFailure::NotFound { server: server() },
        HttpFailure::LegacySse { server: server() },
        HttpFailure::Status {
            server: server(),
            status: 503,
            body_excerpt: "down".into(),
        },
        HttpFailure::Status {
            server: server(),
            status: 500,
            body_excerpt: String::new(),
        },
        HttpFailure::Redirect {
            server: server(),
            status: 302,
            location: Some("https://*****@other.example/mcp".into()),
            problem: "a redirect to another origin is never followed",
        },
        HttpFailure::Redirect {
            server: server(),
            status: 303,
            location: None,
            problem: "",
        },
        HttpFailure::Refused { server: server() },
        HttpFailure::Reset { server: server() },
        HttpFailure::Closed { server: server() },
        HttpFailure::Dns {
            server: server(),
            host: "mcp.invalid".into(),
        },
        HttpFailure::Tls { server: server() },
        HttpFailure::Certificate {
            server: server(),
            problem: "it has expired".into(),
        },
        HttpFailure::Proxy {
            server: server(),
            proxy: "http://*****@proxy:8080".into(),
            variable: "HTTPS_PROXY",
            problem: "the proxy refused the connection",
        },
        HttpFailure::Timeout { server: server() },
        HttpFailure::Connection {
            server: server(),
            description: "the connection failed".into(),
        },
    ];
    let mut errors: Vec<_> = http.into_iter().map(RequestError::Http).collect();
    errors.extend([
        RequestError::Server {
            code: -32603,
            message: "boom".into(),
            source: server_error(),
        },
        RequestError::Exited {
            status: ProcessExit::Code(4),
            stderr_tail: vec!["fatal".into()],
        },
        RequestError::Closed {
            stderr_tail: Vec::new(),
        },
        RequestError::Lost {
            source: Arc::new(HttpFailure::Reset { server: server() }),
        },
        RequestError::StreamLost {
            resuming: Resuming::Impossible,
            source: None,
        },
        RequestError::StreamLost {
            resuming: Resuming::Failed,
            source: Some(Arc::new(HttpFailure::Refused { server: server() })),
        },
        RequestError::StreamLost {
            resuming: Resuming::OutOfTime {
                after: Duration::from_secs(60),
            },
            source: Some(Arc::new(HttpFailure::Closed { server: server() })),
        },
        RequestError::Other {
            description: "the request failed".into(),
            source: Arc::new(rmcp::ServiceError::TransportClosed),
        },
    ]);
    errors
}

/// Every message a request failure can show, in every error that carries one.
fn messages() -> Vec<String> {
    let mut messages = Vec::new();
    for error in request_errors() {
        messages.push(chain(&error));
        messages.push(chain(&StartupError::Handshake {
            source: error.clone(),
            stderr_tail: vec!["last words".into()],
        }));
        messages.push(chain(&StartupError::ListTools(ListToolsError::Failed(
            error.clone(),
        ))));
        messages.push(chain(&CallError::Failed {
            server: "web".into(),
            tool: "echo".into(),
            source: error,
        }));
    }
    messages
}

#[test]
fn no_message_shows_an_internal_name() {
    for message in messages() {
        for internal in ["::", "rmcp", "Transport [", "Mcp error", "Some("] {
            assert!(!message.contains(internal), "`{internal}` in: {message}");
        }
        let generic = message
            .as_bytes()
            .windows(2)
            .any(|pair| (pair[0].is_ascii_alphanumeric() || pair[0] == b'_') && pair[1] == b'<');
        assert!(!generic, "a generic type in: {message}");
        assert!(!message.ends_with('.'), "a trailing period: {message}");
    }
}

#[test]
fn the_chain_stops_before_the_protocol_library_but_keeps_it_as_source() {
    let error = StartupError::ListTools(ListToolsError::Failed(RequestError::Server {
        code: -32603,
        message: "boom".into(),
        source: server_error(),
    }));
    assert_eq!(
        chain(&error),
        "listing tools failed: server error -32603: boom"
    );
    let mut source: &dyn std::error::Error = &error;
    let mut depth = 0;
    while let Some(next) = source.source() {
        source = next;
        depth += 1;
    }
    assert!(depth >= 2, "the library's error is still a source");
    assert!(source.to_string().contains("Mcp error"), "{source}");
}

#[test]
fn the_chain_keeps_an_io_cause() {
    let error = StartupError::Spawn {
        program: "srv".into(),
        source: Arc::new(std::io::Error::from(std::io::ErrorKind::NotFound)),
    };
    assert_eq!(
        chain(&error),
        "cannot start `srv` (check `command` and `cwd`): entity not found"
    );
}

#[test]
fn an_http_failure_names_the_server_and_what_to_do() {
    for error in request_errors() {
        if let RequestError::Http(failure) = &error {
            let message = failure.to_string();
            assert!(message.contains("server `web`"), "{message}");
        }
    }
    let unauthorized = HttpFailure::Unauthorized {
        server: "web".into(),
        challenge: Some("Bearer realm=\"x\"".into()),
    };
    assert!(unauthorized.to_string().contains("`bearer_token_env_var`"));
    assert!(unauthorized.to_string().contains("`env_http_headers`"));
}

#[test]
fn a_redirect_says_where_it_leads_why_it_is_not_followed_and_what_to_do() {
    let redirect = |location: Option<&str>| HttpFailure::Redirect {
        server: "web".into(),
        status: 302,
        location: location.map(str::to_owned),
        problem: "a redirect to another origin is never followed",
    };
    assert_eq!(
        redirect(Some("https://other.example/mcp")).to_string(),
        "server `web` answered HTTP 302, a redirect to `https://other.example/mcp`, which is not followed: a redirect to another origin is never followed (if that is the server, set `url` to it)"
    );
    assert_eq!(
        redirect(None).to_string(),
        "server `web` answered HTTP 302, a redirect that names no `Location` (check `url`)"
    );
}

#[test]
fn a_lost_answer_stream_says_how_resuming_it_went_why_and_what_to_do() {
    let lost = |resuming, source: Option<HttpFailure>| {
        chain(&RequestError::StreamLost {
            resuming,
            source: source.map(Arc::new),
        })
    };
    // The call may have run; the server is to be checked, unless why the stream was
    // lost says so already.
    assert_eq!(
        lost(Resuming::Impossible, None),
        "the server's event stream ended before the answer (the call may have run; check that the server is still running before calling again)"
    );
    assert_eq!(
        lost(
            Resuming::Failed,
            Some(HttpFailure::Refused {
                server: "web".into()
            })
        ),
        "the server's event stream ended before the answer, and resuming it failed (the call may have run): server `web` refused the connection (check that it is running and that `url` names its host and port)"
    );
    assert_eq!(
        lost(
            Resuming::Failed,
            Some(HttpFailure::Status {
                server: "web".into(),
                status: 503,
                body_excerpt: String::new(),
            })
        ),
        "the server's event stream ended before the answer, and resuming it failed (the call may have run; check that the server is still running before calling again): server `web` answered HTTP 503"
    );
    assert_eq!(
        lost(
            Resuming::OutOfTime {
                after: Duration::from_secs(60)
            },
            Some(HttpFailure::Reset {
                server: "web".into()
            })
        ),
        "the server's event stream ended before the answer, and it was not resumed within 60s (the call may have run): server `web` reset the connection (check that it is still running)"
    );
    assert_eq!(
        chain(&StartupError::Lost {
            source: HttpFailure::Closed {
                server: "web".into()
            }
        }),
        "the connection was lost: server `web` closed the connection before its answer was complete (check that it is still running)"
    );
}

#[test]
fn no_message_of_the_library_names_a_command_of_its_command_line() {
    // A host embedding the library has no `mcp-runtime` command: its messages say
    // what is wrong, and the command line adds its own commands when it prints them.
    for message in messages() {
        assert!(!message.contains("mcp-runtime "), "{message}");
    }
    for failure in [
        HttpFailure::NeedsLogin {
            server: "web".into(),
        },
        HttpFailure::InsufficientScope {
            server: "web".into(),
            scopes: vec!["mcp".into()],
        },
    ] {
        assert!(!failure.to_string().contains("mcp-runtime "), "{failure}");
    }
    // Every message a `#[error(…)]` of the sources writes.
    fn walk(path: &std::path::Path, found: &mut Vec<(String, String)>) {
        if path.is_dir() {
            for entry in std::fs::read_dir(path).unwrap() {
                walk(&entry.unwrap().path(), found);
            }
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            let text = std::fs::read_to_string(path).unwrap();
            for (at, _) in text.match_indices("#[error(") {
                let end = text[at..].find(")]").map_or(text.len(), |end| at + end);
                found.push((path.display().to_string(), text[at..end].to_owned()));
            }
        }
    }
    let mut found = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut found,
    );
    assert!(found.len() > 100, "{}", found.len());
    for (file, message) in found {
        assert!(!message.contains("`mcp-runtime "), "{file}: {message}");
    }
}
