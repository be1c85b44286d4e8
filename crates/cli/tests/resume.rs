//! `lockstep nbody` and `lockstep mg` stopped by SIGTERM/SIGINT (as a batch system's time limit
//! or Ctrl-C stops them) write a checkpoint and say how to resume; `--resume` with the same
//! command line finishes with output files byte-identical to an uninterrupted run's; a corrupt
//! or mismatched checkpoint is refused before any work. On the CPU here; the GPU machine runs
//! `scripts/resume-gpu-check.sh` with the release binary (GPU → CPU and CPU → GPU).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;

const EXE: &str = env!("CARGO_BIN_EXE_lockstep");

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lockstep-cli-resume-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn run(args: &[String]) -> Output {
    Command::new(EXE).args(args).stdin(Stdio::null()).output().expect("spawn lockstep")
}

fn ok(args: &[String]) {
    let o = run(args);
    assert!(o.status.success(), "lockstep {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr));
}

/// Starts `args`, waits until `ckpt` exists (the first periodic checkpoint), sends `signal`, and
/// returns the exit code and stderr.
fn interrupt(args: &[String], ckpt: &Path, signal: i32) -> (Option<i32>, String) {
    let child = common::start_until_file(args, Stdio::piped(), ckpt);
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().expect("wait");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Interrupt, check the message, resume, and compare the output file with an uninterrupted run.
fn stop_and_resume(tag: &str, base: &[&str], out_flag: &str, out_name: &str, every: &str, signal: i32) {
    let d = dir(tag);
    let (a, b, ck) = (d.join(format!("a-{out_name}")), d.join(format!("b-{out_name}")), d.join("run.ckpt"));
    let with = |out: &Path, extra: &[&str]| {
        let mut v = strings(base);
        v.extend([out_flag.to_string(), out.display().to_string()]);
        v.extend(strings(extra));
        v
    };
    ok(&with(&a, &[]));
    let ck_s = ck.display().to_string();
    let (code, err) = interrupt(&with(&b, &["--checkpoint", &ck_s, "--checkpoint-every", every]), &ck, signal);
    if code == Some(0) {
        eprintln!("note: the run finished before the signal arrived; resuming from its last periodic checkpoint");
    } else {
        assert_eq!(code, Some(1), "{err}");
        assert!(err.starts_with("error: interrupted by a signal") && err.contains("--resume"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!b.exists(), "an interrupted run writes no output");
    }
    assert!(ck.exists());
    ok(&with(&b, &["--resume", &ck_s]));
    assert_eq!(std::fs::read(&a).expect("a"), std::fs::read(&b).expect("b"), "{tag}: resumed output differs");
    // A corrupt checkpoint (one flipped bit) and another run's are refused before any work.
    let mut bytes = std::fs::read(&ck).expect("ckpt");
    let at = bytes.len() - 9;
    bytes[at] ^= 4;
    let bad = d.join("bad.ckpt");
    std::fs::write(&bad, &bytes).expect("write");
    let o = run(&with(&b, &["--resume", &bad.display().to_string()]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("corrupt") && err.contains("checksum"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn nbody_stopped_by_sigterm_resumes_bit_identically() {
    let base = ["nbody", "--n", "64", "--steps", "3000", "--every", "250", "--device", "cpu", "--precision", "f64"];
    stop_and_resume("nbody", &base, "--out", "traj.npy", "40", libc::SIGTERM);
    let base32 = ["nbody", "--n", "48", "--steps", "2000", "--every", "7", "--device", "cpu", "--init", "plummer"];
    stop_and_resume("nbody32", &base32, "--out", "traj.npy", "25", libc::SIGINT);
}

#[test]
fn mg_stopped_by_sigint_resumes_bit_identically() {
    let base = ["mg", "--n", "2001", "--p", "400", "--trials", "8", "--device", "cpu", "--groups", "7"];
    stop_and_resume("mg", &base, "--out", "series.csv", "90", libc::SIGINT);
}

#[test]
fn resume_needs_the_same_command() {
    let d = dir("same");
    let ck = d.join("x.ckpt").display().to_string();
    ok(&strings(&[
        "mg",
        "--n",
        "101",
        "--p",
        "50",
        "--trials",
        "3",
        "--device",
        "cpu",
        "--checkpoint",
        &ck,
        "--checkpoint-every",
        "60",
    ]));
    let o = run(&strings(&["mg", "--n", "103", "--p", "50", "--trials", "3", "--device", "cpu", "--resume", &ck]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("n = 101 there, 103 here"), "{err}");
    let o = run(&strings(&["nbody", "--n", "101", "--device", "cpu", "--resume", &ck]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("checkpoint of `mg`, not of `nbody`"), "{err}");
    let o = run(&strings(&["mg", "--device", "cpu", "--resume", &d.join("none.ckpt").display().to_string()]));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--resume"));
    let _ = std::fs::remove_dir_all(&d);
}
