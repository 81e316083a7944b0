use super::*;
use crate::transport::Endpoint;

/// What a runtime without host handlers offers.
fn offered() -> ClientConfig {
    crate::protocol::client_config(&crate::host::HostHandlers::default())
}

fn key(n: u8) -> StartupKeys {
    StartupKeys {
        private: DiscoveryKey([n; 32]),
        public: DiscoveryKey([n | 0x80; 32]),
    }
}

fn tools(names: &[&str]) -> SharedTools {
    Arc::new(
        names
            .iter()
            .map(|name| {
                rmcp::model::Tool::new(name.to_string(), "", Arc::new(Default::default())).into()
            })
            .collect(),
    )
}

fn lead(next: Next) -> LeaderGuard {
    match next {
        Next::Lead(leader) => leader,
        _ => panic!("expected to lead"),
    }
}

fn waits(next: Next) -> watch::Receiver<Option<SharedTools>> {
    match next {
        Next::Wait(receiver) => receiver,
        _ => panic!("expected to wait"),
    }
}

fn takes(next: Next) -> SharedTools {
    match next {
        Next::Take(tools) => tools,
        _ => panic!("expected to take a burst listing"),
    }
}

fn granted(next: Next) -> SharedTools {
    match next {
        Next::Granted(tools) => tools,
        _ => panic!("expected to take a granted listing"),
    }
}

/// The keys of two startups with the same inputs but the credentials: their public
/// keys agree, their private ones do not.
fn alice_and_bob() -> (StartupKeys, StartupKeys) {
    let alice = key(1);
    let bob = StartupKeys {
        private: DiscoveryKey([2; 32]),
        public: alice.public,
    };
    (alice, bob)
}

fn grant(secs: u64, scope: Scope) -> Option<Grant> {
    Some(Grant {
        ttl: Duration::from_secs(secs),
        scope,
    })
}

#[tokio::test]
async fn overlapping_startups_share_one_listing() {
    let registry = ListingRegistry::new();
    let mut startups: Vec<Startup> = (0..4).map(|_| registry.begin(key(1))).collect();
    let leader = lead(startups[0].next());
    let waiting: Vec<_> = startups[1..3].iter_mut().map(|s| waits(s.next())).collect();
    let listing = tools(&["a", "b"]);
    leader.publish(listing.clone(), None);
    for receiver in waiting {
        assert!(Arc::ptr_eq(&wait(receiver).await.unwrap(), &listing));
    }
    // Began before the request was sent, asks after it was answered: shared too.
    assert!(Arc::ptr_eq(&takes(startups[3].next()), &listing));
    drop(startups);
    assert!(
        registry.is_empty(),
        "nothing is kept once no startup is pending"
    );
}

#[tokio::test]
async fn a_startup_that_begins_after_the_request_was_sent_asks_itself() {
    let registry = ListingRegistry::new();
    let mut first = registry.begin(key(1));
    let leader = lead(first.next());
    // Both begin after the first request was sent: neither may use its answer.
    let mut later = registry.begin(key(1));
    let mut latest = registry.begin(key(1));
    let later_leader = lead(later.next());
    leader.publish(tools(&["old"]), None);
    drop(first);
    let receiver = waits(latest.next());
    later_leader.publish(tools(&["new"]), None);
    assert_eq!(wait(receiver).await.unwrap()[0].tool.name, "new");
    assert_eq!(takes(latest.next())[0].tool.name, "new");
    // A startup that begins after every request was sent asks itself.
    let mut last = registry.begin(key(1));
    let _own = lead(last.next());
    drop((later, latest, _own, last));
    assert!(registry.is_empty());
}

