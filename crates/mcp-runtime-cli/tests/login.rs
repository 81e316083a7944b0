//! `login` → `tools` → `call` → `logout` against the protected fixture and its own
//! authorization server, as a user runs them: `$BROWSER` is a script that follows the
//! authorization URL's redirects (the fixture approves at once), and the login is
//! kept in the token file of a `HOME` of the test's own.

use std::{
    path::{Path, PathBuf},
    process::Output,
};

use tokio::io::AsyncBufReadExt;

use crate::support::{fixture_server, stderr, stdout};

/// The protected fixture on a free port: the process and its MCP URL.
async fn protected_fixture(oauth_log: &Path) -> (tokio::process::Child, String) {
    protected_fixture_with(oauth_log, &[]).await
}

/// [`protected_fixture`], with more of the fixture's flags.
async fn protected_fixture_with(
    oauth_log: &Path,
    flags: &[&str],
) -> (tokio::process::Child, String) {
    let log = oauth_log.to_str().unwrap();
    let mut all = vec!["--require-oauth", "--oauth-log", log];
    all.extend_from_slice(flags);
    http_fixture(&all).await
}

/// The fixture serving Streamable HTTP on a free port with `flags`: the process and
/// its MCP URL.
async fn http_fixture(flags: &[&str]) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(fixture_server())
        .args(["--http", "127.0.0.1:0"])
        .args(flags)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the fixture starts");
    let mut line = String::new();
    tokio::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .await
        .unwrap();
    let url = mcp_runtime_fixtures::testing::announced_url(&line);
    (child, url)
}

/// A browser that follows every redirect of the URL it is given, without a proxy.
fn browser_script(dir: &Path) -> PathBuf {
    let path = dir.join("browser");
    std::fs::write(
        &path,
        "#!/usr/bin/env python3\n\
         import sys, urllib.request\n\
         opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))\n\
         opener.open(sys.argv[1]).read()\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

struct User {
    home: tempfile::TempDir,
    config: PathBuf,
    browser: PathBuf,
}

impl User {
    fn new(url: &str) -> Self {
        let home = tempfile::tempdir().unwrap();
        let config = home.path().join("config.toml");
        std::fs::write(
            &config,
            format!(
                "mcp_oauth_credentials_store = \"file\"\n\n[mcp_servers.web]\nurl = \"{url}\"\n"
            ),
        )
        .unwrap();
        let browser = browser_script(home.path());
        Self {
            home,
            config,
            browser,
        }
    }

    async fn run(&self, args: &[&str]) -> Output {
        self.run_with_browser(args, true).await
    }

    /// The command, with the user's browser named by `$BROWSER` or with none (and
    /// stderr not a terminal: no person to log in).
    async fn run_with_browser(&self, args: &[&str], browser: bool) -> Output {
        self.run_with(args, browser, None).await
    }

    /// The command with the browser or none, and the log filter `log`, if any.
    async fn run_with(&self, args: &[&str], browser: bool, log: Option<&str>) -> Output {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-runtime"));
        command
            .args(args)
            .args(["--config", self.config.to_str().unwrap()])
            .env("HOME", self.home.path())
            .env_remove("XDG_CACHE_HOME")
            .env("CODEX_HOME", self.home.path())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("MCP_RUNTIME_LOG")
            .env_remove("BROWSER");
        if browser {
            command.env("BROWSER", &self.browser);
        }
        if let Some(filter) = log {
            command.env("MCP_RUNTIME_LOG", filter);
        }
        for name in ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"] {
            command.env_remove(name);
        }
        command.output().await.expect("the binary runs")
    }

    /// Makes the user's config a fleet's (`[serve.fleet]`), its variables unset.
    fn join_a_fleet(&self) {
        let mut config = std::fs::read_to_string(&self.config).unwrap();
        config.push_str(
            "\n[serve.fleet]\nredis_url_env_var = \"MCP_RUNTIME_REDIS_URL\"\n\
             key_env_var = \"MCP_RUNTIME_FLEET_KEY\"\n",
        );
        std::fs::write(&self.config, config).unwrap();
    }

    /// Every file under the user's home, as text: where a token must not be.
    fn files(&self) -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        let mut dirs = vec![self.home.path().to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if let Ok(text) = std::fs::read_to_string(&path) {
                    found.push((path, text));
                }
            }
        }
        found
    }
}

/// The `auth` of server `web` in a `servers --json` report.
fn auth_of(output: &Output) -> String {
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    report["servers"][0]["auth"]
        .as_str()
        .unwrap_or("null")
        .to_owned()
}

