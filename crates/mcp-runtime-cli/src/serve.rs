//! `mcp-runtime serve`: the configured servers served as one MCP server
//! ([`mcp_runtime_serve::Gateway`]): to one client on stdin and stdout until stdin
//! closes, or over Streamable HTTP to many ([`mcp_runtime_serve::http`]) until a
//! signal; then every server the gateway started is shut down.

use std::{net::SocketAddr, sync::Arc};

use anyhow::Context;
use mcp_runtime::{Config, ListingRegistry, StartOptions, fleet::Fleet};
use mcp_runtime_serve::{Exposure, Gateway, Upstreams, http};
use rmcp::{ServiceExt, service::ServerInitializeError};

/// Serves `config`'s servers on stdio until the client closes stdin, then shuts them
/// down. They start once the client has said what it can do (at `initialize`), so
/// that their questions go to it as far as it answers them.
///
/// # Cancel safety
///
/// Dropping the future drops the runtime, which ends every server process it started.
pub async fn stdio(config: Config, options: StartOptions) -> anyhow::Result<()> {
    // A gateway killed outright leaves no server behind.
    mcp_runtime::end_servers_with_this_process();
    let (options, fleet) = in_fleet(&config, options)?;
    let upstreams = Upstreams::per_client(config.clone(), options);
    let gateway = gateway(&config, upstreams.clone(), fleet.as_ref());
    let served = gateway
        .clone()
        .serve(mcp_runtime_serve::stdio::stdio())
        .await;
    let ended = match served {
        Ok(running) => running
            .waiting()
            .await
            .map(drop)
            .context("serving the client"),
        // stdin closed before `initialize`: nobody to serve.
        Err(ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(error) => Err(error).context("the client's handshake failed"),
    };
    // The service and its handler are gone: the runtime is this function's again.
    if let Some(runtime) = gateway.into_runtime() {
        match Arc::try_unwrap(runtime) {
            Ok(runtime) => runtime.shutdown().await,
            Err(_) => {
                tracing::warn!("the runtime is still shared; its servers end when it is dropped");
            }
        }
    }
    upstreams.close_shared().await;
    ended
}

/// Serves `config`'s servers over HTTP on `listen`, each client session with servers
/// of its own started with `options`, until `shutdown` resolves. Prints the endpoint's
/// URL on stdout once it accepts connections.
///
/// # Cancel safety
///
/// Dropping the future ends every session, and with them every server process.
pub async fn http(
    config: Config,
    options: StartOptions,
    listen: SocketAddr,
    shutdown: impl Future<Output = u8>,
) -> anyhow::Result<()> {
    mcp_runtime::end_servers_with_this_process();
    let mut settings = http::Settings::new(&config.serve, listen)?;
    let (options, fleet) = in_fleet(&config, options)?;
    let gateway = gateway(
        &config,
        Upstreams::per_client(config.clone(), options),
        fleet.as_ref(),
    );
    if let Some(fleet) = fleet {
        settings = settings.with_fleet(fleet);
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let local = listener.local_addr()?;
    println!("listening on http://{local}{}", http::MCP_PATH);
    http::serve(listener, gateway, settings, async {
        shutdown.await;
    })
    .await
    .context("serving HTTP")
}

/// `options` sharing listings through the fleet `[serve.fleet]` describes, if the
/// config has one, and the fleet.
fn in_fleet(
    config: &Config,
    options: StartOptions,
) -> anyhow::Result<(StartOptions, Option<Fleet>)> {
    let Some(table) = &config.serve.fleet else {
        return Ok((options, None));
    };
    let fleet = mcp_runtime_serve::fleet::connect(table, config)?;
    tracing::info!(
        replica = fleet.replica(),
        "sharing listings across the fleet"
    );
    let registry = ListingRegistry::new().with_fleet(fleet.clone());
    Ok((options.with_listing_registry(registry), Some(fleet)))
}

/// The gateway over `upstreams`, its lists as `config`'s `[serve]` table says, a
/// replica of `fleet` if it has one.
fn gateway(config: &Config, upstreams: Upstreams, fleet: Option<&Fleet>) -> Gateway {
    let serve = &config.serve;
    let gateway = Gateway::for_upstreams(upstreams)
        .with_tool_names(serve.tool_names)
        .with_exposure(Exposure::new(
            serve.expose,
            serve.always_expose.clone(),
            serve.max_exposed_tools,
        ));
    match fleet {
        Some(fleet) => gateway.with_fleet(fleet),
        None => gateway,
    }
}
