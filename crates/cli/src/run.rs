//! `lockstep run`: the launcher of a run of several processes on this host (the whole run, or
//! this host's share of a run over several hosts), and the hidden `lockstep probe` that tests
//! it and the rendezvous without any family.
//!
//! `lockstep run (--gpus N | --ranks N) [--hosts H --host-rank R --master HOST:PORT] COMMAND
//! [ARGS…]` starts N copies of this binary running `COMMAND ARGS…`; copy `i` gets
//! `LOCKSTEP_RANK` = R·N + i, `LOCKSTEP_WORLD_SIZE` = H·N, `LOCKSTEP_LOCAL_RANK` = i,
//! `LOCKSTEP_MASTER` (default `127.0.0.1:<a free port>` on one host; `--master` is required with
//! H > 1), `LOCKSTEP_DEVICE` (`gpu` for `--gpus`, `cpu` for `--ranks`) and `NCCL_NVLS_ENABLE=0`
//! (NVLink multicast stays off); every other variable, the user's `NCCL_*` included, passes
//! through. `--gpus` checks nothing about GPUs: each rank takes GPU `LOCKSTEP_LOCAL_RANK`.
//!
//! **Invariants.** Bad input is refused (exit 2, one `error:` line) before anything starts.
//! Every line a rank writes, to stdout or stderr, goes to the same stream of the launcher
//! prefixed with `[rank R] ` (R: the global rank; rank 0 too, so that output is uniform);
//! stdin is closed for the ranks. When a rank exits non-zero or by a signal, the others get
//! SIGTERM and, 5 s later, SIGKILL; the launcher waits for all of them, prints one line
//! `error: rank R exited with status S; stopped the other N−1 ranks` and exits 1 (S: the exit
//! code, or 128 + the signal for a rank killed by one). When several ranks fail at almost the
//! same moment (a rank's death makes the others' watchdogs stop them), the one reported is
//! preferably one killed by a signal, else the first seen. SIGINT or SIGTERM to the launcher
//! is forwarded to the ranks (a second one kills them at once, as do 30 s without exit), and
//! the launcher exits 1 unless every rank exited 0. If the launcher itself is killed by
//! SIGKILL, the ranks are not told.

use crate::common;
use anyhow::{Context, Result, anyhow, bail};
use lockstep::dist::{self, Communicator, Launch, StoreComm, env};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the other ranks get to stop after SIGTERM when one failed.
const FAILURE_GRACE: Duration = Duration::from_secs(5);
/// How long the ranks get to stop (and write checkpoints) after a forwarded SIGINT/SIGTERM.
const SIGNAL_GRACE: Duration = Duration::from_secs(30);

