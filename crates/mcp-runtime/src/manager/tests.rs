use super::*;
use crate::ListedTool;
use crate::transport::error::StartupError;

fn tool(name: &str) -> ListedTool {
    rmcp::model::Tool::new(name.to_owned(), "", Arc::new(Default::default())).into()
}

/// A runtime's shared state for servers `names`, each started with one tool
/// `old`, without connections.
fn shared(names: &[&str]) -> Shared {
    let servers = names
        .iter()
        .map(|name| {
            let server = Server::new(ServerConfig::stdio(*name, "unused", Vec::new()));
            server.settled.send_replace(Some(Arc::new(joining::Settled {
                startup_time: Duration::ZERO,
                error: None,
                tools_list_requests: 1,
                served_from_cache: false,
                listing_keys: None,
                binding: None,
                login: None,
            })));
            (name.to_string(), server)
        })
        .collect();
    let listings = names
        .iter()
        .map(|name| {
            let listing = Listing {
                stored: 0,
                version: 0,
                next: 1,
                tools: Arc::new(vec![tool("old")]),
            };
            (name.to_string(), listing)
        })
        .collect();
    Shared::new(servers, listings, &[])
}

fn published(shared: &Shared) -> Vec<String> {
    shared
        .catalog
        .borrow()
        .tools()
        .map(|tool| tool.qualified_name.to_string())
        .collect()
}

#[test]
fn a_catalog_is_built_and_published_only_from_listings_newer_than_the_published_ones() {
    let shared = shared(&["a", "b"]);
    let before = shared.catalog.borrow().clone();
    assert!(!shared.publish_current(), "nothing newer was stored");
    assert!(Arc::ptr_eq(&before, &shared.catalog.borrow()));

    let a = shared.next_generation("a");
    let b = shared.next_generation("b");
    // Two refreshes store their answers; the first to publish includes both...
    assert_eq!(shared.store("a", a, Arc::new(vec![tool("new")])), Some(1));
    assert_eq!(shared.store("b", b, Arc::new(vec![tool("new")])), Some(2));
    assert!(shared.publish_current());
    assert_eq!(shared.published.load(Ordering::Relaxed), 2);
    // ...and the second has nothing newer to build.
    let published_catalog = shared.catalog.borrow().clone();
    assert!(!shared.publish_current());
    assert!(Arc::ptr_eq(&published_catalog, &shared.catalog.borrow()));
    assert_eq!(published(&shared), ["mcp__a__new", "mcp__b__new"]);
}

#[test]
fn an_older_answer_never_replaces_a_newer_listing() {
    let shared = shared(&["a"]);
    let older = shared.next_generation("a");
    let newer = shared.next_generation("a");
    assert_eq!(
        shared.store("a", newer, Arc::new(vec![tool("newer")])),
        Some(1)
    );
    assert_eq!(
        shared.store("a", older, Arc::new(vec![tool("older")])),
        None
    );
    assert!(shared.publish_current());
    assert_eq!(published(&shared), ["mcp__a__newer"]);
}

/// A runtime's shared state whose servers `(name, required)` are all starting, and the
/// sender whose drop says the startups ended.
fn starting(servers: &[(&str, bool)]) -> (Arc<Shared>, watch::Sender<()>) {
    let servers = servers
        .iter()
        .map(|(name, required)| {
            let config = ServerConfig::stdio(*name, "unused", Vec::new()).with_required(*required);
            (name.to_string(), Server::new(config))
        })
        .collect();
    let mut shared = Shared::new(servers, BTreeMap::new(), &[]);
    let (done, startups_done) = watch::channel(());
    shared.startups_done = startups_done;
    (Arc::new(shared), done)
}

fn settle(shared: &Shared, name: &str, error: Option<StartupError>) {
    shared.servers[name]
        .settled
        .send_replace(Some(Arc::new(joining::Settled {
            startup_time: Duration::ZERO,
            error,
            tools_list_requests: 0,
            served_from_cache: false,
            listing_keys: None,
            binding: None,
            login: None,
        })));
}

