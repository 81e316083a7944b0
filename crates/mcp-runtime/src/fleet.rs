//! A fleet's shared listings in Redis: runtimes on many machines (`mcp-runtime serve`
//! replicas behind a load balancer, or hosts spread the same way) list a server once
//! for a burst of startups across all of them.
//!
//! This module knows Redis, the fleet key and leases; it knows nothing of tools. The
//! listing registry (`shared_listing`) hands it a discovery key's digest and opaque
//! bytes, and gets bytes back.
//!
//! Invariants:
//! 1. Nothing in Redis is authority. Every value is signed with the fleet key
//!    (HMAC-SHA-256 over its key name and contents) and checked on read; a value that
//!    fails the check is treated as absent (`Acquired::Unusable`), so a forged or
//!    stale entry costs at most one more `tools/list`. A grant carries its expiry and
//!    a stamp under the signature, so an old one put back is not served, nor one put
//!    back after the server's change: a private grant's stamp is its listing's token,
//!    which must be greater than the key's mark of the server's last change; a public
//!    grant's is the public key's revocation count when its leader began. Every
//!    change of any of the public key's keys raises the count past its last value and
//!    to at least Redis's time in µs, and a public grant stamped below it is neither
//!    served nor written: a leader whose request was sent before such a change grants
//!    nothing and replaces no grant. Mark and count are not signed: a grant put back
//!    with its mark removed or its count set back is served until it expires. A
//!    counter that no replica wrote is started again; a count that no replica wrote
//!    serves no public grant until the next change writes it; neither is an error. A
//!    lease, which carries no data, is waited for until it lapses, and a waiter waits
//!    a bounded time: a forged one delays, then costs one more `tools/list`. Key
//!    names are derived from the fleet key too (an HMAC of the discovery key's
//!    digest): Redis holds no digest of what servers are sent, and two fleets with
//!    different keys share no entry (each hears the other's slot messages, and
//!    ignores them: invariant 5).
//! 2. One discovery key has at most one leader in the fleet that waiters wait for:
//!    the holder of its lease, a fencing token drawn from the key's counter (`INCR`).
//!    The leader renews the lease while it lists; it publishes by compare-and-set on
//!    its token: a listing replaces only one of an earlier token. A startup that may
//!    not take the answer in flight (it began after that request was sent, past the
//!    burst window) leads its own attempt and replaces the lease; the leader it
//!    replaced still publishes for its own waiters, unless a later attempt's listing
//!    is there. When the lease lapses (the leader's process died), the next waiter to
//!    look takes it over.
//! 3. The ordering rule of the in-process registry holds across the fleet, on the
//!    same counter: a startup's stamp is drawn when it first asks, lowered then to
//!    just below the oldest attempt (in flight or answered) sent less than the burst
//!    window before and after the server's last change; a listing may serve it if
//!    its token is greater than that stamp. A change while it waits raises the stamp
//!    back to the one it drew (or to the change), as the in-process registry does.
//!    Times are Redis's own (`TIME`), never a replica's clock.
//! 4. Every call is bounded by a short timeout. A failure of the link (no answer in
//!    time, a lost connection, or an error of Redis itself: out of memory, loading,
//!    authentication refused…) marks the fleet unreachable: it is logged once, with
//!    its cause, the callers fall back to their own replica's listings, and for a
//!    second no call is tried; the first call that succeeds afterwards logs the
//!    return. An answer that shows an entry no replica wrote (one of the wrong type,
//!    a value a script cannot read, a reply of the wrong shape) fails its own call
//!    only (`get` reads it as absent, as invariant 1 does a forged one): its caller
//!    falls back, and the link stays up, so that a forged entry costs what
//!    invariant 1 says and no pause of every other call. Such answers are
//!    logged as a warning at most once a minute, with how many came since the last,
//!    as a key written by hand may be read on every startup; the others at debug
//!    level.
//! 5. Waiters hear a publication, a released lease and a server's change over one
//!    pattern subscription per process ([`SLOT_CHANNELS`], every fleet's slots: a
//!    message of another fleet is dropped as it comes), and also look again every
//!    `poll`: a lost message costs time, never a listing. The subscription is
//!    pinged every lease; one that does not answer is made again, and every
//!    registry is told that any server may have changed meanwhile; so are they
//!    when the first subscription comes up only after a failed attempt.

use std::{
    collections::HashMap,
    fmt,
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use futures::StreamExt;
use hmac::{Hmac, Mac};
use redis::{
    Client, RedisError, Script,
    aio::{ConnectionManager, ConnectionManagerConfig},
};
use sha2::Sha256;
use tokio::{
    sync::{Notify, broadcast, mpsc},
    time::Instant,
};

use crate::sync::lock;

mod mail;

pub use mail::{AskError, Letter};

/// The shortest fleet key accepted, in bytes.
pub const MIN_KEY_BYTES: usize = 32;

/// How long a fleet call may take before the fleet counts as unreachable.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(250);

/// How long a leader's lease lasts unless renewed.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(3);

/// How long after a failure no call is tried (invariant 4).
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The least time between two warnings of one kind that anyone who can write to the
/// fleet's Redis could make (invariant 4, and the mail's invariant 1).
const WARNING_EVERY: Duration = Duration::from_secs(60);

/// How long a published listing stays readable for the waiters that heard of it,
/// beyond any burst window.
const HOLD: Duration = Duration::from_secs(30);

/// How long a server's change is remembered (invariant 3): longer than any burst
/// window or lease.
const CHANGE_MEMORY: Duration = Duration::from_secs(24 * 60 * 60);

type HmacSha256 = Hmac<Sha256>;

/// A fleet: this runtime's link to the Redis its replicas share, under the fleet key.
///
/// Cheap to clone: clones share one link. Made with [`Fleet::connect`], inside a
/// tokio runtime; it connects lazily and reconnects by itself, so a fleet made while
/// Redis is down starts without it and joins when Redis is up.
#[derive(Clone)]
pub struct Fleet {
    inner: Arc<Inner>,
}

struct Inner {
    connection: ConnectionManager,
    key: Vec<u8>,
    /// The prefix of every key and channel name: derived from the fleet key.
    prefix: String,
    replica: String,
    timeout: Duration,
    lease: Duration,
    reachable: AtomicBool,
    /// When a call may next be tried, after a failure (invariant 4).
    retry_at: Mutex<Option<Instant>>,
    /// The warnings of answers about bad entries (invariant 4).
    bad_entries: Mutex<Warnings>,
    /// The warnings of letters that do not open (the mail's invariant 1).
    unopened: Mutex<Warnings>,
    /// The waiters of each slot, by channel name.
    waiters: Mutex<HashMap<String, Weak<Notify>>>,
    /// The slots whose server changed, as other replicas published them.
    changes: broadcast::Sender<String>,
    /// Whether the subscription is up.
    subscribed: AtomicBool,
    /// This process's address, for letters (see `mail`).
    address: String,
    /// The key letters are encrypted under, derived from the fleet key.
    letter_key: [u8; 32],
    /// Where this process's letters go, by mailbox name.
    mailboxes: Mutex<HashMap<String, mpsc::Sender<Letter>>>,
    /// The askers waiting for the answers to their letters, by letter number.
    waiting: Mutex<HashMap<u64, mpsc::UnboundedSender<mail::Heard>>>,
    /// The letters taken lately.
    delivered: Mutex<mail::Delivered>,
    /// The letters this process stopped waiting for unanswered (see `mail`).
    abandoned: Mutex<mail::Abandoned>,
    /// The letters being answered here, by sender and number: cancelled when their
    /// askers stop waiting.
    answering: Mutex<HashMap<(String, u64), tokio_util::sync::CancellationToken>>,
    /// The next letter's number.
    letters: AtomicU64,
    /// Ends the subscriber task when the last clone is dropped.
    _subscriber: tokio_util::task::AbortOnDropHandle<()>,
}

impl fmt::Debug for Fleet {
    /// The replica's name and whether Redis answers: never the URL (it may hold a
    /// password) nor the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("replica", &self.inner.replica)
            .field("reachable", &self.reachable())
            .finish_non_exhaustive()
    }
}

