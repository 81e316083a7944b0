use super::*;

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
const OTHER_KEY: &[u8] = b"another key, long enough to be one";

#[test]
fn a_sealed_value_opens_under_its_own_name_and_key_only() {
    let sealed = seal(KEY, "a", 7, 1000, b"{\"tools\":[]}");
    assert_eq!(
        open(KEY, "a", &sealed),
        Some((7, b"{\"tools\":[]}".to_vec()))
    );
    assert_eq!(open(KEY, "b", &sealed), None, "moved to another entry");
    assert_eq!(open(OTHER_KEY, "a", &sealed), None);
    let mut forged = sealed.clone();
    *forged.last_mut().unwrap() = b'!';
    assert_eq!(open(KEY, "a", &forged), None, "payload changed");
    let restamped = [b"8".as_slice(), &sealed[1..]].concat();
    assert_eq!(open(KEY, "a", &restamped), None, "stamp changed");
    assert_eq!(open(KEY, "a", b"garbage"), None);
}

#[test]
fn a_letter_is_taken_once_while_remembered_and_forgotten_after() {
    let mut delivered = mail::Delivered::default();
    let start = tokio::time::Instant::now();
    assert!(delivered.first("a", 1, start));
    assert!(!delivered.first("a", 1, start), "the same letter again");
    assert!(delivered.first("b", 1, start), "another sender's letter 1");
    let later = start + mail::REMEMBERED / 2;
    assert!(!delivered.first("a", 1, later));
    assert!(delivered.first("a", 2, later));
    // Those of `start` are forgotten a while after; the later one is not yet.
    let after = start + mail::REMEMBERED;
    assert!(delivered.first("c", 1, after));
    assert_eq!(delivered.len(), 2, "a:2 and c:1 are left");
    assert!(!delivered.first("a", 2, after));
    assert!(delivered.first("a", 1, after), "forgotten, so taken again");
}

#[test]
fn a_letter_cannot_be_read_and_opens_on_its_own_channel_under_its_own_key_only() {
    let (key, other) = ([1; 32], [2; 32]);
    let enclosed = mail::enclose(&key, "ch", b"the answer is 42");
    assert!(!enclosed.windows(6).any(|part| part == b"answer"));
    assert_eq!(
        mail::disclose(&key, "ch", &enclosed),
        Some(b"the answer is 42".to_vec())
    );
    assert_eq!(mail::disclose(&key, "another", &enclosed), None);
    assert_eq!(mail::disclose(&other, "ch", &enclosed), None);
    assert_eq!(mail::disclose(&key, "ch", b"short"), None);
    let mut altered = enclosed.clone();
    *altered.last_mut().unwrap() ^= 1;
    assert_eq!(mail::disclose(&key, "ch", &altered), None);
}

#[test]
fn an_unsealed_lease_reads_its_time_and_a_sealed_one_does_not() {
    assert_eq!(
        unsealed_lease(b"12:1700000000000:"),
        Some(1_700_000_000_000)
    );
    assert_eq!(
        unsealed_lease(b"12:1700000000000:0a1b2c3d4e5f6789"),
        Some(1_700_000_000_000)
    );
    assert_eq!(unsealed_lease(b"12:1700000000000:not hex"), None);
    assert_eq!(unsealed_lease(&seal(KEY, "lease", 12, 5, b"")), None);
}

#[tokio::test]
async fn a_short_key_and_a_bad_url_are_refused_without_repeating_the_url() {
    assert!(matches!(
        Fleet::connect("redis://127.0.0.1:1", b"short", "r1"),
        Err(FleetError::ShortKey(5))
    ));
    let error = Fleet::connect("nonsense://user:hunter2@host", KEY, "r1").unwrap_err();
    assert!(!error.to_string().contains("hunter2"), "{error}");
}

#[tokio::test]
async fn slots_are_named_by_the_fleet_key_and_never_by_the_digest() {
    let fleet = Fleet::connect("redis://127.0.0.1:1", KEY, "r1").unwrap();
    let other = Fleet::connect("redis://127.0.0.1:1", OTHER_KEY, "r2").unwrap();
    let digest = [7u8; 32];
    let slot = fleet.slot(&digest, &digest);
    let id = fleet.slot_id(&digest);
    assert_eq!(slot.listing, fleet.slot(&digest, &[1; 32]).listing);
    assert_ne!(id, other.slot_id(&digest));
    assert!(!slot.listing.contains(&hex::encode(digest)));
    assert!(
        slot.listing.contains(&format!("{{{id}}}")),
        "one hash slot per key"
    );
}

/// A `redis-server` of the test's own on a Unix socket (installed by
/// `scripts/install-peers`), killed when dropped.
struct Redis {
    child: std::process::Child,
    _dir: tempfile::TempDir,
    url: String,
}

impl Redis {
    fn start() -> Self {
        Self::start_in(tempfile::tempdir().unwrap())
    }

    /// A Redis whose socket is `redis.sock` in `dir`.
    fn start_in(dir: tempfile::TempDir) -> Self {
        let (child, url) = Self::launch(dir.path());
        Self {
            child,
            _dir: dir,
            url,
        }
    }

    /// Stops it at once (SIGKILL).
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts it again once stopped, on the same socket, empty.
    fn restart(&mut self) {
        let _ = std::fs::remove_file(self._dir.path().join("redis.sock"));
        self.child = Self::launch(self._dir.path()).0;
    }

