//! Letters between the processes of a fleet: a request that belongs to another
//! process (a call it keeps between its client's rounds, say) is sent to it over
//! Redis pub/sub and answered the same way.
//!
//! Invariants:
//! 1. Each process has an address, drawn at random when its fleet link is made, and
//!    one channel named by it; its subscriber listens there beside the listings'
//!    channels. A letter is encrypted (XChaCha20-Poly1305, under a key derived from
//!    the fleet key, bound to the channel it is sent on): what it carries (a
//!    client's answers, a tool's result) is never readable in Redis, and one that
//!    does not open is dropped (and warned of once a minute at most).
//! 2. A letter that no process receives (Redis counts the receivers of a `PUBLISH`)
//!    is sent again for a lease (its addressee may be making its subscription
//!    again), then fails: its addressee is gone. One that reaches a process without
//!    a mailbox of its name is refused at once, the same way; one whose mailbox is
//!    full, as busy. A letter is taken once: one that arrives again (sent twice, or
//!    replayed) is dropped.
//! 3. While a letter is being answered, its addressee says so every third of a lease,
//!    even within the pause after a failure of Redis; an asker that hears nothing for
//!    a lease takes it that the addressee died, and fails. Each word is numbered,
//!    and only one numbered after the last heard counts: one replayed keeps no asker
//!    waiting. (A word without a number, from a replica of an earlier version during
//!    a rolling upgrade, counts.) A letter is answered at
//!    most once: an answer nobody waits for (a late one, or a replay) is dropped.
//!    Answers and notes are sent even within the pause after a failure of Redis, and
//!    an answer Redis does not take is tried again for half a lease: a lost answer
//!    would have the asker's client do the work again.
//! 4. Before its answer, an addressee may send its asker notes (what the asker
//!    passes on meanwhile: a call's progress, say); they arrive in the order sent,
//!    all before the answer, and each counts as word that it is answering. Notes are
//!    numbered, and the asker passes on only one numbered after the last it passed
//!    on: a note Redis took twice (sent again when it was slow to answer) or one
//!    replayed is passed on once, so a progress report never repeats.
//! 5. An asker that stops waiting before the answer (its own client went away, or
//!    Redis failed to take the letter in time, though it may have taken it) tells
//!    the addressee, again for a lease while no process hears it (the addressee may
//!    be making its subscription again), and the letter is then cancelled
//!    ([`Letter::cancelled`]). So is a letter whose asker no process hears for a
//!    lease of the addressee's word that it is answering: the asker's process died,
//!    or lost its subscription and with it every waiter (an asker whose
//!    subscription is lost fails as Redis being unavailable). And a process that
//!    hears a word or a note about a letter it stopped waiting for (within
//!    [`REMEMBERED`]) tells its addressee again, once a lease at most: a cancel
//!    lost while Redis was down arrives once both are back.

