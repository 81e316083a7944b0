//! Real services the fleet tests run beside the runtime: a Redis server (Debian's
//! `redis-server`, which `scripts/install-peers` installs) on a Unix socket of a
//! folder the test owns, stopped and started again at will.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
};

/// A `redis-server` of the test's own, listening on a Unix socket only (no port to
/// collide with another test's). Killed when dropped.
#[derive(Debug)]
pub struct RedisServer {
    dir: PathBuf,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a Redis server whose socket and files are in `dir`, and returns once it
    /// accepts connections (it says so on its standard output).
    ///
    /// # Panics
    /// When `redis-server` is not installed (`scripts/install-peers` installs it) or
    /// does not start.
    pub fn start(dir: &Path) -> Self {
        let mut server = Self {
            dir: dir.to_owned(),
            child: None,
        };
        server.resume();
        server
    }

    /// The URL of the server's socket, for the runtime's fleet and the CLI's `[serve.fleet]`.
    pub fn url(&self) -> String {
        format!("unix://{}", self.socket().display())
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("redis.sock")
    }

    /// Stops the server at once (SIGKILL), as a crash or a network cut would; its
    /// data goes with it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_file(self.socket());
    }

    /// Starts the server again on the same socket, empty, if it is stopped.
    pub fn resume(&mut self) {
        if self.child.is_some() {
            return;
        }
        let mut child = Command::new("redis-server")
            .args(["--port", "0", "--unixsocket"])
            .arg(self.socket())
            .args([
                "--unixsocketperm",
                "700",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|error| {
                panic!("redis-server did not start ({error}); `scripts/install-peers` installs it")
            });
        let stdout = child.stdout.take().expect("piped");
        let mut lines = BufReader::new(stdout).lines();
        loop {
            match lines.next() {
                Some(Ok(line))
                    if line
                        .to_ascii_lowercase()
                        .contains("ready to accept connections") =>
                {
                    break;
                }
                Some(Ok(_)) => {}
                _ => panic!("redis-server exited before accepting connections"),
            }
        }
        // The rest of its output is read (and dropped) so that it never blocks.
        std::thread::spawn(move || lines.for_each(drop));
        self.child = Some(child);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}