/// Why a fleet could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetError {
    /// The Redis URL does not parse (the URL itself is not repeated: it may hold a
    /// password).
    #[error("the fleet's Redis URL is not valid: {0}")]
    InvalidUrl(String),
    /// The fleet key is shorter than [`MIN_KEY_BYTES`].
    #[error(
        "the fleet key has {0} bytes; it needs at least {MIN_KEY_BYTES} (`openssl rand -base64 32` makes one)"
    )]
    ShortKey(usize),
}

/// The fleet's state as `/healthz` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct FleetHealth {
    /// This replica's name.
    pub replica: String,
    /// Whether Redis answers a `PING` now.
    pub redis_reachable: bool,
    /// Whether Redis answered this replica's last call (true before the first): while
    /// not, the replica lists and serves on its own. Redis may answer a `PING` and
    /// still refuse the fleet's calls (an ACL, say). An answer about an entry no
    /// replica wrote counts: it fails that call alone.
    pub last_call_answered: bool,
    /// Whether this replica hears the others' publications.
    pub subscribed: bool,
}

impl Fleet {
    /// A link to the Redis at `url` (`redis://…`, or `rediss://…` with the
    /// `fleet-tls` feature) under the fleet `key` (at least [`MIN_KEY_BYTES`] bytes,
    /// the same on every replica), for the replica named `replica`. Calls time out
    /// after [`DEFAULT_TIMEOUT`] and leases last [`DEFAULT_LEASE`].
    ///
    /// Must be called inside a tokio runtime: it starts the subscriber. Nothing is
    /// sent yet; Redis may be down.
    pub fn connect(url: &str, key: &[u8], replica: impl Into<String>) -> Result<Self, FleetError> {
        Self::connect_with(url, key, replica, DEFAULT_TIMEOUT, DEFAULT_LEASE)
    }

