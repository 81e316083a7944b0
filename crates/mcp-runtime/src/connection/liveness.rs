//! Learning that a connection ended: the transport, watched.
//!
//! rmcp's serve loop ends when its transport's input ends (a local server closed its
//! stdout, usually by exiting; an HTTP session's worker gave up) and it says so to
//! nobody but the requests it fails. [`Watched`] wraps the transport the loop owns
//! and cancels a token when the input ends or the loop drops the transport, whatever
//! the reason, so the runtime can mark the server unavailable at once rather than at
//! its next call.
//!
//! Invariant: the token is cancelled no later than the loop fails the requests in
//! flight (they are failed when the loop ends, after the input ended or the transport
//! was dropped), so a failed call that finds the token not cancelled did not fail
//! because the connection ended.

use std::borrow::Cow;

use rmcp::{
    RoleClient,
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use tokio_util::sync::{CancellationToken, DropGuard};

/// A transport that cancels its token when its input ends or it is dropped.
pub(super) struct Watched<T> {
    inner: T,
    ended: CancellationToken,
    _dropped: DropGuard,
}

impl<T> Watched<T> {
    /// `inner`, watched by `ended`.
    pub(super) fn new(inner: T, ended: CancellationToken) -> Self {
        Self {
            inner,
            _dropped: ended.clone().drop_guard(),
            ended,
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let ended = self.ended.clone();
        let received = self.inner.receive();
        async move {
            let message = received.await;
            if message.is_none() {
                ended.cancel();
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