#[tokio::test]
async fn login_then_tools_and_call_then_logout() {
    let dir = tempfile::tempdir().unwrap();
    let (_fixture, url) = protected_fixture(&dir.path().join("oauth.jsonl")).await;
    let user = User::new(&url);

    let before = user.run(&["tools"]).await;
    assert!(
        stderr(&before)
            .contains("server `web` failed: handshake failed: server `web` answered HTTP 401"),
        "{}",
        stderr(&before)
    );

    assert_eq!(
        auth_of(&user.run(&["servers", "--json"]).await),
        "needs_login"
    );

    let login = user.run(&["login", "web", "--timeout-sec", "60"]).await;
    assert_eq!(login.status.code(), Some(0), "{}", stderr(&login));
    let said = stdout(&login);
    assert!(said.starts_with("logged in to `web`\n"), "{said}");
    assert!(said.contains("  client:  "), "{said}");
    assert!(said.contains("  account: fixture-user\n"), "{said}");
    assert!(stderr(&login).contains("open this URL in a browser"));

    assert_eq!(
        auth_of(&user.run(&["servers", "--json"]).await),
        "logged_in"
    );
    let tools = user.run(&["tools"]).await;
    assert_eq!(tools.status.code(), Some(0), "{}", stderr(&tools));
    assert!(
        stdout(&tools).contains("mcp__web__echo"),
        "{}",
        stdout(&tools)
    );
    let call = user
        .run(&["call", "mcp__web__echo", "--args", r#"{"x":1}"#, "--json"])
        .await;
    assert_eq!(call.status.code(), Some(0), "{}", stderr(&call));
    assert!(stdout(&call).contains(r#""x": 1"#), "{}", stdout(&call));

    // The token is in the token file and nowhere else the user's files are.
    let token_files: Vec<_> = user
        .files()
        .into_iter()
        .filter(|(_, text)| text.contains("access_token"))
        .map(|(path, _)| path)
        .collect();
    assert_eq!(token_files.len(), 1, "{token_files:?}");
    assert!(token_files[0].starts_with(user.home.path().join(".config/mcp-runtime")));
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&token_files[0]).unwrap().permissions(),
    );
    assert_eq!(mode & 0o077, 0, "the token file is the user's alone");

    let logout = user.run(&["logout", "web"]).await;
    assert_eq!(logout.status.code(), Some(0), "{}", stderr(&logout));
    assert_eq!(
        stdout(&logout),
        "logged out of `web` (its tokens were revoked)\n"
    );
    let after = user.run(&["tools"]).await;
    assert!(
        stderr(&after).contains("answered HTTP 401"),
        "{}",
        stderr(&after)
    );
}

#[tokio::test]
async fn a_fleet_replica_refuses_a_server_logged_in_to_on_its_machine() {
    let dir = tempfile::tempdir().unwrap();
    let (_fixture, url) = protected_fixture(&dir.path().join("oauth.jsonl")).await;
    let user = User::new(&url);
    let login = user.run(&["login", "web", "--timeout-sec", "60"]).await;
    assert_eq!(login.status.code(), Some(0), "{}", stderr(&login));

    // Its tokens are in this machine's store alone: the other replicas could neither
    // use nor refresh them.
    user.join_a_fleet();
    for listen in [&["--listen", "127.0.0.1:0"][..], &[]] {
        let args = [&["serve"][..], listen].concat();
        let served =
            tokio::time::timeout(std::time::Duration::from_secs(30), user.run(&args)).await;
        let served = served.expect("refused at once");
        assert!(!served.status.success(), "{}", stderr(&served));
        assert!(
            stderr(&served).contains("server `web` has an OAuth login")
                && stderr(&served).contains("mcp-runtime logout web"),
            "{}",
            stderr(&served)
        );
    }
}

#[tokio::test]
async fn a_fleet_replica_refuses_a_server_whose_login_its_store_cannot_read() {
    let user = User::new("http://127.0.0.1:1/mcp");
    user.join_a_fleet();
    let store = user.home.path().join(".config/mcp-runtime");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("oauth-credentials.json"), "not JSON").unwrap();
    let served = user.run(&["serve"]).await;
    assert!(!served.status.success(), "{}", stderr(&served));
    assert!(
        stderr(&served).contains("whether server `web` has an OAuth login cannot be read"),
        "{}",
        stderr(&served)
    );
}

#[tokio::test]
async fn servers_shows_a_login_past_its_expiry_without_a_refresh_token_as_expired() {
    let dir = tempfile::tempdir().unwrap();
    let (_fixture, url) = protected_fixture(&dir.path().join("oauth.jsonl")).await;
    let user = User::new(&url);
    let login = user.run(&["login", "web", "--timeout-sec", "60"]).await;
    assert_eq!(login.status.code(), Some(0), "{}", stderr(&login));

    // Received two hours ago, valid for one, and nothing to renew it with.
    let file = user
        .home
        .path()
        .join(".config/mcp-runtime/oauth-credentials.json");
    let mut document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for (_, record) in document["entries"].as_object_mut().unwrap() {
        let credentials = &mut record["credentials"];
        credentials["token_received_at"] = (now - 7200).into();
        credentials["token_response"]
            .as_object_mut()
            .unwrap()
            .remove("refresh_token");
    }
    std::fs::write(&file, document.to_string()).unwrap();

    assert_eq!(auth_of(&user.run(&["servers", "--json"]).await), "expired");
    let table = stdout(&user.run(&["servers"]).await);
    let row = table.lines().find(|line| line.starts_with("web")).unwrap();
    assert!(
        row.split_whitespace().nth(3) == Some("expired"),
        "the AUTH column: {table}"
    );
}

#[tokio::test]
async fn a_login_nobody_finishes_times_out_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (_fixture, url) = protected_fixture(&dir.path().join("oauth.jsonl")).await;
    let user = User::new(&url);
    let login = user
        .run(&["login", "web", "--no-browser", "--timeout-sec", "1"])
        .await;
    assert_eq!(login.status.code(), Some(2));
    let said = stderr(&login);
    let lines: Vec<&str> = said
        .lines()
        .filter(|line| !line.starts_with("  ") && !line.contains("open this URL"))
        .collect();
    assert_eq!(
        lines,
        [
            "mcp-runtime: the login to server `web` was not completed within 1s (run the login again, and finish it in the browser)"
        ]
    );
}