    /// [`Fleet::connect`] with the calls' `timeout` and the leaders' `lease`.
    pub fn connect_with(
        url: &str,
        key: &[u8],
        replica: impl Into<String>,
        timeout: Duration,
        lease: Duration,
    ) -> Result<Self, FleetError> {
        if key.len() < MIN_KEY_BYTES {
            return Err(FleetError::ShortKey(key.len()));
        }
        // The parse error names the part that is wrong, never the URL.
        let client =
            Client::open(url).map_err(|error| FleetError::InvalidUrl(error.to_string()))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            // One connection attempt per call that finds none: the pause after a
            // failure (invariant 4) spaces the attempts, not a backoff inside a call.
            .set_number_of_retries(0);
        let connection = ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|error| FleetError::InvalidUrl(error.to_string()))?;
        let prefix = format!("mcp-runtime:{}", &hex::encode(sign(key, &[b"fleet"]))[..16]);
        let (changes, _) = broadcast::channel(256);
        let address = mail::new_address();
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| {
            let channels = Channels {
                slots: format!("{prefix}:ch:"),
                mail: format!("{prefix}:to:{address}"),
            };
            let subscriber = tokio::spawn(subscribe(client, weak.clone(), channels, timeout));
            Inner {
                connection,
                key: key.to_vec(),
                prefix,
                replica: replica.into(),
                timeout,
                lease,
                reachable: AtomicBool::new(true),
                retry_at: Mutex::new(None),
                bad_entries: Mutex::default(),
                unopened: Mutex::default(),
                waiters: Mutex::new(HashMap::new()),
                changes,
                subscribed: AtomicBool::new(false),
                address,
                // Under a label `derived_key` never signs: no purpose shares it.
                letter_key: sign(key, &[b"letters"]),
                mailboxes: Mutex::default(),
                waiting: Mutex::default(),
                delivered: Mutex::default(),
                abandoned: Mutex::default(),
                answering: Mutex::default(),
                letters: AtomicU64::new(0),
                _subscriber: tokio_util::task::AbortOnDropHandle::new(subscriber),
            }
        });
        Ok(Self { inner })
    }

    /// This replica's name.
    pub fn replica(&self) -> &str {
        &self.inner.replica
    }

    /// A key for `purpose`, derived from the fleet key: the same on every replica,
    /// and unlike the key of any other purpose (HMAC-SHA-256 of the purpose).
    pub fn derived_key(&self, purpose: &str) -> [u8; 32] {
        sign(&self.inner.key, &[b"purpose\0", purpose.as_bytes()])
    }

    /// Whether the last call to Redis succeeded (true before the first).
    pub fn reachable(&self) -> bool {
        self.inner.reachable.load(Ordering::Relaxed)
    }

    /// The fleet's state: this replica's name, whether Redis answers (asked now,
    /// under the calls' timeout, even within the pause after a failure: an answer
    /// ends the pause), and whether it answered the replica's last call.
    pub async fn health(&self) -> FleetHealth {
        let ping = redis::cmd("PING");
        let sent = Instant::now();
        // Not `answer`: a `PING` answered shows Redis up, not that the fleet's calls
        // work, so the calls alone say whether the link is (and log it).
        let reachable = matches!(self.attempt(command::<String>(&ping)).await, Ok(Ok(_)));
        let mut retry_at = lock(&self.inner.retry_at);
        // A pause begun by a call that failed while the PING was out stands.
        if reachable && retry_at.is_some_and(|at| at <= sent + RETRY_AFTER) {
            *retry_at = None;
        }
        drop(retry_at);
        FleetHealth {
            replica: self.inner.replica.clone(),
            redis_reachable: reachable,
            last_call_answered: self.reachable(),
            subscribed: self.inner.subscribed.load(Ordering::Relaxed),
        }
    }

    /// Keeps `value` in the fleet under `kind` and `id` for `ttl`, signed (the key's
    /// name is derived from the fleet key, `kind` and `id`). For what replicas share
    /// besides listings: a `serve` session's state, say.
    pub async fn put(
        &self,
        kind: &str,
        id: &str,
        value: &[u8],
        ttl: Duration,
    ) -> Result<(), Unavailable> {
        let name = self.entry(kind, id);
        let sealed = seal(&self.inner.key, &name, 0, 0, value);
        let mut set = redis::cmd("SET");
        set.arg(&name).arg(sealed).arg("PX").arg(millis(ttl).max(1));
        self.bounded(command::<()>(&set)).await
    }

    /// [`Fleet::put`], at once reading the value it replaces, if there was one and its
    /// signature holds (invariant 1): of two replicas replacing it at once, each reads
    /// what the other wrote, or what was there before both.
    ///
    /// The value replaced is remembered for `remember`: any replace made with the same
    /// value within it reads that one again, not its own, as one made again after its
    /// answer was lost (though Redis ran it) needs. A replace that finds its own value
    /// with nothing remembered reads none.
    pub async fn replace(
        &self,
        kind: &str,
        id: &str,
        value: &[u8],
        ttl: Duration,
        remember: Duration,
    ) -> Result<Option<Vec<u8>>, Unavailable> {
        static REPLACE: std::sync::LazyLock<Script> =
            std::sync::LazyLock::new(|| Script::new(REPLACE_LUA));
        let name = self.entry(kind, id);
        let sealed = seal(&self.inner.key, &name, 0, 0, value);
        let mut invocation = REPLACE.key(&name);
        invocation
            .key(self.entry(&format!("{kind}-replaced"), id))
            .arg(sealed)
            .arg(millis(ttl).max(1))
            .arg(millis(remember).max(1));
        let replaced = self.bounded(invoke::<Option<Vec<u8>>>(&invocation)).await?;
        // Remembered as it was: sealed under the name of the entry it was read from.
        Ok(replaced.and_then(|value| open(&self.inner.key, &name, &value).map(|(_, value)| value)))
    }

    /// The value kept under `kind` and `id`, if there is one and its signature holds
    /// (invariant 1): an error is the link's alone, as an entry no replica wrote is
    /// none.
    pub async fn get(&self, kind: &str, id: &str) -> Result<Option<Vec<u8>>, Unavailable> {
        let name = self.entry(kind, id);
        let mut get = redis::cmd("GET");
        get.arg(&name);
        // An entry of the wrong type, as one whose signature fails, is absent.
        let value = self
            .bounded_or_bad(command::<Option<Vec<u8>>>(&get))
            .await?;
        Ok(value
            .flatten()
            .and_then(|value| open(&self.inner.key, &name, &value).map(|(_, value)| value)))
    }

    /// Forgets the values kept under `id` for each of `kinds`, and has the one of
    /// `read` lapse within `linger`, at once (a script), reading it as it goes: the
    /// value it held until then, if there was one and its signature holds
    /// (invariant 1). For an entry whose last value must be known of whoever ends
    /// it, as the replica holding a session its client ended on another; left to
    /// lapse rather than removed, so that a call made again after its answer was
    /// lost (a dropped connection, a timeout) reads it again.
    pub async fn remove_reading(
        &self,
        id: &str,
        (read, linger): (&str, Duration),
        kinds: &[&str],
    ) -> Result<Option<Vec<u8>>, Unavailable> {
        static REMOVE_READING: std::sync::LazyLock<Script> =
            std::sync::LazyLock::new(|| Script::new(REMOVE_READING_LUA));
        let name = self.entry(read, id);
        let mut invocation = REMOVE_READING.key(&name);
        for kind in kinds {
            invocation.key(self.entry(kind, id));
        }
        invocation.arg(millis(linger).max(1));
        let value = self.bounded(invoke::<Option<Vec<u8>>>(&invocation)).await?;
        Ok(value.and_then(|value| open(&self.inner.key, &name, &value).map(|(_, value)| value)))
    }

    /// Keeps the entries of `kinds` under `id` for `ttl` from now, those that exist.
    pub async fn touch(&self, id: &str, kinds: &[&str], ttl: Duration) -> Result<(), Unavailable> {
        let mut touch = redis::pipe();
        for kind in kinds {
            touch
                .cmd("PEXPIRE")
                .arg(self.entry(kind, id))
                .arg(millis(ttl).max(1))
                .ignore();
        }
        self.bounded(pipeline::<()>(&touch)).await
    }

    /// Removes the entries of `guard` and of `kinds` under `id` if the entry of
    /// `guard` holds `value`, at once (a script): whether they were removed. For an
    /// entry only its holder may end, as a session of one replica that moved to
    /// another.
    pub async fn remove_if(
        &self,
        id: &str,
        (guard, value): (&str, &[u8]),
        kinds: &[&str],
    ) -> Result<bool, Unavailable> {
        static REMOVE_IF: std::sync::LazyLock<Script> =
            std::sync::LazyLock::new(|| Script::new(REMOVE_IF_LUA));
        let guard = self.entry(guard, id);
        let sealed = seal(&self.inner.key, &guard, 0, 0, value);
        let mut invocation = REMOVE_IF.key(&guard);
        for kind in kinds {
            invocation.key(self.entry(kind, id));
        }
        invocation.arg(sealed);
        self.bounded(invoke::<i64>(&invocation))
            .await
            .map(|removed| removed > 0)
    }

    /// The name of the entry of `kind` and `id`.
    fn entry(&self, kind: &str, id: &str) -> String {
        let name = sign(
            &self.inner.key,
            &[b"entry\0", kind.as_bytes(), b"\0", id.as_bytes()],
        );
        format!("{}:{kind}:{}", self.inner.prefix, &hex::encode(name)[..32])
    }

    /// The names of the fleet's entries for a discovery key whose digest is
    /// `private`, and whose public digest is `public`.
    pub(crate) fn slot(&self, private: &[u8; 32], public: &[u8; 32]) -> Slot {
        let id = self.slot_id(private);
        let public_id = self.slot_id(public);
        let prefix = &self.inner.prefix;
        Slot {
            clock: format!("{prefix}:{{{id}}}:clock"),
            changed: format!("{prefix}:{{{id}}}:changed"),
            listing: format!("{prefix}:{{{id}}}:listing"),
            lease: format!("{prefix}:{{{id}}}:lease"),
            private_grant: format!("{prefix}:{{{id}}}:grant"),
            public_grant: format!("{prefix}:{{{public_id}}}:public-grant"),
            public_epoch: format!("{prefix}:{{{public_id}}}:public-epoch"),
            channel: format!("{prefix}:ch:{id}"),
            public_channel: format!("{prefix}:ch:{public_id}"),
        }
    }

    /// The name of the slot of the discovery key whose digest is `digest`: derived
    /// from the fleet key and the digest.
    pub(crate) fn slot_id(&self, digest: &[u8; 32]) -> String {
        hex::encode(sign(&self.inner.key, &[b"listing", digest]))[..32].to_owned()
    }

    /// The names of the slots whose server changed, as other replicas publish them
    /// (their [`Fleet::slot_id`]s); an empty name when changes may have been missed (the
    /// subscription was down), which stands for every slot.
    pub(crate) fn changes(&self) -> broadcast::Receiver<String> {
        self.inner.changes.subscribe()
    }

    /// What is woken when something happens to `slot` in the fleet.
    pub(crate) fn watch(&self, slot: &Slot) -> Arc<Notify> {
        let mut waiters = lock(&self.inner.waiters);
        waiters.retain(|_, waiter| waiter.strong_count() > 0);
        if let Some(notify) = waiters.get(&slot.channel).and_then(Weak::upgrade) {
            return notify;
        }
        let notify = Arc::new(Notify::new());
        waiters.insert(slot.channel.clone(), Arc::downgrade(&notify));
        notify
    }

    /// How long a waiter waits before looking again, when nothing woke it.
    pub(crate) fn poll(&self) -> Duration {
        self.inner.lease / 4
    }

    /// Looks for a listing of `slot` that a startup with fleet `stamp` (new: one is
    /// drawn) may take, started in a registry with burst `window`; or makes it the
    /// leader.
    pub(crate) async fn acquire(
        &self,
        slot: &Slot,
        stamp: Stamp,
        window: Duration,
    ) -> Result<Acquired, Unavailable> {
        // The attempt's own: a call made again after its answer was lost finds the
        // lease it took, and leads under it.
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).expect("the operating system provides random bytes");
        let nonce = hex::encode(nonce);
        // Redis may run it and its answer come too late, or never be read (this
        // future dropped): a lease it took would hold the fleet's waiters until it
        // lapses.
        let mut unanswered = Unanswered {
            fleet: self,
            slot,
            nonce: (!self.paused()).then(|| nonce.clone()),
        };
        let answer = self.acquiring(slot, stamp, window, &nonce).await;
        // Answered, if only about an entry no replica wrote: no lease was taken
        // unseen.
        if answer
            .as_ref()
            .map_or_else(Unavailable::is_bad_entry, |_| true)
        {
            unanswered.nonce = None;
        }
        drop(unanswered);
        let (kind, since, value, token, now, epoch, drawn) = answer?;
        // The window is applied at the startup's first look, as it begins.
        let earliest = match stamp.drawn {
            0 => now.saturating_sub(millis(window)),
            _ => stamp.earliest,
        };
        let stamp = Stamp {
            since,
            drawn,
            earliest,
        };
        let key = &self.inner.key;
        let payload = |name: &str| open(key, name, &value).map(|(_, payload)| payload);
        Ok(match kind.as_str() {
            // Its age, on Redis's clock: how long ago its leader's request was sent.
            // One sent before the window the startup began in was put back (the
            // stamps that let it through are plain numbers): no attempt of the
            // fleet could serve the startup that early.
            "take" => match (payload(&slot.listing), sent_of(&value)) {
                (Some(payload), Some(sent)) if sent >= earliest => Acquired::Take {
                    payload,
                    age: Duration::from_millis(now.saturating_sub(sent)),
                },
                _ => Acquired::Unusable,
            },
            "private-grant" => {
                payload(&slot.private_grant).map_or(Acquired::Unusable, Acquired::Granted)
            }
            "public-grant" => {
                payload(&slot.public_grant).map_or(Acquired::Unusable, Acquired::Granted)
            }
            // A lease carries nothing but numbers (and, unsealed, its attempt's
            // nonce). One its leader has not sealed yet (it does so at once) lapses
            // by itself unless renewed: it is waited for, as a sealed one is (a
            // waiter waits a bounded time). A seal that does not hold is another's.
            "wait" if open(key, &slot.lease, &value).is_some() => Acquired::Wait(stamp),
            // Unsealed for longer than a lease, it is not a leader's.
            "wait"
                if unsealed_lease(&value)
                    .is_some_and(|sent| sent <= now && now - sent < millis(self.inner.lease)) =>
            {
                Acquired::Wait(stamp)
            }
            "lead" => {
                let sent = unsealed_lease(&value).unwrap_or(0);
                Acquired::Lead(Box::new(Lease::new(
                    self.clone(),
                    slot.clone(),
                    token,
                    sent,
                    epoch,
                )))
            }
            _ => Acquired::Unusable,
        })
    }

    /// The acquiring script's answer for `slot` to a startup with `stamp` and burst
    /// `window`, its attempt's nonce `nonce` (see [`ACQUIRE_LUA`]).
    async fn acquiring(
        &self,
        slot: &Slot,
        stamp: Stamp,
        window: Duration,
        nonce: &str,
    ) -> Result<(String, u64, Vec<u8>, u64, u64, u64, u64), Unavailable> {
        static ACQUIRE: std::sync::LazyLock<Script> =
            std::sync::LazyLock::new(|| Script::new(ACQUIRE_LUA));
        let mut invocation = slot.invocation(&ACQUIRE);
        invocation
            .key(&slot.lease)
            .arg(stamp.since)
            .arg(millis(window))
            .arg(millis(self.inner.lease))
            .arg(millis(CHANGE_MEMORY))
            .arg(stamp.drawn)
            .arg(nonce);
        self.bounded(invoke(&invocation)).await
    }

    /// Tells the fleet that `slot`'s server changed its tools: its granted listings
    /// are dropped, no burst takes a listing sent before now, and every replica hears
    /// of it.
    pub(crate) async fn revoke(&self, slot: &Slot) -> Result<(), Unavailable> {
        static REVOKE: std::sync::LazyLock<Script> =
            std::sync::LazyLock::new(|| Script::new(REVOKE_LUA));
        let mut invocation = slot.invocation(&REVOKE);
        invocation
            .arg(millis(CHANGE_MEMORY))
            .arg(&slot.channel)
            .arg(&slot.public_channel);
        // Tried even within the pause after a failure: a change must be told.
        self.answer(invoke::<i64>(&invocation)).await.map(drop)
    }

    /// `call` under the timeout, recording whether Redis answered; not tried within
    /// the pause after a failure (invariant 4).
    async fn bounded<'a, T>(
        &self,
        call: impl FnMut(ConnectionManager) -> Call<'a, T>,
    ) -> Result<T, Unavailable> {
        self.bounded_or_bad(call)
            .await?
            .ok_or(Unavailable::BAD_ENTRY)
    }

    /// [`Fleet::bounded`], an answer about an entry no replica wrote told apart:
    /// none (it is logged).
    async fn bounded_or_bad<'a, T>(
        &self,
        call: impl FnMut(ConnectionManager) -> Call<'a, T>,
    ) -> Result<Option<T>, Unavailable> {
        if self.paused() {
            return Err(Unavailable::LINK);
        }
        self.answer_or_bad(call).await
    }

    /// Whether calls are not tried now: within the pause after a failure
    /// (invariant 4).
    fn paused(&self) -> bool {
        lock(&self.inner.retry_at).is_some_and(|at| Instant::now() < at)
    }

    /// `call` under the timeout, recording whether Redis answered (see
    /// [`Fleet::attempt`]).
    async fn answer<'a, T>(
        &self,
        call: impl FnMut(ConnectionManager) -> Call<'a, T>,
    ) -> Result<T, Unavailable> {
        self.answer_or_bad(call)
            .await?
            .ok_or(Unavailable::BAD_ENTRY)
    }

    /// [`Fleet::answer`], an answer about an entry no replica wrote told apart:
    /// none (it is logged).
    async fn answer_or_bad<'a, T>(
        &self,
        call: impl FnMut(ConnectionManager) -> Call<'a, T>,
    ) -> Result<Option<T>, Unavailable> {
        match self.attempt(call).await {
            Ok(answer) => {
                *lock(&self.inner.retry_at) = None;
                if !self.inner.reachable.swap(true, Ordering::Relaxed) {
                    tracing::info!(replica = %self.inner.replica, "the fleet's Redis answers again; listings are shared across the fleet");
                }
                Ok(answer
                    .inspect_err(|cause| {
                        let replica = &self.inner.replica;
                        let due = lock(&self.inner.bad_entries).count(Instant::now());
                        match due {
                            Some(answers) => {
                                tracing::warn!(%replica, %cause, answers, "an entry in the fleet's Redis is not one a replica wrote; the calls that read one go on without the fleet (`answers`: how many since the last such warning)");
                            }
                            None => {
                                tracing::debug!(%replica, %cause, "an entry in the fleet's Redis is not one a replica wrote; this call goes on without the fleet");
                            }
                        }
                    })
                    .ok())
            }
            Err(cause) => {
                *lock(&self.inner.retry_at) = Some(Instant::now() + RETRY_AFTER);
                if self.inner.reachable.swap(false, Ordering::Relaxed) {
                    tracing::warn!(replica = %self.inner.replica, %cause, "the fleet's Redis is unreachable; listings are shared within this replica only until it answers");
                }
                Err(Unavailable::LINK)
            }
        }
    }

    /// `call` under the timeout: Redis's answer, or what is wrong with the entry it
    /// read; or the link's failure. A call that finds the connection lost is made
    /// once more: the connection manager reconnects for it (Redis may be back).
    async fn attempt<'a, T>(
        &self,
        mut call: impl FnMut(ConnectionManager) -> Call<'a, T>,
    ) -> Result<Result<T, String>, String> {
        let connection = &self.inner.connection;
        let attempts = async {
            match call(connection.clone()).await {
                Err(error)
                    if error.is_connection_dropped()
                        || error.is_io_error()
                        || error.is_connection_refusal() =>
                {
                    call(connection.clone()).await
                }
                outcome => outcome,
            }
        };
        match tokio::time::timeout(self.inner.timeout, attempts).await {
            Ok(Ok(Ok(value))) => Ok(Ok(value)),
            // Not the parser's words: they quote the reply, which may hold a listing
            // (a server's text).
            Ok(Ok(Err(_))) => Ok(Err("a reply not of the type the call asked for".into())),
            Ok(Err(error)) if names_a_bad_entry(&error) => Ok(Err(error.to_string())),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!("no answer within {:?}", self.inner.timeout)),
        }
    }
}

