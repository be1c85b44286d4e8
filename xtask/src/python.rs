//! The Python package (`python/`): its pytest suite as a step of `cargo xtask test`, and the
//! abi3 wheel for a GPU machine without Rust (`cargo xtask wheel`, also part of `bundle`).
//!
//! - `test`: creates a venv under `target/python-venv` (`python3 -m venv`), `pip install`s
//!   `python/` with its test extra (pip fetches maturin, numpy and pytest from PyPI and builds
//!   the module in `target/python`), builds the CLI (the `.npy` comparison) and runs pytest.
//!   GPU tests print `SKIPPED (no GPU)` and are skipped unless `LOCKSTEP_REQUIRE_GPU=1`.
//! - `wheel`: `maturin build --release` into `target/wheels/`, with pytest's wheels (for a
//!   machine without PyPI), `python/tests`, `python/bench` and `run-python-tests.sh`, which
//!   installs them into `pylib/` beside the machine's own numpy and runs pytest with the GPU required.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/python-venv`, created when missing; returns its `python`.
fn venv(root: &Path) -> Result<PathBuf> {
    let dir = root.join("target/python-venv");
    let python = dir.join("bin/python");
    if !python.exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&dir), "python3 -m venv target/python-venv")?;
    }
    Ok(python)
}

fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd.status().with_context(|| format!("starting {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// `pip install python/[test]` into the venv, then pytest on `python/tests`.
pub fn test(root: &Path) -> Result<()> {
    let python = venv(root)?;
    println!("python: pip install python/ (maturin builds the module into target/python)");
    run(
        Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .arg(format!("{}[test]", root.join("python").display()))
            .current_dir(root.join("python")),
        "pip install python/",
    )?;
    run(crate::cargo(root).args(["build", "-q", "-p", "lockstep-cli"]), "cargo build -p lockstep-cli")?;
    println!("python: pytest python/tests");
    run(
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-rs", "python/tests"])
            .env("LOCKSTEP_CLI", root.join("target/debug/lockstep"))
            .current_dir(root),
        "pytest python/tests",
    )
}

/// Writes the abi3 wheel, pytest's wheels, the tests and `run-python-tests.sh` to `out`.
pub fn wheel(root: &Path, out: &Path) -> Result<()> {
    let python = venv(root)?;
    run(
        Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "maturin>=1.7,<2",
        ]),
        "pip install maturin",
    )?;
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out)?;
    run(
        Command::new(&python)
            .args(["-m", "maturin", "build", "--release", "--quiet", "--manifest-path"])
            .arg(root.join("python/Cargo.toml"))
            .arg("--out")
            .arg(out)
            .current_dir(root.join("python")),
        "maturin build",
    )?;
    // pytest for a machine without PyPI (pure-Python wheels; the device has Python 3.12).
    run(
        Command::new(&python)
            .args(["-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--only-binary=:all:"])
            .args(["--python-version", "3.12", "pytest>=7", "-d"])
            .arg(out),
        "pip download pytest",
    )?;
    for dir in ["tests", "bench"] {
        std::fs::create_dir_all(out.join(dir))?;
        for entry in std::fs::read_dir(root.join("python").join(dir))?.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "py") {
                std::fs::copy(&path, out.join(dir).join(entry.file_name()))?;
            }
        }
    }
    let script = out.join("run-python-tests.sh");
    std::fs::write(
        &script,
        r#"#!/usr/bin/env bash
# Installs lockstep's wheel (and pytest) from this folder beside the machine's own numpy
# and runs the Python tests with the GPU required. Made by `cargo xtask wheel`.
# Usage: ./run-python-tests.sh [pytest args, e.g. -k gpu]
set -eu
cd "$(dirname "$0")"
# The machine's python3 (often itself a venv, e.g. PyTorch's) keeps its numpy: the wheel and
# pytest go into ./pylib, found through PYTHONPATH; nothing is fetched (no PyPI there).
PY="${PYTHON:-python3}"
rm -rf pylib
"$PY" -m pip install --quiet --no-index --find-links . --target pylib --no-deps lockstep
"$PY" -m pip install --quiet --no-index --find-links . --target pylib pytest
export PYTHONPATH="$PWD/pylib${PYTHONPATH:+:$PYTHONPATH}"
if [ -z "${LOCKSTEP_CLI:-}" ] && [ -x ../lockstep ]; then export LOCKSTEP_CLI="$PWD/../lockstep"; fi
LOCKSTEP_REQUIRE_GPU=1 "$PY" -m pytest -q -rs tests "$@"
"#,
    )?;
    run(Command::new("chmod").arg("+x").arg(&script), "chmod")?;
    for entry in std::fs::read_dir(out)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("lockstep-") && name.ends_with(".whl") {
            println!("wheel: {} ({} bytes)", entry.path().display(), entry.metadata()?.len());
        }
    }
    println!("wheel: run there with `{}/run-python-tests.sh`", out.display());
    Ok(())
}