/// How many `/authorize` requests an OAuth log holds.
fn authorizations(oauth_log: &Path) -> usize {
    requests_to(oauth_log, "/authorize")
}

/// How many requests to `endpoint` an OAuth log holds.
fn requests_to(oauth_log: &Path, endpoint: &str) -> usize {
    std::fs::read_to_string(oauth_log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|entry| entry["endpoint"] == endpoint)
        .count()
}

#[tokio::test]
async fn a_server_asking_for_more_scopes_gets_them_from_one_new_login_when_a_person_can_give_it() {
    let dir = tempfile::tempdir().unwrap();
    let oauth_log = dir.path().join("oauth.jsonl");
    let (_fixture, url) = protected_fixture_with(&oauth_log, &["--oauth-scope", "mcp files"]).await;
    let user = User::new(&url);
    let login = user
        .run(&["login", "web", "--scopes", "mcp", "--timeout-sec", "60"])
        .await;
    assert_eq!(login.status.code(), Some(0), "{}", stderr(&login));

    // Nobody to log in: the failure says what to do, and nothing is authorized.
    let alone = user.run_with_browser(&["tools"], false).await;
    assert!(
        stderr(&alone).contains(
            "server `web` needs a login with more scopes (`mcp`, `files`): run `mcp-runtime login web`"
        ),
        "{}",
        stderr(&alone)
    );
    assert_eq!(authorizations(&oauth_log), 1);

    // A person at hand: one new login asks for the scopes held and the ones asked
    // for, and the command goes on.
    let tools = user.run(&["tools"]).await;
    assert_eq!(tools.status.code(), Some(0), "{}", stderr(&tools));
    assert!(
        stderr(&tools).contains("server `web` asks for more scopes (mcp files); logging in again"),
        "{}",
        stderr(&tools)
    );
    assert!(
        stdout(&tools).contains("mcp__web__echo"),
        "{}",
        stdout(&tools)
    );
    let call = user
        .run(&["call", "mcp__web__echo", "--args", "{}", "--json"])
        .await;
    assert_eq!(call.status.code(), Some(0), "{}", stderr(&call));
    assert_eq!(
        authorizations(&oauth_log),
        2,
        "no login after the one needed"
    );
}