/// The warnings of one kind of event: one at most every [`WARNING_EVERY`], counting
/// the events since the last.
#[derive(Debug, Default)]
struct Warnings {
    /// When the next warning may be logged; none yet: now.
    next: Option<Instant>,
    /// The events no warning has counted yet.
    unwarned: u64,
}

impl Warnings {
    /// Counts one event, come at `now`: how many events a warning logged now counts,
    /// if one is due.
    fn count(&mut self, now: Instant) -> Option<u64> {
        self.unwarned = self.unwarned.saturating_add(1);
        if self.next.is_some_and(|next| now < next) {
            return None;
        }
        self.next = Some(now + WARNING_EVERY);
        Some(std::mem::take(&mut self.unwarned))
    }
}

/// Whether `error` is Redis answering about one entry, not a failure of the link
/// (invariant 4): an entry of the wrong type (`WRONGTYPE`, also from within a
/// script), or a script's own runtime error on a value it read (Redis 7 words it
/// `user_script:LINE: …`). Every other error counts as the link's: other `ERR`s,
/// unknown codes, and an ACL refusing a script's command, which Redis 7 words as an
/// `ERR` within a script too. (The scripts start a counter that is no integer again
/// rather than fail on it.)
fn names_a_bad_entry(error: &RedisError) -> bool {
    match error.code() {
        Some("WRONGTYPE") => true,
        Some("ERR") => error
            .detail()
            .is_some_and(|detail| detail.starts_with("user_script:")),
        _ => false,
    }
}