/// `lockstep run`'s flags.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("per_host").required(true).args(["gpus", "ranks"])))]
pub struct Args {
    /// Start N ranks on this host, one per GPU: rank i of the host takes GPU i
    /// (LOCKSTEP_DEVICE=gpu, LOCKSTEP_LOCAL_RANK=i).
    #[arg(long, value_name = "N", value_parser = common::count)]
    gpus: Option<usize>,
    /// Start N ranks on this host's CPU (LOCKSTEP_DEVICE=cpu).
    #[arg(long, value_name = "N", value_parser = common::count)]
    ranks: Option<usize>,
    /// Hosts in the run: run `lockstep run` on each with the same flags and its own --host-rank.
    #[arg(long, value_name = "H", default_value = "1", value_parser = common::count)]
    hosts: usize,
    /// This host's place, 0 to H−1: its ranks are R·N to R·N + N − 1 (host 0 holds rank 0).
    #[arg(long, value_name = "R", default_value = "0", value_parser = index)]
    host_rank: usize,
    /// Where rank 0 serves the rendezvous: an address of host 0 that every host reaches
    /// (required with --hosts > 1; default on one host: 127.0.0.1 and a free port).
    #[arg(long, value_name = "HOST:PORT")]
    master: Option<String>,
    /// The lockstep command every rank runs, and its arguments (e.g. `mg --n 1001`).
    #[arg(value_name = "COMMAND", required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

/// `lockstep probe`'s flags (a hidden command for the launcher's tests).
#[derive(clap::Args, Debug)]
pub struct ProbeArgs {
    /// This rank aborts (as a crash would) after the first collective.
    #[arg(long, value_name = "R", value_parser = index)]
    die_rank: Option<usize>,
    /// This rank sleeps forever in place of its second collective; the others wait in theirs
    /// (nothing times out: a slow rank is legitimate) until the launcher is stopped.
    #[arg(long, value_name = "R", value_parser = index)]
    hang_rank: Option<usize>,
}

/// A whole number ≥ 0 (`usize`).
fn index(s: &str) -> std::result::Result<usize, String> {
    let v = common::u64_any(s)?;
    usize::try_from(v).map_err(|_| format!("{s} is larger than {}", usize::MAX))
}

/// Refuses the command line: one line, exit 2, nothing started.
fn usage(why: String) -> ! {
    eprintln!("error: {why} (see lockstep run --help)");
    std::process::exit(2)
}

/// Runs the ranks of this host and waits for them (see the module documentation).
pub fn run(args: Args) -> Result<()> {
    let (per_host, device) = match (args.gpus, args.ranks) {
        (Some(n), None) => (n, "gpu"),
        (None, Some(n)) => (n, "cpu"),
        _ => usage("give exactly one of --gpus N and --ranks N".into()),
    };
    if args.host_rank >= args.hosts {
        usage(format!("--host-rank {} is not below --hosts {}", args.host_rank, args.hosts));
    }
    let Some(world) = args.hosts.checked_mul(per_host) else {
        usage(format!("--hosts {} times {per_host} ranks is too many ranks", args.hosts));
    };
    let Some(name) = args.command.first() else { usage("no command given: give a lockstep command to run".into()) };
    let name = name.to_string_lossy();
    if name.starts_with('-') {
        usage(format!("unexpected argument '{name}' (lockstep run's own flags come before the command)"));
    }
    if name == "run" {
        usage("`lockstep run` cannot launch itself: give the command each rank runs (e.g. mg)".into());
    }
    let known = <crate::Cli as clap::CommandFactory>::command().find_subcommand(name.as_ref()).is_some();
    if !known {
        usage(format!("`{name}` is not a lockstep command"));
    }
    let master = match &args.master {
        Some(m) => {
            if let Err(e) = env::check_master("--master", m) {
                usage(e.to_string());
            }
            m.trim().to_string()
        }
        None if args.hosts > 1 => usage(format!(
            "--hosts {} needs --master HOST:PORT, an address of host 0 that every host reaches (the same on every host)",
            args.hosts
        )),
        None => {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port for the rendezvous")?;
            format!("127.0.0.1:{}", probe.local_addr()?.port())
        }
    };
    let exe = std::env::current_exe().context("finding this program's path")?;
    let interrupt = Arc::new(AtomicBool::new(false));
    let terminate = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupt))?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&terminate))?;

    let mut ranks: Vec<Rank> = Vec::with_capacity(per_host);
    for i in 0..per_host {
        let rank = args.host_rank * per_host + i;
        let mut cmd = Command::new(&exe);
        cmd.args(&args.command)
            .env(env::RANK_VAR, rank.to_string())
            .env(env::WORLD_SIZE_VAR, world.to_string())
            .env(env::LOCAL_RANK_VAR, i.to_string())
            .env(env::MASTER_VAR, &master)
            .env("LOCKSTEP_DEVICE", device)
            .env("NCCL_NVLS_ENABLE", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match cmd.spawn() {
            Ok(mut child) => {
                let prefix = format!("[rank {rank}] ");
                let mut pumps = Vec::new();
                if let Some(out) = child.stdout.take() {
                    pumps.push(pump(out, prefix.clone(), false));
                }
                if let Some(err) = child.stderr.take() {
                    pumps.push(pump(err, prefix, true));
                }
                ranks.push(Rank { rank, child, status: None, pumps });
            }
            Err(e) => {
                for r in &mut ranks {
                    let _ = r.child.kill();
                }
                wait_all(&mut ranks);
                bail!("starting rank {rank} ({}): {e}", exe.display());
            }
        }
    }

    let mut failure: Option<(usize, ExitStatus)> = None;
    let mut interrupted: Option<&str> = None;
    let mut deadline: Option<Instant> = None;
    loop {
        // Signals first: ranks that a forwarded signal stops are no failure of their own.
        for (flag, name) in [(&interrupt, "SIGINT"), (&terminate, "SIGTERM")] {
            if flag.swap(false, Ordering::Relaxed) {
                if interrupted.is_some() {
                    // A second signal: stop at once.
                    signal_running(&mut ranks, Signal::Kill);
                } else {
                    interrupted = Some(name);
                    signal_running(&mut ranks, if name == "SIGINT" { Signal::Int } else { Signal::Term });
                    deadline.get_or_insert(Instant::now() + SIGNAL_GRACE);
                }
            }
        }
        let mut failed: Vec<usize> = poll(&mut ranks);
        if !failed.is_empty() && failure.is_none() && interrupted.is_none() {
            // Ranks that fail together: let the moment settle, then report the likeliest cause.
            std::thread::sleep(Duration::from_millis(50));
            failed.extend(poll(&mut ranks));
            let by_signal = |i: &usize| ranks[*i].status.is_some_and(|s| s.code().is_none());
            let first = failed.iter().copied().find(by_signal).unwrap_or(failed[0]);
            failure = ranks[first].status.map(|s| (ranks[first].rank, s));
            signal_running(&mut ranks, Signal::Term);
            deadline.get_or_insert(Instant::now() + FAILURE_GRACE);
        }
        if ranks.iter().all(|r| r.status.is_some()) {
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            signal_running(&mut ranks, Signal::Kill);
            deadline = Some(Instant::now() + Duration::from_secs(3600));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_all(&mut ranks);
    let others = match (per_host - 1, args.hosts > 1) {
        (0, _) => String::new(),
        (1, false) => "; stopped the other rank".into(),
        (1, true) => "; stopped the other rank on this host".into(),
        (n, false) => format!("; stopped the other {n} ranks"),
        (n, true) => format!("; stopped the other {n} ranks on this host"),
    };
    if let Some((rank, status)) = failure {
        bail!("rank {rank} exited with status {}{others}", describe(status));
    }
    if let Some(signal) = interrupted {
        let bad = ranks.iter().find(|r| !r.status.is_some_and(|s| s.success()));
        if let Some(r) = bad {
            let status = r.status.map_or_else(|| "unknown".into(), describe);
            bail!(
                "interrupted by {signal}: forwarded to the {per_host} rank{} of this host (rank {} exited with status {status})",
                if per_host == 1 { "" } else { "s" },
                r.rank
            );
        }
    }
    Ok(())
}

/// One rank started by the launcher.
struct Rank {
    rank: usize,
    child: Child,
    /// Its exit status, once reaped.
    status: Option<ExitStatus>,
    /// The threads copying its stdout and stderr.
    pumps: Vec<JoinHandle<()>>,
}

/// Reaps the ranks that exited; returns the indices of those that failed.
fn poll(ranks: &mut [Rank]) -> Vec<usize> {
    let mut failed = Vec::new();
    for (i, r) in ranks.iter_mut().enumerate() {
        if r.status.is_some() {
            continue;
        }
        // An error asking is taken as a rank gone wrong (it cannot be waited for).
        let status = match r.child.try_wait() {
            Ok(Some(s)) => s,
            Ok(None) => continue,
            Err(_) => failed_status(),
        };
        r.status = Some(status);
        if !status.success() {
            failed.push(i);
        }
    }
    failed
}

#[cfg(unix)]
fn failed_status() -> ExitStatus {
    std::os::unix::process::ExitStatusExt::from_raw(1 << 8)
}

#[cfg(not(unix))]
fn failed_status() -> ExitStatus {
    std::os::windows::process::ExitStatusExt::from_raw(1)
}

/// Waits for every rank and for its output to be copied.
fn wait_all(ranks: &mut [Rank]) {
    for r in ranks.iter_mut() {
        if r.status.is_none() {
            r.status = Some(r.child.wait().unwrap_or_else(|_| failed_status()));
        }
        for p in r.pumps.drain(..) {
            let _ = p.join();
        }
    }
}

#[derive(Clone, Copy)]
enum Signal {
    Int,
    Term,
    Kill,
}

/// Sends `signal` to every rank not yet reaped.
fn signal_running(ranks: &mut [Rank], signal: Signal) {
    for r in ranks.iter_mut().filter(|r| r.status.is_none()) {
        // A rank that ended since the last poll is reaped here, not signalled.
        if let Ok(Some(s)) = r.child.try_wait() {
            r.status = Some(s);
            continue;
        }
        send(&mut r.child, signal);
    }
}

#[cfg(unix)]
fn send(child: &mut Child, signal: Signal) {
    let sig = match signal {
        Signal::Int => libc::SIGINT,
        Signal::Term => libc::SIGTERM,
        Signal::Kill => {
            let _ = child.kill();
            return;
        }
    };
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) on our own child, which is not reaped yet (so the pid is still its).
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

#[cfg(not(unix))]
fn send(child: &mut Child, _: Signal) {
    let _ = child.kill();
}

/// The exit code, or 128 + the signal with its name for a rank killed by one.
fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return code.to_string();
    }
    #[cfg(unix)]
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        let name = match sig {
            libc::SIGHUP => "SIGHUP",
            libc::SIGINT => "SIGINT",
            libc::SIGQUIT => "SIGQUIT",
            libc::SIGILL => "SIGILL",
            libc::SIGABRT => "SIGABRT",
            libc::SIGBUS => "SIGBUS",
            libc::SIGFPE => "SIGFPE",
            libc::SIGKILL => "SIGKILL",
            libc::SIGSEGV => "SIGSEGV",
            libc::SIGPIPE => "SIGPIPE",
            libc::SIGTERM => "SIGTERM",
            _ => "",
        };
        let name = if name.is_empty() { String::new() } else { format!(", {name}") };
        return format!("{} (signal {sig}{name})", 128 + sig);
    }
    status.to_string()
}