use std::{
    collections::{HashMap, VecDeque},
    hash::Hash,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use tokio::sync::mpsc;
use tokio_util::{sync::CancellationToken, task::AbortOnDropHandle};

use chacha20poly1305::{
    KeyInit, XChaCha20Poly1305, XNonce,
    aead::{Aead, Payload},
};

use super::{Fleet, Inner, Unavailable, command};
use crate::sync::lock;

/// How many letters wait for a mailbox's reader before more are refused.
const MAILBOX_DEPTH: usize = 256;

/// A letter another process of the fleet sent to a mailbox of this one. Answer it
/// with [`Letter::reply`]; while it is held, its sender hears that it is being
/// answered, and once it is dropped unanswered, the sender stops waiting within a
/// lease.
pub struct Letter {
    body: Vec<u8>,
    fleet: Fleet,
    from: String,
    id: u64,
    /// How many notes were sent (invariant 4).
    notes: AtomicU64,
    /// Cancelled when the asker stops waiting (invariant 5).
    cancelled: CancellationToken,
    _alive: AbortOnDropHandle<()>,
}

impl Drop for Letter {
    fn drop(&mut self) {
        lock(&self.fleet.inner.answering).remove(&(self.from.clone(), self.id));
    }
}

impl std::fmt::Debug for Letter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Letter")
            .field("from", &self.from)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Letter {
    /// What the letter says.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Cancelled once the asker stops waiting for the answer (invariant 5).
    pub fn cancelled(&self) -> CancellationToken {
        self.cancelled.clone()
    }

    /// Sends the asker `body` as a note, before the answer (invariant 4). A letter's
    /// notes are sent one at a time: one sent while another is on its way may arrive
    /// first, and then the other is dropped.
    pub async fn note(&self, body: &[u8]) -> Result<(), Unavailable> {
        let channel = self.fleet.mail_channel(&self.from);
        let number = self.notes.fetch_add(1, Ordering::Relaxed);
        let payload = [format!("note:{}:{number}:", self.id).as_bytes(), body].concat();
        self.fleet.post_surely(&channel, &payload).await
    }

    /// Answers the letter with `body`.
    pub async fn reply(self, body: &[u8]) -> Result<(), Unavailable> {
        let channel = self.fleet.mail_channel(&self.from);
        let payload = [format!("reply:{}:", self.id).as_bytes(), body].concat();
        let posted = self.fleet.post_surely(&channel, &payload).await;
        if posted.is_err() {
            tracing::warn!(replica = %self.fleet.inner.replica, "the answer to a fleet letter was lost: Redis did not take it");
        }
        posted
    }
}

/// Why a letter was not answered.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// Redis did not take the letter, or this process cannot hear the answer (its
    /// subscription is down).
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    /// No process listens at the address, or it has no mailbox of the name.
    #[error("no process of the fleet answers at that address")]
    Gone,
    /// The addressee has more letters waiting than it takes.
    #[error("the addressee has too many letters waiting")]
    Busy,
    /// The addressee stopped saying it was answering (it died, or dropped the letter),
    /// or took longer than allowed.
    #[error("the addressee stopped answering")]
    Silent,
}

/// What an asker hears about its letter.
pub(super) enum Heard {
    /// The addressee is still answering: its word's number (invariant 3); none from
    /// a replica of an earlier version, whose words are not numbered.
    Alive(Option<u64>),
    /// A note of the addressee's, and its number (invariant 4).
    Note(u64, Vec<u8>),
    /// Its answer.
    Reply(Vec<u8>),
    /// It has no mailbox of the letter's name.
    Refused,
    /// Its mailbox is full.
    Busy,
}

impl Fleet {
    /// This process's address in the fleet: where [`Fleet::ask`] reaches its
    /// mailboxes. Drawn at random when the link was made.
    pub fn address(&self) -> &str {
        &self.inner.address
    }

    /// The letters sent to this process's mailbox `name` (no `:` in it). A later call
    /// with the same name takes the mailbox over.
    pub fn mailbox(&self, name: &str) -> mpsc::Receiver<Letter> {
        assert!(!name.contains(':'), "a mailbox's name has no `:`");
        let (sender, receiver) = mpsc::channel(MAILBOX_DEPTH);
        lock(&self.inner.mailboxes).insert(name.to_owned(), sender);
        receiver
    }

    /// Sends `body` to the mailbox `name` of the process at `address` and waits for
    /// its answer, at most `within` in all (invariant 3); `Duration::MAX` sets no
    /// bound but the addressee's word that it is answering.
    pub async fn ask(
        &self,
        address: &str,
        name: &str,
        body: &[u8],
        within: Duration,
    ) -> Result<Vec<u8>, AskError> {
        let (notes, _) = mpsc::unbounded_channel();
        self.ask_noting(address, name, body, within, &notes).await
    }

    /// Sends `body` to the mailbox `name` of the process at `address` and waits for
    /// no answer: whether a process of the fleet heard it. Like a letter asked, one
    /// nobody hears is sent again for a lease (invariant 2), and even within the
    /// pause after a failure; a letter told is taken as one asked is, and its answer,
    /// if any, is dropped.
    pub async fn tell(&self, address: &str, name: &str, body: &[u8]) -> Result<bool, Unavailable> {
        let id = self.inner.letters.fetch_add(1, Ordering::Relaxed);
        let channel = self.mail_channel(address);
        self.post_until_heard(&channel, &self.letter(id, name, body), true)
            .await
    }