    /// A `redis-server` on the socket `redis.sock` in `dir`, and its URL, once it
    /// accepts connections.
    fn launch(dir: &std::path::Path) -> (std::process::Child, String) {
        use std::io::BufRead;
        let socket = dir.join("redis.sock");
        let mut child = std::process::Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--save",
                "",
                "--appendonly",
                "no",
                "--unixsocket",
            ])
            .arg(&socket)
            .arg("--dir")
            .arg(dir)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("redis-server starts (`scripts/install-peers` installs it)");
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        while let Some(Ok(line)) = lines.next() {
            if line
                .to_ascii_lowercase()
                .contains("ready to accept connections")
            {
                std::thread::spawn(move || lines.for_each(drop));
                return (child, format!("unix://{}", socket.display()));
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("redis-server exited before accepting connections");
    }

    /// A plain connection to it, for what a test does behind the fleet's back.
    async fn client(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// Redis's own clock, in ms.
    async fn time_ms(&self) -> u64 {
        let (seconds, micros): (u64, u64) = redis::cmd("TIME")
            .query_async(&mut self.client().await)
            .await
            .unwrap();
        seconds * 1000 + micros / 1000
    }

    /// What is written under `name`, read behind the fleet's back.
    async fn get(&self, name: &str) -> Vec<u8> {
        redis::cmd("GET")
            .arg(name)
            .query_async(&mut self.client().await)
            .await
            .unwrap()
    }

    /// Writes `value` under `name`, behind the fleet's back.
    async fn set(&self, name: &str, value: Vec<u8>) {
        let () = redis::cmd("SET")
            .arg(name)
            .arg(value)
            .query_async(&mut self.client().await)
            .await
            .unwrap();
    }

    /// Has the ACL user `limited` follow `rules` as well.
    async fn acl(&self, rules: &[&str]) {
        let () = redis::cmd("ACL")
            .arg("SETUSER")
            .arg("limited")
            .arg(rules)
            .query_async(&mut self.client().await)
            .await
            .unwrap();
    }

    /// A replica's link to it, its leases lasting `lease`, its calls taking up to a
    /// second, four times the default: the tests run side by side on a small
    /// machine, and a stall past the default would pause the link for a second,
    /// which only the tests of [`Redis::fleet_timing_out`] are about.
    fn fleet(&self, replica: &str, lease: Duration) -> Fleet {
        let patience = Duration::from_secs(1);
        Fleet::connect_with(&self.url, KEY, replica, patience, lease).unwrap()
    }

    /// [`Redis::fleet`] with the default timeout: for a test of a call, or a
    /// subscription's ping, that goes unanswered.
    fn fleet_timing_out(&self, replica: &str, lease: Duration) -> Fleet {
        Fleet::connect_with(&self.url, KEY, replica, DEFAULT_TIMEOUT, lease).unwrap()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

const WINDOW: Duration = Duration::from_secs(60);

/// The lease `fleet` holds once a startup on `slot`, with burst `window`, leads.
async fn lead(fleet: &Fleet, slot: &Slot, window: Duration) -> Box<Lease> {
    match fleet.acquire(slot, Stamp::NEW, window).await {
        Ok(Acquired::Lead(lease)) => lease,
        _ => panic!("the startup leads"),
    }
}

/// Whether a startup on `slot` that begins now, with no burst window, leads.
async fn leads_now(fleet: &Fleet, slot: &Slot) -> bool {
    matches!(
        fleet.acquire(slot, Stamp::NEW, Duration::ZERO).await,
        Ok(Acquired::Lead(_))
    )
}

/// Whether a startup on `slot` that begins now, with no burst window, takes a grant.
async fn granted_now(fleet: &Fleet, slot: &Slot) -> bool {
    matches!(
        fleet.acquire(slot, Stamp::NEW, Duration::ZERO).await,
        Ok(Acquired::Granted(_))
    )
}

/// Two identities' slots sharing one public key, named after `n`.
fn two_identities(fleet: &Fleet, n: u8) -> (Slot, Slot) {
    let public = [n; 32];
    (
        fleet.slot(&[n + 1; 32], &public),
        fleet.slot(&[n + 2; 32], &public),
    )
}

/// Publishes an empty listing from `leader`, granted for ten minutes to its key.
async fn publish_granted(leader: Box<Lease>) {
    let grant = Some((false, Duration::from_secs(600)));
    leader.publish(b"[]", WINDOW, grant).await;
}

/// Publishes an empty listing from `leader`, granted for ten minutes to its public
/// key.
async fn publish_granted_publicly(leader: Box<Lease>) {
    let grant = Some((true, Duration::from_secs(600)));
    leader.publish(b"[]", WINDOW, grant).await;
}

#[tokio::test]
async fn a_lease_whose_leader_died_lapses_and_a_waiter_leads() {
    let redis = Redis::start();
    let lease = Duration::from_millis(600);
    let (dead, alive) = (redis.fleet("dead", lease), redis.fleet("alive", lease));
    let digest = [3; 32];
    let leader = lead(&dead, &dead.slot(&digest, &digest), WINDOW).await;
    leader.abandon();
    let slot = alive.slot(&digest, &digest);
    let Ok(Acquired::Wait(since)) = alive.acquire(&slot, Stamp::NEW, WINDOW).await else {
        panic!("the lease holds until it lapses");
    };
    // Looked at as a waiter does: every `poll`, until the lease has lapsed.
    let mut looks = 0;
    loop {
        looks += 1;
        match alive.acquire(&slot, since, WINDOW).await {
            Ok(Acquired::Wait(_)) => tokio::time::sleep(alive.poll()).await,
            Ok(Acquired::Lead(_)) => break,
            _ => panic!("nothing else is there"),
        }
        assert!(looks < 40, "the lease lapses within its lifetime");
    }
}

#[tokio::test]
async fn a_replaced_leader_publishes_for_its_waiters_and_never_over_a_later_listing() {
    let redis = Redis::start();
    let (first, second, third) = (
        redis.fleet("first", DEFAULT_LEASE),
        redis.fleet("second", DEFAULT_LEASE),
        redis.fleet("third", DEFAULT_LEASE),
    );
    let digest = [4; 32];
    let slot = first.slot(&digest, &digest);
    let leader = lead(&first, &slot, WINDOW).await;
    let waiting = third.slot(&digest, &digest);
    let Ok(Acquired::Wait(stamp)) = third.acquire(&waiting, Stamp::NEW, WINDOW).await else {
        panic!("a startup within the window waits for the attempt in flight");
    };
    // A startup that begins after the lease was taken, with no burst window: the
    // attempt in flight was sent before it began, so it leads its own, replacing
    // the lease (invariant 3).
    let later = second.slot(&digest, &digest);
    let replacing = lead(&second, &later, Duration::ZERO).await;
    leader.publish(b"first", WINDOW, None).await;
    match third.acquire(&waiting, stamp, WINDOW).await {
        Ok(Acquired::Take { payload, .. }) => assert_eq!(payload, b"first"),
        _ => panic!("the replaced leader's waiter takes its listing"),
    }
    replacing.publish(b"later", WINDOW, None).await;
    match first.acquire(&slot, Stamp::NEW, WINDOW).await {
        Ok(Acquired::Take { payload, .. }) => assert_eq!(payload, b"later"),
        _ => panic!("the replacing leader's listing is taken"),
    }
    // An earlier attempt, published after a later one, does not replace it.
    let earliest = lead(&third, &waiting, Duration::ZERO).await;
    let latest = lead(&first, &slot, Duration::ZERO).await;
    latest.publish(b"latest", WINDOW, None).await;
    earliest.publish(b"earliest", WINDOW, None).await;
    match second.acquire(&later, Stamp::NEW, WINDOW).await {
        Ok(Acquired::Take { payload, .. }) => assert_eq!(payload, b"latest"),
        _ => panic!("the latest attempt's listing stays"),
    }
}

#[tokio::test]
async fn a_forged_or_foreign_entry_is_never_taken() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let digest = [5; 32];
    let slot = fleet.slot(&digest, &digest);
    let forged = seal(OTHER_KEY, &slot.listing, u64::MAX, u64::MAX, b"[]");
    redis.set(&slot.listing, forged).await;
    assert!(matches!(
        fleet.acquire(&slot, Stamp::NEW, WINDOW).await,
        Ok(Acquired::Unusable)
    ));
}

#[tokio::test]
async fn a_change_revokes_the_window_and_the_grants_for_every_replica() {
    let redis = Redis::start();
    let (one, other) = (
        redis.fleet("one", DEFAULT_LEASE),
        redis.fleet("other", DEFAULT_LEASE),
    );
    let digest = [6; 32];
    let slot = one.slot(&digest, &digest);
    let leader = lead(&one, &slot, WINDOW).await;
    publish_granted(leader).await;
    let mut changes = other.changes();
    one.revoke(&slot).await.unwrap();
    let other_slot = other.slot(&digest, &digest);
    assert_eq!(
        changes.recv().await.unwrap(),
        other.slot_id(&digest),
        "the other replica hears of it"
    );
    assert!(
        matches!(
            other.acquire(&other_slot, Stamp::NEW, WINDOW).await,
            Ok(Acquired::Lead(_))
        ),
        "neither the grant nor the listing of the window serves a later startup"
    );
}

#[tokio::test]
async fn a_listing_asked_for_before_a_change_grants_nothing() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let digest = [8; 32];
    let slot = fleet.slot(&digest, &digest);
    let leader = lead(&fleet, &slot, WINDOW).await;
    // The server changes while the leader's request is in flight.
    fleet.revoke(&slot).await.unwrap();
    publish_granted(leader).await;
    assert!(
        matches!(
            fleet.acquire(&slot, Stamp::NEW, Duration::ZERO).await,
            Ok(Acquired::Lead(_))
        ),
        "no grant from before the change serves a later startup"
    );
}

#[tokio::test]
async fn the_window_is_applied_once_as_a_startup_begins() {
    let redis = Redis::start();
    let (leading, waiting) = (
        redis.fleet("leading", DEFAULT_LEASE),
        redis.fleet("waiting", DEFAULT_LEASE),
    );
    let digest = [10; 32];
    let _leader = lead(&leading, &leading.slot(&digest, &digest), WINDOW).await;
    let slot = waiting.slot(&digest, &digest);
    let Ok(Acquired::Wait(since)) = waiting.acquire(&slot, Stamp::NEW, WINDOW).await else {
        panic!("a startup within the window waits for the attempt in flight");
    };
    // Looked at again with no window left (a long `tools/list`), the startup still
    // waits for that attempt: its stamp was set when it began.
    assert!(matches!(
        waiting.acquire(&slot, since, Duration::ZERO).await,
        Ok(Acquired::Wait(_))
    ));
}

#[tokio::test]
async fn a_change_voids_the_window_a_waiting_startup_was_given() {
    let redis = Redis::start();
    let (leading, waiting) = (
        redis.fleet("leading", DEFAULT_LEASE),
        redis.fleet("waiting", DEFAULT_LEASE),
    );
    let digest = [14; 32];
    let leader = lead(&leading, &leading.slot(&digest, &digest), WINDOW).await;
    let slot = waiting.slot(&digest, &digest);
    let Ok(Acquired::Wait(stamp)) = waiting.acquire(&slot, Stamp::NEW, WINDOW).await else {
        panic!("a startup within the window waits for the attempt in flight");
    };
    // The server changes while both wait for the leader's request; its answer,
    // from before the change, is published all the same (its own startups began
    // before the change too).
    waiting.revoke(&slot).await.unwrap();
    leader.publish(b"before the change", WINDOW, None).await;
    assert!(
        matches!(
            waiting.acquire(&slot, stamp, WINDOW).await,
            Ok(Acquired::Lead(_))
        ),
        "the waiting startup lists after the change rather than take the answer from before"
    );
}

#[tokio::test]
async fn a_listing_put_back_long_after_it_was_sent_is_not_taken() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let digest = [15; 32];
    let slot = fleet.slot(&digest, &digest);
    // A genuine listing sent an hour ago, and a lease whose plain head says an
    // attempt began just now with the first stamp: it would lower a startup's stamp
    // below the listing's.
    let now = redis.time_ms().await;
    let old = seal(KEY, &slot.listing, 5, now - 3_600_000, b"[]");
    redis.set(&slot.listing, old).await;
    // Later startups draw later stamps: only the lease's head lets the listing in.
    redis.set(&slot.clock, b"100".to_vec()).await;
    redis
        .set(&slot.lease, format!("1:{now}:").into_bytes())
        .await;
    assert!(matches!(
        fleet.acquire(&slot, Stamp::NEW, WINDOW).await,
        Ok(Acquired::Unusable)
    ));
}

#[tokio::test]
async fn a_lease_left_unsealed_past_its_lifetime_is_not_waited_for() {
    let redis = Redis::start();
    let lease = Duration::from_millis(600);
    let fleet = redis.fleet("r1", lease);
    let digest = [16; 32];
    let slot = fleet.slot(&digest, &digest);
    // A leader seals its lease at once: one written by hand, with no expiry, would
    // have every startup of the key wait out its bound.
    let long_ago = redis.time_ms().await - 2 * 600;
    redis
        .set(
            &slot.lease,
            format!("99999999999999:{long_ago}:").into_bytes(),
        )
        .await;
    assert!(matches!(
        fleet.acquire(&slot, Stamp::NEW, Duration::ZERO).await,
        Ok(Acquired::Unusable)
    ));
}

