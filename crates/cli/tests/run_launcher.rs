//! `lockstep run`, the launcher, driven as a user would, with the hidden `lockstep probe` as the
//! ranks' command (a rendezvous and a few collectives through the store, no family): a run
//! succeeds with every rank's line; a rank that dies stops the others within seconds with one
//! `error: rank R …` line; bad launcher input is refused with exit 2 and one line before
//! anything starts; two launchers on one machine act as two hosts; SIGTERM to the launcher
//! stops ranks that wait forever. And the families over CPU ranks: the bits (and the bridge's
//! `.npy` bytes) of the one-process run.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod common;
use common::Ended;

const EXE: &str = env!("CARGO_BIN_EXE_lockstep");

fn start(args: &[&str]) -> Child {
    Command::new(EXE)
        .args(args)
        .env_remove("LOCKSTEP_MASTER")
        .env_remove("LOCKSTEP_RANK")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning lockstep")
}

/// Waits for `child` at most `limit` (then kills it and fails the test).
fn finish(child: Child, limit: Duration) -> Ended {
    common::finish(child, limit).unwrap_or_else(|e| panic!("{e}"))
}

fn run(args: &[&str]) -> Ended {
    finish(start(args), Duration::from_secs(60))
}

fn probe_lines(stdout: &str) -> Vec<&str> {
    stdout.lines().filter(|l| l.contains("probe rank")).collect()
}

#[test]
fn three_cpu_ranks_succeed() {
    let e = run(&["run", "--ranks", "3", "probe"]);
    assert_eq!(e.code, Some(0), "stderr: {}", e.stderr);
    let lines = probe_lines(&e.stdout);
    assert_eq!(lines.len(), 3, "{}", e.stdout);
    for r in 0..3 {
        let want = format!("[rank {r}] probe rank {r} of 3: sum 3 gather [0, 1, 2]");
        assert!(lines.contains(&want.as_str()), "no `{want}` in {}", e.stdout);
    }
    assert!(e.stderr.trim().is_empty(), "{}", e.stderr);
}

#[test]
fn one_rank_runs_alone() {
    let e = run(&["run", "--ranks", "1", "probe"]);
    assert_eq!(e.code, Some(0), "stderr: {}", e.stderr);
    assert_eq!(probe_lines(&e.stdout), ["[rank 0] probe rank 0 of 1: sum 0 gather [0]"]);
}

#[test]
fn a_rank_that_dies_stops_the_others() {
    let e = finish(start(&["run", "--ranks", "4", "probe", "--die-rank", "1"]), Duration::from_secs(20));
    assert!(e.code.is_some_and(|c| c != 0), "exit {:?}", e.code);
    assert!(e.secs < 20.0, "took {:.1} s", e.secs);
    let last = e.stderr.lines().rfind(|l| !l.trim().is_empty()).unwrap_or_default();
    assert!(last.starts_with("error: rank 1 exited with status "), "{}", e.stderr);
    assert!(last.ends_with("stopped the other 3 ranks"), "{}", e.stderr);
    assert!(probe_lines(&e.stdout).is_empty(), "{}", e.stdout);
}

#[test]
fn bad_launcher_input_is_refused_before_anything_starts() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--gpus", "0", "probe"], "--gpus"),
        (&["run", "--ranks", "0", "probe"], "--ranks"),
        (&["run", "--gpus", "1", "--ranks", "2", "probe"], "--ranks"),
        (&["run", "probe"], "--gpus"),
        (&["run", "--ranks", "1", "--hosts", "2", "probe"], "--master"),
        (
            &["run", "--ranks", "1", "--hosts", "2", "--host-rank", "2", "--master", "127.0.0.1:9", "probe"],
            "--host-rank",
        ),
        (&["run", "--ranks", "1", "--master", "localhost", "probe"], "--master"),
        (&["run", "--ranks", "2"], "COMMAND"),
        (&["run", "--ranks", "2", "no-such-command"], "no-such-command"),
        (&["run", "--ranks", "2", "run", "--ranks", "2", "probe"], "itself"),
    ];
    for (args, needle) in cases {
        let e = run(args);
        assert_eq!(e.code, Some(2), "{args:?}: stderr {}", e.stderr);
        let lines: Vec<&str> = e.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", e.stderr);
        assert!(lines[0].starts_with("error: ") && lines[0].contains(needle), "{args:?}: {}", lines[0]);
        assert!(!e.stdout.contains("[rank"), "{args:?} started ranks: {}", e.stdout);
    }
}

