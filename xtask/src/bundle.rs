//! `cargo xtask bundle`: the GPU suites and the CLI for a machine with a driver but no Rust.
//!
//! Writes `target/bundle/`: `tests/<suite>` (the root package's release test binaries),
//! `examples/<family>` (release examples), `lockstep-downstream` (tests/downstream built on
//! stable with feature `gpu`), `lockstep` (the CLI) and `run-gpu-tests.sh`, which runs every
//! suite with `LOCKSTEP_REQUIRE_GPU=1` (a missing GPU fails), then every example and the
//! downstream crate (each must report bits equal on the GPU), then `lockstep demo`, and exits
//! non-zero if anything failed; `LOCKSTEP_MODULE=ptx ./run-gpu-tests.sh` runs the same on the PTX
//! (JIT) path instead of the device's cubin. Every binary embeds the compressed device code
//! (about 1 MB, incompressible), so the folder is packed as `target/bundle.tar.xz` with xz -9,
//! whose 64 MiB window stores those identical megabytes once (gzip's 32 KiB window stored them
//! in every binary): that is what to carry, `tar xJf target/bundle.tar.xz -C target` there.

use anyhow::{Context, Result, bail};
use std::path::Path;

/// The root package's examples, one per family.
const EXAMPLES: [&str; 7] = ["bridge", "histogram", "himeno", "nbody", "matmul", "mg", "foundation"];

/// The device tool carries at most 64 MiB (checked on the archive).
const LIMIT_BYTES: u64 = 64 << 20;

pub fn run(root: &Path) -> Result<()> {
    crate::setup::run(root)?;
    let out = crate::cargo(root)
        .args(["test", "--release", "-p", "lockstep-parity", "--no-run", "--message-format=json-render-diagnostics"])
        .output()
        .context("building the release test binaries")?;
    if !out.status.success() {
        bail!("building the test binaries failed:\n{}", String::from_utf8_lossy(&out.stderr));
    }
    let mut suites = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let is_test = msg["profile"]["test"].as_bool() == Some(true);
        let is_root =
            msg["package_id"].as_str().is_some_and(|p| p.contains("lockstep-parity") || p.ends_with("/main#0.1.0"));
        if let (true, true, Some(exe)) = (is_test, is_root, msg["executable"].as_str()) {
            let name = msg["target"]["name"].as_str().unwrap_or("suite").to_string();
            if name == "tidy" {
                continue; // reads the source tree; runs in CI, not on the GPU machine
            }
            suites.push((name, exe.to_string()));
        }
    }
    if suites.is_empty() {
        bail!("no test binaries found in cargo's output");
    }
    let status = crate::cargo(root).args(["build", "--release", "-q", "-p", "lockstep-cli"]).status()?;
    if !status.success() {
        bail!("building the CLI failed");
    }
    let status =
        crate::cargo(root).args(["build", "--release", "-q", "-p", "lockstep-parity", "--examples"]).status()?;
    if !status.success() {
        bail!("building the examples failed");
    }
    crate::reach::downstream(root)?;
    let bundle = root.join("target/bundle");
    let _ = std::fs::remove_dir_all(&bundle);
    std::fs::create_dir_all(bundle.join("tests"))?;
    let mut names = Vec::new();
    for (name, exe) in &suites {
        std::fs::copy(exe, bundle.join("tests").join(name))?;
        names.push(name.clone());
    }
    std::fs::copy(root.join("target/release/lockstep"), bundle.join("lockstep"))?;
    std::fs::create_dir_all(bundle.join("examples"))?;
    for example in EXAMPLES {
        std::fs::copy(root.join("target/release/examples").join(example), bundle.join("examples").join(example))?;
    }
    std::fs::copy(root.join("target/downstream/release/lockstep-downstream"), bundle.join("lockstep-downstream"))?;
    names.sort();
    let script = format!(
        r#"#!/usr/bin/env bash
# Runs lockstep's GPU suites with the GPU required, then the demo. Made by `cargo xtask bundle`.
# Usage: [LOCKSTEP_MODULE=ptx|cubin] ./run-gpu-tests.sh [extra test-harness args]
set -u
cd "$(dirname "$0")"
export LOCKSTEP_REQUIRE_GPU=1
echo "module: LOCKSTEP_MODULE=${{LOCKSTEP_MODULE:-auto}}"; ./lockstep info | grep -E '^(GPU|loaded)'
failed=0
passed_suites=0
for suite in {suites}; do
  echo "=== suite $suite"
  if ./tests/$suite "$@"; then passed_suites=$((passed_suites+1)); else echo "FAILED: suite $suite"; failed=$((failed+1)); fi
done
for exe in {examples} lockstep-downstream; do
  echo "=== $exe"
  if ./$exe > out.txt 2>&1 && grep -q "gpu.*bits equal" out.txt; then cat out.txt; passed_suites=$((passed_suites+1));
  else cat out.txt; echo "FAILED: $exe (must run and report GPU bits equal)"; failed=$((failed+1)); fi
done
rm -f out.txt
echo "=== lockstep demo"
if ./lockstep demo; then passed_suites=$((passed_suites+1)); else echo "FAILED: demo"; failed=$((failed+1)); fi
echo "bundle: $passed_suites passed, $failed failed"
exit $failed
"#,
        suites = names.join(" "),
        examples = EXAMPLES.map(|e| format!("examples/{e}")).join(" ")
    );
    crate::python::wheel(root, &bundle.join("python"))?; // python/run-python-tests.sh there
    let script_path = bundle.join("run-gpu-tests.sh");
    std::fs::write(&script_path, script)?;
    std::process::Command::new("chmod").arg("+x").arg(&script_path).status()?;
    let size = dir_size(&bundle)?;
    println!("bundle: {} ({} suites + CLI, {:.1} MiB)", bundle.display(), names.len(), size as f64 / (1 << 20) as f64);
    let archive = root.join("target/bundle.tar.xz");
    let status = std::process::Command::new("tar")
        .arg("--use-compress-program=xz -9 -T0")
        .arg("-cf")
        .arg(&archive)
        .arg("-C")
        .arg(root.join("target"))
        .arg("bundle")
        .status()
        .context("running tar")?;
    if !status.success() {
        bail!("packing {} failed", archive.display());
    }
    let packed = std::fs::metadata(&archive)?.len();
    println!(
        "archive: {} ({:.1} MiB; unpack with `tar xJf target/bundle.tar.xz -C target`)",
        archive.display(),
        packed as f64 / (1 << 20) as f64
    );
    if packed > LIMIT_BYTES {
        bail!("the archive is {packed} bytes, over the {LIMIT_BYTES}-byte limit");
    }
    Ok(())
}

fn dir_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)?.flatten() {
        let meta = entry.metadata()?;
        total += if meta.is_dir() { dir_size(&entry.path())? } else { meta.len() };
    }
    Ok(total)
}