    /// [`Fleet::ask`], the addressee's notes passed to `notes` as they come
    /// (invariant 4).
    pub async fn ask_noting(
        &self,
        address: &str,
        name: &str,
        body: &[u8],
        within: Duration,
        notes: &mpsc::UnboundedSender<Vec<u8>>,
    ) -> Result<Vec<u8>, AskError> {
        if !self.inner.subscribed.load(Ordering::Relaxed) {
            return Err(Unavailable::LINK.into());
        }
        let id = self.inner.letters.fetch_add(1, Ordering::Relaxed);
        let (heard, mut hearing) = mpsc::unbounded_channel();
        lock(&self.inner.waiting).insert(id, heard);
        let mut forget = Forget {
            fleet: self,
            id,
            withdraw: None,
        };
        // Looked at again with the waiter in place: a subscription lost meanwhile
        // forgot it, and its answer could not arrive.
        if !self.inner.subscribed.load(Ordering::Relaxed) {
            return Err(Unavailable::LINK.into());
        }
        let channel = self.mail_channel(address);
        // Not sent at all within the pause after a failure.
        if self.paused() {
            return Err(Unavailable::LINK.into());
        }
        // Withdrawn from the moment it is sent: a post that fails may still have
        // reached Redis, and its letter the addressee, which must not answer it
        // unheard (invariant 5).
        forget.withdraw = Some(channel.clone());
        let letter = self.letter(id, name, body);
        if !self.post_until_heard(&channel, &letter, false).await? {
            forget.withdraw = None;
            return Err(AskError::Gone);
        }
        let deadline = tokio::time::Instant::now().checked_add(within);
        let (mut next_word, mut next_note) = (0, 0);
        // Moved on by the addressee's new words alone (invariants 3 and 4).
        let mut silence = tokio::time::Instant::now() + self.inner.lease;
        loop {
            let until = deadline.map_or(silence, |deadline| silence.min(deadline));
            match tokio::time::timeout_at(until, hearing.recv()).await {
                Ok(Some(Heard::Alive(number))) => {
                    let fresh = number.is_none_or(|number| number >= next_word);
                    if fresh {
                        next_word = number.map_or(next_word, |number| number.saturating_add(1));
                        silence = tokio::time::Instant::now() + self.inner.lease;
                    }
                }
                Ok(Some(Heard::Note(number, note))) => {
                    if number >= next_note {
                        next_note = number.saturating_add(1);
                        silence = tokio::time::Instant::now() + self.inner.lease;
                        let _ = notes.send(note);
                    }
                }
                Ok(Some(Heard::Reply(body))) => {
                    forget.withdraw = None;
                    return Ok(body);
                }
                Ok(Some(Heard::Refused)) => {
                    forget.withdraw = None;
                    return Err(AskError::Gone);
                }
                Ok(Some(Heard::Busy)) => {
                    forget.withdraw = None;
                    return Err(AskError::Busy);
                }
                // This process's subscription was lost: the answer cannot arrive.
                Ok(None) => return Err(Unavailable::LINK.into()),
                Err(_) => return Err(AskError::Silent),
            }
        }
    }

    /// What tells an addressee that this process stopped waiting for its letter
    /// `id` (invariant 5).
    fn cancel_of(&self, id: u64) -> String {
        format!("cancel:{id}:{}:", self.inner.address)
    }

    /// The channel of the process at `address` (invariant 1).
    pub(super) fn mail_channel(&self, address: &str) -> String {
        format!("{}:to:{address}", self.inner.prefix)
    }

    /// Publishes `payload` on `channel`, encrypted for it (invariant 1); how many
    /// processes heard it.
    pub(super) async fn post(&self, channel: &str, payload: &[u8]) -> Result<i64, Unavailable> {
        let publish = self.publish(channel, payload);
        self.bounded(command::<i64>(&publish)).await
    }

    /// The `PUBLISH` of `payload` on `channel`, encrypted for it (invariant 1).
    fn publish(&self, channel: &str, payload: &[u8]) -> redis::Cmd {
        let mut publish = redis::cmd("PUBLISH");
        publish
            .arg(channel)
            .arg(enclose(&self.inner.letter_key, channel, payload));
        publish
    }

    /// The letter `id` of this process to the mailbox `name`, saying `body`.
    fn letter(&self, id: u64, name: &str, body: &[u8]) -> Vec<u8> {
        [
            format!("ask:{id}:{}:{name}:", self.inner.address).as_bytes(),
            body,
        ]
        .concat()
    }