#[tokio::test]
async fn an_attempt_made_again_after_its_answer_was_lost_leads_under_the_lease_it_took() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let slot = fleet.slot(&[19; 32], &[19; 32]);
    // The script ran and took the lease; its answer never came back.
    let (kind, _, lease, token, ..) = fleet
        .acquiring(&slot, Stamp::NEW, WINDOW, "0a1b2c3d")
        .await
        .unwrap();
    assert_eq!(kind, "lead");
    // Made again, the same attempt leads under the same lease: it does not wait for
    // its own to lapse.
    let (again, _, same, same_token, ..) = fleet
        .acquiring(&slot, Stamp::NEW, WINDOW, "0a1b2c3d")
        .await
        .unwrap();
    assert_eq!((again.as_str(), same_token), ("lead", token));
    assert_eq!(same, lease);
    // Another attempt waits for it.
    let (other, ..) = fleet
        .acquiring(&slot, Stamp::NEW, WINDOW, "99999999")
        .await
        .unwrap();
    assert_eq!(other, "wait");
}

#[tokio::test]
async fn a_lease_whose_publication_failed_is_released_once_the_pause_is_over() {
    let redis = Redis::start();
    redis.acl(&["on", ">a password", "~*", "&*", "+@all"]).await;
    let url = format!("{}?user=limited&pass=a%20password", redis.url);
    // Its lease would last a minute unpublished.
    let lease = Duration::from_secs(60);
    let patience = Duration::from_secs(1);
    let leader = Fleet::connect_with(&url, KEY, "r1", patience, lease).unwrap();
    let slot = leader.slot(&[20; 32], &[20; 32]);
    let held = lead(&leader, &slot, WINDOW).await;
    // Redis takes no listing from it (the publishing script's SET is refused); the
    // release, which writes nothing, it takes.
    redis.acl(&["-set"]).await;
    held.publish(b"[]", WINDOW, None).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    until_lease(&redis, &slot, false, deadline, "the lease is still held").await;
}

#[tokio::test]
async fn a_lease_taken_by_an_attempt_that_timed_out_is_released_once_the_pause_is_over() {
    let redis = Redis::start();
    // Its lease would last a minute unsealed.
    let fleet = redis.fleet_timing_out("r1", Duration::from_secs(60));
    let slot = fleet.slot(&[22; 32], &[22; 32]);
    // Redis runs the attempt once its caller has given up: the lease is taken, its
    // taker gone.
    let attempt = fleet.acquire(&slot, Stamp::NEW, WINDOW);
    run_too_late(&redis, &slot, async {
        assert!(attempt.await.is_err());
    })
    .await;
}

#[tokio::test]
async fn a_lease_taken_by_an_attempt_its_startup_dropped_is_released() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", Duration::from_secs(60));
    let slot = fleet.slot(&[24; 32], &[24; 32]);
    // The startup gives up (its own timeout, say) while Redis holds the attempt.
    let attempt = fleet.acquire(&slot, Stamp::NEW, WINDOW);
    run_too_late(&redis, &slot, async {
        let dropped = tokio::time::timeout(Duration::from_millis(100), attempt).await;
        assert!(dropped.is_err(), "answered while Redis held it");
    })
    .await;
}

/// Has Redis run the acquiring attempt `given_up` makes of `slot` only once
/// `given_up` is over, then checks that the lease the attempt took is released
/// within 10 s (it would last a minute).
async fn run_too_late(redis: &Redis, slot: &Slot, given_up: impl Future<Output = ()>) {
    let mut client = redis.client().await;
    // Redis knows the acquiring script (an unknown one's first send is refused),
    // taught by a replica with the tests' patience.
    let teacher = redis.fleet("r0", DEFAULT_LEASE);
    drop(lead(&teacher, &teacher.slot(&[23; 32], &[23; 32]), WINDOW).await);
    hold_writes(&mut client).await;
    given_up.await;
    let_writes_go(&mut client).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    until_lease(redis, slot, true, deadline, "the attempt never ran").await;
    until_lease(redis, slot, false, deadline, "the lease is still held").await;
}

/// Waits until `slot`'s lease is `held`, or is not, in `redis`; failing with `what`
/// at `deadline`.
async fn until_lease(redis: &Redis, slot: &Slot, held: bool, deadline: Instant, what: &str) {
    let mut client = redis.client().await;
    loop {
        let exists: i64 = redis::cmd("EXISTS")
            .arg(&slot.lease)
            .query_async(&mut client)
            .await
            .unwrap();
        if (exists == 1) == held {
            return;
        }
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn an_expired_grant_put_back_in_redis_is_never_served() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let digest = [11; 32];
    let slot = fleet.slot(&digest, &digest);
    // Signed with the fleet key, as a grant captured long ago would be.
    let old = seal(KEY, &slot.private_grant, 1, 1_000, b"[]");
    redis.set(&slot.private_grant, old).await;
    assert!(matches!(
        fleet.acquire(&slot, Stamp::NEW, WINDOW).await,
        Ok(Acquired::Lead(_))
    ));
    // A fresh one is served.
    let leader = lead(&fleet, &fleet.slot(&[12; 32], &[12; 32]), WINDOW).await;
    publish_granted(leader).await;
    assert!(matches!(
        fleet
            .acquire(
                &fleet.slot(&[12; 32], &[12; 32]),
                Stamp::NEW,
                Duration::ZERO
            )
            .await,
        Ok(Acquired::Granted(_))
    ));
}

#[tokio::test]
async fn a_grant_put_back_after_its_revocation_is_not_served() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let digest = [13; 32];
    let slot = fleet.slot(&digest, &digest);
    let leader = lead(&fleet, &slot, WINDOW).await;
    publish_granted(leader).await;
    let granted = redis.get(&slot.private_grant).await;
    fleet.revoke(&slot).await.unwrap();
    // Genuine, signed and unexpired: only its stamp, older than the change, tells.
    redis.set(&slot.private_grant, granted).await;
    assert!(leads_now(&fleet, &slot).await);
}

#[tokio::test]
async fn a_public_grant_serves_a_key_whose_own_change_is_later_than_its_stamp() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let (granting, taking) = two_identities(&fleet, 20);
    // The taking key's server changed three times: its change mark (3) is above the
    // tokens of the granting key's own counter.
    for _ in 0..3 {
        fleet.revoke(&taking).await.unwrap();
    }
    // A leader of the granting key begins after the changes.
    let leader = lead(&fleet, &granting, WINDOW).await;
    publish_granted_publicly(leader).await;
    assert!(granted_now(&fleet, &taking).await);
}

#[tokio::test]
async fn a_public_grant_put_back_after_another_keys_change_is_not_served() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let (granting, changing) = two_identities(&fleet, 23);
    publish_granted_publicly(lead(&fleet, &granting, WINDOW).await).await;
    let granted = redis.get(&granting.public_grant).await;
    // Another identity's startup hears the server change: every public grant goes.
    fleet.revoke(&changing).await.unwrap();
    redis.set(&granting.public_grant, granted).await;
    assert!(leads_now(&fleet, &granting).await);
}

#[tokio::test]
async fn a_public_listing_asked_for_before_another_keys_change_grants_nothing() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let (granting, changing) = two_identities(&fleet, 26);
    let late = lead(&fleet, &granting, WINDOW).await;
    // The server changes, as another identity's connection hears, while this
    // leader's request is in flight.
    fleet.revoke(&changing).await.unwrap();
    publish_granted_publicly(late).await;
    assert!(leads_now(&fleet, &changing).await);
    // Nor does it replace a grant made since: a third identity's leader, begun after
    // the change, grants before the late one publishes.
    let public = [26; 32];
    let late = lead(&fleet, &fleet.slot(&[35; 32], &public), WINDOW).await;
    fleet.revoke(&changing).await.unwrap();
    let third = fleet.slot(&[29; 32], &public);
    publish_granted_publicly(lead(&fleet, &third, WINDOW).await).await;
    publish_granted_publicly(late).await;
    assert!(granted_now(&fleet, &changing).await);
}

#[tokio::test]
async fn a_public_grant_outlives_its_revocation_count() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let slot = fleet.slot(&[31; 32], &[30; 32]);
    fleet.revoke(&slot).await.unwrap();
    let leader = lead(&fleet, &slot, WINDOW).await;
    publish_granted_publicly(leader).await;
    let mut client = redis.client().await;
    let granted = redis.get(&slot.public_grant).await;
    // The count lapses a day after the last change; the grant may live on.
    let () = redis::cmd("DEL")
        .arg(&slot.public_epoch)
        .query_async(&mut client)
        .await
        .unwrap();
    assert!(granted_now(&fleet, &slot).await);
    // A change after that still revokes it: the count never goes back.
    fleet.revoke(&slot).await.unwrap();
    redis.set(&slot.public_grant, granted).await;
    assert!(leads_now(&fleet, &slot).await);
}

