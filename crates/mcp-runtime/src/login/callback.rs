//! The loopback listener a login's redirect comes back to: `127.0.0.1` at the port of
//! `oauth.callback_port` or `oauth.callback_url`, else one the system picks. It takes
//! the first request to its path that carries `code` or `error`, answers it with a
//! short page, and closes; any other request is answered `404` and ignored.

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};
use url::Url;

use super::LoginError;
use crate::config::OAuthConfig;

/// The path the loopback listener takes the redirect at, when `oauth.callback_url`
/// names none.
const DEFAULT_CALLBACK_PATH: &str = "/callback";

/// The largest request line and headers the loopback listener reads.
const MAX_CALLBACK_REQUEST: usize = 16 * 1024;

/// What the authorization server sent the person back with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Redirect {
    /// A code: the redirect's full URL.
    Code(String),
    /// A refusal: the OAuth error code and its description, when given.
    Refused {
        error: String,
        description: Option<String>,
    },
}

/// The loopback listener the authorization server sends the person back to.
pub(super) struct Callback {
    /// The server logged in to, which an error names.
    server: String,
    listener: TcpListener,
    /// The redirect URI registered and sent: `callback_url` as configured, or
    /// `http://127.0.0.1:PORT/callback`.
    redirect_uri: String,
    /// The path it answers.
    path: String,
}

impl Callback {
    /// Listens on `127.0.0.1`, at the port `oauth` names, else at one the system
    /// picks, for the login to `server`.
    pub(super) async fn bind(server: &str, oauth: &OAuthConfig) -> Result<Self, LoginError> {
        let configured = oauth
            .callback_url
            .as_deref()
            .map(Url::parse)
            .transpose()
            .map_err(|error| LoginError::Url {
                server: server.to_owned(),
                reason: format!("`oauth.callback_url` is not a URL: {error} (fix it)"),
            })?;
        let port = oauth
            .callback_port
            .or_else(|| configured.as_ref().and_then(Url::port_or_known_default))
            .unwrap_or(0);
        Self::bind_port(server, configured, port).await
    }

    /// Listens on `127.0.0.1` at the port of `redirect_uri`, which is the redirect URI.
    pub(super) async fn bind_at(server: &str, redirect_uri: &str) -> Result<Self, LoginError> {
        let url = Url::parse(redirect_uri).map_err(|error| LoginError::Url {
            server: server.to_owned(),
            reason: format!(
                "the registered redirect URI is not a URL: {error} (log out, then log in again)"
            ),
        })?;
        let port = url.port_or_known_default().unwrap_or(0);
        Self::bind_port(server, Some(url), port).await
    }

    /// Listens on `127.0.0.1:port` (`0`: a port the system picks), for `configured`,
    /// the redirect URI, else `http://127.0.0.1:PORT/callback`.
    async fn bind_port(
        server: &str,
        configured: Option<Url>,
        port: u16,
    ) -> Result<Self, LoginError> {
        let address = format!("127.0.0.1:{port}");
        let failed = |address: String, source| LoginError::Callback {
            server: server.to_owned(),
            address,
            source,
        };
        let listener = TcpListener::bind(&address)
            .await
            .map_err(|source| failed(address.clone(), source))?;
        let bound = listener
            .local_addr()
            .map_err(|source| failed(address, source))?;
        let (redirect_uri, path) = match configured {
            Some(url) => (url.to_string(), url.path().to_owned()),
            None => (
                format!("http://127.0.0.1:{}{DEFAULT_CALLBACK_PATH}", bound.port()),
                DEFAULT_CALLBACK_PATH.to_owned(),
            ),
        };
        Ok(Self {
            server: server.to_owned(),
            listener,
            redirect_uri,
            path,
        })
    }