#[tokio::test(start_paused = true)]
async fn startups_spread_over_the_burst_window_share_one_listing() {
    let registry = ListingRegistry::new().with_burst_window(Duration::from_secs(1));
    let mut first = registry.begin(key(1));
    let leader = lead(first.next());
    // Begins after the request was sent, within the window: waits for it.
    tokio::time::advance(Duration::from_millis(300)).await;
    let mut second = registry.begin(key(1));
    let receiver = waits(second.next());
    let listing = tools(&["a"]);
    leader.publish(listing.clone(), None);
    assert!(Arc::ptr_eq(&wait(receiver).await.unwrap(), &listing));
    drop((first, second));
    // Every startup of the burst settled: the listing is kept for the window.
    tokio::time::advance(Duration::from_millis(600)).await;
    let mut third = registry.begin(key(1));
    assert!(Arc::ptr_eq(&takes(third.next()), &listing));
    // Another key shares nothing.
    let mut other = registry.begin(key(2));
    drop(lead(other.next()));
    drop((third, other));
    // Past the window the next startup asks itself, and then nothing is kept.
    tokio::time::advance(Duration::from_millis(100)).await;
    let mut fourth = registry.begin(key(1));
    drop(lead(fourth.next()));
    drop(fourth);
    assert!(registry.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_list_change_ends_the_burst_window() {
    let registry = ListingRegistry::new().with_burst_window(Duration::from_secs(1));
    let mut first = registry.begin(key(1));
    let leader = lead(first.next());
    registry.revoke(&key(1));
    // Begins after the change: the attempt sent before it does not serve it, in
    // flight or answered, though it was sent within the window.
    let mut second = registry.begin(key(1));
    let own = lead(second.next());
    leader.publish(tools(&["old"]), None);
    drop(first);
    assert!(matches!(second.next(), Next::Wait(_)));
    // A startup after that one joins the attempt sent since the change.
    let mut third = registry.begin(key(1));
    let receiver = waits(third.next());
    own.publish(tools(&["new"]), None);
    assert_eq!(wait(receiver).await.unwrap()[0].tool.name, "new");
    drop((second, third));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(registry.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_withdrawn_attempt_in_the_window_hands_over_to_a_later_startup() {
    let registry = ListingRegistry::new().with_burst_window(Duration::from_secs(1));
    let mut first = registry.begin(key(1));
    let leader = lead(first.next());
    tokio::time::advance(Duration::from_millis(10)).await;
    let mut second = registry.begin(key(1));
    let receiver = waits(second.next());
    drop(leader);
    assert!(
        wait(receiver).await.is_none(),
        "an error is never handed over"
    );
    let listing = tools(&["a"]);
    lead(second.next()).publish(listing.clone(), None);
    assert!(Arc::ptr_eq(&takes(first.next()), &listing));
    drop((first, second));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(registry.is_empty());
}

#[tokio::test(start_paused = true)]
async fn without_a_window_a_startup_beginning_at_the_same_instant_asks_itself() {
    // Virtual time stands still: the request and the startup share an instant.
    let registry = ListingRegistry::new();
    let mut first = registry.begin(key(1));
    let _leader = lead(first.next());
    let mut second = registry.begin(key(1));
    drop(lead(second.next()));
}

#[tokio::test(start_paused = true)]
async fn a_list_change_ends_the_window_of_a_startup_already_pending() {
    let registry = ListingRegistry::new().with_burst_window(Duration::from_secs(1));
    let mut first = registry.begin(key(1));
    let leader = lead(first.next());
    let mut second = registry.begin(key(1));
    leader.publish(tools(&["old"]), None);
    registry.revoke(&key(1));
    // It began within the window of the answered request, but the server changed
    // since: it asks itself.
    drop(lead(second.next()));
    // The first began before its own request: it keeps what invariant 2 gives it.
    assert_eq!(takes(first.next())[0].tool.name, "old");
}

#[tokio::test(start_paused = true)]
async fn a_request_still_in_flight_past_the_window_serves_no_later_startup() {
    let registry = ListingRegistry::new().with_burst_window(Duration::from_secs(1));
    let mut first = registry.begin(key(1));
    let _slow = lead(first.next());
    tokio::time::advance(Duration::from_secs(2)).await;
    let mut later = registry.begin(key(1));
    drop(lead(later.next()));
}

#[tokio::test(start_paused = true)]
async fn a_listing_is_kept_for_the_window_of_the_registry_that_asked() {
    let wide = ListingRegistry::new().with_burst_window(Duration::from_secs(1));
    let narrow = wide.clone().with_burst_window(Duration::ZERO);
    let mut first = wide.begin(key(1));
    let listing = tools(&["a"]);
    lead(first.next()).publish(listing.clone(), None);
    drop(first);
    // A startup of the clone without a window asks itself, and its end does not drop
    // what the wide one keeps.
    tokio::time::advance(Duration::from_millis(100)).await;
    let mut own = narrow.begin(key(1));
    drop(lead(own.next()));
    drop(own);
    let mut later = wide.begin(key(1));
    assert!(Arc::ptr_eq(&takes(later.next()), &listing));
}

#[tokio::test]
async fn a_withdrawn_attempt_hands_over_to_exactly_one_waiter() {
    let registry = ListingRegistry::new();
    let mut startups: Vec<Startup> = (0..4).map(|_| registry.begin(key(1))).collect();
    let leader = lead(startups[0].next());
    let waiting: Vec<_> = startups[1..].iter_mut().map(|s| waits(s.next())).collect();
    drop(leader); // failed, timed out or cancelled: the same for the waiters
    for receiver in waiting {
        assert!(wait(receiver).await.is_none(), "no error is handed over");
    }
    let mut next: Vec<Next> = startups[1..].iter_mut().map(Startup::next).collect();
    let second = lead(next.remove(0));
    let waiting: Vec<_> = next.into_iter().map(waits).collect();
    second.publish(tools(&["a"]), None);
    for receiver in waiting {
        assert_eq!(wait(receiver).await.unwrap()[0].tool.name, "a");
    }
    drop(startups);
    assert!(registry.is_empty());
}

#[tokio::test]
async fn a_dropped_waiter_affects_nobody() {
    let registry = ListingRegistry::new();
    let mut leader_startup = registry.begin(key(1));
    let mut waiter = registry.begin(key(1));
    let leader = lead(leader_startup.next());
    let receiver = waits(waiter.next());
    drop((receiver, waiter));
    leader.publish(tools(&["a"]), None);
    drop(leader_startup);
    assert!(registry.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_granted_listing_serves_later_startups_until_it_expires() {
    let registry = ListingRegistry::new();
    let mut first = registry.begin(key(1));
    let listing = tools(&["a"]);
    lead(first.next()).publish(listing.clone(), grant(60, Scope::Private));
    drop(first);
    assert!(!registry.is_empty(), "the grant outlives the burst");

    tokio::time::advance(Duration::from_secs(59)).await;
    let mut later = registry.begin(key(1));
    assert!(Arc::ptr_eq(&granted(later.next()), &listing));
    drop(later);

    tokio::time::advance(Duration::from_secs(1)).await;
    let mut expired = registry.begin(key(1));
    let _own = lead(expired.next());
    drop((_own, expired));
    assert!(
        registry.is_empty(),
        "an expired grant is dropped when found"
    );
}

#[tokio::test(start_paused = true)]
async fn a_private_grant_serves_only_the_same_credentials_and_a_public_one_any() {
    let registry = ListingRegistry::new();
    let (alice, bob) = alice_and_bob();
    let mut first = registry.begin(alice);
    lead(first.next()).publish(tools(&["private"]), grant(60, Scope::Private));
    drop(first);
    let mut other = registry.begin(bob);
    let leader = lead(other.next());
    leader.publish(tools(&["public"]), grant(60, Scope::Public));
    drop(other);

    // Alice's own private grant is preferred to the public one; Bob gets the public.
    let mut again = registry.begin(alice);
    assert_eq!(granted(again.next())[0].tool.name, "private");
    let mut carol = registry.begin(StartupKeys {
        private: DiscoveryKey([3; 32]),
        public: alice.public,
    });
    assert_eq!(granted(carol.next())[0].tool.name, "public");
    // Another server (another public key) gets nothing.
    let mut elsewhere = registry.begin(key(4));
    let _own = lead(elsewhere.next());
}

#[tokio::test(start_paused = true)]
async fn without_a_grant_or_after_a_revocation_a_later_startup_asks_itself() {
    let registry = ListingRegistry::new();
    let mut first = registry.begin(key(1));
    lead(first.next()).publish(tools(&["a"]), None);
    drop(first);
    assert!(registry.is_empty(), "no grant, nothing kept");

    let mut second = registry.begin(key(1));
    lead(second.next()).publish(tools(&["a"]), grant(60, Scope::Public));
    drop(second);
    registry.revoke(&key(1));
    assert!(registry.is_empty());
    let mut third = registry.begin(key(1));
    let _own = lead(third.next());
}

#[tokio::test(start_paused = true)]
async fn an_answer_to_a_request_sent_before_a_change_grants_nothing() {
    let registry = ListingRegistry::new();
    let (alice, bob) = alice_and_bob();
    let mut first = registry.begin(alice);
    let private = lead(first.next());
    let mut second = registry.begin(bob);
    let public = lead(second.next());
    // The server changes while both requests are in flight; the change is heard on
    // Alice's connection alone.
    registry.revoke(&alice);
    private.publish(tools(&["old"]), grant(60, Scope::Private));
    public.publish(tools(&["old"]), grant(60, Scope::Public));
    drop((first, second));
    assert!(registry.is_empty(), "neither answer is kept");
    for keys in [alice, bob] {
        let mut later = registry.begin(keys);
        let _own = lead(later.next());
    }
    // A request sent after the change grants again.
    let mut third = registry.begin(alice);
    lead(third.next()).publish(tools(&["new"]), grant(60, Scope::Private));
    drop(third);
    let mut later = registry.begin(alice);
    assert_eq!(granted(later.next())[0].tool.name, "new");
}

#[tokio::test(start_paused = true)]
async fn a_burst_listing_is_preferred_to_a_granted_one() {
    let registry = ListingRegistry::new();
    let mut first = registry.begin(key(1));
    lead(first.next()).publish(tools(&["old"]), grant(60, Scope::Private));
    drop(first);
    let mut waiter = registry.begin(key(1));
    let mut leader_startup = registry.begin(key(1));
    // The grant is fresh: the first to ask takes it and sends nothing.
    assert_eq!(granted(leader_startup.next())[0].tool.name, "old");
    registry.revoke(&key(1));
    lead(leader_startup.next()).publish(tools(&["new"]), grant(60, Scope::Private));
    assert_eq!(takes(waiter.next())[0].tool.name, "new");
}

#[test]
fn a_grant_needs_a_positive_ttl_on_every_page_and_one_private_page_makes_it_private() {
    use CacheScope::{Private, Public};
    let secs = |s: u64| Some(s * 1000);
    assert_eq!(Grant::of_pages([]), None);
    assert_eq!(
        Grant::of_pages([(secs(60), Some(Public)), (secs(30), Some(Public))]),
        grant(30, Scope::Public)
    );
    assert_eq!(
        Grant::of_pages([(secs(60), Some(Public)), (secs(90), Some(Private))]),
        grant(60, Scope::Private)
    );
    assert_eq!(
        Grant::of_pages([(secs(60), None)]),
        grant(60, Scope::Private)
    );
    assert_eq!(
        Grant::of_pages([(secs(60), Some(Public)), (None, Some(Public))]),
        None
    );
    assert_eq!(Grant::of_pages([(Some(0), Some(Public))]), None);
}

#[test]
fn different_keys_never_share() {
    let registry = ListingRegistry::new();
    let mut one = registry.begin(key(1));
    let mut two = registry.begin(key(2));
    let _one = lead(one.next());
    let _two = lead(two.next());
}

#[test]
fn era_keys_cover_the_same_inputs_apart_from_the_discovery_key() {
    use std::collections::BTreeMap;

    use crate::transport::stdio::Launch;

    let launch = |arg: &str| {
        Endpoint::Stdio(Launch {
            argv: vec!["server".into(), arg.into()],
            env: BTreeMap::new(),
            cwd: None,
            max_message_bytes: 1,
        })
    };
    let local = Environment::Local;
    let era =
        |scope, server, arg| DiscoveryKey::era(&offered(), scope, server, &launch(arg), &local);
    assert_eq!(era("default", "s", "a"), era("default", "s", "a"));
    assert_ne!(era("default", "s", "a"), era("other", "s", "a"));
    assert_ne!(era("default", "s", "a"), era("default", "t", "a"));
    assert_ne!(era("default", "s", "a"), era("default", "s", "b"));
    // Not the discovery key's digest: the protocol version offered is left out.
    assert_ne!(
        era("default", "s", "a").0,
        DiscoveryKey::new(&offered(), "default", "s", &launch("a"), &local, None).0
    );
}

#[test]
fn the_key_of_an_era_kept_on_disk_covers_no_value_of_the_environment() {
    use std::collections::BTreeMap;

    use crate::{discovery_key::era_on_disk, transport::stdio::Launch};

    let launch = |arg: &str, env: &[(&str, &str)]| {
        Endpoint::Stdio(Launch {
            argv: vec!["server".into(), arg.into()],
            env: env
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect::<BTreeMap<_, _>>(),
            cwd: None,
            max_message_bytes: 1,
        })
    };
    let local = Environment::Local;
    let on_disk = |scope, arg, env: &[(&str, &str)]| {
        era_on_disk(&offered(), scope, "s", &launch(arg, env), &local)
    };
    let key = on_disk("default", "a", &[("API_TOKEN", "secret-1")]);
    assert_eq!(
        key,
        on_disk("default", "a", &[("API_TOKEN", "secret-2")]),
        "a value, which may be a credential, is not covered even as a digest"
    );
    assert_ne!(key, on_disk("default", "a", &[("OTHER_TOKEN", "secret-1")]));
    assert_ne!(key, on_disk("default", "a", &[]));
    assert_ne!(key, on_disk("default", "b", &[("API_TOKEN", "secret-1")]));
    assert_ne!(key, on_disk("other", "a", &[("API_TOKEN", "secret-1")]));
    // Not the key of the memory within a process, which covers the values.
    let env = [("API_TOKEN", "secret-1")];
    assert_ne!(
        key,
        DiscoveryKey::era(&offered(), "default", "s", &launch("a", &env), &local)
    );
}

#[test]
#[cfg(feature = "http")]
fn discovery_keys_cover_scope_and_inputs() {
    use std::collections::BTreeMap;

    use crate::transport::{http::ResolvedHttp, stdio::Launch};

    let launch = |env: &[(&str, &str)]| {
        Endpoint::Stdio(Launch {
            argv: vec!["server".into(), "--flag".into()],
            env: env
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
            cwd: None,
            max_message_bytes: 1,
        })
    };
    let local = Environment::Local;
    let base = DiscoveryKey::new(
        &offered(),
        "default",
        "s",
        &launch(&[("A", "1")]),
        &local,
        None,
    );
    assert_eq!(
        base,
        DiscoveryKey::new(
            &offered(),
            "default",
            "s",
            &launch(&[("A", "1")]),
            &local,
            None
        )
    );
    assert_ne!(
        base,
        DiscoveryKey::new(
            &offered(),
            "other",
            "s",
            &launch(&[("A", "1")]),
            &local,
            None
        )
    );
    assert_ne!(
        base,
        DiscoveryKey::new(
            &offered(),
            "default",
            "t",
            &launch(&[("A", "1")]),
            &local,
            None
        )
    );
    assert_ne!(
        base,
        DiscoveryKey::new(
            &offered(),
            "default",
            "s",
            &launch(&[("A", "2")]),
            &local,
            None
        )
    );
    let remote = Environment::Named("box".into());
    assert_ne!(
        base,
        DiscoveryKey::new(
            &offered(),
            "default",
            "s",
            &launch(&[("A", "1")]),
            &remote,
            None
        )
    );

    let http = |token: &str| {
        Endpoint::Http(ResolvedHttp {
            url: "http://127.0.0.1:1/mcp".into(),
            bearer_token: Some(token.into()),
            headers: BTreeMap::new().into_iter().collect(),
            max_message_bytes: 1,
            network: Default::default(),
            oauth_store: None,
            credentials: Vec::new(),
        })
    };
    assert_ne!(
        DiscoveryKey::new(&offered(), "default", "s", &http("t1"), &local, None),
        DiscoveryKey::new(&offered(), "default", "s", &http("t2"), &local, None)
    );
    // A pinned revision is offered instead of the default: a key of its own.
    let keys = |protocol| {
        StartupKeys::new(
            &offered(),
            "default",
            "s",
            &http("t1"),
            &local,
            protocol,
            None,
        )
    };
    assert_eq!(
        keys(Protocol::Auto).private,
        DiscoveryKey::new(&offered(), "default", "s", &http("t1"), &local, None)
    );
    assert_ne!(keys(Protocol::Auto), keys(Protocol::V2025_06_18));
    assert_ne!(
        keys(Protocol::V2025_06_18).public,
        keys(Protocol::V2025_11_25).public
    );
    // The public key leaves the credentials out, and nothing else.
    assert_eq!(
        DiscoveryKey::public(&offered(), "default", "s", &http("t1"), &local),
        DiscoveryKey::public(&offered(), "default", "s", &http("t2"), &local)
    );
    assert_ne!(
        DiscoveryKey::public(&offered(), "default", "s", &http("t1"), &local),
        DiscoveryKey::public(&offered(), "other", "s", &http("t1"), &local)
    );
    assert_ne!(
        DiscoveryKey::public(&offered(), "default", "s", &http("t1"), &local),
        DiscoveryKey::new(&offered(), "default", "s", &http("t1"), &local, None)
    );
    let with_header = |value: &str, sensitive: bool| {
        let mut value = http::HeaderValue::from_str(value).unwrap();
        value.set_sensitive(sensitive);
        Endpoint::Http(ResolvedHttp {
            url: "http://127.0.0.1:1/mcp".into(),
            bearer_token: None,
            headers: [(http::HeaderName::from_static("x-key"), value)]
                .into_iter()
                .collect(),
            max_message_bytes: 1,
            network: Default::default(),
            oauth_store: None,
            credentials: Vec::new(),
        })
    };
    let public =
        |endpoint: &Endpoint| DiscoveryKey::public(&offered(), "default", "s", endpoint, &local);
    assert_eq!(
        public(&with_header("k1", true)),
        public(&with_header("k2", true))
    );
    assert_ne!(
        public(&with_header("k1", false)),
        public(&with_header("k2", false))
    );
    // Field boundaries are unambiguous: ("ab", "c") is not ("a", "bc").
    let split = |a: &str, b: &str| {
        Endpoint::Stdio(Launch {
            argv: vec![a.into(), b.into()],
            env: BTreeMap::new(),
            cwd: None,
            max_message_bytes: 1,
        })
    };
    assert_ne!(
        DiscoveryKey::new(&offered(), "default", "s", &split("ab", "c"), &local, None),
        DiscoveryKey::new(&offered(), "default", "s", &split("a", "bc"), &local, None)
    );
}

#[test]
#[cfg(feature = "oauth")]
fn an_oauth_login_is_in_the_key_as_its_identity_never_its_token() {
    use rmcp::transport::auth::StoredCredentials;

    use crate::{
        auth::account::{self, tests::credentials},
        transport::http::ResolvedHttp,
    };

    let endpoint = Endpoint::Http(ResolvedHttp {
        url: "http://127.0.0.1:1/mcp".into(),
        bearer_token: None,
        headers: Default::default(),
        max_message_bytes: 1,
        network: Default::default(),
        oauth_store: None,
        credentials: Vec::new(),
    });
    let local = Environment::Local;
    let login = |credentials: &StoredCredentials| {
        account::identity(credentials, "http://127.0.0.1:1/mcp").unwrap()
    };
    let key = |credentials: Option<&StoredCredentials>| {
        let login = credentials.map(login);
        StartupKeys::new(
            &offered(),
            "default",
            "s",
            &endpoint,
            &local,
            Protocol::Auto,
            login.as_ref(),
        )
    };
    let alice = credentials(
        "client-1",
        "at-1",
        Some("rt-1"),
        serde_json::json!({"mcp_runtime_account": "alice"}),
    );
    // Another runtime of the same account holds another access token: one key.
    let alice_again = credentials(
        "client-1",
        "at-2",
        Some("rt-2"),
        serde_json::json!({"mcp_runtime_account": "alice"}),
    );
    let bob = credentials(
        "client-1",
        "at-1",
        Some("rt-1"),
        serde_json::json!({"mcp_runtime_account": "bob"}),
    );
    let other_client = credentials(
        "client-2",
        "at-1",
        Some("rt-1"),
        serde_json::json!({"mcp_runtime_account": "alice"}),
    );
    let other_issuer = alice
        .clone()
        .with_issuer(Some("https://other.example".into()));
    assert_eq!(key(Some(&alice)), key(Some(&alice_again)));
    for other in [&bob, &other_client, &other_issuer] {
        assert_ne!(key(Some(&alice)).private, key(Some(other)).private);
    }
    assert_ne!(key(Some(&alice)).private, key(None).private);
    // A public grant serves any account: the login is a credential.
    assert_eq!(key(Some(&alice)).public, key(Some(&bob)).public);
    assert_eq!(key(Some(&alice)).public, key(None).public);
    // The key is a digest of the identity: the same key whatever the token, and
    // the token nowhere in its bytes or its `Debug` output.
    let bytes = key(Some(&alice)).private.0;
    assert!(!bytes.windows(4).any(|w| w == b"at-1"));
    assert!(!format!("{:?}", key(Some(&alice))).contains("at-1"));
}

#[test]
fn startups_offering_other_capabilities_do_not_share() {
    struct Lists;
    impl crate::host::Roots for Lists {
        fn roots<'a>(
            &'a self,
            _server: &'a str,
        ) -> crate::host::HandlerFuture<'a, Vec<crate::host::Root>> {
            Box::pin(async { Vec::new() })
        }
    }
    let with_roots =
        crate::protocol::client_config(&crate::host::HostHandlers::new().with_roots(Lists));
    let local = Environment::Local;
    let endpoint = Endpoint::Stdio(crate::transport::stdio::Launch {
        argv: vec!["server".into()],
        env: Default::default(),
        cwd: None,
        max_message_bytes: 1,
    });
    assert_ne!(
        DiscoveryKey::new(&offered(), "default", "s", &endpoint, &local, None),
        DiscoveryKey::new(&with_roots, "default", "s", &endpoint, &local, None)
    );
    assert_ne!(
        DiscoveryKey::era(&offered(), "default", "s", &endpoint, &local),
        DiscoveryKey::era(&with_roots, "default", "s", &endpoint, &local)
    );
}

#[cfg(feature = "fleet")]
#[test]
fn a_change_untold_while_an_earlier_one_is_told_stays_untold() {
    let (alice, bob) = alice_and_bob();
    let mut untold = Untold::default();
    untold.add(&alice);
    // Bob's startup tells the change through the public key they share...
    let seen = untold
        .of(&bob)
        .expect("a change of the server Bob uses too");
    // ...while another change under Alice's identity fails to be told.
    untold.add(&alice);
    untold.told(&bob, seen);
    assert!(
        untold.of(&bob).is_some(),
        "the later change is still to tell"
    );
    let seen = untold.of(&alice).unwrap();
    untold.told(&alice, seen);
    assert_eq!(untold.of(&alice), None);
    assert_eq!(untold.of(&bob), None);
}