/// Lets spawned tasks see what happened, then run for `duration` of virtual time.
async fn run_for(duration: Duration) {
    let settle = || async {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    };
    settle().await;
    tokio::time::advance(duration).await;
    settle().await;
}

#[tokio::test(start_paused = true)]
async fn the_start_waits_for_required_servers_then_at_most_the_grace() {
    let (shared, _done) = starting(&[("optional", false), ("required", true)]);
    let grace = Duration::from_secs(1);
    let wait = tokio::spawn({
        let shared = shared.clone();
        async move {
            shared
                .wait_until_usable(options::Wait::RequiredThenGrace(grace))
                .await
        }
    });
    run_for(grace * 10).await;
    assert!(!wait.is_finished(), "the required server is still starting");
    settle(&shared, "required", None);
    run_for(grace - Duration::from_millis(1)).await;
    assert!(!wait.is_finished(), "the grace is counted from then");
    run_for(Duration::from_millis(1)).await;
    assert!(wait.is_finished());
    wait.await.unwrap().expect("no required server failed");
    assert!(shared.servers["optional"].settled().is_none());
}

#[tokio::test(start_paused = true)]
async fn the_start_returns_before_the_grace_once_every_server_settled() {
    let (shared, done) = starting(&[("optional", false)]);
    let wait = tokio::spawn({
        let shared = shared.clone();
        async move {
            let wait = options::Wait::RequiredThenGrace(Duration::from_secs(3600));
            shared.wait_until_usable(wait).await
        }
    });
    run_for(Duration::from_secs(1)).await;
    assert!(!wait.is_finished());
    settle(&shared, "optional", None);
    drop(done);
    run_for(Duration::ZERO).await;
    assert!(wait.is_finished());
}

#[tokio::test(start_paused = true)]
async fn waiting_for_all_waits_until_the_startups_ended() {
    let (shared, done) = starting(&[("optional", false)]);
    let wait = tokio::spawn({
        let shared = shared.clone();
        async move { shared.wait_until_usable(options::Wait::All).await }
    });
    run_for(Duration::from_secs(3600)).await;
    assert!(!wait.is_finished());
    settle(&shared, "optional", None);
    drop(done);
    run_for(Duration::ZERO).await;
    assert!(wait.is_finished());
}

