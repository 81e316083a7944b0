//! Taking a transport back from rmcp after a start that did not take.
//!
//! rmcp's `serve_with_lifecycle` owns its transport and drops it when the start
//! fails. A local server that answered `server/discover` as a handshake server is
//! still running and reads `initialize` on the same pipes: the 2026-07-28 stdio
//! backward-compatibility rule falls back on the same connection. [`reclaimable`]
//! wraps the transport so that rmcp's drop hands it back instead, and the fallback
//! needs no second process. (rmcp's own `Auto` lifecycle falls back on the same
//! transport too, but waits a fixed 10 s for silence and keys the fallback to
//! errors alone; see [`super::over_stdio`].)
//!
//! Invariants:
//! 1. Once the [`Reclaimed`] handle is gone, dropping the [`Reclaim`] drops the
//!    transport at once, as if it had not been wrapped: a connection that started
//!    keeps its transport's end-of-connection signal ([`super::liveness`]).
//! 2. While the handle lives, a dropped [`Reclaim`] leaves its transport in the
//!    handle, in the state rmcp left it: messages it had not read yet stay unread.

use std::{
    borrow::Cow,
    sync::{Arc, Mutex, PoisonError, Weak},
};

use rmcp::{
    RoleClient,
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};

/// `inner`, wrapped to be handed back when dropped, and the handle it goes to.
pub(super) fn reclaimable<T>(inner: T) -> (Reclaim<T>, Reclaimed<T>) {
    let slot = Arc::new(Mutex::new(None));
    let reclaim = Reclaim {
        inner: Some(inner),
        slot: Arc::downgrade(&slot),
    };
    (reclaim, Reclaimed(slot))
}

/// A transport that goes back to its [`Reclaimed`] handle when dropped.
pub(super) struct Reclaim<T> {
    /// `Some` until dropped.
    inner: Option<T>,
    slot: Weak<Mutex<Option<T>>>,
}

impl<T> Reclaim<T> {
    fn inner(&mut self) -> &mut T {
        self.inner
            .as_mut()
            .expect("the transport is taken only when dropped")
    }
}

impl<T> Drop for Reclaim<T> {
    fn drop(&mut self) {
        // Without the handle, `inner` is dropped here (invariant 1).
        if let (Some(inner), Some(slot)) = (self.inner.take(), self.slot.upgrade()) {
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(inner);
        }
    }
}

/// Where a dropped [`Reclaim`] leaves its transport.
pub(super) struct Reclaimed<T>(Arc<Mutex<Option<T>>>);

impl<T> Reclaimed<T> {
    /// The transport, once its [`Reclaim`] was dropped.
    pub(super) fn take(self) -> Option<T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Reclaim<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner().send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.inner().receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner().close()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    /// Records its own drop.
    struct Marker(Arc<AtomicBool>);

    impl Drop for Marker {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_dropped_reclaim_hands_its_transport_to_the_handle() {
        let dropped = Arc::new(AtomicBool::new(false));
        let (reclaim, reclaimed) = reclaimable(Marker(dropped.clone()));
        drop(reclaim);
        assert!(!dropped.load(Ordering::SeqCst));
        let marker = reclaimed.take();
        assert!(marker.is_some());
        drop(marker);
        assert!(dropped.load(Ordering::SeqCst));
    }

    #[test]
    fn without_the_handle_the_transport_is_dropped_with_the_reclaim() {
        let dropped = Arc::new(AtomicBool::new(false));
        let (reclaim, reclaimed) = reclaimable(Marker(dropped.clone()));
        drop(reclaimed);
        assert!(!dropped.load(Ordering::SeqCst));
        drop(reclaim);
        assert!(dropped.load(Ordering::SeqCst));
    }

    #[test]
    fn the_handle_is_empty_while_the_reclaim_lives() {
        let (reclaim, reclaimed) = reclaimable(());
        assert!(reclaimed.take().is_none());
        drop(reclaim);
    }
}