    pub(super) fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    /// The first redirect to this listener's path that carries `code` or `error`;
    /// other requests are answered 404 and ignored.
    pub(super) async fn accept(self) -> Result<Redirect, LoginError> {
        loop {
            let Ok((mut stream, _)) = self.listener.accept().await else {
                continue;
            };
            let Some(target) = read_request_target(&mut stream).await else {
                continue;
            };
            let Ok(url) = Url::parse(&format!("http://127.0.0.1{target}")) else {
                respond(&mut stream, "400 Bad Request", "not a redirect").await;
                continue;
            };
            let query = |name: &str| {
                url.query_pairs()
                    .find(|(key, _)| key == name)
                    .map(|(_, value)| value.into_owned())
            };
            if url.path() != self.path || (query("code").is_none() && query("error").is_none()) {
                respond(&mut stream, "404 Not Found", "not the login's redirect").await;
                continue;
            }
            if let Some(error) = query("error") {
                respond(
                    &mut stream,
                    "200 OK",
                    "The login was refused. You can close this window.",
                )
                .await;
                return Ok(Redirect::Refused {
                    error,
                    description: query("error_description"),
                });
            }
            respond(
                &mut stream,
                "200 OK",
                "Logged in. You can close this window.",
            )
            .await;
            let mut redirect = Url::parse(&self.redirect_uri).map_err(|error| LoginError::Url {
                server: self.server.clone(),
                reason: format!("the redirect URI is not a URL: {error}"),
            })?;
            redirect.set_query(url.query());
            return Ok(Redirect::Code(redirect.to_string()));
        }
    }
}

/// The request target of a `GET` read from `stream`, if it is one.
async fn read_request_target(stream: &mut TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buffer.windows(4).any(|window| window == b"\r\n\r\n") {
        if buffer.len() > MAX_CALLBACK_REQUEST {
            return None;
        }
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let head = String::from_utf8_lossy(&buffer);
    let mut words = head.lines().next()?.split_whitespace();
    (words.next()? == "GET").then(|| words.next().map(str::to_owned))?
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!("<!doctype html><title>mcp-runtime</title><p>{text}</p>\n");
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(address: &str, target: &str) -> String {
        let mut stream = TcpStream::connect(address).await.unwrap();
        stream
            .write_all(format!("GET {target} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn the_callback_takes_the_first_redirect_to_its_path_and_ignores_others() {
        let callback = Callback::bind("web", &OAuthConfig::default())
            .await
            .unwrap();
        let redirect_uri = callback.redirect_uri();
        let address = redirect_uri
            .strip_prefix("http://")
            .unwrap()
            .strip_suffix(DEFAULT_CALLBACK_PATH)
            .unwrap()
            .to_owned();
        let accepted = tokio::spawn(callback.accept());
        assert!(
            get(&address, "/favicon.ico")
                .await
                .starts_with("HTTP/1.1 404")
        );
        assert!(get(&address, "/callback").await.starts_with("HTTP/1.1 404"));
        assert!(
            get(
                &address,
                "/callback?code=c%201&state=s&iss=https%3A%2F%2Fas"
            )
            .await
            .starts_with("HTTP/1.1 200")
        );
        assert_eq!(
            accepted.await.unwrap().unwrap(),
            Redirect::Code(format!(
                "{redirect_uri}?code=c%201&state=s&iss=https%3A%2F%2Fas"
            ))
        );
    }

    #[tokio::test]
    async fn a_refusal_is_the_authorization_servers_error_and_description() {
        let callback = Callback::bind("web", &OAuthConfig::default())
            .await
            .unwrap();
        let address = callback.listener.local_addr().unwrap().to_string();
        let accepted = tokio::spawn(callback.accept());
        get(
            &address,
            "/callback?error=access_denied&error_description=no%20thanks",
        )
        .await;
        assert_eq!(
            accepted.await.unwrap().unwrap(),
            Redirect::Refused {
                error: "access_denied".into(),
                description: Some("no thanks".into()),
            }
        );
    }

    #[tokio::test]
    async fn a_configured_callback_url_is_the_redirect_uri_and_its_path_is_served() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let oauth = OAuthConfig {
            callback_url: Some(format!("http://127.0.0.1:{port}/oauth/done")),
            ..OAuthConfig::default()
        };
        let callback = Callback::bind("web", &oauth).await.unwrap();
        assert_eq!(
            callback.redirect_uri(),
            format!("http://127.0.0.1:{port}/oauth/done")
        );
        let accepted = tokio::spawn(callback.accept());
        get(&format!("127.0.0.1:{port}"), "/oauth/done?code=x&state=y").await;
        assert_eq!(
            accepted.await.unwrap().unwrap(),
            Redirect::Code(format!("http://127.0.0.1:{port}/oauth/done?code=x&state=y"))
        );
    }
}
