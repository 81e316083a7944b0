//! Starting the protocol with a local server over its stdin and stdout.

use rmcp::RoleClient;
use rmcp::{ServiceExt, service::RunningService};
use tokio_util::sync::CancellationToken;

use super::{Client, exit_report, failure, liveness};
use crate::{
    error::StartupError,
    transport::{
        framing::StdioTransport,
        splice::{Splicer, SplicingWriter},
        stdio,
    },
};

/// Spawns `launch` and runs the handshake with it; `on_spawn` learns the process id as
/// soon as it runs. `ended` is cancelled when the connection ends.
///
/// # Cancel safety
///
/// Dropping the future ends the server process.
pub(super) async fn start(
    server: &str,
    launch: &stdio::Launch,
    client: Client,
    splicer: &Splicer,
    ended: &CancellationToken,
    on_spawn: impl FnOnce(u32),
) -> Result<
    (
        RunningService<RoleClient, Client>,
        Option<stdio::ServerProcess>,
    ),
    StartupError,
> {
    let spawned = stdio::spawn(server, launch)?;
    let mut process = spawned.process;
    on_spawn(process.pid());
    let stdin = SplicingWriter::new(spawned.stdin, splicer.clone());
    let transport = StdioTransport::new(server, spawned.stdout, stdin, launch.max_message_bytes);
    match client
        .serve(liveness::Watched::new(transport, ended.clone()))
        .await
    {
        Ok(service) => {
            liveness::watch_exit(process.exited(), ended.clone());
            Ok((service, Some(process)))
        }
        Err(error) => {
            let source = failure::from_initialize(error);
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