/// One call to Redis, on a clone of the connection: Redis's reply, and then that
/// reply read as a `T`. A reply that is not one is an entry no replica wrote; a
/// reply the connection cannot decode at all is the link's failure (invariant 4).
type Call<'a, T> = futures::future::BoxFuture<'a, CallResult<T>>;

/// What a [`Call`] comes to.
type CallResult<T> = Result<Result<T, redis::ParsingError>, RedisError>;

/// Redis's `reply`, read as a `T` (see [`Call`]).
fn read<T: redis::FromRedisValue>(reply: redis::RedisResult<redis::Value>) -> CallResult<T> {
    reply.map(redis::from_redis_value)
}

/// `invocation` as a call [`Fleet::bounded`] can make, and make again.
fn invoke<'a, T: redis::FromRedisValue + Send + 'a>(
    invocation: &'a redis::ScriptInvocation<'a>,
) -> impl FnMut(ConnectionManager) -> Call<'a, T> {
    move |mut connection| {
        Box::pin(async move { read(invocation.invoke_async(&mut connection).await) })
    }
}

/// `command` as a call [`Fleet::bounded`] can make, and make again.
fn command<'a, T: redis::FromRedisValue + Send + 'a>(
    command: &'a redis::Cmd,
) -> impl FnMut(ConnectionManager) -> Call<'a, T> {
    move |mut connection| Box::pin(async move { read(command.query_async(&mut connection).await) })
}

/// `pipeline` as a call [`Fleet::bounded`] can make, and make again.
fn pipeline<'a, T: redis::FromRedisValue + Send + 'a>(
    pipeline: &'a redis::Pipeline,
) -> impl FnMut(ConnectionManager) -> Call<'a, T> {
    move |mut connection| Box::pin(async move { read(pipeline.query_async(&mut connection).await) })
}

/// Redis gave no usable answer: it did not answer in time, it failed, or the entry
/// the call read is not one a replica wrote. The caller goes on alone; the cause is
/// logged (invariant 4).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the fleet's Redis gave no usable answer")]
#[non_exhaustive]
pub struct Unavailable {
    bad_entry: bool,
}

impl Unavailable {
    /// Redis did not answer, or failed (the link's failure).
    pub(crate) const LINK: Self = Self { bad_entry: false };
    /// Redis answered about an entry no replica wrote.
    pub(crate) const BAD_ENTRY: Self = Self { bad_entry: true };

    /// Whether Redis answered, about an entry no replica wrote (a call that reads
    /// it again fails again), rather than failed to answer.
    pub fn is_bad_entry(&self) -> bool {
        self.bad_entry
    }
}

/// The names of one discovery key's entries (invariant 1).
#[derive(Clone, Debug)]
pub(crate) struct Slot {
    clock: String,
    changed: String,
    listing: String,
    lease: String,
    private_grant: String,
    public_grant: String,
    /// The public key's revocation count: a public grant serves while its stamp, the
    /// count its leader read, is not below it (invariant 1).
    public_epoch: String,
    channel: String,
    /// The channel of the public key's slot, whose grants a change also revokes.
    public_channel: String,
}

impl Slot {
    /// `script` on the slot's counter, change mark, listing, grants and the public
    /// key's revocation count: the first keys of the scripts that take and revoke
    /// listings.
    fn invocation<'a>(&'a self, script: &'a Script) -> redis::ScriptInvocation<'a> {
        let mut invocation = script.key(&self.clock);
        invocation
            .key(&self.changed)
            .key(&self.listing)
            .key(&self.private_grant)
            .key(&self.public_grant)
            .key(&self.public_epoch);
        invocation
    }
}

/// A startup's place in the fleet's order of attempts (invariant 3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// The startup takes a listing stamped after this: its own stamp, or, within
    /// the burst window of an attempt in flight as it began, just before that one.
    since: u64,
    /// The stamp drawn as it began: after a change, `since` is raised back to it (or
    /// to the change), so that no attempt sent before the change serves it.
    drawn: u64,
    /// The earliest time, in Redis's milliseconds, an attempt that serves it can
    /// have been sent: the burst window before it began.
    earliest: u64,
}

impl Stamp {
    /// A startup's first look: a stamp is drawn.
    pub(crate) const NEW: Self = Self {
        since: 0,
        drawn: 0,
        earliest: 0,
    };
}

/// What the fleet has for a startup.
pub(crate) enum Acquired {
    /// A listing the startup may take, and how long ago its request was sent.
    Take { payload: Vec<u8>, age: Duration },
    /// A listing the server granted for reuse.
    Granted(Vec<u8>),
    /// Another replica's leader is listing: wait, then ask again with this stamp.
    Wait(Stamp),
    /// Nobody is listing: the startup leads, under this lease.
    Lead(Box<Lease>),
    /// An entry failed its signature check: the startup lists alone (invariant 1).
    Unusable,
}

/// A leader's hold on its slot. Renewed while held; [`Lease::publish`] hands a
/// listing to the fleet, and dropping it unpublished releases the slot so that a
/// waiter takes over at once (a publication Redis did not answer, a second later).
pub(crate) struct Lease {
    fleet: Fleet,
    slot: Slot,
    token: u64,
    /// When the leader's request was sent, in Redis's milliseconds.
    sent: u64,
    /// The public key's revocation count when the leader's request was sent.
    epoch: u64,
    renewal: Option<tokio_util::task::AbortOnDropHandle<()>>,
    /// When the lease is released once dropped: at once while held, a second later
    /// while its publication has no answer (once the pause after a failure is over;
    /// a release finds nothing to do where the publication was taken), never once
    /// published.
    release_after: Option<Duration>,
}

