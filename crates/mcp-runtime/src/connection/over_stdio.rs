//! Starting the protocol with a local server over its stdin and stdout, in the
//! server's protocol era.
//!
//! With `protocol = "auto"` the era comes from the [`EraMemory`]; when it is unknown,
//! this startup probes it as the specification's stdio backward-compatibility rule
//! says (see [`crate::protocol_era`]): `server/discover` offering 2026-07-28, bounded
//! by the probe bound. A discover result keeps that connection. An answer that marks
//! a handshake server falls back to `initialize` on the same process, as the rule
//! says: the server is running and reading (rmcp hands the transport back, see
//! [`super::reclaim`]), and `initialize` gets the next id, not the probe's (see
//! [`super::renumber`]); on a fresh one when the answer was an initialize result (the
//! server took the probe for `initialize`) or the process ended before answering
//! `initialize`. A result of another kind, such as `{}`, keeps the process. No answer within the bound ends that process (killed and
//! reaped) and starts a fresh one with `initialize`: a server that has not answered
//! one request may not read the next.

use std::time::Duration;

use rmcp::{
    ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt,
    model::{ErrorCode, ProtocolVersion, ServerResult},
    service::{ClientInitializeError, RunningService},
};
use tokio::process::ChildStdin;
use tokio_util::sync::CancellationToken;

use super::{
    ACCEPTED_PROTOCOL_VERSIONS, Client, exit_report, failure, liveness, reclaim,
    renumber::Renumbered,
    version_gate::{Accepted, Gate},
};
use crate::{
    protocol_era::{Entry, Era, EraKey, EraMemory, Plan, ProbeGuard, Resolved},
    transport::{
        error::{RequestError, StartupError},
        framing::StdioTransport,
        splice::{Splicer, SplicingWriter},
        stdio,
    },
};

/// A local server's stdio, wired to the protocol and watched, its request ids
/// going on past the probe's when `initialize` follows it ([`Renumbered`]).
type Transport = Renumbered<liveness::Watched<StdioTransport<SplicingWriter<ChildStdin>>>>;

/// A started local server: its protocol, its process, and the token cancelled when
/// its connection ends.
pub(super) struct Started {
    pub(super) service: RunningService<RoleClient, Client>,
    pub(super) process: stdio::ServerProcess,
    pub(super) ended: CancellationToken,
}

/// Spawns `launch` and starts the protocol as `plan` says; `on_spawn` learns the id of
/// each process as soon as it runs (two of them when a probe went unanswered or its
/// process ended after answering; three when a silent server turns out to speak only
/// 2026-07-28).
///
/// # Cancel safety
///
/// Dropping the future ends every process it started. A probe dropped before it was
/// answered is withdrawn, and another startup probes (see [`crate::protocol_era`]).
pub(super) async fn start(
    server: &str,
    launch: &stdio::Launch,
    client: Client,
    splicer: &Splicer,
    plan: &Plan,
    mut on_spawn: impl FnMut(u32),
) -> Result<Started, StartupError> {
    let on_spawn = &mut on_spawn;
    let stdio = Stdio {
        server,
        launch,
        splicer,
    };
    match plan {
        #[cfg(test)]
        Plan::Handshake => stdio.initialize(client, None, on_spawn).await,
        Plan::Pinned(version) if !version.has_initialize() => {
            match stdio.discover(client, None, on_spawn).await? {
                Discovered::Modern(started) => Ok(*started),
                Discovered::Handshake { why, running } => {
                    if let Some(running) = running {
                        running.end().await;
                    }
                    Err(match *why {
                        ClientInitializeError::NoCompatibleProtocolVersion {
                            server_supported,
                            ..
                        } => StartupError::NoSharedProtocolVersion {
                            offered: vec![version.to_string()],
                            supported: server_supported.iter().map(ToString::to_string).collect(),
                            pinned: true,
                        },
                        why => StartupError::PinnedModernRefused {
                            source: Some(failure::from_initialize(why)),
                        },
                    })
                }
                Discovered::Silent => Err(StartupError::PinnedModernRefused { source: None }),
                Discovered::NoSharedVersion { supported } => {
                    Err(StartupError::NoSharedProtocolVersion {
                        offered: vec![version.to_string()],
                        supported,
                        pinned: true,
                    })
                }
            }
        }
        Plan::Pinned(version) => {
            let client = Client {
                info: client.info.clone().with_protocol_version(version.clone()),
                ..client
            };
            stdio.initialize(client, Some(version), on_spawn).await
        }
        Plan::Auto {
            memory,
            key,
            probe_bound,
            cached,
        } => {
            stdio
                .auto(
                    client,
                    memory,
                    *key,
                    cached.as_ref(),
                    *probe_bound,
                    on_spawn,
                )
                .await
        }
    }
}

