//! Golden files of the CLI (issue #25): the SHA-256 of the bytes — header included — of the
//! files a few canonical `lockstep bridge|nbody|mg` runs write with `--out`, against the
//! committed table `tests/golden/cli.txt` (format: `tests/golden/table.rs` of the workspace
//! root; here the description column is the command line, without `--device` and `--out`).
//! Each run also leaves a `.json` sidecar naming this build's stream version.
//!
//! Here the runs take `--device cpu`; `scripts/cli-golden-gpu.sh` runs the same command lines
//! with `--device gpu` on a GPU machine and checks the same hashes. A deliberate change: bump
//! `lockstep::STREAM_VERSION`, add a CHANGELOG.md entry, then
//! `LOCKSTEP_BLESS=1 cargo test -p lockstep-cli --test golden_cli`.

#[path = "../../../tests/golden/table.rs"]
mod table;

use std::path::{Path, PathBuf};
use std::process::Command;
use table::{Computed, bless, bless_requested, check, format, parse, sha256_hex};

const EXE: &str = env!("CARGO_BIN_EXE_lockstep");

/// The committed table, as this binary was built with it.
const TABLE: &str = include_str!("golden/cli.txt");

const HEADER: &str = "\
lockstep CLI golden files: one canonical run per line.
<name> <stream version> <SHA-256 of the --out file's bytes> <command line after `lockstep`>
Each command runs with `--device cpu --out <dir>/<name>.npy` (`.csv` for mg) in
crates/cli/tests/golden_cli.rs, with `--device gpu` in scripts/cli-golden-gpu.sh; the hashes are
the same. Rewritten only by LOCKSTEP_BLESS=1 (README, \"Stable outputs\").";

/// The canonical runs: name and command line (after `lockstep`, before `--device`/`--out`).
const RUNS: &[(&str, &str)] = &[
    ("bridge-philox-f32-paths-d3", "bridge --paths 1001 --steps 17 --dims 3 --precision f32 --source philox --seed 7"),
    (
        "bridge-philox-f64-increments-d1",
        "bridge --paths 1001 --steps 17 --precision f64 --source philox --seed 7 --increments",
    ),
    (
        "bridge-sobol-f32-increments-d3",
        "bridge --paths 1001 --steps 17 --dims 3 --precision f32 --source sobol --seed 1 --increments",
    ),
    ("bridge-sobol-f64-paths-d1", "bridge --paths 1001 --steps 17 --precision f64 --source sobol --seed 1"),
    (
        "bridge-philox-f64-forward-start",
        "bridge --paths 777 --steps 9 --start 0.5 -1 2 --order forward --t-end 2.5 --precision f64 --seed 3",
    ),
    ("nbody-exact-f32", "nbody --n 64 --steps 10 --every 2 --precision f32 --seed 3"),
    ("nbody-exact-f64", "nbody --n 64 --steps 10 --every 5 --precision f64 --seed 3 --kernel global"),
    ("mg-standalone", "mg --n 101 --m 3 --s 2 --p 40 --trials 5 --seed 2026 --model standalone"),
    ("mg-step", "mg --n 101 --m 3 --s 3 --p 40 --trials 3 --seed 2026 --model step"),
    ("mg-grid-sync", "mg --n 101 --m 3 --s 3 --p 40 --trials 3 --seed 2026 --model grid-sync"),
];

/// The output file of a run: `.csv` for mg, `.npy` otherwise.
fn out_path(dir: &Path, name: &str, args: &str) -> PathBuf {
    dir.join(format!("{name}.{}", if args.starts_with("mg ") { "csv" } else { "npy" }))
}

/// Runs `args` on the CPU into `out`; the file's bytes, after checking its sidecar.
fn run(args: &str, out: &Path) -> Result<Vec<u8>, String> {
    let mut words: Vec<&str> = args.split_whitespace().collect();
    let out_s = out.display().to_string();
    words.extend(["--device", "cpu", "--out", &out_s]);
    let o = Command::new(EXE).args(&words).output().map_err(|e| format!("spawning {EXE}: {e}"))?;
    if !o.status.success() {
        return Err(format!("`lockstep {}` failed: {}", words.join(" "), String::from_utf8_lossy(&o.stderr)));
    }
    let bytes = std::fs::read(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let side = std::fs::read_to_string(format!("{out_s}.json")).map_err(|e| format!("{out_s}.json: {e}"))?;
    let v: serde_json::Value = serde_json::from_str(&side).map_err(|e| format!("{out_s}.json: {e}"))?;
    if v["stream_version"] != lockstep::STREAM_VERSION || v["device"] != "cpu" {
        return Err(format!("{out_s}.json: {side}"));
    }
    Ok(bytes)
}

#[test]
fn golden_cli_files_equal_the_table() {
    let dir = std::env::temp_dir().join(format!("lockstep-golden-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut computed = Vec::new();
    let mut errors = Vec::new();
    for (name, args) in RUNS {
        match run(args, &out_path(&dir, name, args)) {
            Ok(bytes) => {
                computed.push(Computed { name: name.to_string(), sha256: sha256_hex(&bytes), about: args.to_string() })
            }
            Err(e) => errors.push(format!("{name}: {e}")),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(errors.is_empty(), "runs failed:\n  {}", errors.join("\n  "));
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/cli.txt");
    if bless_requested() {
        let old = parse(&std::fs::read_to_string(path).unwrap_or_default()).unwrap_or_else(|e| panic!("{path}: {e}"));
        let (rows, changes) = bless(&old, &computed, lockstep::STREAM_VERSION).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(path, format(HEADER, &rows)).unwrap_or_else(|e| panic!("writing {path}: {e}"));
        eprintln!("blessed {path}: {} rows, {} changes", rows.len(), changes.len());
        changes.iter().for_each(|c| eprintln!("  {c}"));
        return;
    }
    let table = parse(TABLE).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut failures = check(&table, &computed, lockstep::STREAM_VERSION);
    for r in &table {
        if let Some((_, args)) = RUNS.iter().find(|(n, _)| *n == r.name)
            && r.about != *args
        {
            failures
                .push(format!("row `{}`: the table's command line `{}` is not the run's `{args}`", r.name, r.about));
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden CLI row(s) fail:\n  {}\n(a deliberate change: bump lockstep::STREAM_VERSION, add a CHANGELOG.md \
         entry, then LOCKSTEP_BLESS=1 cargo test -p lockstep-cli --test golden_cli)",
        failures.len(),
        failures.join("\n  ")
    );
}