    /// Posts `letter` on `channel`, and again for a lease while no process hears it
    /// (invariant 2): whether one did. With `anyway`, even within the pause after a
    /// failure.
    async fn post_until_heard(
        &self,
        channel: &str,
        letter: &[u8],
        anyway: bool,
    ) -> Result<bool, Unavailable> {
        let gone_after = tokio::time::Instant::now() + self.inner.lease;
        loop {
            let heard = if anyway {
                self.post_anyway(channel, letter).await?
            } else {
                self.post(channel, letter).await?
            };
            if heard > 0 {
                return Ok(true);
            }
            if tokio::time::Instant::now() >= gone_after {
                return Ok(false);
            }
            tokio::time::sleep(self.inner.lease / 8).await;
        }
    }

    /// [`Fleet::post`], even within the pause after a failure (invariant 3).
    async fn post_anyway(&self, channel: &str, payload: &[u8]) -> Result<i64, Unavailable> {
        let publish = self.publish(channel, payload);
        self.answer(command::<i64>(&publish)).await
    }

    /// Publishes `payload` on `channel` even within the pause after a failure, and
    /// again for half a lease while Redis does not take it (invariant 3).
    async fn post_surely(&self, channel: &str, payload: &[u8]) -> Result<(), Unavailable> {
        let publish = self.publish(channel, payload);
        let until = tokio::time::Instant::now() + self.inner.lease / 2;
        loop {
            match self.answer(command::<i64>(&publish)).await {
                Ok(_) => return Ok(()),
                Err(unavailable) if tokio::time::Instant::now() >= until => {
                    return Err(unavailable);
                }
                Err(_) => tokio::time::sleep(self.inner.lease / 16).await,
            }
        }
    }
}

/// Forgets a letter's waiter when its asker stops waiting.
struct Forget<'a> {
    fleet: &'a Fleet,
    id: u64,
    /// The addressee's channel, once the letter is sent and until it is answered:
    /// dropped then, the asker tells the addressee it stopped waiting (invariant 5).
    withdraw: Option<String>,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(&self.fleet.inner.waiting).remove(&self.id);
        let Some(channel) = self.withdraw.take() else {
            return;
        };
        let now = tokio::time::Instant::now();
        lock(&self.fleet.inner.abandoned).insert(self.id, channel.clone(), now);
        // Told from a task of its own, while there is a runtime to run it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let fleet = self.fleet.clone();
            let payload = fleet.cancel_of(self.id);
            // Even within the pause after a failure: the failure may be this
            // letter's own post. One Redis fails to take is told again when the
            // addressee's word is heard (`arrived`).
            runtime.spawn(async move {
                let _ = fleet
                    .post_until_heard(&channel, payload.as_bytes(), true)
                    .await;
            });
        }
    }
}

/// `payload` encrypted under `key` for `channel`: a random nonce, then the
/// ciphertext and its tag (invariant 1).
pub(super) fn enclose(key: &[u8; 32], channel: &str, payload: &[u8]) -> Vec<u8> {
    let mut nonce = [0_u8; 24];
    getrandom::fill(&mut nonce).expect("the operating system provides random bytes");
    let sealed = XChaCha20Poly1305::new(key.into())
        .encrypt(
            XNonce::from_slice(&nonce),
            Payload {
                msg: payload,
                aad: channel.as_bytes(),
            },
        )
        .expect("a letter is far shorter than the cipher's limit");
    [&nonce[..], &sealed].concat()
}

/// What `message`, read on `channel`, says, if it opens under `key`.
pub(super) fn disclose(key: &[u8; 32], channel: &str, message: &[u8]) -> Option<Vec<u8>> {
    let (nonce, sealed) = message.split_at_checked(24)?;
    XChaCha20Poly1305::new(key.into())
        .decrypt(
            XNonce::from_slice(nonce),
            Payload {
                msg: sealed,
                aad: channel.as_bytes(),
            },
        )
        .ok()
}