#[tokio::test]
async fn counters_no_replica_wrote_stop_no_change_and_no_startup() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let mut client = redis.client().await;
    let slot = fleet.slot(&[33; 32], &[34; 32]);
    publish_granted(lead(&fleet, &slot, WINDOW).await).await;
    // A counter that is no integer, and a revocation count of the wrong type.
    redis.set(&slot.clock, b"not a number".to_vec()).await;
    let () = redis::cmd("LPUSH")
        .arg(&slot.public_epoch)
        .arg("not a count")
        .query_async(&mut client)
        .await
        .unwrap();
    assert!(granted_now(&fleet, &slot).await);
    fleet.revoke(&slot).await.unwrap();
    assert!(fleet.reachable());
    lead(&fleet, &slot, Duration::ZERO).await.abandon();
    // A counter at its largest, or past any clock, starts again too, and its leader
    // publishes; so does one not above the key's change mark (evicted), from the mark
    // when that is ahead of Redis's clock; a mark that is no whole number is not
    // started from, and the revocation writes a good one.
    let ahead = (redis.time_ms().await + 60_000).to_string();
    redis.set(&slot.changed, ahead.clone().into_bytes()).await;
    for written in [
        i64::MAX.to_string(),
        "100000000000000".to_owned(),
        "1".to_owned(),
    ] {
        let () = redis::cmd("DEL")
            .arg(&slot.lease)
            .query_async(&mut client)
            .await
            .unwrap();
        redis.set(&slot.clock, written.into_bytes()).await;
        publish_granted(lead(&fleet, &slot, Duration::ZERO).await).await;
        assert!(granted_now(&fleet, &slot).await);
        fleet.revoke(&slot).await.unwrap();
        redis.set(&slot.changed, ahead.clone().into_bytes()).await;
    }
    redis.set(&slot.clock, b"not a number".to_vec()).await;
    redis.set(&slot.changed, b"5000000000000.5".to_vec()).await;
    let () = redis::cmd("DEL")
        .arg(&slot.lease)
        .query_async(&mut client)
        .await
        .unwrap();
    lead(&fleet, &slot, Duration::ZERO).await.abandon();
    fleet.revoke(&slot).await.unwrap();
    // Revocation counts no replica writes: no startup fails on one, and a change
    // starts it again, after which public grants serve.
    let written = ["nan", "inf", "1e300", "-5", "18014398509481988", "1.5"];
    for (n, written) in (40_u8..).zip(written) {
        let public = [n; 32];
        let (waiting, granting) = (
            fleet.slot(&[n + 10; 32], &public),
            fleet.slot(&[n + 20; 32], &public),
        );
        redis.set(&waiting.public_epoch, written.into()).await;
        lead(&fleet, &waiting, Duration::ZERO).await.abandon();
        fleet.revoke(&waiting).await.unwrap();
        let leader = lead(&fleet, &granting, Duration::ZERO).await;
        publish_granted_publicly(leader).await;
        assert!(
            matches!(
                fleet.acquire(&waiting, Stamp::NEW, Duration::ZERO).await,
                Ok(Acquired::Granted(_))
            ),
            "{written}"
        );
    }
    assert!(fleet.reachable());
}

/// Has Redis hold every client's writes (`CLIENT PAUSE … WRITE`, `PUBLISH` and
/// scripts among them) until [`let_writes_go`].
async fn hold_writes(client: &mut redis::aio::MultiplexedConnection) {
    let () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(60_000)
        .arg("WRITE")
        .query_async(client)
        .await
        .unwrap();
}

/// Ends [`hold_writes`]: Redis runs the writes it held.
async fn let_writes_go(client: &mut redis::aio::MultiplexedConnection) {
    let () = redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query_async(client)
        .await
        .unwrap();
}

