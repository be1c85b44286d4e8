//! The CLI as users meet it (issue #14): bad and careless invocations of `lockstep bridge|nbody|
//! mg|bench`, spawned as a new user would. Every case must end cleanly: no abort or signal, no
//! "panicked", no hang; a refused input exits non-zero with one line on stderr that names the flag
//! or file; a run that exits 0 has only finite numbers in what it printed and wrote.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
use common::Ended;

const EXE: &str = env!("CARGO_BIN_EXE_lockstep");

/// How a case must end.
#[derive(Clone, Copy)]
enum Want {
    /// Non-zero exit, one line on stderr containing every one of these.
    Refused(&'static [&'static str]),
    /// Exit 0, only finite output (and the files named exist and are finite).
    Runs,
}

struct Case {
    class: &'static str,
    args: Vec<String>,
    env: Option<(&'static str, String)>,
    want: Want,
    /// Output files to check after a successful run.
    files: Vec<PathBuf>,
}

impl Case {
    /// `lockstep args…`, to end as `want`, with no extra environment and no output files to check.
    fn new(class: &'static str, args: &[&str], want: Want) -> Case {
        Case { class, args: args.iter().map(|s| s.to_string()).collect(), env: None, want, files: vec![] }
    }
}

fn run(case: &Case) -> Result<Ended, String> {
    let mut cmd = Command::new(EXE);
    cmd.args(&case.args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some((k, v)) = &case.env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().map_err(|e| format!("spawning {EXE}: {e}"))?;
    let ended = common::finish(child, Duration::from_secs(120))?;
    if ended.code.is_none() {
        return Err(format!("ABORT: ended by a signal; stderr: {}", ended.stderr));
    }
    Ok(ended)
}

/// A word of printed output that is a non-finite number.
fn non_finite_word(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')' || c == '[' || c == ']')
        .find(|w| {
            let w = w.trim_end_matches([':', ';', '.']).to_ascii_lowercase();
            matches!(w.as_str(), "nan" | "inf" | "-inf" | "+inf" | "infinity" | "-nan")
        })
        .map(str::to_string)
}

fn npy_finite(path: &Path) -> Result<usize, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = npyz::NpyFile::new(&bytes[..]).map_err(|e| format!("{}: {e}", path.display()))?;
    let descr = file.header().dtype().descr();
    let values: Vec<f64> = if descr.contains("f4") {
        file.into_vec::<f32>().map_err(|e| e.to_string())?.into_iter().map(f64::from).collect()
    } else {
        file.into_vec::<f64>().map_err(|e| e.to_string())?
    };
    if values.is_empty() {
        return Err(format!("{}: empty array", path.display()));
    }
    match values.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(format!("{}: value {i} is {}", path.display(), values[i])),
        None => Ok(values.len()),
    }
}

fn check(case: &Case) -> Result<String, String> {
    let e = run(case)?;
    let all = format!("{}{}", e.stdout, e.stderr);
    if all.contains("panicked") || all.contains("RUST_BACKTRACE") {
        return Err(format!("PANIC: {all}"));
    }
    if all.contains("memory allocation of") {
        return Err(format!("ABORT on memory: {all}"));
    }
    match case.want {
        Want::Refused(needles) => {
            if e.code == Some(0) {
                return Err(format!("exit 0, expected a refusal; stdout: {}", e.stdout));
            }
            let lines: Vec<&str> = e.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
            if lines.len() != 1 {
                return Err(format!("expected one line on stderr, got {}: {}", lines.len(), e.stderr));
            }
            if !lines[0].starts_with("error: ") {
                return Err(format!("stderr does not start with `error: `: {}", lines[0]));
            }
            if let Some(n) = needles.iter().find(|n| !lines[0].contains(*n)) {
                return Err(format!("stderr does not mention `{n}`: {}", lines[0]));
            }
            if e.secs > 30.0 {
                return Err(format!("refused only after {:.1} s: {}", e.secs, lines[0]));
            }
            Ok(format!("exit {:?}, one-line error", e.code))
        }
        Want::Runs => {
            if e.code != Some(0) {
                return Err(format!("exit {:?}: {}", e.code, e.stderr));
            }
            if let Some(w) = non_finite_word(&e.stdout) {
                return Err(format!("exit 0 with non-finite output `{w}`: {}", e.stdout));
            }
            for f in &case.files {
                if f.extension().is_some_and(|x| x == "npy") {
                    npy_finite(f)?;
                } else if f.extension().is_some_and(|x| x == "png") {
                    let b = std::fs::read(f).map_err(|er| format!("{}: {er}", f.display()))?;
                    if b.get(1..4) != Some(b"PNG") {
                        return Err(format!("{}: not a PNG", f.display()));
                    }
                } else {
                    let text = std::fs::read_to_string(f).map_err(|er| format!("{}: {er}", f.display()))?;
                    if let Some(w) = non_finite_word(&text) {
                        return Err(format!("{}: non-finite `{w}`", f.display()));
                    }
                }
            }
            Ok("exit 0, finite output".into())
        }
    }
}