/// How `server/discover` went.
enum Discovered {
    /// A discover result: the server speaks 2026-07-28; its connection.
    Modern(Box<Started>),
    /// The server answered as a handshake server (`why`); its process, running and
    /// ready for `initialize`, unless it answered with an initialize result (it took
    /// the probe for `initialize`): then it is gone. A result of another kind (`{}`)
    /// keeps the process, as an error does.
    Handshake {
        why: Box<ClientInitializeError>,
        running: Option<Box<Spawned>>,
    },
    /// No answer within the bound: the process is gone.
    Silent,
    /// The server speaks 2026-07-28's discovery but none of the revisions mcp-runtime
    /// speaks; the versions it lists. Its process is gone.
    NoSharedVersion { supported: Vec<String> },
}

/// A spawned local server: its process, its stdio wired to the protocol, and the
/// token cancelled when its connection ends.
struct Spawned {
    process: stdio::ServerProcess,
    transport: Transport,
    ended: CancellationToken,
}

impl Spawned {
    /// Ends the server: killed and reaped.
    async fn end(self) {
        drop(self.transport);
        self.process.kill().await;
    }
}

/// What one startup of a local server needs to spawn it.
struct Stdio<'a> {
    server: &'a str,
    launch: &'a stdio::Launch,
    splicer: &'a Splicer,
}

