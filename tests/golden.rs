//! Golden outputs: the SHA-256 of every canonical run's output bits (`tests/golden/runs.rs`)
//! against the committed table `tests/golden/golden.txt` — on the CPU here, on the GPU when
//! there is one (the same hashes). A changed hash, a run without a row or a row without a run
//! fails, naming the row.
//!
//! A deliberate change of canonical bits: bump `lockstep::STREAM_VERSION`, add a CHANGELOG.md
//! entry, then `LOCKSTEP_BLESS=1 cargo test -p lockstep-parity --test golden` rewrites the table
//! (README, "Stable outputs"). Blessing refuses changed bits under an unchanged stream version.

#[path = "golden/runs.rs"]
mod runs;
#[path = "golden/table.rs"]
mod table;

use lockstep::{Backend, STREAM_VERSION};
use lockstep_parity::gpu_or_skip;
use std::time::Instant;
use table::{Computed, bless, bless_requested, check, format, parse, sha256_hex};

/// The committed table, as this binary was built with it (the bundle carries no source tree).
const TABLE: &str = include_str!("golden/golden.txt");

const HEADER: &str = "\
lockstep golden outputs: one canonical run per line.
<name> <stream version> <SHA-256 of the output bytes> <parameters>
The bytes: little-endian values in the order tests/golden/runs.rs documents. Checked on the CPU
and the GPU by tests/golden.rs; rewritten only by LOCKSTEP_BLESS=1 (README, \"Stable outputs\").";

fn compute(backend: Backend<'_>) -> Result<Vec<Computed>, String> {
    runs::all()
        .into_iter()
        .map(|r| {
            let bytes = (r.bytes)(backend).map_err(|e| format!("run `{}` on {}: {e}", r.name, backend.name()))?;
            Ok(Computed { name: r.name, sha256: sha256_hex(&bytes), about: r.about })
        })
        .collect()
}

#[test]
fn golden_outputs_on_the_cpu_equal_the_table() {
    let t = Instant::now();
    let computed = compute(Backend::Cpu).unwrap_or_else(|e| panic!("{e}"));
    let secs = t.elapsed().as_secs_f64();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/golden.txt");
    if bless_requested() {
        // Read from disk: the table as it is now, not as this binary was built.
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let old = parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        let (rows, changes) = bless(&old, &computed, STREAM_VERSION).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(path, format(HEADER, &rows)).unwrap_or_else(|e| panic!("writing {path}: {e}"));
        eprintln!("blessed {path}: {} rows, {} changes", rows.len(), changes.len());
        changes.iter().for_each(|c| eprintln!("  {c}"));
        return;
    }
    let table = parse(TABLE).unwrap_or_else(|e| panic!("{path}: {e}"));
    let failures = check(&table, &computed, STREAM_VERSION);
    eprintln!("golden: {} runs on the CPU in {secs:.2} s", computed.len());
    assert!(
        failures.is_empty(),
        "{} golden row(s) fail:\n  {}\n(a deliberate change: bump lockstep::STREAM_VERSION, add a CHANGELOG.md entry, \
         then LOCKSTEP_BLESS=1 cargo test -p lockstep-parity --test golden)",
        failures.len(),
        failures.join("\n  ")
    );
}

#[test]
fn golden_outputs_on_the_gpu_equal_the_table() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = gpu_or_skip!();
    let table = parse(TABLE)?;
    let computed = compute(Backend::Gpu(gpu))?;
    // Missing and stale rows are the CPU test's to report; here every run must hash as its row.
    let failures: Vec<String> = check(&table, &computed, STREAM_VERSION)
        .into_iter()
        .filter(|f| f.starts_with("row `") && f.contains("SHA-256"))
        .collect();
    assert!(
        failures.is_empty(),
        "{} golden row(s) differ on the GPU ({}):\n  {}",
        failures.len(),
        gpu.name(),
        failures.join("\n  ")
    );
    Ok(())
}