/// Copies `from` line by line to the launcher's stdout (or stderr), each line prefixed.
fn pump(from: impl Read + Send + 'static, prefix: String, to_stderr: bool) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut from = BufReader::new(from);
        let mut line = Vec::new();
        loop {
            line.clear();
            match from.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if !line.ends_with(b"\n") {
                line.push(b'\n');
            }
            let mut out = Vec::with_capacity(prefix.len() + line.len());
            out.extend_from_slice(prefix.as_bytes());
            out.extend_from_slice(&line);
            // A closed stdout (the launcher's reader left) drops the line; the rank goes on.
            let _ = if to_stderr {
                std::io::stderr().lock().write_all(&out)
            } else {
                std::io::stdout().lock().write_all(&out)
            };
        }
    })
}

/// `lockstep probe`: joins the run its launcher describes, watches the others, and does a sum
/// of the ranks, an all-gather of them and a barrier; prints `probe rank R of N: sum S gather
/// [..]`. A rank that learns of another's death prints `error: …` and exits 3.
pub fn probe(args: ProbeArgs) -> Result<()> {
    let launch = Launch::from_env()?
        .ok_or_else(|| anyhow!("no launcher variables (LOCKSTEP_RANK, …): start probe with lockstep run"))?;
    let comm = StoreComm::connect(&launch)?;
    comm.watch(|message| {
        eprintln!("error: {message}");
        std::process::exit(3);
    })?;
    let rank = comm.rank();
    let sum = dist::sum_u64(&comm, rank as u64)?;
    if args.die_rank == Some(rank) {
        die();
    }
    if args.hang_rank == Some(rank) {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    let gather = dist::all_gather(&comm, &[rank as u64])?;
    comm.barrier()?;
    println!("probe rank {rank} of {}: sum {sum} gather {gather:?}", comm.size());
    comm.finish()?;
    Ok(())
}

/// Dies as a crash would (abort), without leaving a core file.
fn die() -> ! {
    #[cfg(unix)]
    {
        let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: setrlimit with a valid struct; lowering a limit needs no privilege.
        unsafe {
            libc::setrlimit(libc::RLIMIT_CORE, &none);
        }
    }
    std::process::abort()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn statuses_read_as_shells_print_them() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(describe(ExitStatus::from_raw(3 << 8)), "3");
        assert_eq!(describe(ExitStatus::from_raw(libc::SIGABRT)), "134 (signal 6, SIGABRT)");
    }

    #[test]
    fn indices_take_zero() {
        assert_eq!(index("0"), Ok(0));
        assert!(index("-1").is_err());
    }
}