impl Stdio<'_> {
    /// `protocol = "auto"`: the era from `memory`; when unknown, the one an earlier
    /// process kept in `cached`, else probed.
    async fn auto(
        &self,
        client: Client,
        memory: &EraMemory,
        key: EraKey,
        cached: Option<&Entry>,
        probe_bound: Duration,
        on_spawn: &mut impl FnMut(u32),
    ) -> Result<Started, StartupError> {
        match memory.resolve(key).await {
            Resolved::Known(Era::Handshake) => self.initialize(client, None, on_spawn).await,
            Resolved::Known(Era::Modern) => {
                match self.discover(client.clone(), None, on_spawn).await? {
                    Discovered::Modern(started) => Ok(*started),
                    // The configuration now runs a handshake server (invariant 5 of
                    // `protocol_era`): forget, and fall back as a probe would.
                    Discovered::Handshake { running, .. } => {
                        memory.forget_modern(key);
                        self.fall_back(running, client, on_spawn).await
                    }
                    // Not reached: without a bound, discover waits for an answer.
                    Discovered::Silent => {
                        memory.forget_modern(key);
                        self.initialize(client, None, on_spawn).await
                    }
                    Discovered::NoSharedVersion { supported } => Err(no_shared(supported)),
                }
            }
            Resolved::Probe(mut probe) => match probe.recall(cached) {
                Some(era) => {
                    self.recalled(era, probe, client, probe_bound, on_spawn)
                        .await
                }
                None => self.probe(probe, client, probe_bound, on_spawn).await,
            },
        }
    }

    /// Starts in the era an earlier process learnt (invariant 7 of `protocol_era`):
    /// a handshake server gets `initialize` at once; a modern one `server/discover`,
    /// waited for as long as the startup may last (no probe bound: a modern server
    /// slow to start is the case this saves). A server that answers as one of the
    /// other era is learnt as such; one that refuses `initialize` as unknown is
    /// probed.
    async fn recalled(
        &self,
        era: Era,
        probe: ProbeGuard,
        client: Client,
        probe_bound: Duration,
        on_spawn: &mut impl FnMut(u32),
    ) -> Result<Started, StartupError> {
        match era {
            Era::Handshake => match self.initialize(client.clone(), None, on_spawn).await {
                Ok(started) => {
                    probe.learn(Era::Handshake);
                    Ok(started)
                }
                Err(error) if refused_as_unknown(&error) => {
                    self.probe(probe, client, probe_bound, on_spawn).await
                }
                Err(error) => Err(error),
            },
            Era::Modern => {
                let discovered = self.discover(client.clone(), None, on_spawn).await?;
                match self
                    .start_as_answered(discovered, probe, client.clone(), on_spawn)
                    .await
                {
                    Ok(started) => started,
                    // Not reached: without a bound, discover waits for an answer.
                    Err(probe) => self.probe(probe, client, probe_bound, on_spawn).await,
                }
            }
        }
    }

    /// Starts in the era `discovered` shows, and teaches it to `probe`: a handshake
    /// server falls back to `initialize`, learnt before this startup sends it so that
    /// the waiters start theirs at the same time. A server that speaks none of
    /// mcp-runtime's revisions still answered `server/discover`: modern. Hands `probe`
    /// back when the server was silent.
    async fn start_as_answered(
        &self,
        discovered: Discovered,
        probe: ProbeGuard,
        client: Client,
        on_spawn: &mut impl FnMut(u32),
    ) -> Result<Result<Started, StartupError>, ProbeGuard> {
        Ok(match discovered {
            Discovered::Modern(started) => {
                probe.learn(Era::Modern);
                Ok(*started)
            }
            Discovered::Handshake { running, .. } => {
                probe.learn(Era::Handshake);
                self.fall_back(running, client, on_spawn).await
            }
            Discovered::NoSharedVersion { supported } => {
                probe.learn(Era::Modern);
                Err(no_shared(supported))
            }
            Discovered::Silent => return Err(probe),
        })
    }

    /// Finds the era with `server/discover` bounded by `probe_bound`, as this key's one
    /// probe in flight, and starts in it.
    async fn probe(
        &self,
        probe: ProbeGuard,
        client: Client,
        probe_bound: Duration,
        on_spawn: &mut impl FnMut(u32),
    ) -> Result<Started, StartupError> {
        // An error drops `probe` unanswered: another startup probes.
        let discovered = self
            .discover(client.clone(), Some(probe_bound), on_spawn)
            .await?;
        let probe = match self
            .start_as_answered(discovered, probe, client.clone(), on_spawn)
            .await
        {
            Ok(started) => return started,
            Err(probe) => probe,
        };
        // No answer within the bound: a modern server slow to start
        // looks the same, so the era is learnt only once `initialize`
        // succeeded; if it fails, the probe is withdrawn.
        match self.initialize(client.clone(), None, on_spawn).await {
            Ok(started) => {
                probe.learn(Era::Handshake);
                Ok(started)
            }
            // `initialize` unknown: a server of 2026-07-28 alone, slow
            // to answer the probe. Asked again, it is waited for as
            // long as the startup may last.
            Err(error) if refused_as_unknown(&error) => {
                match self.discover(client, None, on_spawn).await? {
                    Discovered::Modern(started) => {
                        probe.learn(Era::Modern);
                        Ok(*started)
                    }
                    Discovered::Handshake { running, .. } => {
                        if let Some(running) = running {
                            running.end().await;
                        }
                        Err(error)
                    }
                    Discovered::Silent => Err(error),
                    Discovered::NoSharedVersion { supported } => {
                        probe.learn(Era::Modern);
                        Err(no_shared(supported))
                    }
                }
            }
            Err(error) => Err(error),
        }
    }

    /// Spawns the server and wires its stdio to the protocol.
    fn spawn(&self, on_spawn: &mut impl FnMut(u32)) -> Result<Spawned, StartupError> {
        let spawned = stdio::spawn(self.server, self.launch)?;
        let process = spawned.process;
        on_spawn(process.pid());
        let stdin = SplicingWriter::new(spawned.stdin, self.splicer.clone());
        let transport = StdioTransport::new(
            self.server,
            spawned.stdout,
            stdin,
            self.launch.max_message_bytes,
        );
        // Each process has its own token: a probed process that is given up must not
        // end the connection of the next one.
        let ended = CancellationToken::new();
        let transport = Renumbered::new(liveness::Watched::new(transport, ended.clone()));
        Ok(Spawned {
            process,
            transport,
            ended,
        })
    }

    /// `initialize` after the server answered the probe as a handshake server: on the
    /// process that answered (`running`), as the stdio backward-compatibility rule
    /// says; on a fresh one when there is none, or when that one ended without
    /// answering `initialize` (a server that exits after a request it does not know).
    async fn fall_back(
        &self,
        running: Option<Box<Spawned>>,
        client: Client,
        on_spawn: &mut impl FnMut(u32),
    ) -> Result<Started, StartupError> {
        if let Some(running) = running {
            match self.handshake(*running, client.clone(), None).await {
                Err(
                    StartupError::Exited { .. }
                    | StartupError::Handshake {
                        source: RequestError::Closed { .. } | RequestError::Exited { .. },
                        ..
                    },
                ) => {}
                answered => return answered,
            }
        }
        self.initialize(client, None, on_spawn).await
    }

    /// Spawns the server and runs the `initialize` handshake (see
    /// [`Self::handshake`]).
    async fn initialize(
        &self,
        client: Client,
        pinned: Option<&ProtocolVersion>,
        on_spawn: &mut impl FnMut(u32),
    ) -> Result<Started, StartupError> {
        let spawned = self.spawn(on_spawn)?;
        self.handshake(spawned, client, pinned).await
    }

    /// Runs the `initialize` handshake with a running server. The answered version
    /// must be `pinned`, or, without a pin, one that mcp-runtime speaks.
    async fn handshake(
        &self,
        spawned: Spawned,
        client: Client,
        pinned: Option<&ProtocolVersion>,
    ) -> Result<Started, StartupError> {
        let Spawned {
            mut process,
            transport,
            ended,
        } = spawned;
        let (transport, refusal) = Gate::new(transport, self.server, Accepted::from_pin(pinned));
        let transport = client.tap(transport);
        let service = match client.serve(transport).await {
            Ok(service) => service,
            Err(error) => {
                if let Some(refused) = refusal.take() {
                    // Dropping the process ends the server.
                    return Err(refused);
                }
                // A server that answered (with an error, or a result of another
                // kind) is running: there is no exit to wait for.
                let answered = matches!(
                    error,
                    ClientInitializeError::JsonRpcError(_)
                        | ClientInitializeError::ExpectedInitResult(Some(_))
                );
                let source = failure::from_initialize(error);
                if answered {
                    return Err(StartupError::Handshake {
                        source,
                        stderr_tail: process.stderr_tail().last(super::STDERR_REPORT_LINES),
                    });
                }
                return Err(
                    exit_report(&mut process, |stderr_tail| StartupError::Handshake {
                        source,
                        stderr_tail,
                    })
                    .await,
                );
            }
        };
        liveness::watch_exit(process.exited(), ended.clone());
        Ok(Started {
            service,
            process,
            ended,
        })
    }

    /// Spawns the server and sends `server/discover` offering 2026-07-28, waiting at
    /// most `bound` for the answer when one is given. A handshake answer keeps the
    /// process running, with its transport; no answer, or one that shares no version,
    /// kills and reaps it before this returns.
    async fn discover(
        &self,
        client: Client,
        bound: Option<Duration>,
        on_spawn: &mut impl FnMut(u32),
    ) -> Result<Discovered, StartupError> {
        let Spawned {
            mut process,
            transport,
            ended,
        } = self.spawn(on_spawn)?;
        // rmcp drops the transport when the server answers as a handshake server;
        // the fallback takes it back.
        let (transport, reclaimed) = reclaim::reclaimable(transport);
        let transport = client.tap(transport);
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let discover = client.serve_with_lifecycle(transport, lifecycle);
        let answer = match bound {
            Some(bound) => tokio::time::timeout(bound, discover).await.ok(),
            None => Some(discover.await),
        };
        // The transport, back from rmcp unless the connection started: after a
        // failed start (or none within the bound) it was dropped.
        let transport = reclaimed.take();
        let error = match answer {
            Some(Ok(service)) => {
                debug_assert_eq!(
                    service
                        .peer()
                        .peer_info()
                        .map(|info| info.protocol_version.clone()),
                    Some(ProtocolVersion::V_2026_07_28),
                    "discover selects from the versions offered"
                );
                liveness::watch_exit(process.exited(), ended.clone());
                return Ok(Discovered::Modern(Box::new(Started {
                    service,
                    process,
                    ended,
                })));
            }
            Some(Err(error)) => error,
            None => {
                drop(transport);
                process.kill().await;
                return Ok(Discovered::Silent);
            }
        };
        match classify(error) {
            Classified::Handshake(why) => {
                // rmcp drops its transport before a failed start returns; a server that
                // answered with an initialize result took the probe for `initialize`,
                // and gets a fresh process (see `Discovered`).
                let took_it_for_initialize = matches!(
                    *why,
                    ClientInitializeError::ExpectedInitResult(Some(
                        ServerResult::InitializeResult(_)
                    ))
                );
                let running = match transport {
                    Some(mut transport) if !took_it_for_initialize => {
                        // `initialize` comes from a new engine, numbering from 0 again.
                        transport.go_on();
                        Some(Box::new(Spawned {
                            process,
                            transport,
                            ended,
                        }))
                    }
                    transport => {
                        drop(transport);
                        process.kill().await;
                        None
                    }
                };
                Ok(Discovered::Handshake { why, running })
            }
            Classified::NoSharedVersion { supported } => {
                drop(transport);
                process.kill().await;
                Ok(Discovered::NoSharedVersion { supported })
            }
            Classified::Failed(source) => {
                // Closing its stdin lets a server that failed exit.
                drop(transport);
                Err(
                    exit_report(&mut process, |stderr_tail| StartupError::Handshake {
                        source,
                        stderr_tail,
                    })
                    .await,
                )
            }
        }
    }
}

