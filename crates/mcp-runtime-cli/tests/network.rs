//! Behind a corporate network: the proxy variables and `SSL_CERT_FILE` of the runtime's
//! own environment, set on the `mcp-runtime` process, against a recording proxy and an
//! HTTPS server whose certificate a private CA issued.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Output,
};

use mcp_runtime_fixtures::network::{ProxiedRequest, TestCa, TestProxy, TlsFront};
use tokio::io::AsyncBufReadExt;

use crate::support::{cli, fixture_server, stderr};

/// Every variable the runtime reads for its network, removed from a child's
/// environment unless a test sets it, so that this machine's settings never count.
const NETWORK_VARS: [&str; 10] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// The fixture serving Streamable HTTP on a free port: the process and its address.
async fn http_fixture() -> (tokio::process::Child, SocketAddr) {
    let mut child = tokio::process::Command::new(fixture_server())
        .args(["--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the fixture starts");
    let mut line = String::new();
    tokio::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .await
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening http://")
        .and_then(|rest| rest.split('/').next())
        .and_then(|addr| addr.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    (child, addr)
}

/// A config file in `dir` with one server `web` at `url`.
fn config_file(dir: &Path, url: &str) -> PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(&path, format!("[mcp_servers.web]\nurl = \"{url}\"\n")).unwrap();
    path
}

/// `mcp-runtime tools --config CONFIG` with `vars` as its only network variables.
async fn tools(config: &Path, vars: &[(&str, &str)]) -> Output {
    let mut command = tokio::process::Command::from(cli());
    command.args(["tools", "--config", config.to_str().unwrap()]);
    for name in NETWORK_VARS {
        command.env_remove(name);
    }
    command.envs(vars.iter().copied());
    command.output().await.expect("the binary runs")
}

fn assert_listed(output: &Output) {
    assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
    assert_eq!(stderr(output), "");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("mcp__web__pid"), "{stdout}");
}

fn lines(requests: &[ProxiedRequest]) -> Vec<&str> {
    requests
        .iter()
        .map(|request| request.line.as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_proxy_carries_every_request_unless_no_proxy_names_the_host() {
    let (_fixture, addr) = http_fixture().await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), &format!("http://{addr}/mcp"));
    // Every request, the POSTs sent here and rmcp's own GET and DELETE alike.
    let target = format!(" http://{addr}/mcp HTTP/1.1");
    for variable in ["HTTP_PROXY", "http_proxy"] {
        let proxy = TestProxy::start().await;
        assert_listed(&tools(&config, &[(variable, &proxy.url)]).await);
        let requests = proxy.requests();
        let lines = lines(&requests);
        assert!(
            lines.contains(&format!("POST{target}").as_str())
                && lines.contains(&format!("DELETE{target}").as_str())
                && lines.iter().all(|line| line.ends_with(&target)),
            "{variable}: {requests:?}"
        );
    }

    for no_proxy in [
        ("NO_PROXY", "127.0.0.1"),
        ("no_proxy", "localhost,127.0.0.0/8"),
    ] {
        let proxy = TestProxy::start().await;
        assert_listed(&tools(&config, &[("HTTP_PROXY", &proxy.url), no_proxy]).await);
        assert_eq!(proxy.requests(), [], "{no_proxy:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_proxy_tunnels_to_a_server_of_a_ca_named_by_ssl_cert_file() {
    let (_fixture, upstream) = http_fixture().await;
    let ca = TestCa::new("mcp-runtime corporate CA");
    let front = TlsFront::start(ca.server_config(), upstream).await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), &front.url("/mcp"));
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.pem).unwrap();
    let proxy = TestProxy::start().await;
    let proxy_url = proxy.url.replace("http://", "http://user:s3cret@");

    let output = tools(
        &config,
        &[
            ("HTTPS_PROXY", &proxy_url),
            ("SSL_CERT_FILE", ca_file.to_str().unwrap()),
        ],
    )
    .await;
    assert_listed(&output);
    let requests = proxy.requests();
    assert!(!requests.is_empty());
    for request in &requests {
        assert_eq!(request.line, format!("CONNECT {} HTTP/1.1", front.addr));
        assert_eq!(
            request.authorization.as_deref(),
            Some("Basic dXNlcjpzM2NyZXQ="),
            "the proxy's credentials come from its URL"
        );
    }

    let output = tools(&config, &[("https_proxy", &proxy_url)]).await;
    assert_eq!(
        stderr(&output),
        "mcp-runtime: server `web` failed: handshake failed: server `web` presented a TLS certificate that is not trusted: it is self-signed or issued by a CA that is not trusted (`UnknownIssuer`): name the certificate itself, or the CA that issued it, as a PEM file with `ca_certificate` (or `SSL_CERT_FILE`)\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_failure_never_shows_the_proxy_password() {
    let (_fixture, addr) = http_fixture().await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), &format!("http://{addr}/mcp"));
    // A host name that never resolves (RFC 6761), rather than a port that was free a
    // moment ago, which a test running beside this one may take.
    let unreachable = "http://user:s3cret@proxy.invalid:3128";
    let output = tools(
        &config,
        &[("HTTP_PROXY", unreachable), ("MCP_RUNTIME_LOG", "trace")],
    )
    .await;
    let stderr = stderr(&output);
    let failure = "mcp-runtime: server `web` failed: handshake failed: cannot reach server `web` through the proxy `http://*****@proxy.invalid:3128` of `HTTP_PROXY`: the proxy's host name does not resolve (check the variable)\n";
    // The trace log goes on after the failure is said (the shutdown's lines), so the
    // failure is looked for, not at the end.
    assert!(stderr.contains(failure), "{stderr}");
    assert!(
        !stderr.contains("s3cret"),
        "not in the message nor in a trace log: {stderr}"
    );

    let output = tools(
        &config,
        &[("HTTPS_PROXY", "socks5://user:s3cret@127.0.0.1:1")],
    )
    .await;
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        self::stderr(&output),
        "mcp-runtime: server `web` failed: environment variable `HTTPS_PROXY` names a `socks5` proxy, which mcp-runtime does not support (use an `http://` proxy, or unset the variable)\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_proxy_the_server_host_name_is_resolved_by_the_proxy() {
    // A host no resolver knows (RFC 6761): resolved here, it would fail as a host
    // that does not resolve; through the proxy it reaches the proxy, which answers 502.
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), "http://mcp.invalid:8080/mcp");
    let proxy = TestProxy::start().await;
    let output = tools(&config, &[("HTTP_PROXY", &proxy.url)]).await;
    assert_eq!(
        lines(&proxy.requests()),
        ["POST http://mcp.invalid:8080/mcp HTTP/1.1"]
    );
    assert_eq!(
        stderr(&output),
        "mcp-runtime: server `web` failed: handshake failed: server `web` answered HTTP 502\n"
    );
}
