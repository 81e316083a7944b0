//! A small OAuth 2.1 authorization server, in the fixture's own process, that
//! makes the Streamable HTTP fixture a protected resource (`--require-oauth`).
//!
//! The tests of mcp-runtime's OAuth client need a real authorization server
//! that speaks plain HTTP on loopback and that a test can steer and observe
//! from the outside. This one serves, on the fixture's own listener (so a test
//! starts one process), under the issuer `http://ADDR`:
//!
//! | Path | What |
//! |---|---|
//! | `/.well-known/oauth-protected-resource/mcp` | RFC 9728 metadata of the MCP endpoint |
//! | `/.well-known/oauth-authorization-server` | RFC 8414 metadata of this server |
//! | `/register` | RFC 7591 dynamic client registration |
//! | `/authorize` | approves at once as the account, redirects with `code`, `state`, `iss` |
//! | `/token` | `authorization_code` (PKCE S256), `refresh_token` (rotated), `client_credentials`, the JWT bearer grant of RFC 7523 for workloads; a person's grant also gets an unsigned OpenID Connect `id_token` naming the account (`sub`) |
//! | `/revoke` | RFC 7009 revocation |
//!
//! The MCP endpoint asks [`AuthServer::authorize_resource`] about each request:
//! no valid token is 401 with `WWW-Authenticate: Bearer resource_metadata="…"`
//! (and `scope="…"` when a scope is required), a token without the required
//! scope is 403 `error="insufficient_scope"`.
//!
//! Tokens, codes and client ids are random opaque strings with a readable
//! prefix (`at_`, `rt_`, `code_`, `client_`), so a test searching logs for a
//! leaked token knows what to look for. The clock is an argument of every
//! call ([`Instant`]), so the unit tests expire tokens without waiting;
//! a process test gets an already expired token with `--oauth-token-ttl-secs 0`.
//!
//! Every request to the server is written to the OAuth log as one JSON line
//! (`endpoint`, `grant_type`, `client_id`, `auth_method`, `outcome`), so tests
//! can count registrations and refreshes. Secrets never go there.
//!
//! `mcp-fixture` steers it with flags, each a field of [`Config`]:
//!
//! | Flag | Default | What |
//! |---|---|---|
//! | `--require-oauth` | off | serve this server and protect `/mcp` |
//! | `--oauth-token-ttl-secs N` | 3600 | access token lifetime (0: expired at once) |
//! | `--oauth-account NAME` | `fixture-user` | the account that approves (unless the authorization request names another with OpenID Connect's `login_hint`, as a person picks an account in the browser); the `sub` of its ID tokens |
//! | `--oauth-client ID:SECRET` | none | a pre-registered confidential client (repeatable) |
//! | `--oauth-workload ID:TOKEN` | none | a workload: a public client whose platform's identity token `TOKEN` is trusted as its JWT bearer assertion (repeatable: a platform rotating its token) |
//! | `--oauth-scope S` | `mcp` | the scopes `/mcp` requires and names in its challenge |
//! | `--oauth-token-resource URL` | the MCP URL | the resource tokens are issued for and accepted at `/mcp` (its metadata still names the MCP URL) |
//! | `--oauth-auth-method M` | all of [`AUTH_METHODS`] | the client authentication accepted and advertised |
//! | `--oauth-fail STEP` | none | one step fails ([`Failing`]; repeatable): `metadata` (the authorization server's metadata is `404`), `register` (`400 invalid_client_metadata`), `authorize` (redirects with `access_denied`), `token` (the code exchange is `400 invalid_grant`), `refresh` (a refresh is `503`) |
//! | `--oauth-log FILE` | none | the OAuth log |
//!
//! The token and revocation endpoints live in `oauth/token.rs`.
//!
//! Invariants:
//!
//! 1. An authorization code is exchanged at most once; a second attempt fails
//!    and revokes every token of that grant (OAuth 2.1 §4.1.3).
//! 2. A refresh token is used at most once: each refresh returns a new one and
//!    forgets the old (rotation).
//! 3. An access token is accepted only for the MCP endpoint's URL (its
//!    resource), strictly before its expiry, and while neither it nor its grant
//!    is revoked. Revoking a refresh token revokes its whole grant.
//! 4. No secret (client secret, code, verifier, token) appears in a log line,
//!    an error description or `Debug` output.