#[tokio::test]
async fn no_log_level_shows_a_credential_of_the_login() {
    let dir = tempfile::tempdir().unwrap();
    let (_fixture, url) = protected_fixture(&dir.path().join("oauth.jsonl")).await;
    let user = User::new(&url);
    let login = user
        .run_with(
            &["login", "web", "--timeout-sec", "60"],
            true,
            Some("trace"),
        )
        .await;
    assert_eq!(login.status.code(), Some(0), "{}", stderr(&login));
    let tools = user.run_with(&["tools"], true, Some("trace")).await;
    assert_eq!(tools.status.code(), Some(0), "{}", stderr(&tools));
    let (_, store) = user
        .files()
        .into_iter()
        .find(|(_, text)| text.contains("access_token"))
        .expect("the token file");
    let store: serde_json::Value = serde_json::from_str(&store).unwrap();
    let response = &store["entries"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()["credentials"]["token_response"];
    let said = format!(
        "{}{}{}{}",
        stdout(&login),
        stderr(&login),
        stdout(&tools),
        stderr(&tools)
    );
    for field in ["access_token", "refresh_token"] {
        let secret = response[field].as_str().unwrap();
        assert!(!said.contains(secret), "`{field}` in the output");
    }
    // The fixture's ID token is a JWT: its header is base64 JSON, `eyJ…`.
    assert!(!said.contains("eyJ"), "an ID token in the output");
}

#[tokio::test]
async fn a_second_login_uses_the_client_the_first_registered() {
    let dir = tempfile::tempdir().unwrap();
    let oauth_log = dir.path().join("oauth.jsonl");
    let (_fixture, url) = protected_fixture(&oauth_log).await;
    let user = User::new(&url);
    for _ in 0..2 {
        let login = user.run(&["login", "web", "--timeout-sec", "60"]).await;
        assert_eq!(login.status.code(), Some(0), "{}", stderr(&login));
    }
    assert_eq!(requests_to(&oauth_log, "/register"), 1, "one registration");
    assert_eq!(authorizations(&oauth_log), 2);
    let tools = user.run(&["tools"]).await;
    assert_eq!(tools.status.code(), Some(0), "{}", stderr(&tools));
}

#[tokio::test]
async fn oauth_resource_is_the_resource_a_login_and_its_refreshes_ask_for() {
    // On this machine, as the server is: rmcp reaches loopback addresses only for a
    // loopback resource.
    const RESOURCE: &str = "http://localhost/api/";
    let dir = tempfile::tempdir().unwrap();
    let oauth_log = dir.path().join("oauth.jsonl");
    // Tokens are for RESOURCE, not the URL the server's metadata names.
    let (_fixture, url) =
        protected_fixture_with(&oauth_log, &["--oauth-token-resource", RESOURCE]).await;

    let told = User::new(&url);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&told.config)
        .unwrap();
    std::io::Write::write_all(
        &mut file,
        format!("oauth_resource = \"{RESOURCE}\"\n").as_bytes(),
    )
    .unwrap();
    let login = told.run(&["login", "web", "--timeout-sec", "60"]).await;
    assert_eq!(login.status.code(), Some(0), "{}", stderr(&login));
    // Received two hours ago, valid for one: the next command refreshes it first.
    let file = told
        .home
        .path()
        .join(".config/mcp-runtime/oauth-credentials.json");
    let mut document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for (_, record) in document["entries"].as_object_mut().unwrap() {
        record["credentials"]["token_received_at"] = (now - 7200).into();
    }
    std::fs::write(&file, document.to_string()).unwrap();
    let tools = told.run(&["tools"]).await;
    assert_eq!(tools.status.code(), Some(0), "{}", stderr(&tools));
    assert!(
        stdout(&tools).contains("mcp__web__echo"),
        "{}",
        stderr(&tools)
    );
    let refreshes = std::fs::read_to_string(&oauth_log)
        .unwrap()
        .lines()
        .filter(|line| line.contains("\"refresh_token\"") && line.contains("\"ok\""))
        .count();
    assert_eq!(refreshes, 1, "the refresh asked for the resource too");

    // Without it, the metadata's resource is asked for, and refused.
    let untold = User::new(&url);
    let login = untold.run(&["login", "web", "--timeout-sec", "5"]).await;
    assert_ne!(login.status.code(), Some(0), "{}", stdout(&login));
}

