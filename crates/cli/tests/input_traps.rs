//! Input that looks fine but is not (issue #25, part 4), one test per class, the binary run as a
//! user runs it: a CSV with a byte-order mark or a typo in its first line (no body may be lost
//! as a "header"), counts near 2^64 and zero, the process's own memory limit (`ulimit -v`), NaN
//! known at step 1, counts in scientific notation, and a bare `lockstep`.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

const EXE: &str = env!("CARGO_BIN_EXE_lockstep");

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("lockstep-input-traps-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn file(name: &str, text: &str) -> String {
    let p = dir().join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

fn run(args: &[&str]) -> (Output, f64) {
    let t = Instant::now();
    let out = Command::new(EXE).args(args).stdin(Stdio::null()).output().expect("spawn lockstep");
    (out, t.elapsed().as_secs_f64())
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Exit 0 and `needle` on stdout.
fn runs(args: &[&str], needle: &str) {
    let (o, _) = run(args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "lockstep {}: exit {:?}: {err}", args.join(" "), o.status.code());
    assert!(out.contains(needle), "lockstep {}: stdout lacks `{needle}`: {out}", args.join(" "));
}

/// A refusal within `secs`: non-zero exit, one `error:` line naming every needle, no panic.
fn refused_within(args: &[&str], needles: &[&str], secs: f64) {
    let (o, took) = run(args);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "lockstep {}: exit 0, expected a refusal: {out}", args.join(" "));
    assert!(o.status.code().is_some(), "lockstep {}: killed by a signal", args.join(" "));
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "lockstep {}: stderr: {err}", args.join(" "));
    assert!(lines[0].starts_with("error: "), "{}", lines[0]);
    for n in needles {
        assert!(lines[0].contains(n), "lockstep {}: `{}` lacks `{n}`", args.join(" "), lines[0]);
    }
    assert!(took < secs, "lockstep {}: refused only after {took:.1} s", args.join(" "));
}

const BODY_A: &str = "0,0,0,0,0,0,1\n";
const BODY_B: &str = "1,0,0,0,0.5,0,1\n";

#[test]
fn csv_with_a_byte_order_mark_keeps_every_body() {
    let f = file("bom.csv", &format!("\u{feff}{BODY_A}{BODY_B}"));
    runs(&["nbody", "--init", &f, "--steps", "2", "--device", "cpu"], "2 bodies");
    let f = file("bom-header.csv", &format!("\u{feff}x,y,z,vx,vy,vz,m\n{BODY_A}{BODY_B}"));
    runs(&["nbody", "--init", &f, "--steps", "2", "--device", "cpu"], "2 bodies");
}

#[test]
fn a_typo_in_the_first_line_is_an_error_not_a_header() {
    let f = file("typo.csv", &format!("0,0,0,O,0,0,1\n{BODY_B}"));
    refused_within(&["nbody", "--init", &f, "--device", "cpu"], &["--init", "line 1", "`O`", "--header"], 30.0);
    // A header is a line without numbers, or declared with --header.
    let f = file("header.csv", &format!("x,y,z,vx,vy,vz,m\n{BODY_A}{BODY_B}"));
    runs(&["nbody", "--init", &f, "--steps", "2", "--device", "cpu"], "2 bodies");
    let f = file("numbered.csv", &format!("body1,x2,3,vx,vy,vz,m\n{BODY_A}{BODY_B}"));
    refused_within(&["nbody", "--init", &f, "--device", "cpu"], &["line 1"], 30.0);
    runs(&["nbody", "--init", &f, "--steps", "2", "--device", "cpu", "--header"], "2 bodies");
}

#[test]
fn counts_near_2_pow_64_and_zero_are_refused_before_work() {
    let out = dir().join("t.npy").display().to_string();
    let max = "18446744073709551615";
    refused_within(
        &["nbody", "--steps", max, "--every", "1", "--out", &out, "--device", "cpu"],
        &["2^64", "lower"],
        30.0,
    );
    refused_within(&["demo", "--n", max], &["--n"], 30.0);
    refused_within(&["demo", "--n", "0"], &["--n", "≥ 1"], 30.0);
    refused_within(&["mg", "--n", "18446744073709551615", "--device", "cpu"], &["n"], 30.0);
}

#[test]
fn the_process_memory_limit_is_respected() {
    // 1,000,000,001 agents need 16 GB: under `ulimit -v` 2 GB the run is refused before work,
    // naming the limit, whatever the machine's free memory.
    let script = format!("ulimit -v 2000000 && exec {EXE} mg --n 1000000001 --groups 1 --device cpu");
    let t = Instant::now();
    let o = Command::new("sh").args(["-c", &script]).stdin(Stdio::null()).output().expect("sh");
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "stdout {out} stderr {err}");
    assert!(err.starts_with("error: ") && err.contains("RLIMIT_AS") && err.contains("lower --n"), "{err}");
    assert!(t.elapsed().as_secs_f64() < 30.0);
}

#[test]
fn nan_at_step_one_is_reported_at_step_one() {
    // Two coincident bodies with no softening: NaN in the first step; a long run stops there.
    let f = file("coincident.csv", "0,0,0,0,0,0,1\n0,0,0,0,0,0,1\n1,1,1,0,0,0,1\n");
    refused_within(
        &["nbody", "--init", &f, "--eps", "0", "--steps", "100000000", "--device", "cpu"],
        &["not finite after step 1 of 100000000", "--eps"],
        30.0,
    );
}

#[test]
fn counts_in_scientific_notation_read_exactly() {
    runs(&["bridge", "--paths", "1e3", "--steps", "2", "--device", "cpu"], "1000 paths");
    runs(&["mg", "--n", "1.01e2", "--p", "2e1", "--trials", "2", "--device", "cpu"], "n = 101");
    refused_within(&["bridge", "--paths", "1.5", "--device", "cpu"], &["--paths", "not a whole number"], 30.0);
    refused_within(&["bridge", "--paths", "2.5e0", "--device", "cpu"], &["--paths", "not a whole number"], 30.0);
    refused_within(&["bridge", "--paths", "1e30", "--device", "cpu"], &["--paths", "larger than"], 30.0);
    refused_within(&["bridge", "--paths", "1e-3", "--device", "cpu"], &["--paths", "not a whole number"], 30.0);
}

#[test]
fn a_bare_lockstep_lists_its_subcommands() {
    let (o, _) = run(&[]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    for sub in ["demo", "bench", "mg", "nbody", "bridge", "info"] {
        assert!(out.lines().any(|l| l.trim_start().starts_with(sub)), "no `{sub}` in:\n{out}");
    }
}
