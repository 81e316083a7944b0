//! Integration tests: the runtime against real server processes — the workspace's
//! fixture server and pinned peers from other projects.

mod support;

mod background_startup;
mod calls;
mod cancellation;
mod config_files;
mod era_cache;
mod era_matrix;
mod everything;
mod exact_arguments;
mod faults;
mod fleet;
mod host_handlers;
mod hostile_servers;
mod http;
mod http_eras;
mod legacy_sse;
mod listing;
mod network;
mod oauth_accounts;
mod oauth_login;
mod oauth_machine;
mod oauth_server;
mod peers;
mod processes;
mod progress;
mod protocol_eras;
mod restart;
mod sandbox;
mod search_quality;
mod shared_listing;
mod startup;
mod subscriptions;
mod tasks;
