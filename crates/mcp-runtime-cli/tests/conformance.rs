//! The official MCP conformance suite's client scenarios, run against this binary.
//!
//! Each test runs one scenario through `scripts/conformance` (the suite pinned in
//! `peers/conformance`, with its own Node.js 22) and `scripts/conformance-client` (the
//! CLI driven as each scenario expects of a client), and passes only when the suite's
//! verdict does: no failed check, no warning, the client exited cleanly. Whatever the
//! suite said is printed when it does not pass. `scripts/conformance-table` runs every
//! client scenario for the table in `docs/protocol.md`. The server scenarios, against
//! the gateway, are in `conformance_server.rs`.
//!
//! Invariants:
//! 1. Every scenario of the conformance suite that the runtime claims runs here,
//!    each as its own test, at the revision the suite picks for it (`2025-11-25` for
//!    the handshake scenarios, `2026-07-28` for those introduced there); the
//!    dual-era ones also run at `2026-07-28`.
//! 2. Nothing is ignored and no check is relaxed: a scenario passes with no failed
//!    check and no warning, or the test fails.
//! 3. Every `auth/*` scenario mcp-runtime passes runs here too (module `auth`), at
//!    every revision it lists; the ones it does not pass yet are in the table of
//!    `docs/protocol.md` with the reason, and get their test when they pass.
//! 4. The verdict is the suite's checks, not the client's exit status: a client that
//!    exits cleanly without doing what the scenario asks fails.

use std::{path::Path, process::Command};

use crate::support::{repo, stderr, stdout};

/// The suite's verdict on one client scenario, with `binary` as `mcp-runtime`.
fn run_scenario_with(name: &str, revision: Option<&str>, binary: &Path) -> std::process::Output {
    let mut command = Command::new(repo().join("scripts/conformance"));
    // The suite splits `--command` on spaces: a path relative to the repository keeps
    // a checkout under a directory with spaces working.
    command.args([
        "client",
        "--command",
        "scripts/conformance-client",
        "--scenario",
        name,
        "--timeout",
        "30000",
    ]);
    if let Some(revision) = revision {
        command.args(["--spec-version", revision]);
    }
    command
        .current_dir(repo())
        .env("MCP_RUNTIME_BIN", binary)
        .output()
        .expect("scripts/conformance runs (python3 and bash are required)")
}

/// Runs one client scenario against this binary and fails with the suite's report
/// unless it passes.
fn assert_scenario_passes(name: &str, revision: Option<&str>) {
    let output = run_scenario_with(name, revision, Path::new(env!("CARGO_BIN_EXE_mcp-runtime")));
    assert!(
        output.status.success(),
        "conformance scenario `{name}` (revision {}) did not pass ({}); the suite said:\n\
         --- stdout\n{}\n--- stderr\n{}",
        revision.unwrap_or("the suite's default"),
        output.status,
        stdout(&output),
        stderr(&output),
    );
}

#[test]
fn scenario_initialize_passes() {
    assert_scenario_passes("initialize", None);
}

#[test]
fn scenario_tools_call_passes() {
    assert_scenario_passes("tools_call", None);
}

#[test]
fn scenario_tools_call_passes_at_2026_07_28() {
    assert_scenario_passes("tools_call", Some("2026-07-28"));
}

/// The call answers the server's questions with their forms' defaults
/// (`--elicitation accept-defaults`), as the scenario expects.
#[test]
fn scenario_elicitation_sep1034_client_defaults_passes() {
    assert_scenario_passes("elicitation-sep1034-client-defaults", None);
}

#[test]
fn scenario_sse_retry_passes() {
    assert_scenario_passes("sse-retry", None);
}

#[test]
fn scenario_request_metadata_passes() {
    assert_scenario_passes("request-metadata", None);
}

#[test]
fn scenario_sep_2322_client_request_state_passes() {
    assert_scenario_passes("sep-2322-client-request-state", None);
}

#[test]
fn scenario_http_standard_headers_passes() {
    assert_scenario_passes("http-standard-headers", None);
}

#[test]
fn scenario_http_custom_headers_passes() {
    assert_scenario_passes("http-custom-headers", None);
}

#[test]
fn scenario_http_invalid_tool_headers_passes() {
    assert_scenario_passes("http-invalid-tool-headers", None);
}

#[test]
fn scenario_json_schema_ref_no_deref_passes() {
    assert_scenario_passes("json-schema-ref-no-deref", None);
}

#[test]
fn scenario_json_schema_2020_12_preservation_passes() {
    assert_scenario_passes("json-schema-2020-12-preservation", None);
}

