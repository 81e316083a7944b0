//! Real services the fleet tests run beside the runtime, from Debian's packages
//! (`scripts/install-peers` installs them): a Redis server on a Unix socket of a
//! folder the test owns, stopped and started again at will, and haproxy in front of
//! a gateway's replicas.

use std::{
    io::{BufRead, BufReader, Write},
    net::{SocketAddr, TcpListener},
    os::{
        fd::AsRawFd,
        unix::{net::UnixStream, process::CommandExt},
    },
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
};

/// A `redis-server` of the test's own, listening on a Unix socket only (no port to
/// collide with another test's). Killed when dropped.
#[derive(Debug)]
pub struct RedisServer {
    dir: PathBuf,
    child: Option<Child>,
    /// The loopback port it also listens on, if it does.
    port: Option<u16>,
    /// Whether that port speaks TLS, under `tls.crt` and `tls.key` in `dir`.
    tls: bool,
}

impl RedisServer {
    /// Starts a Redis server whose socket and files are in `dir`, and returns once it
    /// accepts connections (it says so on its standard output).
    ///
    /// # Panics
    /// When `redis-server` is not installed (`scripts/install-peers` installs it) or
    /// does not start.
    pub fn start(dir: &Path) -> Self {
        Self::started(dir, None)
    }

    /// [`RedisServer::start`], listening on a free loopback port as well (found by
    /// binding port 0 and letting it go: for benchmarks, which are not run beside
    /// other tests).
    pub fn start_with_port(dir: &Path) -> Self {
        Self::started(dir, Some(free_port()))
    }

    /// [`RedisServer::start`], listening on a free loopback port for TLS as well, under
    /// a certificate naming `127.0.0.1` issued by a CA of its own (the CA's
    /// certificate, PEM: the file [`RedisServer::certificate_authority`]), clients
    /// not asked for one.
    ///
    /// # Panics
    /// As [`RedisServer::start`] does, or when five free ports in a row were taken
    /// before the server could listen on them.
    pub fn start_tls(dir: &Path) -> Self {
        let authority = crate::network::TestCa::new("a Redis's CA");
        let (certificate, key) = authority.server_pem();
        std::fs::write(dir.join("tls-ca.crt"), &authority.pem).unwrap();
        std::fs::write(dir.join("tls.crt"), certificate).unwrap();
        std::fs::write(dir.join("tls.key"), key).unwrap();
        // A port found free may be taken by another test before the server binds
        // it: another is tried.
        let mut failures = Vec::new();
        for _ in 0..5 {
            let mut server = Self {
                dir: dir.to_owned(),
                child: None,
                port: Some(free_port()),
                tls: true,
            };
            match server.try_resume() {
                Ok(()) => return server,
                Err(failure) => failures.push(failure),
            }
        }
        panic!("redis-server did not start with TLS: {failures:?}");
    }

    fn started(dir: &Path, port: Option<u16>) -> Self {
        let mut server = Self {
            dir: dir.to_owned(),
            child: None,
            port,
            tls: false,
        };
        server.resume();
        server
    }

    /// The file of the certificate of the CA that issued the one a server started
    /// with TLS presents.
    pub fn certificate_authority(&self) -> PathBuf {
        self.dir.join("tls-ca.crt")
    }

    /// The server's own clock (`TIME`), in milliseconds since the epoch: the clock a
    /// fleet's windows and leases are measured by.
    ///
    /// # Panics
    /// When the server is stopped or answers with something else.
    pub fn time_ms(&self) -> u64 {
        // An array of two bulk strings: seconds, then microseconds.
        let lines: Vec<String> = self
            .send(&["TIME"])
            .take(5)
            .collect::<Result<_, _>>()
            .unwrap();
        let number = |line: &str| -> u64 {
            line.parse()
                .unwrap_or_else(|_| panic!("TIME answered {lines:?}"))
        };
        assert_eq!(
            lines.first().map(String::as_str),
            Some("*2"),
            "TIME answered {lines:?}"
        );
        number(&lines[2]) * 1000 + number(&lines[4]) / 1000
    }

    /// Has the server run `command` (its words), as the default user, and returns
    /// the first line of its answer: `+OK`, say.
    ///
    /// # Panics
    /// When the server is stopped, or answers with an error.
    pub fn command(&self, command: &[&str]) -> String {
        let line = self.send(command).next().expect("an answer").unwrap();
        assert!(!line.starts_with('-'), "{command:?} answered {line}");
        line
    }

    /// The lines of the server's answer to `command`, sent on a connection of its own.
    fn send(&self, command: &[&str]) -> std::io::Lines<BufReader<UnixStream>> {
        let mut stream = UnixStream::connect(self.socket()).expect("the Redis server is up");
        let mut request = format!("*{}\r\n", command.len());
        for word in command {
            request.push_str(&format!("${}\r\n{word}\r\n", word.len()));
        }
        stream.write_all(request.as_bytes()).unwrap();
        BufReader::new(stream).lines()
    }