impl Lease {
    fn new(fleet: Fleet, slot: Slot, token: u64, sent: u64, epoch: u64) -> Self {
        let renewal = {
            let fleet = fleet.clone();
            let slot = slot.clone();
            tokio::spawn(async move {
                // Sealed at once, then renewed a few times per lease.
                let every = fleet.inner.lease / 3;
                while renew(&fleet, &slot, token, sent).await {
                    tokio::time::sleep(every).await;
                }
            })
        };
        Self {
            fleet,
            slot,
            token,
            sent,
            epoch,
            renewal: Some(tokio_util::task::AbortOnDropHandle::new(renewal)),
            release_after: Some(Duration::ZERO),
        }
    }

    /// Hands `payload` to the fleet unless a later attempt's listing is there: kept
    /// for `window` (a burst's) and at least long enough for the waiters to read it,
    /// and, when `grant` names a lifetime and this lease still holds the slot, as the
    /// slot's granted listing (public or private) for that long.
    pub(crate) async fn publish(
        mut self,
        payload: &[u8],
        window: Duration,
        grant: Option<(bool, Duration)>,
    ) {
        static PUBLISH: std::sync::LazyLock<Script> =
            std::sync::LazyLock::new(|| Script::new(PUBLISH_LUA));
        // Not renewed from here on: released a second after a publication Redis did
        // not answer, its answer lost, or this future dropped before it came.
        self.release_after = Some(RETRY_AFTER);
        self.renewal = None;
        let (fleet, slot) = (&self.fleet, &self.slot);
        let key = &fleet.inner.key;
        let listing = seal(key, &slot.listing, self.token, self.sent, payload);
        let (grant_name, grant_value, grant_ms, public) = match grant {
            Some((public, ttl)) => {
                // A grant is stamped with what a startup checks it against: a private
                // one with the leader's token, of this key's counter, a public one
                // with the public key's revocation count (invariant 1).
                let (name, stamp) = if public {
                    (&slot.public_grant, self.epoch)
                } else {
                    (&slot.private_grant, self.token)
                };
                // A grant's second field is when it expires, in Redis's time, under
                // the signature: an old grant put back in Redis is never served.
                let expires = self.sent.saturating_add(millis(ttl));
                let value = seal(key, name, stamp, expires, payload);
                (name.as_str(), value, millis(ttl).max(1), public)
            }
            None => (slot.private_grant.as_str(), Vec::new(), 0, false),
        };
        let mut invocation = PUBLISH.key(&slot.lease);
        invocation
            .key(&slot.listing)
            .key(grant_name)
            .key(&slot.changed)
            .key(&slot.public_epoch)
            .arg(self.token)
            .arg(listing)
            .arg(millis(window.max(HOLD)))
            .arg(grant_value)
            .arg(grant_ms)
            .arg(&slot.channel)
            .arg(if public {
                self.epoch.to_string()
            } else {
                String::new()
            });
        if fleet.bounded(invoke::<i64>(&invocation)).await.is_ok() {
            self.release_after = None;
        }
    }
}

/// An acquiring attempt sent (`nonce` some) whose answer has not come: dropped so,
/// it releases the lease Redis may have taken for it once the pause after a failure
/// is over. A release finds nothing to do where no lease was taken.
struct Unanswered<'a> {
    fleet: &'a Fleet,
    slot: &'a Slot,
    nonce: Option<String>,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if let Some(nonce) = self.nonce.take() {
            release(self.fleet, self.slot, Taker::Attempt(nonce), RETRY_AFTER);
        }
    }
}

/// Who took a lease that is to be released.
enum Taker {
    /// The leader of this token.
    Leader(u64),
    /// The acquiring attempt of this nonce, whose answer never came: the lease, if
    /// Redis took it, is not sealed.
    Attempt(String),
}

/// Releases `slot`'s lease if `taker`'s still holds it, after `after`: a waiter takes
/// over at once. Done in the background, where there is a runtime (a host shutting
/// down has none: the lease lapses instead).
fn release(fleet: &Fleet, slot: &Slot, taker: Taker, after: Duration) {
    let (fleet, slot) = (fleet.clone(), slot.clone());
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn(async move {
            static RELEASE: std::sync::LazyLock<Script> =
                std::sync::LazyLock::new(|| Script::new(RELEASE_LUA));
            tokio::time::sleep(after).await;
            let (token, nonce) = match taker {
                Taker::Leader(token) => (token.to_string(), String::new()),
                Taker::Attempt(nonce) => (String::new(), nonce),
            };
            let mut invocation = RELEASE.key(&slot.lease);
            invocation.arg(token).arg(&slot.channel).arg(nonce);
            let _ = fleet.bounded(invoke::<i64>(&invocation)).await;
        });
    }
}

#[cfg(test)]
impl Lease {
    /// Drops the lease as a leader's death does: no renewal, no release.
    fn abandon(mut self) {
        self.renewal = None;
        self.release_after = None;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(after) = self.release_after else {
            return;
        };
        self.renewal = None;
        release(&self.fleet, &self.slot, Taker::Leader(self.token), after);
    }
}

/// Seals and extends the lease of `token` (sent at `sent`) on `slot`: false once it
/// no longer holds it.
async fn renew(fleet: &Fleet, slot: &Slot, token: u64, sent: u64) -> bool {
    static RENEW: std::sync::LazyLock<Script> = std::sync::LazyLock::new(|| Script::new(RENEW_LUA));
    let sealed = seal(&fleet.inner.key, &slot.lease, token, sent, b"");
    let mut invocation = RENEW.key(&slot.lease);
    invocation
        .arg(token)
        .arg(millis(fleet.inner.lease))
        .arg(sealed);
    // A renewal Redis did not answer is tried again: the lease may still hold.
    fleet
        .bounded(invoke::<i64>(&invocation))
        .await
        .map_or(true, |held| held == 1)
}

/// The pattern of the slots' channels a process subscribes to: every fleet's, so
/// that a Redis user can be given it (Redis admits a pattern subscription only when
/// the user's rules name that very pattern, and a fleet's own prefix is derived from
/// its key). The messages of other fleets sharing the Redis are ignored.
pub const SLOT_CHANNELS: &str = "mcp-runtime:*:ch:*";

/// The channels a process hears: its fleet's slots' (the start of their names), and
/// its own letters'.
struct Channels {
    slots: String,
    mail: String,
}

