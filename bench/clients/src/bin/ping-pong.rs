//! Two processes passing one message back and forth over loopback: `ping-pong
//! [--unix] [--count N] [--size BYTES] [--on CPU] [--peer-on CPU]` starts itself again
//! as the echoing peer, then sends BYTES and reads them back N times, one round trip
//! at a time, and prints `{"p50_us","p99_us","count"}` of the round trips. `--on` and
//! `--peer-on` pin each process to one CPU; unpinned, the scheduler may put both on
//! one CPU or on two, run by run.
//!
//! No protocol, no runtime, blocking reads: what it costs this machine to wake another
//! process with a message and be woken by its answer. A proxy in front of a server adds
//! two wake-ups to every call, one round trip's (its own for the request, and the
//! client's for the answer coming from the proxy instead of the server), so
//! bench/compare (scenario k) reports it beside the proxies, the two processes on two
//! CPUs and on one.

use std::{
    io::{self, Read, Write},
    net::{TcpListener, TcpStream},
    os::unix::net::{UnixListener, UnixStream},
    process::{Child, Command, ExitCode, Stdio},
    time::Instant,
};

/// Echoes `size`-byte messages on `stream` until it ends.
fn echo(mut stream: impl Read + Write, size: usize) -> io::Result<()> {
    let mut buffer = vec![0; size];
    loop {
        match stream.read_exact(&mut buffer) {
            Ok(()) => stream.write_all(&buffer)?,
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(error) => return Err(error),
        }
    }
}

/// `count` round trips of a `size`-byte message on `stream`, each one's time in µs.
fn round_trips(mut stream: impl Read + Write, count: usize, size: usize) -> io::Result<Vec<f64>> {
    let mut buffer = vec![b'x'; size];
    let mut times = Vec::with_capacity(count);
    for _ in 0..count {
        let sent = Instant::now();
        stream.write_all(&buffer)?;
        stream.read_exact(&mut buffer)?;
        times.push(sent.elapsed().as_secs_f64() * 1e6);
    }
    Ok(times)
}

#[derive(clap::Parser)]
#[command(about = "A message's round trip between two processes")]
struct Options {
    /// Over a Unix socket instead of loopback TCP.
    #[arg(long)]
    unix: bool,
    /// How many round trips.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(1..))]
    count: u32,
    /// The message's size in bytes.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..))]
    size: u32,
    /// The CPU this process runs on.
    #[arg(long)]
    on: Option<usize>,
    /// The CPU the peer runs on.
    #[arg(long)]
    peer_on: Option<usize>,
    /// As the peer: the address to connect to and echo on.
    #[arg(long, hide = true)]
    peer_of: Option<String>,
}

/// The `q`-quantile of sorted `values`.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    // Rounded to an index: the values are thousands, the quantile's own error is less.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[index]
}

/// Pins this process to `cpu`.
fn pin(cpu: usize) -> io::Result<()> {
    // SAFETY: a zeroed `cpu_set_t` is the empty set, and CPU_SET and
    // sched_setaffinity are given a valid set of its own size.
    let done = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The peer's connection, from a listener that does not block: an error once the
/// peer has exited without connecting (it could not connect, or pin itself).
fn accepted<S>(mut accept: impl FnMut() -> io::Result<S>, peer: &mut Child) -> io::Result<S> {
    loop {
        match accept() {
            Ok(stream) => return Ok(stream),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                if let Some(status) = peer.try_wait()? {
                    return Err(io::Error::other(format!(
                        "the peer exited ({status}) without connecting"
                    )));
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Err(error) => return Err(error),
        }
    }
}

/// Where the peer connects.
enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

fn run(options: &Options) -> io::Result<Vec<f64>> {
    let (count, size) = (options.count as usize, options.size as usize);
    if let Some(cpu) = options.on {
        pin(cpu)?;
    }
    if let Some(address) = &options.peer_of {
        if options.unix {
            echo(UnixStream::connect(address)?, size)?;
        } else {
            let stream = TcpStream::connect(address)?;
            stream.set_nodelay(true)?;
            echo(stream, size)?;
        }
        return Ok(Vec::new());
    }
    let directory = std::env::temp_dir().join(format!("ping-pong-{}", std::process::id()));
    let (address, listener) = if options.unix {
        std::fs::create_dir_all(&directory)?;
        let path = directory.join("socket");
        let listener = UnixListener::bind(&path)?;
        (path.display().to_string(), Listener::Unix(listener))
    } else {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        (listener.local_addr()?.to_string(), Listener::Tcp(listener))
    };
    let mut peer = Command::new(std::env::current_exe()?);
    peer.args(["--peer-of", &address, "--size", &size.to_string()]);
    if options.unix {
        peer.arg("--unix");
    }
    if let Some(cpu) = options.peer_on {
        peer.args(["--on", &cpu.to_string()]);
    }
    let mut peer = peer.stdin(Stdio::null()).spawn()?;
    let times = match listener {
        Listener::Tcp(tcp) => {
            tcp.set_nonblocking(true)?;
            let stream = accepted(|| tcp.accept().map(|(stream, _)| stream), &mut peer)?;
            stream.set_nonblocking(false)?;
            stream.set_nodelay(true)?;
            round_trips(stream, count, size)
        }
        Listener::Unix(unix) => {
            unix.set_nonblocking(true)?;
            let stream = accepted(|| unix.accept().map(|(stream, _)| stream), &mut peer)?;
            stream.set_nonblocking(false)?;
            round_trips(stream, count, size)
        }
    };
    // The peer ends with the stream, dropped above.
    let _ = peer.wait();
    let _ = std::fs::remove_dir_all(&directory);
    times
}

fn main() -> ExitCode {
    let options = <Options as clap::Parser>::parse();
    let mut times = match run(&options) {
        Ok(times) => times,
        Err(error) => {
            eprintln!("ping-pong: {error}");
            return ExitCode::FAILURE;
        }
    };
    if options.peer_of.is_some() {
        return ExitCode::SUCCESS;
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{{\"count\":{},\"p50_us\":{:.1},\"p99_us\":{:.1}}}",
        times.len(),
        quantile(&times, 0.5),
        quantile(&times, 0.99)
    );
    ExitCode::SUCCESS
}