/// Whether `error` is a server's refusal of `initialize` as a method it does not
/// know: what a server of 2026-07-28 alone answers.
fn refused_as_unknown(error: &StartupError) -> bool {
    matches!(
        error,
        StartupError::Handshake {
            source: RequestError::Server { code, .. },
            ..
        } if *code == ErrorCode::METHOD_NOT_FOUND.0
    )
}

/// What a failed `server/discover` says about the server.
pub(super) enum Classified {
    /// It is a handshake server.
    Handshake(Box<ClientInitializeError>),
    /// It speaks none of the versions mcp-runtime speaks; the versions it lists.
    NoSharedVersion { supported: Vec<String> },
    /// It failed to start another way.
    Failed(crate::transport::error::RequestError),
}

/// Reads a failed `server/discover` as the specification's stdio backward-compatibility
/// rule does. rmcp makes the same reading inside its `Auto` lifecycle, but keeps it
/// private (and that lifecycle waits a fixed 10 s, then falls back on the same
/// process), so it is made here:
/// 1. a correlated JSON-RPC error that is not a modern rejection (-32021 missing client
///    capability, -32020 header mismatch) marks a handshake server, whatever its code:
///    legacy servers answer an unknown request before `initialize` as they like;
/// 2. a modern rejection is a startup error: the server speaks 2026-07-28 and refused
///    this client;
/// 3. "no shared version" after rmcp retried -32022 (unsupported protocol version)
///    within the versions offered: a handshake server when the server lists a
///    handshake revision mcp-runtime speaks (a dual-era server that does not speak
///    2026-07-28), else a startup error naming both lists;
/// 4. a success that is not a discover result marks a handshake server too: it
///    answered a method it does not know as if it were another;
/// 5. anything else (the connection closed, an answer the transport refused as
///    unusable, [`crate::transport::refused`]) is a startup error.
///
/// Over Streamable HTTP the same reading applies to the answer of the discover `POST`
/// ([`super::over_http`]).
pub(super) fn classify(error: ClientInitializeError) -> Classified {
    match error {
        ClientInitializeError::ExpectedInitResult(Some(_)) => {
            Classified::Handshake(Box::new(error))
        }
        ClientInitializeError::JsonRpcError(ref data)
            if data.code != ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
                && data.code != ErrorCode::HEADER_MISMATCH
                && crate::transport::refused::refusal(data).is_none() =>
        {
            Classified::Handshake(Box::new(error))
        }
        ClientInitializeError::NoCompatibleProtocolVersion {
            ref server_supported,
            ..
        } => {
            if server_supported
                .iter()
                .any(|version| ACCEPTED_PROTOCOL_VERSIONS.contains(version))
            {
                Classified::Handshake(Box::new(error))
            } else {
                Classified::NoSharedVersion {
                    supported: server_supported.iter().map(ToString::to_string).collect(),
                }
            }
        }
        other => Classified::Failed(failure::from_initialize(other)),
    }
}

/// The error for a server that supports none of the revisions mcp-runtime speaks (the
/// versions it lists: `supported`).
pub(super) fn no_shared(supported: Vec<String>) -> StartupError {
    StartupError::NoSharedProtocolVersion {
        offered: std::iter::once(ProtocolVersion::V_2026_07_28)
            .chain(ACCEPTED_PROTOCOL_VERSIONS)
            .map(|version| version.to_string())
            .collect(),
        supported,
        pinned: false,
    }
}

#[cfg(test)]
mod tests;