/// Waits until a call of `fleet`'s has gone unanswered.
async fn gone_unanswered(fleet: &Fleet) {
    for _ in 0..1000 {
        if !fleet.reachable() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no call of the fleet's went unanswered within 10 s");
}

/// Waits until `fleet`'s subscription is up: letters can be answered.
async fn subscribed(fleet: &Fleet) {
    for _ in 0..500 {
        if fleet.inner.subscribed.load(Ordering::Relaxed) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the subscription comes up");
}

#[tokio::test]
async fn a_letter_is_answered_by_its_mailbox_and_one_nobody_takes_fails() {
    let redis = Redis::start();
    // A letter nobody hears is sent again for a lease: a short one here.
    let lease = Duration::from_millis(400);
    let (owner, asker, mut letters) = correspondents(&redis, lease, "echo").await;
    let seen = Arc::new(AtomicU64::new(0));
    let echo = {
        let seen = seen.clone();
        tokio::spawn(async move {
            while let Some(letter) = letters.recv().await {
                seen.fetch_add(1, Ordering::SeqCst);
                let mut body = letter.body().to_vec();
                letter.note(b"reversing").await.unwrap();
                letter.note(&body).await.unwrap();
                body.reverse();
                letter.reply(&body).await.unwrap();
            }
        })
    };
    // A letter in the clear, or encrypted under another key, is dropped unread; one
    // that arrives twice (sent twice, or replayed) is taken once.
    let mut client = redis.client().await;
    let channel = owner.mail_channel(owner.address());
    let forged = format!("ask:0:{}:echo:x", asker.address());
    let twice = format!("ask:999:{}:echo:x", asker.address());
    let twice = mail::enclose(&owner.inner.letter_key, &channel, twice.as_bytes());
    for letter in [
        forged.clone().into_bytes(),
        mail::enclose(&[7; 32], &channel, forged.as_bytes()),
        twice.clone(),
        twice,
    ] {
        let heard: i64 = redis::cmd("PUBLISH")
            .arg(&channel)
            .arg(letter)
            .query_async(&mut client)
            .await
            .unwrap();
        assert_eq!(heard, 1, "the owner's subscriber hears it");
    }
    let within = Duration::from_secs(10);
    let (notes, mut noted) = tokio::sync::mpsc::unbounded_channel();
    let answer = asker
        .ask_noting(owner.address(), "echo", b"abc", within, &notes)
        .await;
    assert_eq!(answer.unwrap(), b"cba");
    // The notes came first, in their order.
    assert_eq!(noted.try_recv().unwrap(), b"reversing");
    assert_eq!(noted.try_recv().unwrap(), b"abc");
    assert!(noted.try_recv().is_err());
    assert_eq!(
        seen.load(Ordering::SeqCst),
        2,
        "the forged letters were dropped, the repeated one taken once"
    );
    assert!(matches!(
        asker
            .ask(&mail::new_address(), "echo", b"abc", within)
            .await,
        Err(AskError::Gone)
    ));
    assert!(matches!(
        asker.ask(owner.address(), "nobody", b"abc", within).await,
        Err(AskError::Gone)
    ));
    echo.abort();
}

/// Two processes of one fleet on `redis` whose leases last `lease`, both subscribed:
/// one with a mailbox `name`, and one to ask it.
async fn correspondents(
    redis: &Redis,
    lease: Duration,
    name: &str,
) -> (Fleet, Fleet, tokio::sync::mpsc::Receiver<Letter>) {
    let (owner, asker) = (redis.fleet("owner", lease), redis.fleet("asker", lease));
    correspond(owner, asker, name).await
}

/// [`correspondents`] whose calls time out as a replica's do by default: for a test
/// of a call that goes unanswered.
async fn correspondents_timing_out(
    redis: &Redis,
    lease: Duration,
    name: &str,
) -> (Fleet, Fleet, tokio::sync::mpsc::Receiver<Letter>) {
    let (owner, asker) = (
        redis.fleet_timing_out("owner", lease),
        redis.fleet_timing_out("asker", lease),
    );
    correspond(owner, asker, name).await
}

/// `owner`'s mailbox `name`, once both are subscribed.
async fn correspond(
    owner: Fleet,
    asker: Fleet,
    name: &str,
) -> (Fleet, Fleet, tokio::sync::mpsc::Receiver<Letter>) {
    let letters = owner.mailbox(name);
    subscribed(&owner).await;
    subscribed(&asker).await;
    (owner, asker, letters)
}

/// A letter to the mailbox `slow`, from an address no process listens at.
fn letter_from_nowhere() -> Vec<u8> {
    format!("ask:7:{}:slow:1", "0".repeat(32)).into_bytes()
}

/// Returns once `letter` is cancelled; fails the test after 10 s.
async fn cancelled(letter: &Letter) {
    tokio::time::timeout(Duration::from_secs(10), letter.cancelled().cancelled())
        .await
        .expect("cancelled within 10 s");
}

/// `asker` asking `owner`'s mailbox `slow` with `body`, in a task of its own.
fn ask_slowly(
    asker: &Fleet,
    owner: &Fleet,
    body: &'static [u8],
    within: Duration,
) -> tokio::task::JoinHandle<Result<Vec<u8>, AskError>> {
    let asker = asker.clone();
    let address = owner.address().to_owned();
    tokio::spawn(async move { asker.ask(&address, "slow", body, within).await })
}

#[tokio::test]
async fn an_asker_that_loses_redis_tells_the_addressee_once_it_is_back() {
    let mut redis = Redis::start();
    let (owner, asker, mut letters) = correspondents(&redis, DEFAULT_LEASE, "slow").await;
    let asked = ask_slowly(&asker, &owner, b"1", Duration::from_secs(30));
    let letter = letters.recv().await.unwrap();
    // Redis goes, and the asker with it; its first words to the owner fail.
    redis.stop();
    let asked = asked.await.unwrap();
    assert!(matches!(asked, Err(AskError::Unavailable(_))), "{asked:?}");
    gone_unanswered(&asker).await;
    // Back, the owner's word about the letter reaches the asker once both are
    // subscribed again, and the asker tells it again.
    redis.restart();
    cancelled(&letter).await;
}

#[tokio::test]
async fn an_asker_back_after_a_long_outage_tells_the_addressee_it_stopped_waiting() {
    let mut redis = Redis::start();
    // Longer than either takes to subscribe again once Redis is back (a second or
    // so), so that the owner hears its asker meanwhile.
    let lease = Duration::from_millis(1500);
    let (owner, asker, mut letters) = correspondents(&redis, lease, "slow").await;
    let asked = ask_slowly(&asker, &owner, b"1", Duration::MAX);
    let letter = letters.recv().await.unwrap();
    redis.stop();
    let asked = asked.await.unwrap();
    assert!(matches!(asked, Err(AskError::Unavailable(_))), "{asked:?}");
    // Down for longer than three leases (the outage itself, not a wait): the asker
    // tells the owner again at the first word it hears once both are back.
    tokio::time::sleep(lease * 3 + lease / 3).await;
    redis.restart();
    cancelled(&letter).await;
}

#[tokio::test]
async fn a_cancel_nobody_hears_is_sent_for_a_lease_only() {
    let redis = Redis::start();
    let lease = Duration::from_millis(400);
    let (owner, asker, mut letters) = correspondents(&redis, lease, "slow").await;
    let asked = ask_slowly(&asker, &owner, b"1", Duration::MAX);
    let letter = letters.recv().await.unwrap();
    // The owner's process goes, and the asker's client with it: the asker's cancel
    // finds nobody.
    drop((letter, letters, owner));
    let publishes = || async {
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut redis.client().await)
            .await
            .unwrap();
        stats
            .lines()
            .find_map(|line| line.strip_prefix("cmdstat_publish:calls="))
            .and_then(|rest| rest.split(',').next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let before = publishes().await;
    asked.abort();
    // Three leases: the cancel is sent again every eighth of one, for one.
    tokio::time::sleep(lease * 3).await;
    let sent = publishes().await - before;
    assert!((1..=12).contains(&sent), "{sent} cancels sent");
}

#[tokio::test]
async fn an_asker_may_wait_without_a_bound_but_its_addressees_word() {
    let redis = Redis::start();
    let (owner, asker, mut letters) = correspondents(&redis, DEFAULT_LEASE, "slow").await;
    let asked = ask_slowly(&asker, &owner, b"1", Duration::MAX);
    letters.recv().await.unwrap().reply(b"done").await.unwrap();
    assert_eq!(asked.await.unwrap().unwrap(), b"done");
}

#[tokio::test]
async fn an_addressees_word_replayed_keeps_no_asker_waiting() {
    use futures::StreamExt as _;
    let redis = Redis::start();
    let lease = Duration::from_millis(300);
    let (owner, asker, mut letters) = correspondents(&redis, lease, "slow").await;
    // What the owner sends the asker, as anyone subscribed to the asker's channel
    // sees it: sealed.
    let mut overheard = redis::Client::open(redis.url.as_str())
        .unwrap()
        .get_async_pubsub()
        .await
        .unwrap();
    let channel = asker.mail_channel(asker.address());
    overheard.subscribe(&channel).await.unwrap();
    let asked = ask_slowly(&asker, &owner, b"1", Duration::MAX);
    let letter = letters.recv().await.unwrap();
    let word: Vec<u8> = overheard
        .on_message()
        .next()
        .await
        .unwrap()
        .get_payload()
        .unwrap();
    // The owner stops answering; its word is sent again and again in its place.
    drop(letter);
    let replaying = tokio::spawn(async move {
        let mut client = redis.client().await;
        loop {
            let _: i64 = redis::cmd("PUBLISH")
                .arg(&channel)
                .arg(&word)
                .query_async(&mut client)
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let asked = tokio::time::timeout(Duration::from_secs(10), asked)
        .await
        .expect("given up on within 10 s")
        .unwrap();
    assert!(matches!(asked, Err(AskError::Silent)), "{asked:?}");
    replaying.abort();
}

#[tokio::test]
async fn an_addressee_of_an_earlier_version_keeps_its_asker_waiting_with_its_words() {
    let redis = Redis::start();
    let lease = Duration::from_millis(900);
    let (owner, asker, mut letters) = correspondents(&redis, lease, "slow").await;
    let asked = ask_slowly(&asker, &owner, b"1", Duration::MAX);
    // The asker's first letter: number 0. Its addressee's own words stop; words
    // without a number, as a replica of an earlier version sends, go on for three
    // leases, then the answer.
    drop(letters.recv().await.unwrap());
    let channel = asker.mail_channel(asker.address());
    for _ in 0..18 {
        owner.post(&channel, b"alive:0:").await.unwrap();
        tokio::time::sleep(lease / 6).await;
    }
    owner.post(&channel, b"reply:0:done").await.unwrap();
    assert_eq!(asked.await.unwrap().unwrap(), b"done");
}

#[tokio::test]
async fn a_letter_whose_asker_no_process_hears_is_cancelled() {
    let redis = Redis::start();
    let owner = redis.fleet("owner", Duration::from_millis(300));
    let mut letters = owner.mailbox("slow");
    subscribed(&owner).await;
    // The letter of a process that died once it was sent: none listens at its
    // address, so none hears the owner say it is answering.
    let channel = owner.mail_channel(owner.address());
    assert_eq!(
        owner.post(&channel, &letter_from_nowhere()).await.unwrap(),
        1
    );
    let letter = letters.recv().await.unwrap();
    cancelled(&letter).await;
}

#[tokio::test]
async fn letters_that_do_not_open_are_warned_of_once_a_minute() {
    let events = crate::test_events::Events::default();
    let _default = tracing::subscriber::set_default(events.clone());
    let redis = Redis::start();
    let owner = redis.fleet("owner", DEFAULT_LEASE);
    let mut letters = owner.mailbox("slow");
    subscribed(&owner).await;
    let channel = owner.mail_channel(owner.address());
    let mut client = redis.client().await;
    for forged in ["not sealed", "nor this"] {
        let _: i64 = redis::cmd("PUBLISH")
            .arg(&channel)
            .arg(forged)
            .query_async(&mut client)
            .await
            .unwrap();
    }
    // A letter sent after them arrives after them.
    owner.post(&channel, &letter_from_nowhere()).await.unwrap();
    letters.recv().await.unwrap();
    let warnings: Vec<String> = events
        .with_targets()
        .into_iter()
        .filter(|line| line.contains("does not open"))
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(
        warnings[0].contains(" WARN") && warnings[0].contains("letters=1"),
        "{warnings:#?}"
    );
    assert!(warnings[1].contains(" DEBUG"), "{warnings:#?}");
}

#[tokio::test]
async fn an_asker_that_loses_its_subscription_fails_and_its_letter_is_cancelled() {
    let redis = Redis::start();
    // Longer than a subscriber's pause before it subscribes again (a second): the
    // asker tells the owner it stopped waiting until the owner hears it.
    let (owner, asker, mut letters) = correspondents(&redis, DEFAULT_LEASE, "slow").await;
    let asked = ask_slowly(&asker, &owner, b"1", Duration::from_secs(30));
    let letter = letters.recv().await.unwrap();
    // Redis drops every subscription: the asker's answer can no longer arrive, and
    // the owner hears nothing until its own is made again.
    let () = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query_async::<i64>(&mut redis.client().await)
        .await
        .map(drop)
        .unwrap();
    let asked = asked.await.unwrap();
    assert!(matches!(asked, Err(AskError::Unavailable(_))), "{asked:?}");
    cancelled(&letter).await;
}

#[tokio::test]
async fn an_asker_waits_while_its_letter_is_answered_and_not_once_it_is_dropped() {
    let redis = Redis::start();
    let lease = Duration::from_millis(300);
    let (owner, asker, mut letters) = correspondents(&redis, lease, "slow").await;
    let within = Duration::from_secs(30);
    let asked = ask_slowly(&asker, &owner, b"1", within);
    // Held for three leases, the addressee saying all along that it answers.
    let letter = letters.recv().await.unwrap();
    tokio::time::sleep(lease * 3).await;
    letter.reply(b"done").await.unwrap();
    assert_eq!(asked.await.unwrap().unwrap(), b"done");
    // Dropped unanswered (its process died): the asker stops within a lease or so.
    let asked = ask_slowly(&asker, &owner, b"2", within);
    drop(letters.recv().await.unwrap());
    // Silent well before its 30 s are up: it heard nothing, not the deadline.
    let heard = tokio::time::timeout(Duration::from_secs(10), asked).await;
    assert!(matches!(
        heard.expect("stops within 10 s").unwrap(),
        Err(AskError::Silent)
    ));
}

#[tokio::test]
async fn an_addressee_says_it_is_answering_within_the_pause_after_a_failure() {
    let redis = Redis::start();
    // Shorter than the pause (a second), so that a silence through it is heard.
    let lease = Duration::from_millis(900);
    let (owner, asker, mut letters) = correspondents_timing_out(&redis, lease, "slow").await;
    let asked = ask_slowly(&asker, &owner, b"1", Duration::from_secs(30));
    let letter = letters.recv().await.unwrap();
    // Redis holds writes until one of the addressee's goes unanswered: its link
    // pauses for a second, longer than a lease.
    let mut client = redis.client().await;
    hold_writes(&mut client).await;
    assert!(owner.put("state", "s1", b"x", lease).await.is_err());
    assert!(!owner.reachable());
    let_writes_go(&mut client).await;
    tokio::time::sleep(lease * 3).await;
    letter.reply(b"done").await.unwrap();
    assert_eq!(asked.await.unwrap().unwrap(), b"done");
}

#[tokio::test]
async fn a_note_redis_took_twice_is_passed_on_once() {
    let redis = Redis::start();
    // Long enough that a note is sent again while Redis holds writes.
    let lease = Duration::from_millis(900);
    let (owner, asker, mut letters) = correspondents_timing_out(&redis, lease, "slow").await;
    let (notes, mut noted) = mpsc::unbounded_channel();
    let asked = {
        let (asker, address) = (asker.clone(), owner.address().to_owned());
        tokio::spawn(async move {
            let within = Duration::from_secs(30);
            asker
                .ask_noting(&address, "slow", b"1", within, &notes)
                .await
        })
    };
    let letter = letters.recv().await.unwrap();
    // Redis holds writes until the first note's `PUBLISH` has gone unanswered, so
    // that it is sent again; Redis runs both once it goes on.
    let mut client = redis.client().await;
    hold_writes(&mut client).await;
    let first = tokio::spawn(async move {
        letter.note(b"half").await.unwrap();
        letter
    });
    gone_unanswered(&owner).await;
    let_writes_go(&mut client).await;
    let letter = first.await.unwrap();
    letter.note(b"all").await.unwrap();
    letter.reply(b"done").await.unwrap();
    assert_eq!(asked.await.unwrap().unwrap(), b"done");
    let mut heard = Vec::new();
    while let Ok(note) = noted.try_recv() {
        heard.push(note);
    }
    assert_eq!(heard, [b"half".to_vec(), b"all".to_vec()]);
}

#[tokio::test]
async fn an_entry_no_replica_wrote_fails_its_own_call_and_pauses_no_other() {
    let events = crate::test_events::Events::default();
    let _default = tracing::subscriber::set_default(events.clone());
    let redis = Redis::start();
    let fleet = redis.fleet("r1", Duration::from_millis(600));
    let mut client = redis.client().await;
    // Of the wrong type: a list where a value is kept.
    let () = redis::cmd("LPUSH")
        .arg(fleet.entry("state", "s1"))
        .arg("not a string")
        .query_async(&mut client)
        .await
        .unwrap();
    assert_eq!(
        fleet.get("state", "s1").await.unwrap(),
        None,
        "no value of its"
    );
    assert!(fleet.reachable());
    fleet.put("state", "s2", b"kept", WINDOW).await.unwrap();
    let other = fleet.slot(&[6; 32], &[6; 32]);
    lead(&fleet, &other, WINDOW).await.abandon();
    // A value a script cannot read: a change mark of the wrong type, beside a grant.
    let marked = fleet.slot(&[7; 32], &[7; 32]);
    publish_granted(lead(&fleet, &marked, WINDOW).await).await;
    let () = redis::cmd("LPUSH")
        .arg(&marked.changed)
        .arg("not a number")
        .query_async(&mut client)
        .await
        .unwrap();
    assert!(fleet.acquire(&marked, Stamp::NEW, WINDOW).await.is_err());
    assert!(fleet.reachable());
    // A reply the call cannot read as what it asked for.
    let mut get = redis::cmd("GET");
    get.arg(fleet.entry("state", "s2"));
    assert!(fleet.answer(command::<i64>(&get)).await.is_err());
    assert_eq!(fleet.get("state", "s2").await.unwrap().unwrap(), b"kept");
    // Three answers about bad entries, one warning: the first.
    let warnings: Vec<String> = events
        .with_targets()
        .into_iter()
        .filter(|line| line.contains("not one a replica wrote"))
        .collect();
    assert_eq!(warnings.len(), 3, "{warnings:#?}");
    assert!(
        warnings[0].contains(" WARN") && warnings[0].contains("answers=1"),
        "{warnings:#?}"
    );
    assert!(
        warnings[1..].iter().all(|line| line.contains(" DEBUG")),
        "{warnings:#?}"
    );
    // Any other error Redis answers with is the link's: here a script's command that
    // the replica's user may not run, which Redis words as an `ERR` of the script.
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("limited")
        .arg("on")
        .arg(">a password")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .arg("-time")
        .query_async(&mut client)
        .await
        .unwrap();
    let url = format!("{}?user=limited&pass=a%20password", redis.url);
    let limited = Fleet::connect_with(&url, KEY, "r2", DEFAULT_TIMEOUT, DEFAULT_LEASE).unwrap();
    limited.put("state", "s3", b"kept", WINDOW).await.unwrap();
    assert!(limited.acquire(&other, Stamp::NEW, WINDOW).await.is_err());
    assert!(!limited.reachable());
    assert!(
        limited.get("state", "s3").await.is_err(),
        "not tried within the pause"
    );
    // Redis answers its PING all the same: the health check says both, and takes
    // the link for up no sooner than a call of the fleet's gets an answer.
    let health = limited.health().await;
    assert!(
        health.redis_reachable && !health.last_call_answered,
        "{health:?}"
    );
    assert!(!limited.reachable());
    let back = |events: &crate::test_events::Events| {
        events
            .lines()
            .iter()
            .filter(|line| line.contains("answers again"))
            .count()
    };
    assert_eq!(back(&events), 0);
    // The pause is over: the next call is tried, and what the ACL admits is answered.
    assert_eq!(limited.get("state", "s3").await.unwrap().unwrap(), b"kept");
    assert!(limited.health().await.last_call_answered);
    assert_eq!(back(&events), 1);
}

#[tokio::test]
async fn a_first_subscription_made_late_assumes_every_change() {
    // The fleet is linked before its Redis is up: its first subscription reaches a
    // socket that is no Redis (the link connects lazily: the subscriber alone
    // connects), and fails.
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("redis.sock");
    let impostor = tokio::net::UnixListener::bind(&socket).unwrap();
    let url = format!("unix://{}", socket.display());
    let fleet = Fleet::connect(&url, KEY, "r1").unwrap();
    let mut changes = fleet.changes();
    let (attempt, _) = impostor.accept().await.unwrap();
    drop((attempt, impostor));
    std::fs::remove_file(&socket).unwrap();
    assert!(!fleet.inner.subscribed.load(Ordering::Relaxed));
    let _redis = Redis::start_in(dir);
    subscribed(&fleet).await;
    // What other replicas changed meanwhile went unheard: every server may have.
    let heard = tokio::time::timeout(Duration::from_secs(10), changes.recv()).await;
    assert_eq!(heard.expect("told within 10 s").unwrap(), "");
}

#[tokio::test]
async fn a_subscription_that_stops_answering_is_made_again_and_every_change_assumed() {
    let redis = Redis::start();
    let lease = Duration::from_millis(300);
    let fleet = redis.fleet_timing_out("r1", lease);
    let mut changes = fleet.changes();
    subscribed(&fleet).await;
    // Redis answers nobody for a while: the subscription's ping goes unanswered.
    let mut client = redis.client().await;
    let () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(3000)
        .arg("ALL")
        .query_async(&mut client)
        .await
        .unwrap();
    // Made again once Redis answers, the changes missed meanwhile taken as every one.
    let heard = tokio::time::timeout(Duration::from_secs(20), changes.recv()).await;
    assert_eq!(heard.expect("told within 20 s").unwrap(), "");
    subscribed(&fleet).await;
}

#[tokio::test]
async fn entries_are_kept_longer_when_touched_and_removed_by_their_holder_or_by_name() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", WINDOW);
    let short = Duration::from_secs(5);
    fleet
        .put("holder", "s1", b"replica a", short)
        .await
        .unwrap();
    fleet.put("state", "s1", b"{}", short).await.unwrap();
    let mut client = redis.client().await;
    let ttl = async |client: &mut redis::aio::MultiplexedConnection, kind: &str| -> i64 {
        redis::cmd("PTTL")
            .arg(fleet.entry(kind, "s1"))
            .query_async(client)
            .await
            .unwrap()
    };
    assert!(ttl(&mut client, "state").await <= 5_000);
    let long = Duration::from_secs(3600);
    fleet
        .touch("s1", &["holder", "state", "absent"], long)
        .await
        .unwrap();
    assert!(ttl(&mut client, "holder").await > 3_000_000);
    assert!(ttl(&mut client, "state").await > 3_000_000);
    assert_eq!(ttl(&mut client, "absent").await, -2, "not made by a touch");

    // Another holder's removal leaves them; the holder's takes them all.
    let removed = fleet
        .remove_if("s1", ("holder", b"replica b"), &["state"])
        .await;
    assert!(!removed.unwrap());
    assert_eq!(
        fleet.get("state", "s1").await.unwrap(),
        Some(b"{}".to_vec())
    );
    let removed = fleet
        .remove_if("s1", ("holder", b"replica a"), &["state"])
        .await;
    assert!(removed.unwrap());
    assert_eq!(fleet.get("state", "s1").await.unwrap(), None);
    assert_eq!(fleet.get("holder", "s1").await.unwrap(), None);

    // An unconditional removal takes every kind named, whoever holds them, and says
    // who did, again while the entry read lingers.
    fleet
        .put("holder", "s2", b"replica b", short)
        .await
        .unwrap();
    fleet.put("state", "s2", b"{}", short).await.unwrap();
    fleet.put("owner", "s2", b"o", short).await.unwrap();
    let linger = Duration::from_millis(1500);
    for _ in 0..2 {
        let holder = fleet
            .remove_reading("s2", ("holder", linger), &["state"])
            .await;
        assert_eq!(holder.unwrap(), Some(b"replica b".to_vec()));
    }
    assert_eq!(fleet.get("state", "s2").await.unwrap(), None);
    assert_eq!(fleet.get("owner", "s2").await.unwrap(), Some(b"o".to_vec()));
    let pttl = async |client: &mut redis::aio::MultiplexedConnection, id: &str| -> i64 {
        redis::cmd("PTTL")
            .arg(fleet.entry("holder", id))
            .query_async(client)
            .await
            .unwrap()
    };
    assert!((1..=1500).contains(&pttl(&mut client, "s2").await));
    // One no replica wrote says nobody, and lingers all the same.
    for forged in [&b"replica c"[..], b"\xff"] {
        let () = redis::cmd("SET")
            .arg(fleet.entry("holder", "s3"))
            .arg(forged)
            .query_async(&mut client)
            .await
            .unwrap();
        let holder = fleet.remove_reading("s3", ("holder", linger), &[]).await;
        assert_eq!(holder.unwrap(), None);
        assert!((1..=1500).contains(&pttl(&mut client, "s3").await));
    }
    let () = redis::cmd("DEL")
        .arg(fleet.entry("holder", "s3"))
        .query_async(&mut client)
        .await
        .unwrap();
    let () = redis::cmd("LPUSH")
        .arg(fleet.entry("holder", "s3"))
        .arg("not a string")
        .query_async(&mut client)
        .await
        .unwrap();
    let holder = fleet.remove_reading("s3", ("holder", linger), &[]).await;
    assert_eq!(holder.unwrap(), None);
    assert!(fleet.reachable());
}

#[tokio::test]
async fn a_letter_is_cancelled_when_its_asker_stops_waiting() {
    let redis = Redis::start();
    let lease = Duration::from_millis(600);
    let (owner, asker, mut letters) = correspondents(&redis, lease, "slow").await;
    let asked = ask_slowly(&asker, &owner, b"1", Duration::from_secs(30));
    let letter = letters.recv().await.unwrap();
    let cancelled = letter.cancelled();
    assert!(!cancelled.is_cancelled());
    // The asker stops waiting: the addressee hears of it.
    asked.abort();
    tokio::time::timeout(Duration::from_secs(10), cancelled.cancelled())
        .await
        .expect("cancelled within 10 s");
    // The asker stops waiting for one of two letters: only that one is cancelled.
    let kept = ask_slowly(&asker, &owner, b"2", Duration::from_secs(30));
    let dropped = ask_slowly(&asker, &owner, b"3", Duration::from_secs(30));
    let (first, second) = (letters.recv().await.unwrap(), letters.recv().await.unwrap());
    let (kept_letter, dropped_letter) = if first.body() == b"2" {
        (first, second)
    } else {
        (second, first)
    };
    let cancelled = dropped_letter.cancelled();
    dropped.abort();
    tokio::time::timeout(Duration::from_secs(10), cancelled.cancelled())
        .await
        .expect("cancelled within 10 s");
    // Messages are taken one at a time, in order: a cancel that reached the kept
    // letter as well would have done so by now.
    assert!(!kept_letter.cancelled().is_cancelled());
    kept_letter.reply(b"done").await.unwrap();
    assert_eq!(kept.await.unwrap().unwrap(), b"done");
}

#[tokio::test]
async fn a_letter_redis_took_too_late_for_its_asker_is_cancelled() {
    let redis = Redis::start();
    let lease = Duration::from_millis(600);
    let (owner, asker, mut letters) = correspondents_timing_out(&redis, lease, "slow").await;
    // Redis holds every write until the letter's post has gone unanswered, and runs
    // it then.
    let mut client = redis.client().await;
    hold_writes(&mut client).await;
    let asked = asker
        .ask(owner.address(), "slow", b"1", Duration::from_secs(30))
        .await;
    assert!(matches!(asked, Err(AskError::Unavailable(_))), "{asked:?}");
    let_writes_go(&mut client).await;
    let letter = tokio::time::timeout(Duration::from_secs(10), letters.recv())
        .await
        .expect("delivered within 10 s")
        .unwrap();
    cancelled(&letter).await;
}

#[tokio::test]
async fn a_letter_told_reaches_its_mailbox_and_none_says_whether_anyone_heard() {
    let redis = Redis::start();
    // One nobody hears is sent again for a lease: a short one here.
    let lease = Duration::from_millis(300);
    let (owner, teller, mut letters) = correspondents(&redis, lease, "told").await;
    assert!(
        teller
            .tell(owner.address(), "told", b"moved")
            .await
            .unwrap()
    );
    assert_eq!(letters.recv().await.unwrap().body(), b"moved");
    assert!(!teller.tell("nobody", "told", b"moved").await.unwrap());
}

#[tokio::test]
async fn a_change_published_for_no_slot_of_the_fleet_is_not_taken_for_any() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", WINDOW);
    let mut changes = fleet.changes();
    subscribed(&fleet).await;
    let mut client = redis.client().await;
    let prefix = fleet.inner.prefix.clone();
    // Nor is one of another fleet sharing the Redis, whose channels the replica
    // hears too.
    let other_fleet = format!("mcp-runtime:{}:ch:{}", "0".repeat(16), "1".repeat(32));
    for channel in [
        format!("{prefix}:ch:"),
        format!("{prefix}:ch:not-a-slot"),
        other_fleet,
    ] {
        let _: i64 = redis::cmd("PUBLISH")
            .arg(channel)
            .arg("changed")
            .query_async(&mut client)
            .await
            .unwrap();
    }
    // A real change after them: messages come in order, so it is the first heard.
    let slot = fleet.slot(&[1; 32], &[2; 32]);
    fleet.revoke(&slot).await.unwrap();
    let heard = tokio::time::timeout(Duration::from_secs(10), changes.recv()).await;
    assert_eq!(
        heard.expect("told within 10 s").unwrap(),
        fleet.slot_id(&[1; 32])
    );
}

#[tokio::test]
async fn an_answer_in_flight_when_another_replica_revokes_grants_nothing() {
    use crate::{
        discovery_key::DiscoveryKey,
        shared_listing::{Grant, ListingRegistry, Next, Scope, StartupKeys},
    };
    let redis = Redis::start();
    let (here, there) = (redis.fleet("r1", WINDOW), redis.fleet("r2", WINDOW));
    subscribed(&here).await;
    let registry = ListingRegistry::new().with_fleet(here.clone());
    let keys = StartupKeys {
        private: DiscoveryKey([1; 32]),
        public: DiscoveryKey([2; 32]),
    };
    let mut startup = registry.begin(keys);
    let Next::Lead(leader) = startup.next() else {
        panic!("the first startup leads")
    };
    // Another replica saw the server change, while this one's request is in flight.
    there
        .revoke(&there.slot(&keys.private.0, &keys.public.0))
        .await
        .unwrap();
    for _ in 0..500 {
        if registry.heard_revoked(&keys.public) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(registry.heard_revoked(&keys.private));
    assert!(registry.heard_revoked(&keys.public));
    let grant = Some(Grant {
        ttl: Duration::from_secs(60),
        scope: Scope::Public,
    });
    leader.publish(Arc::new(Vec::new()), grant);
    drop(startup);
    let mut later = registry.begin(keys);
    assert!(
        matches!(later.next(), Next::Lead(_)),
        "the old answer granted nothing"
    );
}

#[tokio::test]
async fn a_health_check_ends_no_pause_begun_while_its_ping_was_out() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    // A pause begun before the PING was sent ends when it is answered.
    *lock(&fleet.inner.retry_at) = Some(Instant::now() + RETRY_AFTER);
    assert!(fleet.health().await.redis_reachable);
    assert!(!fleet.paused());
    // One that ends later than any begun before it was sent: a call failed meanwhile.
    *lock(&fleet.inner.retry_at) = Some(Instant::now() + RETRY_AFTER * 5);
    assert!(fleet.health().await.redis_reachable);
    assert!(fleet.paused());
}

#[test]
fn a_letter_given_up_on_is_told_again_once_a_lease_while_remembered() {
    let lease = Duration::from_secs(3);
    let start = Instant::now();
    let mut abandoned = mail::Abandoned::default();
    abandoned.insert(7, "to:there".into(), start);
    assert_eq!(abandoned.cancel_again(7, start + lease / 2, lease), None);
    assert_eq!(
        abandoned.cancel_again(7, start + lease, lease).as_deref(),
        Some("to:there")
    );
    assert_eq!(
        abandoned.cancel_again(7, start + lease * 3 / 2, lease),
        None
    );
    assert_eq!(
        abandoned.cancel_again(8, start + lease * 2, lease),
        None,
        "not given up on"
    );
    // Forgotten once remembered long enough, as another is given up on.
    abandoned.insert(9, "to:else".into(), start + mail::REMEMBERED);
    assert_eq!(
        abandoned.cancel_again(7, start + mail::REMEMBERED * 2, lease),
        None
    );
}

#[test]
fn the_longest_timeout_a_config_may_set_leaves_a_leader_its_lease() {
    // A leader renews its lease every third of it: a renewal must be answered, or
    // time out, before the next is due.
    assert!(crate::config::MAX_REDIS_TIMEOUT <= DEFAULT_LEASE / 3);
}

#[test]
fn a_bad_entry_is_warned_of_once_a_minute_with_the_answers_since() {
    let mut warnings = Warnings::default();
    let start = Instant::now();
    let at = |seconds| start + Duration::from_secs(seconds);
    assert_eq!(warnings.count(at(0)), Some(1));
    assert_eq!(warnings.count(at(1)), None);
    assert_eq!(warnings.count(at(59)), None);
    assert_eq!(warnings.count(at(60)), Some(3));
    assert_eq!(warnings.count(at(61)), None);
    assert_eq!(warnings.count(at(600)), Some(2));
}

#[tokio::test]
async fn a_startup_waits_for_another_replicas_attempt_only_until_its_own_bound() {
    use crate::shared_listing::{DiscoveryKey, FleetTurn, ListingRegistry, Next, StartupKeys};
    let redis = Redis::start();
    let keys = || StartupKeys {
        private: DiscoveryKey([17; 32]),
        public: DiscoveryKey([17 | 0x80; 32]),
    };
    let replica = |name: &str| {
        ListingRegistry::new()
            .with_burst_window(WINDOW)
            .with_fleet(redis.fleet(name, DEFAULT_LEASE))
    };
    let (leading, waiting) = (replica("leading"), replica("waiting"));
    // The first replica's attempt leads the fleet, and never ends.
    let Next::Lead(first) = leading.begin(keys()).next() else {
        panic!("the first startup leads its registry");
    };
    let FleetTurn::Lead(_first) = first.across_fleet(None, &AtomicBool::new(false)).await else {
        panic!("the first startup leads the fleet");
    };
    let Next::Lead(second) = waiting.begin(keys()).next() else {
        panic!("the second startup leads its registry");
    };
    // The second waits for it until its bound (its startup's time), saying so
    // meanwhile, then lists alone, long before the fleet's own bound on a wait.
    let waiting = AtomicBool::new(false);
    let said = async {
        while !waiting.load(std::sync::atomic::Ordering::Relaxed) {
            tokio::task::yield_now().await;
        }
    };
    let bound = Some(Instant::now() + Duration::from_secs(1));
    let (turn, ()) = tokio::time::timeout(
        Duration::from_secs(5),
        futures::future::join(second.across_fleet(bound, &waiting), said),
    )
    .await
    .expect("the wait ends at the startup's bound, and says it is waiting");
    assert!(matches!(turn, FleetTurn::Lead(_)));
    assert!(!waiting.load(std::sync::atomic::Ordering::Relaxed));
}

#[tokio::test]
async fn a_change_the_fleet_missed_is_told_before_another_identity_takes_a_public_grant() {
    use crate::shared_listing::{DiscoveryKey, FleetTurn, Next, StartupKeys};
    let redis = Redis::start();
    let public = DiscoveryKey([20 | 0x80; 32]);
    let identity = |n: u8| StartupKeys {
        private: DiscoveryKey([n; 32]),
        public,
    };
    // Another replica's listing, granted to every identity of the server.
    let other = redis.fleet("other", DEFAULT_LEASE);
    let slot = other.slot(&[20; 32], &public.0);
    publish_granted_publicly(lead(&other, &slot, WINDOW).await).await;
    // This replica may run no script while the server changes under one identity:
    // the fleet is not told.
    let (fleet, registry) = missing_a_change(&redis, &identity(21)).await;
    redis.acl(&["+@scripting"]).await;
    assert!(fleet.health().await.redis_reachable, "the pause is over");
    // Another identity of the same server begins on this replica: the change it
    // saw is told first, and the grant from before it serves nobody.
    let Next::Lead(startup) = registry.begin(identity(22)).next() else {
        panic!("the startup leads its registry");
    };
    let turn = startup.across_fleet(None, &AtomicBool::new(false)).await;
    assert!(matches!(turn, FleetTurn::Lead(_)));
}

#[tokio::test]
async fn a_change_mark_written_by_hand_grants_nothing_and_stops_no_listing() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let digest = [23; 32];
    let slot = fleet.slot(&digest, &digest);
    redis.set(&slot.changed, b"not a number".to_vec()).await;
    // A startup leads, and publishes: its lease released for its waiters, and its
    // grant not kept.
    publish_granted(lead(&fleet, &slot, WINDOW).await).await;
    let leases: u32 = redis::cmd("EXISTS")
        .arg(&slot.lease)
        .query_async(&mut redis.client().await)
        .await
        .unwrap();
    assert_eq!(leases, 0);
    let grants: u32 = redis::cmd("EXISTS")
        .arg(&slot.private_grant)
        .query_async(&mut redis.client().await)
        .await
        .unwrap();
    assert_eq!(grants, 0);
}

#[tokio::test]
async fn a_replaced_leader_grants_nothing() {
    let redis = Redis::start();
    let (first, second) = (
        redis.fleet("first", DEFAULT_LEASE),
        redis.fleet("second", DEFAULT_LEASE),
    );
    let digest = [24; 32];
    let slot = first.slot(&digest, &digest);
    let replaced = lead(&first, &slot, WINDOW).await;
    let replacing = lead(&second, &second.slot(&digest, &digest), Duration::ZERO).await;
    replacing.publish(b"later", WINDOW, None).await;
    // Its listing gone (kept a burst's time), the replaced leader publishes its own,
    // older, and no grant: the later attempt's grant, had it one, would stand.
    let () = redis::cmd("DEL")
        .arg(&slot.listing)
        .query_async(&mut redis.client().await)
        .await
        .unwrap();
    publish_granted(replaced).await;
    assert!(!granted_now(&first, &slot).await);
}

#[tokio::test]
async fn a_lease_dated_ahead_of_redis_is_not_waited_for() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let digest = [25; 32];
    let slot = fleet.slot(&digest, &digest);
    let ahead = redis.time_ms().await + 3_600_000;
    redis
        .set(&slot.lease, format!("99999999999999:{ahead}:").into_bytes())
        .await;
    assert!(matches!(
        fleet.acquire(&slot, Stamp::NEW, WINDOW).await,
        Ok(Acquired::Unusable)
    ));
}

#[tokio::test]
async fn a_replace_made_again_reads_what_the_first_replaced_while_it_is_remembered() {
    let redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let replace = async |id: &str, value: &[u8], remember: Duration| {
        fleet
            .replace("holder", id, value, WINDOW, remember)
            .await
            .unwrap()
    };
    assert_eq!(replace("s1", b"a", WINDOW).await, None);
    // Made again with the same value, as after an answer lost: the value the first
    // replaced, however often.
    assert_eq!(
        replace("s1", b"b", WINDOW).await.as_deref(),
        Some(&b"a"[..])
    );
    assert_eq!(
        replace("s1", b"b", WINDOW).await.as_deref(),
        Some(&b"a"[..])
    );
    assert_eq!(
        replace("s1", b"b", WINDOW).await.as_deref(),
        Some(&b"a"[..])
    );
    assert_eq!(
        replace("s1", b"c", WINDOW).await.as_deref(),
        Some(&b"b"[..])
    );
    assert_eq!(
        fleet.get("holder", "s1").await.unwrap().as_deref(),
        Some(&b"c"[..])
    );
    // Remembered for its time only; an entry written afresh remembers nothing.
    assert_eq!(replace("s2", b"a", WINDOW).await, None);
    assert_eq!(
        replace("s2", b"b", Duration::from_millis(1))
            .await
            .as_deref(),
        Some(&b"a"[..])
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while replace("s2", b"b", WINDOW).await.is_some() {
        assert!(Instant::now() < deadline, "remembered past its time");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let () = redis::cmd("DEL")
        .arg(fleet.entry("holder", "s1"))
        .query_async(&mut redis.client().await)
        .await
        .unwrap();
    assert_eq!(replace("s1", b"c", WINDOW).await, None);
    assert_eq!(replace("s1", b"c", WINDOW).await, None);
    // What it remembers is signed as the entry was: a forged one reads as none.
    redis
        .set(
            &fleet.entry("holder-replaced", "s1"),
            b"0:0:forged:x".to_vec(),
        )
        .await;
    assert_eq!(replace("s1", b"c", WINDOW).await, None);
}

#[tokio::test]
async fn a_failure_says_whether_the_link_or_an_entry_failed() {
    let mut redis = Redis::start();
    let fleet = redis.fleet("r1", DEFAULT_LEASE);
    let () = redis::cmd("LPUSH")
        .arg(fleet.entry("state", "s1"))
        .arg("not a string")
        .query_async(&mut redis.client().await)
        .await
        .unwrap();
    let failed = fleet
        .replace("state", "s1", b"value", WINDOW, WINDOW)
        .await
        .unwrap_err();
    assert!(failed.is_bad_entry());
    redis.stop();
    let failed = fleet
        .put("state", "s2", b"value", WINDOW)
        .await
        .unwrap_err();
    assert!(!failed.is_bad_entry());
}

#[tokio::test]
async fn a_change_the_fleet_missed_is_told_again_until_it_takes_it() {
    use crate::shared_listing::{DiscoveryKey, StartupKeys};
    let redis = Redis::start();
    let keys = StartupKeys {
        private: DiscoveryKey([26; 32]),
        public: DiscoveryKey([26 | 0x80; 32]),
    };
    // Another replica's listing, granted to the key.
    let other = redis.fleet("other", DEFAULT_LEASE);
    let slot = other.slot(&keys.private.0, &keys.public.0);
    publish_granted(lead(&other, &slot, WINDOW).await).await;
    assert!(granted_now(&other, &slot).await);
    // This replica may run no script while the server changes: the fleet is not
    // told, and nothing of the server starts here afterwards.
    let (_fleet, _registry) = missing_a_change(&redis, &keys).await;
    assert!(granted_now(&other, &slot).await, "not told yet");
    // Once Redis runs its scripts again, the change is told within seconds.
    redis.acl(&["+@scripting"]).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while granted_now(&other, &slot).await {
        assert!(Instant::now() < deadline, "the change is never told");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A replica that saw the server of `keys` change while its ACL user (`limited`)
/// could run no script, so that the fleet was not told: its link and registry.
async fn missing_a_change(
    redis: &Redis,
    keys: &crate::shared_listing::StartupKeys,
) -> (Fleet, crate::shared_listing::ListingRegistry) {
    redis
        .acl(&["on", ">a password", "~*", "&*", "+@all", "-@scripting"])
        .await;
    let url = format!("{}?user=limited&pass=a%20password", redis.url);
    let fleet = Fleet::connect_with(&url, KEY, "here", DEFAULT_TIMEOUT, DEFAULT_LEASE).unwrap();
    let registry = crate::shared_listing::ListingRegistry::new()
        .with_burst_window(WINDOW)
        .with_fleet(fleet.clone());
    registry.revoke_everywhere(keys).await;
    (fleet, registry)
}