#[tokio::test(start_paused = true)]
async fn a_failed_required_server_fails_the_start_without_waiting_for_the_others() {
    let (shared, done) = starting(&[("a", true), ("b", true), ("c", true), ("optional", false)]);
    // `c` failed already; `b` goes on starting, for as long as it takes.
    settle(&shared, "c", Some(StartupError::Cancelled));
    let wait = tokio::spawn({
        let shared = shared.clone();
        async move { shared.wait_until_usable(options::Wait::All).await }
    });
    settle(&shared, "a", Some(StartupError::Cancelled));
    run_for(Duration::ZERO).await;
    assert!(
        shared.startups_cancel.is_cancelled(),
        "the startups still in progress are cancelled at once"
    );
    assert!(shared.servers["b"].settled().is_none());
    assert!(
        !wait.is_finished(),
        "shutdown waits for the startups to end"
    );
    drop(done);
    match wait.await.unwrap() {
        Err(StartError::RequiredServersFailed { failures }) => {
            let names: Vec<&str> = failures.iter().map(|(name, _)| name.as_str()).collect();
            assert_eq!(names, ["a", "c"], "every required server failed by then");
        }
        other => panic!("expected the required servers' failures, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_name_no_server_can_own_is_unknown_without_waiting_for_servers_starting() {
    let (shared, _done) = starting(&[("a", false), ("b", true)]);
    let routed = futures::FutureExt::now_or_never(shared.route("mcp__nosuch__x"))
        .expect("nothing to wait for");
    assert!(
        matches!(&routed, Err(CallError::UnknownTool { name, .. }) if name == "mcp__nosuch__x"),
        "{routed:?}"
    );
    // A name that `a` may own still waits for it.
    assert!(
        futures::FutureExt::now_or_never(shared.route("mcp__a__x")).is_none(),
        "`a` is still starting"
    );
}

#[test]
fn a_stored_login_past_its_expiry_that_nothing_renews_is_expired_whatever_else_holds() {
    use std::time::{SystemTime, UNIX_EPOCH};

    use crate::{
        config::ServerConfig,
        discovery_key::StoredLogin,
        transport::error::{HttpFailure, StartupError},
    };

    let server = ServerConfig::http("web", "http://127.0.0.1:1/mcp");
    let at = UNIX_EPOCH + Duration::from_secs(1_000_000);
    let login = |renewable| StoredLogin {
        identity: None,
        expires_at: Some(at),
        renewable,
    };
    let refused = StartupError::Login(HttpFailure::NeedsLogin {
        server: "web".into(),
    });
    let state = |login, error: Option<&StartupError>, now: SystemTime| {
        auth_state(&server, None, error, login, now)
    };
    assert_eq!(
        state(Some(login(false)), None, at),
        Some(AuthState::Expired)
    );
    assert_eq!(
        state(Some(login(false)), Some(&refused), at),
        Some(AuthState::Expired),
        "the failed start says why: the login ran out"
    );
    assert_eq!(
        state(
            Some(login(false)),
            Some(&refused),
            at - Duration::from_secs(1)
        ),
        Some(AuthState::NeedsLogin)
    );
    assert_eq!(
        state(Some(login(true)), Some(&refused), at),
        Some(AuthState::NeedsLogin),
        "a refresh token could renew it: the refusal is the news"
    );
    assert_eq!(state(None, None, at), None);
    let mut machine = server.clone();
    machine.oauth.grant_type = crate::config::GrantType::ClientCredentials;
    assert_eq!(
        auth_state(&machine, None, None, Some(login(false)), at),
        None,
        "a machine client renews its token itself"
    );
}

/// A server whose configuration needs a part of the runtime this build leaves out
/// fails to start, naming the cargo feature: a `url` needs `http`, OAuth settings
/// need `oauth`.
#[cfg(not(all(feature = "http", feature = "oauth")))]
#[tokio::test]
async fn a_server_that_needs_a_left_out_feature_fails_to_start_naming_it() {
    let mut server = ServerConfig::http("web", "http://127.0.0.1:1/mcp").with_required(true);
    server.oauth.client_id = Some("a-client".to_owned());
    let config = Config {
        servers: [("web".to_owned(), server)].into(),
        ..Config::default()
    };
    let expected = if cfg!(feature = "http") {
        "oauth"
    } else {
        "http"
    };
    let Err(crate::StartError::RequiredServersFailed { failures }) =
        Runtime::start(config, StartOptions::default()).await
    else {
        panic!("the server started");
    };
    assert!(
        matches!(&failures[..], [(name, StartupError::FeatureLeftOut { feature, .. })] if name == "web" && *feature == expected),
        "{failures:?}"
    );
}

/// A call's future holds its short path (routing, the request, its answer) and not
/// the rare ones (waiting for a server, starting it again, probing a launcher, a
/// task, later rounds): those are futures of their own. Inline, a restart alone
/// made a call's future over 23 KiB; every task that makes a call holds it.
#[test]
fn a_calls_future_holds_only_its_short_path() {
    let runtime = Runtime {
        shared: Arc::new(shared(&["a"])),
        _startups: None,
    };
    let call = runtime.call_tool("mcp__a__old", None);
    let size = std::mem::size_of_val(&call);
    assert!(size <= 12 * 1024, "a call's future takes {size} bytes");
}