    /// The URL of its loopback port: `rediss://` for a server started with TLS.
    ///
    /// # Panics
    /// When it was started without one.
    pub fn tcp_url(&self) -> String {
        format!(
            "{}://127.0.0.1:{}",
            if self.tls { "rediss" } else { "redis" },
            self.port.expect("started with a port")
        )
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
    ///
    /// # Panics
    /// When it does not start.
    pub fn resume(&mut self) {
        if let Err(failure) = self.try_resume() {
            panic!("{failure}");
        }
    }

    fn try_resume(&mut self) -> Result<(), String> {
        if self.child.is_some() {
            return Ok(());
        }
        let mut command = Command::new("redis-server");
        match (self.port, self.tls) {
            (Some(port), true) => command
                .args(["--port", "0", "--tls-port", &port.to_string()])
                .arg("--tls-cert-file")
                .arg(self.dir.join("tls.crt"))
                .arg("--tls-key-file")
                .arg(self.dir.join("tls.key"))
                .arg("--tls-ca-cert-file")
                .arg(self.certificate_authority())
                .args(["--tls-auth-clients", "no"]),
            (port, _) => command.args(["--port", &port.unwrap_or(0).to_string()]),
        };
        let mut child = command
            .args(["--bind", "127.0.0.1", "--unixsocket"])
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
        let mut said = Vec::new();
        loop {
            match lines.next() {
                Some(Ok(line))
                    if line
                        .to_ascii_lowercase()
                        .contains("ready to accept connections") =>
                {
                    break;
                }
                Some(Ok(line)) => said.push(line),
                _ => {
                    let _ = child.wait();
                    return Err(format!(
                        "redis-server exited before accepting connections: {said:?}"
                    ));
                }
            }
        }
        // The rest of its output is read (and dropped) so that it never blocks.
        std::thread::spawn(move || lines.for_each(drop));
        self.child = Some(child);
        Ok(())
    }
}

/// A loopback port free when asked (found by binding port 0 and letting it go).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// haproxy in front of a gateway's replicas, configured as `docs/fleet.md` deploys it
/// (read from the guide): HTTP, round-robin, a handshake session kept on the replica
/// whose response named its `Mcp-Session-Id`. Killed when dropped.
#[derive(Debug)]
pub struct Haproxy {
    child: Child,
    address: SocketAddr,
}

impl Haproxy {
    /// haproxy for `replicas`, its configuration in `dir`. It listens on a loopback
    /// port this function binds and hands over (haproxy's `fd@3`): connections made
    /// before haproxy is up wait in the socket's backlog.
    ///
    /// # Panics
    /// When haproxy is not installed (`scripts/install-peers` installs it).
    pub fn start(dir: &Path, replicas: &[SocketAddr]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let address = listener.local_addr().unwrap();
        let config = dir.join("haproxy.cfg");
        std::fs::write(&config, guide_configuration(replicas)).unwrap();
        let fd = listener.as_raw_fd();
        let mut command = Command::new(haproxy());
        command
            .args(["-db", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        // SAFETY: only async-signal-safe calls between fork and exec: dup2 the
        // listening socket onto descriptor 3, which haproxy's `fd@3` takes.
        unsafe {
            command.pre_exec(move || {
                // dup2 onto itself keeps close-on-exec: cleared by hand then.
                let done = if fd == 3 {
                    libc::fcntl(3, libc::F_SETFD, 0)
                } else {
                    libc::dup2(fd, 3)
                };
                if done == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().unwrap_or_else(|error| {
            panic!("haproxy did not start ({error}); `scripts/install-peers` installs it")
        });
        // haproxy has its own copy now.
        drop(listener);
        Self { child, address }
    }

    /// The gateway's endpoint through haproxy.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }
}

/// The first code block of `docs/fleet.md` (the fleet's deployment guide) opened by
/// the line `fence` under the heading line `heading`: what the guide has a deployer
/// write, for the tests to run as written.
///
/// # Panics
/// When the guide has no such block.
pub fn fleet_guide_block(heading: &str, fence: &str) -> String {
    let guide = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/fleet.md");
    let guide = std::fs::read_to_string(guide).expect("docs/fleet.md");
    guide
        .split_once(&format!("\n{heading}\n"))
        .and_then(|(_, section)| section.split_once(&format!("\n{fence}\n")))
        .and_then(|(_, block)| block.split_once("\n```"))
        .map(|(block, _)| format!("{block}\n"))
        .unwrap_or_else(|| panic!("a {fence} block under the guide's {heading}"))
}

/// The haproxy configuration `docs/fleet.md` deploys, word for word but for its
/// address (the descriptor [`Haproxy::start`] hands over) and its servers (the
/// `replicas`).
///
/// # Panics
/// When the guide has no configuration block under its "Load balancer" heading.
fn guide_configuration(replicas: &[SocketAddr]) -> String {
    let block = fleet_guide_block("## Load balancer", "```");
    let mut config = String::new();
    for line in block.lines() {
        match line.split_whitespace().next() {
            Some("server") => continue,
            Some("bind") => config.push_str("    bind fd@3\n"),
            _ => {
                config.push_str(line);
                config.push('\n');
            }
        }
    }
    for (n, replica) in replicas.iter().enumerate() {
        config.push_str(&format!("    server r{n} {replica}\n"));
    }
    config
}

/// haproxy's path: Debian puts it in `/usr/sbin`, which a user's `PATH` may lack.
fn haproxy() -> PathBuf {
    let debian = Path::new("/usr/sbin/haproxy");
    if debian.exists() {
        debian.to_owned()
    } else {
        PathBuf::from("haproxy")
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn haproxy_runs_the_guides_configuration_on_the_tests_address_and_replicas() {
        let replicas = [
            "127.0.0.1:4001".parse().unwrap(),
            "127.0.0.1:4002".parse().unwrap(),
        ];
        let config = guide_configuration(&replicas);
        assert!(config.starts_with("global\n"), "{config}");
        for line in [
            "    bind fd@3\n",
            "    option http-no-delay",
            "    stick store-response res.hdr(mcp-session-id)",
            "    server r0 127.0.0.1:4001\n    server r1 127.0.0.1:4002\n",
        ] {
            assert!(config.contains(line), "{line:?} in {config}");
        }
        assert!(!config.contains("10.0.0."), "{config}");
        assert!(!config.contains(":8080"), "{config}");
    }
}