use std::{
    collections::{BTreeMap, HashMap},
    fmt,
    fs::File,
    io::Write as _,
    sync::Mutex,
    time::{Duration, Instant},
};

use base64::Engine as _;
use http::{HeaderMap, Method, Response, StatusCode, header};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// The path of the protected resource metadata of the MCP endpoint.
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";
/// The path of the authorization server metadata.
pub const SERVER_METADATA_PATH: &str = "/.well-known/oauth-authorization-server";

const REGISTER_PATH: &str = "/register";
const AUTHORIZE_PATH: &str = "/authorize";
const TOKEN_PATH: &str = "/token";
const REVOKE_PATH: &str = "/revoke";

/// How long an authorization code may wait for its exchange.
const CODE_TTL: Duration = Duration::from_secs(600);

/// What the authorization server does, as `mcp-fixture`'s `--oauth-*` flags say.
#[derive(Clone, Debug)]
pub struct Config {
    /// The lifetime of an access token (`expires_in`).
    pub token_ttl: Duration,
    /// The account an authorization approves as, unless its request names another
    /// (`login_hint`); the `sub` of its ID tokens.
    pub account: String,
    /// Pre-registered confidential clients.
    pub clients: Vec<ClientCredentials>,
    /// Workloads: public clients, each with an identity token (in place of the
    /// secret) trusted as its assertion; an id given twice trusts both tokens.
    pub workloads: Vec<ClientCredentials>,
    /// The scopes (space-separated) the MCP endpoint requires, all of them,
    /// and names in its challenge; none when empty.
    pub scope: String,
    /// The client authentication methods the token and revocation endpoints
    /// accept and advertise, of [`AUTH_METHODS`].
    pub auth_methods: Vec<String>,
    /// The resource tokens are issued for and accepted at the MCP endpoint, when
    /// not its URL (which the resource metadata names all the same).
    pub token_resource: Option<String>,
    /// The steps that fail.
    pub failing: Vec<Failing>,
}

/// A step of the authorization server made to fail, for the tests of what a
/// client says then.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Failing {
    /// Its metadata (`/.well-known/oauth-authorization-server`) is `404`; the
    /// protected resource metadata still names it.
    Metadata,
    /// Every registration is refused: `400 invalid_client_metadata`.
    Register,
    /// Every authorization redirects back with `error=access_denied`.
    Authorize,
    /// Every authorization code exchange is refused: `400 invalid_grant`.
    Token,
    /// Every refresh fails: `503`, a failure that is not a refusal.
    Refresh,
}

/// The client authentication methods the server knows: a public client's
/// `client_id` alone, HTTP Basic, and the secret as a form parameter.
pub const AUTH_METHODS: [&str; 3] = ["none", "client_secret_basic", "client_secret_post"];

impl Default for Config {
    fn default() -> Self {
        Self {
            token_ttl: Duration::from_secs(3600),
            account: "fixture-user".into(),
            clients: Vec::new(),
            workloads: Vec::new(),
            scope: "mcp".into(),
            auth_methods: AUTH_METHODS.map(String::from).to_vec(),
            token_resource: None,
            failing: Vec::new(),
        }
    }
}

/// A pre-registered confidential client: `--oauth-client ID:SECRET`.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    /// The client id.
    pub id: String,
    /// The client secret.
    pub secret: String,
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl std::str::FromStr for ClientCredentials {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.split_once(':') {
            Some((id, secret)) if !id.is_empty() && !secret.is_empty() => Ok(Self {
                id: id.into(),
                secret: secret.into(),
            }),
            _ => Err("a client is `ID:SECRET`, both non-empty".into()),
        }
    }
}

