//! Learning that a connection ended: the transport and the process, watched.
//!
//! rmcp's serve loop ends when its transport's input ends (a local server closed its
//! stdout, usually by exiting; an HTTP session's worker gave up) and it says so to
//! nobody but the requests it fails. [`Watched`] wraps the transport the loop owns
//! and cancels a token when the input ends or the loop drops the transport, whatever
//! the reason, so the runtime can mark the server unavailable at once rather than at
//! its next call.
//!
//! A local server's stdout does not always end when the server does: a process it
//! started (`sh -c 'helper & exec server'`, any wrapper whose child inherits stdout)
//! may hold it open long after the server exited. So [`watch_exit`] also cancels the
//! token when the server's process exits, once the server is ready (a server still
//! starting is watched by its startup).
//!
//! Invariants:
//! 1. The token is cancelled no later than the loop fails the requests in flight
//!    (they are failed when the loop ends, after the input ended or the transport was
//!    dropped), so a failed call that finds the token not cancelled did not fail
//!    because the connection ended.
//! 2. Once a ready local server's process has exited, the token is cancelled without
//!    waiting for its stdout to end; the exit is observed without reaping the process
//!    (see [`crate::transport::stdio`]).
//! 3. The exit watch ends when the token is cancelled, whatever cancelled it, so it
//!    never outlives its connection's transport.

use std::borrow::Cow;

use rmcp::{
    RoleClient,
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use tokio_util::sync::{CancellationToken, DropGuard};

/// Cancels `ended` once `exited` resolves (the server's process has exited); ends
/// early if `ended` is cancelled otherwise (invariants 2 and 3).
pub(super) fn watch_exit(
    exited: impl Future<Output = ()> + Send + 'static,
    ended: CancellationToken,
) {
    tokio::spawn(async move {
        tokio::select! {
            () = exited => ended.cancel(),
            () = ended.cancelled() => {}
        }
    });
}

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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{
        binding::Binding,
        connection::{Connection, error::CallError, sh_server},
        transport::error::{ProcessExit, RequestError, StartupError},
    };

    /// A stdio server in `sh`: it answers `initialize`, and on `tools/call` starts a
    /// `sleep` that inherits its stdout, writes a line to stderr and exits with 3.
    const DYING_SERVER: &str = r#"
while IFS= read -r line; do
  case "$line" in
    *'"method":"initialize"'*)
      id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}\n' "$id" ;;
    *'"method":"tools/call"'*)
      sleep 600 &
      echo "dying" >&2
      exit 3 ;;
  esac
done
"#;

    /// A stdio server in `sh`: it starts a `sleep` that inherits its stdout and
    /// answers `initialize`; it answers `tools/call` and exits at once.
    const LAST_WORDS_SERVER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  case "$line" in
    *'"method":"initialize"'*)
      sleep 600 &
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"0"}}}\n' "$id" ;;
    *'"method":"tools/call"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"last words"}]}}\n' "$id"
      exit 0 ;;
  esac
done
"#;

    #[tokio::test]
    async fn a_server_that_exits_while_a_child_holds_its_stdout_ends_the_connection() {
        let connection = Connection::connect(
            "dying",
            &sh_server(DYING_SERVER, &[]),
            &Binding::Local,
            |_| {},
        )
        .await
        .unwrap();
        assert!(!connection.has_ended());
        let timeout = Duration::from_secs(120);
        let error = connection
            .call_plain("t", timeout)
            .await
            .expect_err("the call fails");
        // Failed because the server exited, not timed out: the call did not wait for
        // its 120 s timeout.
        assert!(
            matches!(
                &error,
                CallError::Failed {
                    source: RequestError::Exited { .. },
                    ..
                }
            ),
            "{error:?}"
        );
        let message = crate::transport::error::chain(&error);
        assert!(
            message.starts_with("tool `t` on server `dying` failed: ")
                && message.contains("exit status: 3")
                && message.contains("dying"),
            "{message}"
        );
        assert!(connection.has_ended());
        assert_eq!(connection.cancellations.in_flight(), 0, "nothing is owed");
        match connection.closed_error().await {
            Some(StartupError::Exited {
                status,
                stderr_tail,
            }) => {
                assert_eq!(status, ProcessExit::Code(3));
                assert_eq!(stderr_tail, ["dying"]);
            }
            other => panic!("not an exit: {other:?}"),
        }
        connection.kill();
    }

    #[tokio::test]
    async fn an_answer_written_before_the_server_exits_still_counts() {
        let endpoint = sh_server(LAST_WORDS_SERVER, &[]);
        let connection = Connection::connect("last", &endpoint, &Binding::Local, |_| {})
            .await
            .unwrap();
        let timeout = Duration::from_secs(120);
        let result = connection
            .call_plain("t", timeout)
            .await
            .expect("the answer arrives");
        assert_eq!(
            result
                .content()
                .next()
                .and_then(|block| block.as_text().map(str::to_owned)),
            Some("last words".to_owned())
        );
        assert_eq!(connection.cancellations.in_flight(), 0);
        connection.ended().await;
        assert!(connection.has_ended());
        connection.kill();
    }
}