fn has_gpu() -> bool {
    Command::new(EXE)
        .arg("info")
        .output()
        .map(|o| !String::from_utf8_lossy(&o.stdout).contains("no GPU:"))
        .unwrap_or(false)
}

fn cases(dir: &Path) -> Vec<Case> {
    let w = |s: &str| -> PathBuf { dir.join(s) };
    let file = |name: &str, text: &str| -> String {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("writing a test input");
        p.display().to_string()
    };
    let mut v = Vec::new();
    let mut add = |class: &'static str, args: &[&str], want: Want| {
        v.push(Case::new(class, args, want));
    };
    use Want::*;
    let mem: &[&str] = &["bytes", "available", "lower --"];
    // 1. sizes beyond memory: refused before any work, no abort.
    add("size beyond memory", &["bridge", "--paths", "4000000000"], Refused(mem));
    add("size beyond memory", &["bridge", "--steps", "2000000000"], Refused(mem));
    add(
        "size beyond memory",
        &["bridge", "--paths", "4000000000", "--steps", "4000000000", "--dims", "8"],
        Refused(mem),
    );
    add("size beyond memory", &["nbody", "--n", "1000000000", "--device", "cpu"], Refused(mem));
    add("size beyond memory", &["mg", "--n", "99999999999", "--device", "cpu"], Refused(mem));
    add(
        "size beyond memory",
        &["mg", "--n", "9223372036854775807", "--groups", "1", "--device", "cpu"],
        Refused(&["--n"]),
    );
    add("size beyond memory", &["nbody", "--n", "2000000000"], Refused(&["--n"]));
    // 2. what used to exit 0 with bad or empty output.
    let nan = file("nan.txt", "0.1 NaN 0.3\n");
    let inf = file("inf.txt", "0.1 inf 0.2 0.3");
    let big = file("big.txt", "1e308 0 0 0");
    add(
        "bad output at exit 0",
        &["mg", "--first", "18446744073709551615", "--trials", "2", "--device", "cpu"],
        Refused(&["--first", "--trials"]),
    );
    add("bad output at exit 0", &["bridge", "--t-end", "1e300", "--precision", "f32"], Refused(&["--t-end", "f32"]));
    add("bad output at exit 0", &["bridge", "--t-end", "1e39", "--precision", "f32"], Refused(&["--t-end", "f32"]));
    add("bad output at exit 0", &["bridge", "--start", "3e37", "--precision", "f32"], Refused(&["would reach", "f32"]));
    add(
        "bad output at exit 0",
        &["bridge", "--t-end", "1e70", "--increments", "--precision", "f64", "--steps", "4", "--paths", "3"],
        Runs,
    );
    add("bad output at exit 0", &["bridge", "--paths", "0"], Refused(&["--paths"]));
    add(
        "bad output at exit 0",
        &["bridge", "--paths", "1", "--steps", "2", "--source", &nan],
        Refused(&["--source", "entry 2"]),
    );
    add(
        "bad output at exit 0",
        &["bridge", "--paths", "1", "--steps", "2", "--source", &inf],
        Refused(&["--source", "entry 2"]),
    );
    add(
        "bad output at exit 0",
        &["bridge", "--paths", "2", "--steps", "2", "--source", &big, "--precision", "f32"],
        Refused(&["--source", "entry 1", "f32"]),
    );
    add("bad output at exit 0", &["bridge", "--cov", &nan, "--dims", "3"], Refused(&["--cov", "entry 2"]));
    add("bad output at exit 0", &["bridge", "--times", &inf], Refused(&["--times", "entry 2"]));
    let csv = file("bodies.csv", "0,0,0,0,0,0,1\n1e308,0,0,0,0,0,1\n");
    add(
        "bad output at exit 0",
        &["nbody", "--init", &csv, "--precision", "f32", "--device", "cpu"],
        Refused(&["--init", "body 2", "f32"]),
    );
    add("bad output at exit 0", &["nbody", "--g", "1e39", "--precision", "f32"], Refused(&["--g", "f32"]));
    // 3. errors that used to be unclear.
    let unwritable = "/nonexistent-lockstep-dir/x.png";
    add("unclear error", &["bridge", "--paths", "-5"], Refused(&["--paths", "negative"]));
    add("unclear error", &["nbody", "--dt", "-0.01"], Refused(&["--dt", "-0.01"]));
    add("unclear error", &["bridge", "--seed", "-1"], Refused(&["--seed", "negative"]));
    add("unclear error", &["nbody", "--seed", "-1"], Refused(&["--seed", "negative"]));
    add("unclear error", &["mg", "--seed", "-1"], Refused(&["--seed", "negative"]));
    add("unclear error", &["bridge", "--start", "-1", "-2", "--dims", "3"], Refused(&["--start", "--dims"]));
    add("unclear error", &["bridge", "--plot", unwritable], Refused(&["--plot", "cannot be written"]));
    add("unclear error", &["nbody", "--plot", unwritable], Refused(&["--plot", "cannot be written"]));
    add("unclear error", &["mg", "--plot", unwritable], Refused(&["--plot", "cannot be written"]));
    add("unclear error", &["mg", "--out", "/nonexistent-lockstep-dir/x.csv"], Refused(&["--out", "cannot be written"]));
    add("unclear error", &["bridge", "--out", "/"], Refused(&["--out"]));
    add("unclear error", &["bridge", "--plot", &w("fan.jpg").display().to_string()], Refused(&["--plot", ".png"]));
    add("unclear error", &["bridge", "--order", "random"], Refused(&["--order", "bisection", "forward"]));
    add("unclear error", &["bridge", "--source", "random"], Refused(&["--source", "philox", "sobol"]));
    add("unclear error", &["nbody", "--init", "random"], Refused(&["--init", "ball", "plummer"]));
    // 4. one convention: typed enums, the device flag, groups, seeds, bench subcommands.
    add("convention", &["bridge", "--precision", "f16"], Refused(&["--precision", "f32", "f64"]));
    add("convention", &["nbody", "--mode", "turbo"], Refused(&["--mode", "exact", "fast"]));
    add("convention", &["nbody", "--kernel", "texture"], Refused(&["--kernel", "global", "shared"]));
    add("convention", &["mg", "--model", "cpu"], Refused(&["--model", "standalone"]));
    add("convention", &["mg", "--device", "tpu"], Refused(&["--device", "auto", "gpu", "cpu"]));
    add("convention", &["bridge", "--cpu"], Refused(&["--cpu"]));
    add("convention", &["nbody", "--mode", "fast", "--device", "cpu"], Refused(&["--mode fast"]));
    add("convention", &["mg", "--n", "101", "--groups", "2000", "--device", "cpu"], Refused(&["--groups"]));
    add("convention", &["mg", "--seed", "4294967296"], Refused(&["--seed", "4294967295"]));
    add("convention", &["bridge", "--source", "sobol", "--seed", "5000000000"], Refused(&["--seed", "sobol"]));
    add("convention", &["bench", "mg", "--config", "standalone"], Refused(&["--config"]));
    add("convention", &["bench", "bridge", "--precision", "f16"], Refused(&["--precision"]));
    // 5. numbers out of range.
    add("number out of range", &["nbody", "--dt", "0"], Refused(&["--dt"]));
    add("number out of range", &["nbody", "--dt", "nan"], Refused(&["--dt"]));
    add("number out of range", &["nbody", "--dt", "inf"], Refused(&["--dt"]));
    add("number out of range", &["nbody", "--eps", "-1"], Refused(&["--eps"]));
    add("number out of range", &["nbody", "--steps", "0"], Refused(&["--steps"]));
    add("number out of range", &["nbody", "--n", "1.5"], Refused(&["--n"]));
    add("number out of range", &["bridge", "--t-end", "0"], Refused(&["--t-end"]));
    add("number out of range", &["bridge", "--steps", "1"], Refused(&["--steps"]));
    add("number out of range", &["bridge", "--dims", "9"], Refused(&["--dims"]));
    add("number out of range", &["bridge", "--paths", "99999999999999999999999"], Refused(&["--paths"]));
    add("number out of range", &["mg", "--n", "100"], Refused(&["even"]));
    add("number out of range", &["mg", "--m", "17"], Refused(&["m = 17"]));
    add("number out of range", &["mg", "--p", "0"], Refused(&["--p"]));
    add("number out of range", &["mg", "--trials", "0"], Refused(&["--trials"]));
    add("number out of range", &["mg", "--threads", "100000"], Refused(&["--threads"]));
    add("number out of range", &["bench", "bridge", "--paths", "0"], Refused(&["--paths"]));
    add("number out of range", &["bench", "smoke", "--runs", "-3"], Refused(&["--runs"]));
    // 6. bad input files.
    let dec = file("dec.txt", "0.5 0.25 1");
    let short = file("short.txt", "0.1 0.2");
    let order_dup = file("order.txt", "1 1 2");
    let words = file("words.txt", "0.1 zero 0.3");
    let notspd = file("cov.txt", "1 2 2 1");
    add("bad file", &["bridge", "--times", &dec], Refused(&["--times", "not after"]));
    add("bad file", &["bridge", "--times", &words], Refused(&["--times", "entry 2", "zero"]));
    add("bad file", &["bridge", "--paths", "3", "--steps", "2", "--source", &short], Refused(&["--source", "needs"]));
    add("bad file", &["bridge", "--steps", "4", "--order", &order_dup], Refused(&["order"]));
    add("bad file", &["bridge", "--dims", "2", "--cov", &notspd], Refused(&["positive definite"]));
    add("bad file", &["bridge", "--dims", "3", "--cov", &notspd], Refused(&["--cov", "3×3"]));
    add("bad file", &["bridge", "--cov", &w("missing.txt").display().to_string()], Refused(&["--cov"]));
    let peer_batch = file("peer.csv", "n,prec,mode,rate,batch\n1024,f32,fast,1.0e11,16\n");
    add("bad file", &["bench", "nbody", "throughput", "--peer", &peer_batch], Refused(&["--peer", "--batch 1"]));
    add("number out of range", &["bench", "nbody", "throughput", "--batch", "0"], Refused(&["--batch"]));
    let csv_bad = file("bad.csv", "0,0,0,0,0,0\n");
    add("bad file", &["nbody", "--init", &csv_bad, "--device", "cpu"], Refused(&["--init", "line 1"]));
    // 7. runs that must succeed with finite output (small).
    add("runs", &["mg", "--n", "101", "--p", "20", "--trials", "2"], Runs);
    add(
        "runs",
        &["bridge", "--paths", "7", "--steps", "5", "--start", "-1", "2", "--increments", "--device", "cpu"],
        Runs,
    );
    let times = file("times.txt", "0.1 0.15 0.7 2.5");
    let x = dir.join("x.npy");
    let y = dir.join("y.npy");
    let nb = dir.join("nb.npy");
    let mgout = dir.join("mg.csv");
    let png = dir.join("fan.png");
    let mut runs = |args: &[&str], files: Vec<PathBuf>| v.push(Case { files, ..Case::new("runs", args, Runs) });
    runs(
        &[
            "bridge",
            "--paths",
            "50",
            "--times",
            &times,
            "--precision",
            "f64",
            "--out",
            &x.display().to_string(),
            "--plot",
            &png.display().to_string(),
        ],
        vec![x.clone(), png],
    );
    let normals = file("z.txt", "0.5 -1 0.25 2 -0.5 1.5");
    runs(&["bridge", "--paths", "2", "--steps", "3", "--source", &normals, "--out", &y.display().to_string()], vec![y]);
    runs(&["nbody", "--n", "32", "--steps", "5", "--device", "cpu", "--out", &nb.display().to_string()], vec![nb]);
    runs(
        &["mg", "--n", "11", "--p", "30", "--trials", "3", "--device", "cpu", "--out", &mgout.display().to_string()],
        vec![mgout],
    );
    // Memory checks against a stated amount (LOCKSTEP_MEM_AVAILABLE), so they hold on any host.
    let limited = |args: &[&str]| Case {
        env: Some(("LOCKSTEP_MEM_AVAILABLE", "1000000".to_string())),
        ..Case::new("size beyond memory", args, Refused(&["bytes", "1000000 bytes", "lower --"]))
    };
    v.push(limited(&["bridge", "--paths", "2", "--steps", "40000"]));
    v.push(limited(&["bridge", "--paths", "100000"]));
    v.push(limited(&["nbody", "--n", "30000"]));
    v.push(limited(&[
        "nbody",
        "--n",
        "1000",
        "--steps",
        "1000",
        "--every",
        "1",
        "--out",
        &w("t.npy").display().to_string(),
    ]));
    v.push(limited(&["mg", "--n", "100001"]));
    v
}