/// The authorization server and the protected resource's token check.
pub struct AuthServer {
    config: Config,
    issuer: String,
    resource: String,
    log: Option<File>,
    state: Mutex<State>,
}

impl fmt::Debug for AuthServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthServer")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    clients: HashMap<String, Client>,
    codes: HashMap<String, Code>,
    /// Exchanged codes and their grants, to revoke a grant whose code comes again.
    spent_codes: HashMap<String, u64>,
    access: HashMap<String, Token>,
    refresh: HashMap<String, Token>,
    next_grant: u64,
}

struct Client {
    /// `None` for a public client (`token_endpoint_auth_method: none`).
    secret: Option<String>,
    redirect_uris: Vec<String>,
}

struct Code {
    client_id: String,
    /// The account that approved.
    account: String,
    redirect_uri: String,
    challenge: String,
    scope: String,
    grant: u64,
    expires: Instant,
}

/// An access or refresh token; refresh tokens never expire here.
struct Token {
    client_id: String,
    /// The account that approved the grant; empty for a machine client's.
    account: String,
    scope: String,
    resource: String,
    grant: u64,
    expires: Option<Instant>,
}

/// An OAuth error answer: `error` code and a description without secrets.
struct Refusal {
    status: StatusCode,
    error: &'static str,
    description: String,
}

fn refuse(error: &'static str, description: impl Into<String>) -> Refusal {
    Refusal {
        status: StatusCode::BAD_REQUEST,
        error,
        description: description.into(),
    }
}

/// What one request to the server did, for the OAuth log.
#[derive(Default)]
struct Entry<'a> {
    grant_type: Option<&'a str>,
    client_id: Option<String>,
    auth_method: Option<&'static str>,
    /// The error `/authorize` sent to the client's redirect uri.
    redirected_error: Option<&'static str>,
}

type Answer = Result<Response<String>, Refusal>;

impl AuthServer {
    /// A server whose issuer is `origin` (`http://ADDR`), protecting
    /// `origin` + `mcp_path`, writing its log lines to `log`.
    pub fn new(config: Config, origin: &str, mcp_path: &str, log: Option<File>) -> Self {
        let mut state = State::default();
        for workload in &config.workloads {
            state.clients.insert(
                workload.id.clone(),
                Client {
                    secret: None,
                    redirect_uris: Vec::new(),
                },
            );
        }
        for client in &config.clients {
            state.clients.insert(
                client.id.clone(),
                Client {
                    secret: Some(client.secret.clone()),
                    redirect_uris: Vec::new(),
                },
            );
        }
        Self {
            issuer: origin.trim_end_matches('/').into(),
            resource: format!("{}{mcp_path}", origin.trim_end_matches('/')),
            config,
            log,
            state: Mutex::new(state),
        }
    }

    /// Whether `path` is one of the server's endpoints (see the module docs).
    pub fn serves(path: &str) -> bool {
        [
            RESOURCE_METADATA_PATH,
            SERVER_METADATA_PATH,
            REGISTER_PATH,
            AUTHORIZE_PATH,
            TOKEN_PATH,
            REVOKE_PATH,
        ]
        .contains(&path)
    }