#[tokio::test]
async fn a_failed_login_is_one_line_naming_the_server_the_step_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("oauth.jsonl");
    let log = log.to_str().unwrap();
    let oauth = |step| vec!["--require-oauth", "--oauth-log", log, "--oauth-fail", step];
    let rows: [(&str, Vec<&str>, &str); 5] = [
        (
            "login without metadata",
            // A server that wants a fixed token: a 401, and no OAuth anywhere.
            vec!["--require-bearer", "fixed-token"],
            "it publishes no OAuth metadata, and registering a client at its default endpoint `ORIGIN/register` failed (if the server takes a fixed token, name its variable with `bearer_token_env_var`; if it has a pre-registered OAuth client, set `oauth.client_id`)",
        ),
        (
            "discovery",
            oauth("metadata"),
            "none of its authorization servers (`ORIGIN`) publishes usable metadata (check that they can be reached from here; if they can, their OAuth setup needs fixing by their operator)",
        ),
        (
            "registration",
            oauth("register"),
            "registering a client at `ORIGIN/register` failed (register a client with its authorization server, then set `oauth.client_id`, and `oauth.client_secret_env_var` for a confidential one)",
        ),
        (
            "authorization",
            oauth("authorize"),
            "the authorization server refused the authorization: `access_denied` (mcp-fixture denies authorizations on purpose) (run the login again, and approve it in the browser)",
        ),
        (
            "token",
            oauth("token"),
            "exchanging the authorization code for tokens at `ORIGIN/token` failed (run the login again; if it fails again, ask the authorization server's operator)",
        ),
    ];
    for (step, flags, expected) in rows {
        let (_fixture, url) = http_fixture(&flags).await;
        let origin = url.strip_suffix("/mcp").unwrap();
        let user = User::new(&url);
        // The login's own timeout bounds it: one that waited for a redirect instead
        // of failing at its step ends by that timeout and says so, which the line
        // below is not.
        let login = user.run(&["login", "web", "--timeout-sec", "60"]).await;
        assert_eq!(login.status.code(), Some(2), "{step}");
        let said = stderr(&login);
        assert!(
            !said.contains("within 60s"),
            "{step}: the login waited out its timeout instead of failing at its step: {said}"
        );
        let lines: Vec<&str> = said
            .lines()
            .filter(|line| !line.starts_with("  ") && !line.contains("open this URL"))
            .collect();
        let expected = format!(
            "mcp-runtime: cannot log in to server `web`: {}",
            expected.replace("ORIGIN", origin)
        );
        assert_eq!(lines, [expected.as_str()], "{step}");
        assert!(stdout(&login).is_empty(), "{step}");
    }
}

#[tokio::test]
async fn a_token_store_that_cannot_be_read_is_said_in_the_runtime_s_words_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_fixture, url) = protected_fixture(&dir.path().join("oauth.jsonl")).await;
    let user = User::new(&url);
    let file = user
        .home
        .path()
        .join(".config/mcp-runtime/oauth-credentials.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{ damaged").unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let damaged = format!(
        "the OAuth token file `{}` is damaged (line 1, column 3): delete it and log in again",
        file.display()
    );
    let logout = user.run(&["logout", "web"]).await;
    assert_eq!(logout.status.code(), Some(2));
    assert_eq!(
        stderr(&logout),
        format!("mcp-runtime: cannot read the OAuth token store: {damaged}\n")
    );
    let login = user.run(&["login", "web", "--timeout-sec", "60"]).await;
    assert_eq!(login.status.code(), Some(2));
    assert_eq!(
        stderr(&login),
        format!(
            "mcp-runtime: cannot log in to server `web`: its login cannot be read or kept (check `mcp_oauth_credentials_store`, and that the keyring or the token file can be used): {damaged}\n"
        )
    );
}

#[tokio::test]
async fn login_and_logout_refuse_the_flags_that_mean_nothing_to_them() {
    // No server is started and nothing is reported, and the demo has no login; the
    // discovery scope `--scope` is easily taken for the OAuth `--scopes`.
    let user = User::new("http://127.0.0.1:9/mcp");
    for command in ["login", "logout"] {
        for flag in [&["--demo"][..], &["--json"], &["--scope", "mcp:write"]] {
            let mut args = vec![command, "web"];
            args.extend_from_slice(flag);
            let output = user.run(&args).await;
            assert_eq!(output.status.code(), Some(2), "{args:?}");
            let said = stderr(&output);
            assert!(
                said.starts_with(&format!("error: unexpected argument '{}' found", flag[0])),
                "{args:?}: {said}"
            );
            assert!(
                said.contains(&format!("Usage: mcp-runtime {command}")),
                "{args:?}: {said}"
            );
            if flag[0] == "--scope" && command == "login" {
                assert!(
                    said.contains("a similar argument exists: '--scopes'"),
                    "{said}"
                );
            }
        }
    }
}