#[test]
fn two_hosts_on_one_machine() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        l.local_addr().expect("its address").port()
    };
    let master = format!("127.0.0.1:{port}");
    let hosts: Vec<Child> = (0..2)
        .map(|h| {
            let h = h.to_string();
            start(&["run", "--ranks", "1", "--hosts", "2", "--host-rank", &h, "--master", &master, "probe"])
        })
        .collect();
    for (h, child) in hosts.into_iter().enumerate() {
        let e = finish(child, Duration::from_secs(60));
        assert_eq!(e.code, Some(0), "host {h}: {}", e.stderr);
        assert_eq!(probe_lines(&e.stdout), [format!("[rank {h}] probe rank {h} of 2: sum 1 gather [0, 1]")]);
    }
}

#[test]
fn sigterm_to_the_launcher_stops_ranks_that_wait_forever() {
    let child = start(&["run", "--ranks", "2", "probe", "--hang-rank", "1"]);
    std::thread::sleep(Duration::from_millis(1500));
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    // SAFETY: kill(2) on our own child, not yet waited for.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let e = finish(child, Duration::from_secs(20));
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    let last = e.stderr.lines().rfind(|l| !l.trim().is_empty()).unwrap_or_default();
    assert!(last.starts_with("error: interrupted by SIGTERM"), "{}", e.stderr);
}

/// The family commands over ranks: the bridge's ranks write their own columns of one `.npy`
/// (in chunks that do not divide the shares) with the plain CPU run's bytes, and the summary's
/// bits are the same for any rank count; the n-body and Minority Game summaries likewise.
#[test]
fn family_runs_over_ranks_have_the_one_process_bits() {
    let dir = std::env::temp_dir().join(format!("lockstep-ranks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let plain = dir.join("plain.npy");
    let args = ["--paths", "1001", "--steps", "16", "--source", "philox-bm", "--precision", "f64"];
    let mut one: Vec<&str> = vec!["bridge", "--device", "cpu", "--out", plain.to_str().expect("utf-8")];
    one.extend(args);
    assert_eq!(run(&one).code, Some(0));
    let want = std::fs::read(&plain).expect("plain .npy");
    let bits = |e: &Ended| e.stdout.lines().find_map(|l| l.split("bits: ").nth(1)).map(|b| b[..16].to_string());
    let mut seen = Vec::new();
    for k in ["1", "3"] {
        let out = dir.join(format!("ranks{k}.npy"));
        let mut cmd: Vec<&str> = vec!["run", "--ranks", k, "bridge", "--chunk-paths", "97"];
        cmd.extend(args);
        cmd.extend(["--out", out.to_str().expect("utf-8")]);
        let e = run(&cmd);
        assert_eq!(e.code, Some(0), "stderr: {}", e.stderr);
        assert_eq!(std::fs::read(&out).expect("ranks' .npy"), want, "{k} ranks: the file differs");
        assert!(!dir.join(format!("ranks{k}.npy.partial")).exists());
        seen.push(bits(&e).expect("a summary line"));
    }
    for family in [
        &["nbody", "--n", "40", "--steps", "2"][..],
        &["mg", "--n", "1001", "--p", "20", "--groups", "7", "--trials", "2"][..],
    ] {
        for k in ["1", "3"] {
            let mut cmd = vec!["run", "--ranks", k];
            cmd.extend(family);
            let e = run(&cmd);
            assert_eq!(e.code, Some(0), "stderr: {}", e.stderr);
            seen.push(format!("{}:{}", family[0], bits(&e).expect("a summary line")));
        }
    }
    assert_eq!(seen[0], seen[1], "bridge bits over 1 and 3 ranks");
    assert_eq!(seen[2], seen[3], "nbody bits over 1 and 3 ranks");
    assert_eq!(seen[4], seen[5], "mg bits over 1 and 3 ranks");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a run over ranks cannot do is refused by every rank with one `error:` line naming the
/// flag, before any work, and the launcher exits non-zero naming a rank.
#[test]
fn family_options_ranks_cannot_honour_are_refused() {
    let png = std::env::temp_dir().join(format!("lockstep-ranks-{}.png", std::process::id()));
    let cases: [(&[&str], &str); 4] = [
        (&["nbody", "--n", "20", "--mode", "fast"], "--mode fast"),
        (&["mg", "--n", "101", "--model", "grid-sync"], "--model grid-sync"),
        (&["mg", "--n", "101", "--groups", "1"], "each rank needs at least one group"),
        (&["bridge", "--paths", "10", "--plot", png.to_str().expect("utf-8")], "--plot"),
    ];
    for (family, flag) in cases {
        let mut cmd = vec!["run", "--ranks", "2"];
        cmd.extend(family);
        let e = run(&cmd);
        assert_ne!(e.code, Some(0), "{family:?} accepted: {}", e.stdout);
        assert!(e.stderr.contains(flag) && e.stderr.contains("error:"), "{family:?}: {}", e.stderr);
        assert!(e.stderr.lines().any(|l| l.starts_with("error: rank")), "{family:?}: {}", e.stderr);
    }
    assert!(!png.exists());
}