    /// Answer a request to one of the server's endpoints at time `now`.
    pub fn answer(
        &self,
        method: &Method,
        path: &str,
        query: Option<&str>,
        headers: &HeaderMap,
        body: &[u8],
        now: Instant,
    ) -> Response<String> {
        let mut entry = Entry::default();
        let form: BTreeMap<String, String>;
        let failing = |step| self.config.failing.contains(&step);
        let answer = match (method, path) {
            (&Method::GET, SERVER_METADATA_PATH) if failing(Failing::Metadata) => {
                Ok(text(StatusCode::NOT_FOUND, "not found"))
            }
            (&Method::POST, REGISTER_PATH) if failing(Failing::Register) => Err(refuse(
                "invalid_client_metadata",
                "mcp-fixture refuses registrations on purpose",
            )),
            (&Method::POST, TOKEN_PATH) if failing(Failing::Token) || failing(Failing::Refresh) => {
                form = parse_form(body);
                entry.grant_type = form.get("grant_type").map(String::as_str);
                match entry.grant_type {
                    Some("authorization_code") if failing(Failing::Token) => Err(refuse(
                        "invalid_grant",
                        "mcp-fixture refuses code exchanges on purpose",
                    )),
                    Some("refresh_token") if failing(Failing::Refresh) => Err(Refusal {
                        status: StatusCode::SERVICE_UNAVAILABLE,
                        error: "temporarily_unavailable",
                        description: "mcp-fixture fails refreshes on purpose".into(),
                    }),
                    _ => self.token(headers, &form, &mut entry, now),
                }
            }
            (&Method::GET, RESOURCE_METADATA_PATH) => Ok(self.resource_metadata()),
            (&Method::GET, SERVER_METADATA_PATH) => Ok(self.server_metadata()),
            (&Method::POST, REGISTER_PATH) => self.register(body, &mut entry),
            (&Method::GET, AUTHORIZE_PATH) => {
                form = parse_form(query.unwrap_or_default().as_bytes());
                self.authorize(&form, &mut entry, now)
            }
            (&Method::POST, TOKEN_PATH) => {
                form = parse_form(body);
                entry.grant_type = form.get("grant_type").map(String::as_str);
                self.token(headers, &form, &mut entry, now)
            }
            (&Method::POST, REVOKE_PATH) => {
                form = parse_form(body);
                self.revoke(headers, &form, &mut entry)
            }
            _ => Ok(text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed")),
        };
        let (response, outcome) = match answer {
            Ok(response) => (response, entry.redirected_error.unwrap_or("ok")),
            Err(refusal) => {
                let outcome = refusal.error;
                (error_response(refusal), outcome)
            }
        };
        self.record(path, &entry, outcome);
        response
    }

    /// Check the `Authorization` header of a request to the MCP endpoint at
    /// time `now`: `Ok` when it carries a valid token with the required scope,
    /// else the 401 or 403 answer to send.
    pub fn authorize_resource(
        &self,
        headers: &HeaderMap,
        now: Instant,
    ) -> Result<(), Box<Response<String>>> {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "));
        let Some(presented) = presented else {
            return Err(Box::new(self.challenge(StatusCode::UNAUTHORIZED, None)));
        };
        let state = self.state.lock().unwrap();
        let Some(token) = state.access.get(presented) else {
            return Err(Box::new(
                self.challenge(StatusCode::UNAUTHORIZED, Some("invalid_token")),
            ));
        };
        if token.resource != self.issued_resource() || token.expires.is_some_and(|at| now >= at) {
            return Err(Box::new(
                self.challenge(StatusCode::UNAUTHORIZED, Some("invalid_token")),
            ));
        }
        if !self
            .config
            .scope
            .split_whitespace()
            .all(|required| has_scope(&token.scope, required))
        {
            return Err(Box::new(
                self.challenge(StatusCode::FORBIDDEN, Some("insufficient_scope")),
            ));
        }
        Ok(())
    }

    fn challenge(&self, status: StatusCode, error: Option<&str>) -> Response<String> {
        let mut value = format!(
            "Bearer resource_metadata=\"{}{RESOURCE_METADATA_PATH}\"",
            self.issuer
        );
        if !self.config.scope.is_empty() {
            value.push_str(&format!(", scope=\"{}\"", self.config.scope));
        }
        if let Some(error) = error {
            value.push_str(&format!(", error=\"{error}\""));
        }
        let mut response = text(status, "a valid OAuth access token is required");
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            value.parse().expect("the challenge is a header value"),
        );
        response
    }