#[test]
fn scenario_json_schema_2020_12_preservation_passes_at_2026_07_28() {
    assert_scenario_passes("json-schema-2020-12-preservation", Some("2026-07-28"));
}

/// Invariant 3: a stand-in for the binary that reports the server ready with no tools,
/// so the client exits cleanly having called nothing.
#[test]
fn a_client_that_exits_cleanly_without_calling_the_tool_fails() {
    let dir = tempfile::tempdir().unwrap();
    let idle = dir.path().join("idle-mcp-runtime");
    std::fs::write(
        &idle,
        "#!/bin/sh\necho '{\"servers\": [{\"name\": \"conformance\", \"state\": \"ready\"}], \"tools\": []}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&idle, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let output = run_scenario_with("tools_call", None, &idle);
    let report = stderr(&output);
    assert!(
        !output.status.success(),
        "the suite passed a client that never called the tool:\n{report}"
    );
    assert!(
        !report.contains("Client exited with code") && report.contains("- ToolAddNumbers:"),
        "the failure should come from the scenario's check, not the client's exit status:\n{report}"
    );
}

/// The OAuth scenarios: `mcp-runtime login` with a browser that follows the
/// authorization URL's redirects, then `tools` and `call` (see
/// `scripts/conformance-client`).
mod auth {
    use super::assert_scenario_passes;

    /// Runs `name` at each of `revisions`.
    fn passes_at(name: &str, revisions: &[&str]) {
        for revision in revisions {
            assert_scenario_passes(name, Some(revision));
        }
    }

    const BOTH: &[&str] = &["2025-11-25", "2026-07-28"];
    const MODERN: &[&str] = &["2026-07-28"];

    #[test]
    fn metadata_discovery_in_every_variant() {
        for name in ["default", "var1", "var2", "var3"] {
            passes_at(&format!("auth/metadata-{name}"), BOTH);
        }
    }

    #[test]
    fn scopes_from_the_challenge_the_metadata_or_none() {
        for name in [
            "scope-from-www-authenticate",
            "scope-from-scopes-supported",
            "scope-omitted-when-undefined",
        ] {
            passes_at(&format!("auth/{name}"), BOTH);
        }
    }

    #[test]
    fn a_pre_registered_client_or_its_metadata_document_is_the_identity() {
        passes_at("auth/pre-registration", BOTH);
        passes_at("auth/basic-cimd", BOTH);
    }

    #[test]
    fn a_scope_the_server_asks_for_later_is_added_by_a_new_login() {
        passes_at("auth/scope-step-up", BOTH);
    }

    #[test]
    fn a_new_authorization_server_gets_a_new_registration() {
        passes_at("auth/authorization-server-migration", MODERN);
    }

    #[test]
    fn a_scope_that_never_suffices_is_asked_for_at_most_three_times() {
        passes_at("auth/scope-retry-limit", BOTH);
    }

    #[test]
    fn every_token_endpoint_authentication_method() {
        for method in ["basic", "post", "none"] {
            passes_at(&format!("auth/token-endpoint-auth-{method}"), BOTH);
        }
    }

    #[test]
    fn the_2025_03_26_metadata_and_endpoint_fallbacks() {
        for name in [
            "2025-03-26-oauth-metadata-backcompat",
            "2025-03-26-oauth-endpoint-fallback",
        ] {
            passes_at(&format!("auth/{name}"), &["2025-03-26"]);
        }
    }

    #[test]
    fn resource_and_offline_access_rules() {
        for name in [
            "resource-mismatch",
            "offline-access-scope",
            "offline-access-not-supported",
        ] {
            passes_at(&format!("auth/{name}"), MODERN);
        }
    }

    /// Extensions are on no revision's timeline: the suite refuses `--spec-version`
    /// for them and runs them at its default, 2025-11-25.
    #[test]
    fn machine_clients_with_a_secret_or_a_signed_assertion() {
        for name in ["client-credentials-basic", "client-credentials-jwt"] {
            assert_scenario_passes(&format!("auth/{name}"), None);
        }
    }

    #[test]
    fn a_workload_presents_its_platforms_identity_token() {
        assert_scenario_passes("auth/wif-jwt-bearer", None);
    }

    #[test]
    fn the_authorization_response_issuer_is_checked() {
        for name in [
            "iss-supported",
            "iss-not-advertised",
            "iss-supported-missing",
            "iss-wrong-issuer",
            "iss-unexpected",
            "iss-normalized",
            "metadata-issuer-mismatch",
        ] {
            passes_at(&format!("auth/{name}"), MODERN);
        }
    }
}
