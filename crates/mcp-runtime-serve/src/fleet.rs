//! `[serve.fleet]`: the Redis a gateway's replicas share their listings through (see
//! `mcp_runtime::fleet`), read from the environment the table names.

use mcp_runtime::{
    Config,
    config::{OAuthConfig, ServeFleet},
    fleet::{DEFAULT_LEASE, DEFAULT_TIMEOUT, Fleet, FleetError},
};

/// Why a replica cannot join its fleet: it refuses to start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetRefused {
    /// A variable `[serve.fleet]` names is not set.
    #[error(
        "`[serve.fleet] {key}` names `{variable}`, which is not set or is empty: set it to {what}"
    )]
    NotSet {
        /// The key naming the variable.
        key: &'static str,
        /// The variable's name.
        variable: String,
        /// What the variable should hold.
        what: &'static str,
    },
    /// The URL or the key is not usable (neither is repeated). Its cause is the
    /// source, not part of this text: a chain's reader would print it twice.
    #[error("`[serve.fleet]`")]
    Invalid(#[from] FleetError),
    /// A server reached with an OAuth login: its tokens live in this machine's store,
    /// which the other replicas cannot read or refresh.
    #[error(
        "`[serve.fleet]`: server `{0}` signs in with OAuth, whose tokens this replica's store keeps for itself; \
         a fleet cannot serve it yet (serve it from a gateway without `[serve.fleet]`, or give it a static token through `bearer_token_env_var`)"
    )]
    OAuthServer(String),
}

/// This replica's link to the fleet `fleet` describes, for the servers of `config`.
/// Must be called inside a tokio runtime.
pub fn connect(fleet: &ServeFleet, config: &Config) -> Result<Fleet, FleetRefused> {
    if let Some(server) = config
        .servers
        .values()
        .find(|server| server.enabled && server.oauth != OAuthConfig::default())
    {
        return Err(FleetRefused::OAuthServer(server.name.clone()));
    }
    let read = |key, variable: &String, what| {
        std::env::var(variable)
            .ok()
            .filter(|value| !value.is_empty())
            .ok_or_else(|| FleetRefused::NotSet {
                key,
                variable: variable.clone(),
                what,
            })
    };
    let url = read(
        "redis_url_env_var",
        &fleet.redis_url_env_var,
        "the Redis URL",
    )?;
    let key = read(
        "key_env_var",
        &fleet.key_env_var,
        "the fleet key, 32 bytes or more, the same on every replica",
    )?;
    let replica = fleet.replica.clone().unwrap_or_else(default_replica);
    let timeout = fleet.redis_timeout.unwrap_or(DEFAULT_TIMEOUT);
    Ok(Fleet::connect_with(
        &url,
        key.as_bytes(),
        replica,
        timeout,
        DEFAULT_LEASE,
    )?)
}

/// The host's name and this process's id.
fn default_replica() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "replica".into());
    format!("{host}-{}", std::process::id())
}