    fn scopes_supported(&self) -> Vec<&str> {
        let mut scopes: Vec<&str> = self.config.scope.split(' ').collect();
        scopes.retain(|scope| !scope.is_empty());
        scopes.push("offline_access");
        scopes
    }

    fn resource_metadata(&self) -> Response<String> {
        json_response(
            StatusCode::OK,
            &json!({
                "resource": self.resource,
                "authorization_servers": [self.issuer],
                "scopes_supported": self.scopes_supported(),
                "bearer_methods_supported": ["header"],
            }),
        )
    }

    fn server_metadata(&self) -> Response<String> {
        let issuer = &self.issuer;
        json_response(
            StatusCode::OK,
            &json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}{AUTHORIZE_PATH}"),
                "token_endpoint": format!("{issuer}{TOKEN_PATH}"),
                "registration_endpoint": format!("{issuer}{REGISTER_PATH}"),
                "revocation_endpoint": format!("{issuer}{REVOKE_PATH}"),
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
                "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials", token::JWT_BEARER],
                "token_endpoint_auth_methods_supported": self.config.auth_methods,
                "revocation_endpoint_auth_methods_supported": self.config.auth_methods,
                "scopes_supported": self.scopes_supported(),
                "authorization_response_iss_parameter_supported": true,
            }),
        )
    }

    /// RFC 7591: the metadata is echoed with `client_id` (and a secret for a
    /// confidential client) added.
    fn register(&self, body: &[u8], entry: &mut Entry<'_>) -> Answer {
        let Ok(Value::Object(mut metadata)) = serde_json::from_slice::<Value>(body) else {
            return Err(refuse(
                "invalid_client_metadata",
                "the body is not a JSON object",
            ));
        };
        let redirect_uris: Vec<String> = match metadata.get("redirect_uris") {
            Some(Value::Array(uris)) if !uris.is_empty() => uris
                .iter()
                .map(|uri| uri.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| refuse("invalid_redirect_uri", "a redirect uri is not a string"))?,
            _ => {
                return Err(refuse(
                    "invalid_redirect_uri",
                    "`redirect_uris` must be a non-empty array",
                ));
            }
        };
        if let Some(bad) = redirect_uris
            .iter()
            .find(|uri| url::Url::parse(uri).is_err())
        {
            return Err(refuse(
                "invalid_redirect_uri",
                format!("`{bad}` is not an absolute url"),
            ));
        }
        let method = metadata
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .unwrap_or("client_secret_basic")
            .to_owned();
        let secret = match method.as_str() {
            "none" => None,
            "client_secret_basic" | "client_secret_post" => Some(random("secret_")),
            other => {
                return Err(refuse(
                    "invalid_client_metadata",
                    format!("`token_endpoint_auth_method` `{other}` is not supported"),
                ));
            }
        };
        let client_id = random("client_");
        entry.client_id = Some(client_id.clone());
        metadata.insert("client_id".into(), client_id.clone().into());
        metadata.insert("token_endpoint_auth_method".into(), method.into());
        if let Some(secret) = &secret {
            metadata.insert("client_secret".into(), secret.clone().into());
            metadata.insert("client_secret_expires_at".into(), 0.into());
        }
        self.state.lock().unwrap().clients.insert(
            client_id,
            Client {
                secret,
                redirect_uris,
            },
        );
        Ok(json_response(StatusCode::CREATED, &Value::Object(metadata)))
    }

    /// Approve at once, as the account (`login_hint`, else the configured one).
    /// Errors about the client or its
    /// redirect uri are answered here (400); the others go to the client, on
    /// its redirect uri.
    fn authorize(
        &self,
        query: &BTreeMap<String, String>,
        entry: &mut Entry<'_>,
        now: Instant,
    ) -> Answer {
        let param = |name: &str| query.get(name).map(String::as_str);
        entry.client_id = param("client_id").map(str::to_owned);
        let mut state = self.state.lock().unwrap();
        let Some(client) = param("client_id").and_then(|id| state.clients.get(id)) else {
            return Err(refuse("invalid_request", "unknown `client_id`"));
        };
        let Some(redirect_uri) = param("redirect_uri").filter(|uri| {
            client
                .redirect_uris
                .iter()
                .any(|registered| registered == uri)
        }) else {
            return Err(refuse(
                "invalid_request",
                "`redirect_uri` is missing or not registered for this client",
            ));
        };
        let mut redirect = url::Url::parse(redirect_uri).expect("registered uris are urls");
        let checked = match self.config.failing.contains(&Failing::Authorize) {
            true => Err(refuse(
                "access_denied",
                "mcp-fixture denies authorizations on purpose",
            )),
            false => self.check_authorization(&param),
        };
        {
            let mut pairs = redirect.query_pairs_mut();
            match &checked {
                Ok((challenge, scope)) => {
                    let code = random("code_");
                    pairs.append_pair("code", &code);
                    let grant = state.next_grant;
                    state.next_grant += 1;
                    state.codes.insert(
                        code,
                        Code {
                            client_id: param("client_id").unwrap_or_default().into(),
                            account: param("login_hint")
                                .filter(|hint| !hint.is_empty())
                                .unwrap_or(&self.config.account)
                                .into(),
                            redirect_uri: redirect_uri.into(),
                            challenge: challenge.clone(),
                            scope: scope.clone(),
                            grant,
                            expires: now + CODE_TTL,
                        },
                    );
                }
                Err(refusal) => {
                    entry.redirected_error = Some(refusal.error);
                    pairs.append_pair("error", refusal.error);
                    pairs.append_pair("error_description", &refusal.description);
                }
            }
            if let Some(client_state) = param("state") {
                pairs.append_pair("state", client_state);
            }
            pairs.append_pair("iss", &self.issuer);
        }
        let mut response = text(StatusCode::FOUND, "");
        response.headers_mut().insert(
            header::LOCATION,
            redirect.as_str().parse().expect("a url is a header value"),
        );
        Ok(response)
    }

    /// The PKCE challenge and granted scope of a valid authorization request.
    fn check_authorization<'a>(
        &self,
        param: &impl Fn(&str) -> Option<&'a str>,
    ) -> Result<(String, String), Refusal> {
        if param("response_type") != Some("code") {
            return Err(refuse(
                "unsupported_response_type",
                "`response_type` must be `code`",
            ));
        }
        let challenge = param("code_challenge")
            .filter(|challenge| !challenge.is_empty())
            .ok_or_else(|| refuse("invalid_request", "a PKCE `code_challenge` is required"))?;
        if param("code_challenge_method") != Some("S256") {
            return Err(refuse(
                "invalid_request",
                "`code_challenge_method` must be `S256`",
            ));
        }
        self.check_resource(param("resource"), true)?;
        let scope = self.granted_scope(param("scope"))?;
        Ok((challenge.into(), scope))
    }

    /// RFC 8707: the resource, when given (or when `required`), must be the MCP
    /// endpoint's URL.
    /// The resource tokens are issued for: the MCP URL, unless configured.
    pub(crate) fn issued_resource(&self) -> &str {
        self.config
            .token_resource
            .as_deref()
            .unwrap_or(&self.resource)
    }

    fn check_resource(&self, resource: Option<&str>, required: bool) -> Result<(), Refusal> {
        match resource {
            Some(resource)
                if resource.trim_end_matches('/')
                    == self.issued_resource().trim_end_matches('/') =>
            {
                Ok(())
            }
            Some(resource) => Err(refuse(
                "invalid_target",
                format!(
                    "this server issues tokens for `{}`, not `{resource}`",
                    self.issued_resource()
                ),
            )),
            None if required => Err(refuse(
                "invalid_target",
                format!(
                    "the `resource` parameter is required (`{}`)",
                    self.issued_resource()
                ),
            )),
            None => Ok(()),
        }
    }

    /// The requested scopes, each of which must be supported; the required
    /// scope when none is requested.
    fn granted_scope(&self, requested: Option<&str>) -> Result<String, Refusal> {
        let Some(requested) = requested.filter(|scope| !scope.trim().is_empty()) else {
            return Ok(self.config.scope.clone());
        };
        let supported = self.scopes_supported();
        if let Some(unknown) = requested
            .split(' ')
            .find(|scope| !scope.is_empty() && !supported.contains(scope))
        {
            return Err(refuse(
                "invalid_scope",
                format!("scope `{unknown}` is not supported"),
            ));
        }
        Ok(requested.split_whitespace().collect::<Vec<_>>().join(" "))
    }

    fn record(&self, endpoint: &str, entry: &Entry<'_>, outcome: &str) {
        let Some(mut log) = self.log.as_ref() else {
            return;
        };
        let mut line = json!({ "endpoint": endpoint, "outcome": outcome });
        if let Some(grant_type) = entry.grant_type {
            line["grant_type"] = grant_type.into();
        }
        if let Some(client_id) = &entry.client_id {
            line["client_id"] = client_id.clone().into();
        }
        if let Some(method) = entry.auth_method {
            line["auth_method"] = method.into();
        }
        let mut bytes = line.to_string().into_bytes();
        bytes.push(b'\n');
        // One write on an `O_APPEND` file: lines never interleave.
        if let Err(error) = log.write_all(&bytes) {
            eprintln!("mcp-fixture: cannot write the OAuth log: {error}");
        }
    }
}

