//! What several test modules need: the binary's output as text, the fixture server.

use std::{
    path::{Path, PathBuf},
    process::Output,
};

pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// The fixture server, built beside this binary by `cargo test --workspace`.
pub fn fixture_server() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_mcp-runtime")).with_file_name("mcp-fixture");
    assert!(
        path.exists(),
        "{} is missing: build the whole workspace first (scripts/test does)",
        path.display()
    );
    path
}