/// The subscriber: one pattern subscription to the fleet's channels and one to this
/// process's letters, pinged every lease and made again after a failure or a ping
/// not answered in time; a message wakes the slot's waiters, a change is passed on
/// to the registries (invariant 5), and a letter to its mailbox or its asker.
async fn subscribe(client: Client, fleet: Weak<Inner>, channels: Channels, timeout: Duration) {
    // Whether a change may have gone unheard: after any attempt but a first that
    // succeeds at once.
    let mut missed = false;
    loop {
        let connected = async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.psubscribe(SLOT_CHANNELS).await?;
            pubsub.subscribe(&channels.mail).await?;
            Ok::<_, RedisError>(pubsub)
        };
        if let Ok(Ok(pubsub)) = tokio::time::timeout(timeout * 4, connected).await {
            let Some(inner) = fleet.upgrade() else { return };
            inner.subscribed.store(true, Ordering::Relaxed);
            // Whatever was published while the subscription was down is found by
            // the waiters' next look; a change told then was missed, so every
            // registry takes it that every server may have changed ("" names all).
            wake_all(&inner);
            if std::mem::replace(&mut missed, true) {
                let _ = inner.changes.send(String::new());
            }
            let (beat_every, replica) = (inner.lease, inner.replica.clone());
            drop(inner);
            let (mut sink, mut messages) = pubsub.split();
            // A connection that died without a word (a peer gone, a network split) is
            // found by a ping every lease that is not answered in time.
            let mut beat = tokio::time::interval(beat_every);
            beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            beat.tick().await;
            loop {
                let message = tokio::select! {
                    message = messages.next() => message,
                    _ = beat.tick() => {
                        let ping = sink.ping::<redis::Value>();
                        if matches!(tokio::time::timeout(timeout * 4, ping).await, Ok(Ok(_))) {
                            continue;
                        }
                        tracing::warn!(%replica, "the fleet's subscription did not answer a ping; it is made again");
                        break;
                    }
                };
                let Some(message) = message else { break };
                let Some(inner) = fleet.upgrade() else { return };
                let channel = message.get_channel_name().to_owned();
                if channel == channels.mail {
                    mail::arrived(&Fleet { inner }, &channel, message.get_payload_bytes());
                    continue;
                }
                // Another fleet's, sharing the Redis: nothing of this one.
                let Some(id) = channel.strip_prefix(&channels.slots) else {
                    continue;
                };
                if let Some(notify) = lock(&inner.waiters).get(&channel).and_then(Weak::upgrade) {
                    notify.notify_waiters();
                }
                // Only a slot's name: the empty one, which stands for every slot, is
                // this subscriber's own to send, never a message's.
                if message.get_payload_bytes() == b"changed"
                    && id.len() == 32
                    && id.bytes().all(|byte| byte.is_ascii_hexdigit())
                {
                    let _ = inner.changes.send(id.to_owned());
                }
            }
        }
        missed = true;
        let Some(inner) = fleet.upgrade() else { return };
        inner.subscribed.store(false, Ordering::Relaxed);
        // The answers to letters sent before cannot arrive now.
        mail::forget_all(&inner);
        drop(inner);
        tokio::time::sleep(RETRY_AFTER).await;
    }
}

/// Wakes every waiter: they look again.
fn wake_all(inner: &Inner) {
    for notify in lock(&inner.waiters).values().filter_map(Weak::upgrade) {
        notify.notify_waiters();
    }
}

/// `payload` signed for the entry `name`: `stamp:sent:mac:payload`.
fn seal(key: &[u8], name: &str, stamp: u64, sent: u64, payload: &[u8]) -> Vec<u8> {
    let head = format!("{stamp}:{sent}:");
    let mac = hex::encode(sign(
        key,
        &[name.as_bytes(), b"\0", head.as_bytes(), payload],
    ));
    let mut value = Vec::with_capacity(head.len() + mac.len() + 1 + payload.len());
    value.extend_from_slice(head.as_bytes());
    value.extend_from_slice(mac.as_bytes());
    value.push(b':');
    value.extend_from_slice(payload);
    value
}

/// The stamp and payload of `value` read from the entry `name`, if its signature
/// holds.
fn open(key: &[u8], name: &str, value: &[u8]) -> Option<(u64, Vec<u8>)> {
    let mut parts = value.splitn(4, |&byte| byte == b':');
    let (stamp, sent, mac, payload) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let head_len = stamp.len() + sent.len() + 2;
    let head = &value[..head_len];
    let mut check = HmacSha256::new_from_slice(key).ok()?;
    for part in [name.as_bytes(), b"\0", head, payload] {
        check.update(part);
    }
    let mac = hex::decode(mac).ok()?;
    check.verify_slice(&mac).ok()?;
    let stamp = std::str::from_utf8(stamp).ok()?.parse().ok()?;
    Some((stamp, payload.to_vec()))
}

/// The second field of a value's head (`stamp:sent:`): when a listing's request was
/// sent, in Redis's milliseconds.
fn sent_of(value: &[u8]) -> Option<u64> {
    let mut parts = value.splitn(3, |&byte| byte == b':');
    let (_stamp, sent) = (parts.next()?, parts.next()?);
    std::str::from_utf8(sent).ok()?.parse().ok()
}

/// When a lease written by the acquiring script (`token:sent:nonce`, not sealed yet)
/// was taken, in Redis's milliseconds.
fn unsealed_lease(value: &[u8]) -> Option<u64> {
    // The head and a nonce (hex digits) alone: a sealed value has a third `:`.
    let colons = value.iter().filter(|&&byte| byte == b':').count();
    let nonce = value.rsplit(|&byte| byte == b':').next()?;
    (colons == 2 && nonce.iter().all(u8::is_ascii_hexdigit))
        .then(|| sent_of(value))
        .flatten()
}

fn sign(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes a key of any length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The start of the scripts that draw tokens (invariant 1):
/// - `now`, Redis's time in ms;
/// - `draw(key, keep, mark)` moves the counter `key` on by one and keeps it `keep`
///   ms. A counter that is no integer, one far past any clock (written by hand), or
///   one not above `mark` (the key's change mark; the counter was evicted) starts
///   again from `now`, or from the mark if that is higher and a whole number below
///   10^13: above the mark, so a leader after it grants. It is above the tokens
///   drawn before unless the counter ran ahead of the clock or the clock went back:
///   then a token may come again, two leaders list the server once each, and one
///   holding a token from before may grant after a change, as when the mark is
///   removed (invariant 1). Tokens stay below 10^14, which Lua writes exactly.
///
/// Effects replication, the default since Redis 5, lets a script write after `TIME`.
macro_rules! lua_now_and_draw {
    () => {
        r"
redis.replicate_commands()
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local function draw(key, keep, mark)
  local floor = 0
  if mark and mark == math.floor(mark) and mark >= 0 and mark < 1e13 then floor = mark end
  local value = redis.pcall('INCR', key)
  if type(value) ~= 'number' or value >= 1e14 or value <= floor then
    redis.call('SET', key, math.max(now, floor))
    value = redis.call('INCR', key)
  end
  redis.call('PEXPIRE', key, keep)
  return value
end
"
    };
}

/// The start of the scripts that read the public revocation count (invariant 1):
/// `count(key)`, the count at `key`: 0 when there is none, `nil` when it is not a
/// count a replica writes (digits only, below 2^53).
macro_rules! lua_count {
    () => {
        r"
local function count(key)
  local raw = redis.pcall('GET', key)
  if raw == false then return 0 end
  if type(raw) ~= 'string' or #raw > 16 or not string.match(raw, '^%d+$') then return nil end
  local value = tonumber(raw)
  if value >= 9007199254740992 then return nil end
  return value
end
"
    };
}

/// KEYS: clock, changed, listing, private grant, public grant, the public key's
/// revocation count, lease.
/// ARGV: the startup's stamp (0: draw one), the burst window, the lease, and how long
/// the counter is kept, in ms; the stamp drawn as the startup began; the attempt's
/// nonce (hex digits), written into the lease it takes: the same attempt made again
/// (its answer lost) leads under that lease, not waiting for it to lapse.
/// Returns {kind, stamp, value, token, now, epoch, drawn}: `token` is a new leader's,
/// `now` Redis's time, `epoch` the public key's revocation count; values are checked
/// by the caller.
const ACQUIRE_LUA: &str = concat!(
    lua_now_and_draw!(),
    lua_count!(),
    r"
local since = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
-- A mark that is no number (written by hand) is taken for a change just now: no
-- listing sent before this startup, and no private grant, serves it.
local changed = tonumber(redis.call('GET', KEYS[2]) or '0') or math.huge
-- Unreadable (written by hand): no public grant is served until a change sets it.
local epoch = count(KEYS[6])
local lease = redis.call('GET', KEYS[7])
-- This attempt's own lease, not sealed yet: it was taken by this very call, made
-- again as its answer was lost. Answered as it was then.
if lease and ARGV[6] ~= '' then
  local token, _, nonce = string.match(lease, '^(%d+):(%d+):(%x+)$')
  if nonce == ARGV[6] then return {'lead', since, lease, tonumber(token), now, epoch or 0, tonumber(ARGV[5]) or 0} end
end
local function parts(value)
  local stamp, sent = string.match(value, '^(%d+):(%d+):')
  if not stamp then return nil end
  return tonumber(stamp), tonumber(sent)
end
local drawn = tonumber(ARGV[5]) or 0
-- A startup's first look: no stamp drawn yet (its `since` may be 0 later on, just
-- below an attempt stamped 1).
if drawn == 0 then
  since = draw(KEYS[1], ARGV[4], changed)
  drawn = since
  -- The window is applied once, as the startup begins: an attempt sent less than
  -- the window before, and after the last change, may serve it, however long it
  -- takes; the stamp returned says so for every later look.
  for _, key in ipairs({KEYS[3], KEYS[7]}) do
    local value = redis.call('GET', key)
    if value then
      local stamp, sent = parts(value)
      if stamp and stamp > changed and sent <= now and now - sent < window and stamp <= since then
        since = math.min(since, stamp - 1)
      end
    end
  end
else
  -- A change since the startup began voids the window's credit: no attempt sent
  -- before the change serves it.
  since = math.max(since, math.min(drawn, changed))
end
local function usable(value)
  local stamp = parts(value)
  return stamp ~= nil and stamp > since
end
local listing = redis.call('GET', KEYS[3])
if listing and usable(listing) then return {'take', since, listing, 0, now, epoch or 0, drawn} end
local function fresh(grant)
  if not grant then return false end
  local _, expires = parts(grant)
  return expires ~= nil and now < expires
end
-- A private grant is stamped with a token of this key's counter, greater than the
-- server's last change when granted; a public one with the public key's revocation
-- count when its leader began, which no change has passed since. One put back after
-- a change revoked it is not served.
local grant = redis.call('GET', KEYS[4])
if fresh(grant) and parts(grant) > changed then return {'private-grant', since, grant, 0, now, epoch or 0, drawn} end
grant = redis.call('GET', KEYS[5])
if epoch and fresh(grant) and parts(grant) >= epoch then return {'public-grant', since, grant, 0, now, epoch, drawn} end
if lease and usable(lease) then return {'wait', since, lease, 0, now, epoch or 0, drawn} end
local token = draw(KEYS[1], ARGV[4], changed)
local value = token .. ':' .. now .. ':' .. ARGV[6]
redis.call('SET', KEYS[7], value, 'PX', ARGV[3])
return {'lead', since, value, token, now, epoch or 0, drawn}
"
);