impl State {
    fn revoke_grant(&mut self, grant: u64) {
        self.access.retain(|_, token| token.grant != grant);
        self.refresh.retain(|_, token| token.grant != grant);
    }
}

fn invalid_client(description: impl Into<String>) -> Refusal {
    Refusal {
        status: StatusCode::UNAUTHORIZED,
        error: "invalid_client",
        description: description.into(),
    }
}

fn error_response(refusal: Refusal) -> Response<String> {
    let mut response = json_response(
        refusal.status,
        &json!({ "error": refusal.error, "error_description": refusal.description }),
    );
    if refusal.status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Basic realm=\"mcp-fixture\""),
        );
    }
    response
}

/// Whether the space-separated `granted` scopes include `wanted`.
fn has_scope(granted: &str, wanted: &str) -> bool {
    granted.split(' ').any(|scope| scope == wanted)
}

/// What a log shows of an `Authorization` header value: `Bearer sha256:` and
/// the start of the token's SHA-256 in base64url, so a test can tell tokens
/// apart without the log holding one.
pub fn redact_authorization(value: &str) -> String {
    let (scheme, credentials) = value.split_once(' ').unwrap_or(("", value));
    let digest = Sha256::digest(credentials.trim().as_bytes());
    let fingerprint = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&digest[..9]);
    format!("{scheme} sha256:{fingerprint}")
}

/// RFC 7636 S256: `BASE64URL(SHA256(verifier))` without padding.
pub fn pkce_challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A random opaque string: `prefix` and 32 random bytes in base64url.
fn random(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS has a random source");
    format!(
        "{prefix}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

fn parse_form(bytes: &[u8]) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(bytes).into_owned().collect()
}

/// One `application/x-www-form-urlencoded` value, as in Basic credentials
/// (RFC 6749 §2.3.1).
fn form_decode(raw: &str) -> String {
    url::form_urlencoded::parse(raw.as_bytes())
        .next()
        .map(|(decoded, _)| decoded.into_owned())
        .unwrap_or_default()
}

fn json_response(status: StatusCode, body: &Value) -> Response<String> {
    let mut response = Response::new(body.to_string());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

fn text(status: StatusCode, body: &str) -> Response<String> {
    let mut response = Response::new(body.to_owned());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

mod token;

#[cfg(test)]
mod tests;