#[test]
fn every_bad_input_ends_cleanly() {
    let dir = std::env::temp_dir().join(format!("lockstep-cli-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut cases = cases(&dir);
    let gpu = has_gpu();
    if !gpu {
        let mut nogpu = |args: &[&str]| cases.push(Case::new("no GPU", args, Want::Refused(&["no GPU"])));
        nogpu(&["bench", "smoke"]);
        nogpu(&["bench", "bridge"]);
        nogpu(&["bench", "nbody", "throughput"]);
        nogpu(&["bench", "nbody", "step"]);
        nogpu(&["bench", "mg", "standalone"]);
        nogpu(&["bench", "histogram"]);
        nogpu(&["bench", "himeno"]);
        nogpu(&["mg", "--device", "gpu"]);
        nogpu(&["bridge", "--device", "gpu"]);
    }
    let mut failures = Vec::new();
    let mut table: Vec<(&str, usize, std::collections::BTreeSet<String>)> = Vec::new();
    for case in &cases {
        let ended = match check(case) {
            Ok(how) => how,
            Err(why) => {
                failures.push(format!("lockstep {}: {why}", case.args.join(" ")));
                "FAILED".into()
            }
        };
        match table.iter_mut().find(|r| r.0 == case.class) {
            Some(r) => {
                r.1 += 1;
                r.2.insert(ended);
            }
            None => table.push((case.class, 1, [ended].into())),
        }
    }
    println!("| class of input | cases | how each ends |\n|---|---|---|");
    for (class, n, how) in &table {
        println!("| {class} | {n} | {} |", how.iter().cloned().collect::<Vec<_>>().join("; "));
    }
    println!("{} cases{}", cases.len(), if gpu { " (GPU present: no-GPU cases not run)" } else { "" });
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}