/// KEYS: lease, listing, grant, changed, the public key's revocation count. ARGV:
/// token, listing, keep ms, grant value, grant ms (0: none), channel, and for a public
/// grant the revocation count its leader read (else empty). A listing asked for
/// before the server's last change, or (public) before another key's change, is kept
/// for the startups that began before it, and grants nothing: an older grant stays.
/// A leader whose lease was replaced or lapsed publishes unless a later attempt's
/// listing is there, grants nothing, and leaves the lease to its holder.
const PUBLISH_LUA: &str = concat!(
    lua_count!(),
    r"
local token = tonumber(ARGV[1])
local lease = redis.call('GET', KEYS[1])
local holds = lease and string.match(lease, '^(%d+):') == ARGV[1]
if not holds then
  -- Replaced by a later startup's attempt: published unless that one's, or a later
  -- one's, listing is there already.
  local listing = redis.call('GET', KEYS[2])
  if listing then
    local stamp = tonumber(string.match(listing, '^(%d+):') or '')
    if not stamp or stamp >= token then return 0 end
  end
end
-- A mark that is no number (written by hand) grants nothing.
local changed = tonumber(redis.call('GET', KEYS[4]) or '0')
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
local current = changed ~= nil
if current and ARGV[7] ~= '' then
  local epoch = count(KEYS[5])
  current = epoch ~= nil and tonumber(ARGV[7]) >= epoch
end
-- A grant only from the lease's holder: a replaced leader's answer is older than
-- its successor's, whose grant it must not replace.
if holds and ARGV[5] ~= '0' and current and token > changed then
  redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5])
end
if holds then redis.call('DEL', KEYS[1]) end
redis.call('PUBLISH', ARGV[6], 'published')
return 1
"
);

/// KEYS: lease. ARGV: token, lease ms, the sealed lease.
const RENEW_LUA: &str = r"
local lease = redis.call('GET', KEYS[1])
if not lease or string.match(lease, '^(%d+):') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2])
return 1
";

/// KEYS: lease. ARGV: the leader's token, the channel, the attempt's nonce (the token
/// or the nonce empty: the lease is released if it is the token's, or the nonce's
/// and not sealed).
const RELEASE_LUA: &str = r"
local lease = redis.call('GET', KEYS[1])
if not lease then return 0 end
local token = string.match(lease, '^(%d+):')
local nonce = string.match(lease, '^%d+:%d+:(%x+)$')
if token ~= ARGV[1] and nonce ~= ARGV[3] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], 'released')
return 1
";

/// KEYS: clock, changed, listing, private grant, public grant, the public key's
/// revocation count. ARGV: how long the change is remembered (ms), the slot's channel
/// and its public key's. No entry written by hand stops it: a change must be told.
/// The revocation count moves past its last value and Redis's time in µs, so that
/// it never goes back, though it lapses a day after the last change.
const REVOKE_LUA: &str = concat!(
    lua_now_and_draw!(),
    lua_count!(),
    r"
local stamp = draw(KEYS[1], ARGV[1], tonumber(redis.pcall('GET', KEYS[2])))
redis.call('SET', KEYS[2], stamp, 'PX', ARGV[1])
local last = count(KEYS[6]) or 0
local now_us = tonumber(time[1]) * 1000000 + tonumber(time[2])
redis.call('SET', KEYS[6], math.max(last + 1, now_us), 'PX', ARGV[1])
redis.call('DEL', KEYS[3], KEYS[4], KEYS[5])
redis.call('PUBLISH', ARGV[2], 'changed')
redis.call('PUBLISH', ARGV[3], 'changed')
return stamp
"
);

/// KEYS: the entry read, then those removed. ARGV: how long the entry read lingers,
/// in ms. Returns its value: none for one of another type than a string (written
/// by hand), which lingers all the same.
const REMOVE_READING_LUA: &str = r"
local value = redis.pcall('GET', KEYS[1])
-- Removed first: refused, nothing has changed.
if #KEYS > 1 then
  redis.call('DEL', unpack(KEYS, 2))
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
if type(value) == 'string' then
  return value
end
return false
";

/// KEYS: the entry, and the one remembering the value it replaced. ARGV: the sealed
/// value, its lifetime and how long the value it replaces is remembered (ms). Returns
/// the value replaced; where the entry held this very value already, the one
/// remembered.
const REPLACE_LUA: &str = r"
local old = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if old == ARGV[1] then
  return redis.call('GET', KEYS[2])
end
if old then
  redis.call('SET', KEYS[2], old, 'PX', ARGV[3])
else
  redis.call('DEL', KEYS[2])
end
return old
";

/// KEYS: the guard, then the entries removed with it. ARGV: the guard's sealed
/// value. Returns how many entries were removed (0: the guard holds another value).
const REMOVE_IF_LUA: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', unpack(KEYS))
end
return 0
";

#[cfg(test)]
mod tests;