/// A new random address.
pub(super) fn new_address() -> String {
    let mut bytes = [0_u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system provides random bytes");
    hex::encode(bytes)
}

/// Takes a message that arrived on this process's channel `channel` (invariants 1
/// and 2).
pub(super) fn arrived(fleet: &Fleet, channel: &str, message: &[u8]) {
    let Some(payload) = disclose(&fleet.inner.letter_key, channel, message) else {
        // Anyone who can publish there can send them: warned of once a minute.
        let due = lock(&fleet.inner.unopened).count(tokio::time::Instant::now());
        match due {
            Some(letters) => tracing::warn!(
                letters,
                "a fleet letter that does not open under the fleet key was dropped (`letters`: how many since the last such warning)"
            ),
            None => {
                tracing::debug!("a fleet letter that does not open under the fleet key was dropped")
            }
        }
        return;
    };
    let mut parts = payload.splitn(3, |&byte| byte == b':');
    let (Some(kind), Some(id), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    let Some(id) = std::str::from_utf8(id).ok().and_then(|id| id.parse().ok()) else {
        return;
    };
    let heard = match kind {
        b"ask" => return deliver(fleet, id, rest),
        b"cancel" => return cancel(fleet, id, rest),
        b"alive" => Heard::Alive(numbered(rest).map(|(number, _)| number)),
        b"note" => {
            let Some((number, note)) = numbered(rest) else {
                return;
            };
            Heard::Note(number, note.to_vec())
        }
        b"reply" => Heard::Reply(rest.to_vec()),
        b"refused" => Heard::Refused,
        b"busy" => Heard::Busy,
        _ => return,
    };
    if let Some(waiter) = lock(&fleet.inner.waiting).get(&id) {
        let _ = waiter.send(heard);
        return;
    }
    // A word about a letter this process stopped waiting for: its addressee is
    // still at it, so the cancel was lost (invariant 5).
    if matches!(heard, Heard::Alive(_) | Heard::Note(..)) {
        let now = tokio::time::Instant::now();
        let again = lock(&fleet.inner.abandoned).cancel_again(id, now, fleet.inner.lease);
        if let Some(channel) = again {
            let fleet = fleet.clone();
            let payload = fleet.cancel_of(id);
            tokio::spawn(async move {
                let _ = fleet.post_anyway(&channel, payload.as_bytes()).await;
            });
        }
    }
}

/// The letters this process stopped waiting for unanswered, by number: their
/// addressees' channels, and when each was last told (invariant 5).
pub(super) type Abandoned = Remembered<u64, (String, tokio::time::Instant)>;

impl Abandoned {
    /// Letter `id` to the addressee at `channel` was given up on at `now`, and its
    /// addressee told.
    pub(super) fn insert(&mut self, id: u64, channel: String, now: tokio::time::Instant) {
        self.keep(id, (channel, now), now);
    }

    /// The channel to tell again that letter `id` is given up on, heard of at
    /// `now`: if it was, and was last told a `lease` ago or more.
    pub(super) fn cancel_again(
        &mut self,
        id: u64,
        now: tokio::time::Instant,
        lease: Duration,
    ) -> Option<String> {
        let (channel, told) = self.entries.get_mut(&id)?;
        if now.duration_since(*told) < lease {
            return None;
        }
        *told = now;
        Some(channel.clone())
    }
}

/// A note's number and body, from `number:body` (invariant 4).
fn numbered(rest: &[u8]) -> Option<(u64, &[u8])> {
    let (number, body) = rest.split_at(rest.iter().position(|&byte| byte == b':')?);
    let number = std::str::from_utf8(number).ok()?.parse().ok()?;
    Some((number, &body[1..]))
}

/// Hands the letter `id` (`from:name:body`) to its mailbox, or refuses it.
fn deliver(fleet: &Fleet, id: u64, rest: &[u8]) {
    let mut parts = rest.splitn(3, |&byte| byte == b':');
    let (Some(from), Some(name), Some(body)) = (parts.next(), parts.next(), parts.next()) else {
        return;
    };
    let (Ok(from), Ok(name)) = (std::str::from_utf8(from), std::str::from_utf8(name)) else {
        return;
    };
    let from = from.to_owned();
    if !first_delivery(&fleet.inner, &from, id) {
        return;
    }
    let mailbox = lock(&fleet.inner.mailboxes).get(name).cloned();
    let channel = fleet.mail_channel(&from);
    let cancelled = CancellationToken::new();
    let alive = {
        let (fleet, channel, cancelled) = (fleet.clone(), channel.clone(), cancelled.clone());
        tokio::spawn(async move {
            let every = fleet.inner.lease / 3;
            // Since when no process has heard this word (invariant 5).
            let mut unheard_since = None;
            for number in 0_u64.. {
                tokio::time::sleep(every).await;
                let alive = format!("alive:{id}:{number}:");
                match fleet.post_anyway(&channel, alive.as_bytes()).await {
                    Ok(0) => {
                        let since = *unheard_since.get_or_insert_with(tokio::time::Instant::now);
                        if since.elapsed() >= fleet.inner.lease {
                            cancelled.cancel();
                            return;
                        }
                    }
                    // Heard, or not sent: Redis failing says nothing of the asker.
                    _ => unheard_since = None,
                }
            }
        })
    };
    lock(&fleet.inner.answering).insert((from.clone(), id), cancelled.clone());
    let letter = Letter {
        body: body.to_vec(),
        fleet: fleet.clone(),
        from,
        id,
        notes: AtomicU64::new(0),
        cancelled,
        _alive: AbortOnDropHandle::new(alive),
    };
    let refused = match mailbox.map(|mailbox| mailbox.try_send(letter)) {
        Some(Ok(())) => return,
        Some(Err(mpsc::error::TrySendError::Full(_))) => "busy",
        Some(Err(mpsc::error::TrySendError::Closed(_))) | None => "refused",
    };
    let fleet = fleet.clone();
    tokio::spawn(async move {
        let _ = fleet
            .post_surely(&channel, format!("{refused}:{id}:").as_bytes())
            .await;
    });
}

/// Cancels the letter `id` of the asker `rest` names (`from:`), if it is being
/// answered here (invariant 5).
fn cancel(fleet: &Fleet, id: u64, rest: &[u8]) {
    let Some(from) = rest
        .strip_suffix(b":")
        .and_then(|from| std::str::from_utf8(from).ok())
    else {
        return;
    };
    if let Some(cancelled) = lock(&fleet.inner.answering).get(&(from.to_owned(), id)) {
        cancelled.cancel();
    }
}

/// How long a letter taken is remembered, so that it is not taken again (invariant 2).
pub(super) const REMEMBERED: Duration = Duration::from_secs(15 * 60);

/// Whether letter `id` of `from` arrives here for the first time (invariant 2).
fn first_delivery(inner: &Inner, from: &str, id: u64) -> bool {
    lock(&inner.delivered).first(from, id, tokio::time::Instant::now())
}

/// The letters taken lately, by sender and number (invariant 2).
pub(super) type Delivered = Remembered<(String, u64), ()>;

impl Delivered {
    /// Whether letter `id` of `from`, arriving `now`, is new; it is remembered.
    pub(super) fn first(&mut self, from: &str, id: u64, now: tokio::time::Instant) -> bool {
        self.keep((from.to_owned(), id), (), now)
    }
}

/// Entries kept for [`REMEMBERED`] from when each came, then forgotten: a map to find
/// them in, and a queue in the order they came.
pub(super) struct Remembered<K, V> {
    entries: HashMap<K, V>,
    order: VecDeque<(tokio::time::Instant, K)>,
}

impl<K, V> Default for Remembered<K, V> {
    fn default() -> Self {
        Self {
            entries: HashMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl<K: Eq + Hash + Clone, V> Remembered<K, V> {
    /// Keeps `value` under `key`, come at `now`, unless one is kept there already:
    /// whether it is new. What came [`REMEMBERED`] before `now` is forgotten first.
    fn keep(&mut self, key: K, value: V, now: tokio::time::Instant) -> bool {
        while let Some((at, _)) = self.order.front()
            && now.duration_since(*at) >= REMEMBERED
        {
            if let Some((_, old)) = self.order.pop_front() {
                self.entries.remove(&old);
            }
        }
        if self.entries.contains_key(&key) {
            return false;
        }
        self.entries.insert(key.clone(), value);
        self.order.push_back((now, key));
        true
    }

    /// How many entries are remembered.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.order.len()
    }
}

/// Drops `inner`'s waiters: none of their answers can arrive any more.
pub(super) fn forget_all(inner: &Inner) {
    lock(&inner.waiting).clear();
}
