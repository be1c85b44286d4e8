//! The Python package (`python/`): its pytest suite as a step of `cargo xtask test`, and the
//! abi3 wheel for a GPU machine without Rust (`cargo xtask wheel`, also part of `bundle`).
//!
//! - `test`: creates a venv under `target/python-venv` (`python3 -m venv`), builds the abi3
//!   wheel with maturin (into `target/python-dist/`, the module built in `target/python`),
//!   `pip install`s that wheel file with its test extra (pip fetches numpy and pytest from PyPI),
//!   builds the CLI (the `.npy` comparison) and runs pytest. GPU tests print `SKIPPED (no GPU)`
//!   and are skipped unless `LOCKSTEP_REQUIRE_GPU=1`. Then what a user gets:
//!   - the same wheel file installed into a fresh venv (`target/python-fresh`, made anew each
//!     time), where `import lockstep; lockstep.gpu_info()` must run;
//!   - the sdist (`maturin sdist`), from which `pip wheel` must build a wheel outside the
//!     checkout (so the sdist holds the path dependencies, lockstep's device code included), on
//!     the user's default toolchain; that wheel is installed into the fresh venv and imported.
//! - `wheel`: `maturin build --release` into `target/wheels/`, with pytest's wheels (for a
//!   machine without PyPI), `python/tests`, `python/bench` and `run-python-tests.sh`, which
//!   installs them into `pylib/` beside the machine's own numpy and runs pytest with the GPU required.

use crate::run;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Where `test` writes the wheel, the sdist and the wheel built from the sdist.
const DIST: &str = "target/python-dist";

/// `target/python-venv`, created when missing; returns its `python`.
fn venv(root: &Path) -> Result<PathBuf> {
    let dir = root.join("target/python-venv");
    let python = dir.join("bin/python");
    if !python.exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&dir), "python3 -m venv target/python-venv")?;
    }
    Ok(python)
}

/// The wheel (maturin) installed with its test extra into the venv, pytest on `python/tests`,
/// then the wheel in a fresh venv and the sdist ([`fresh_venv`], [`sdist`]).
pub fn test(root: &Path) -> Result<()> {
    let python = venv(root)?;
    install_maturin(&python)?;
    let dist = root.join(DIST);
    let _ = std::fs::remove_dir_all(&dist);
    std::fs::create_dir_all(&dist)?;
    println!("python: maturin build --release (the module into target/python, the wheel into {DIST}/)");
    let started = Instant::now();
    let wheel = build_wheel(root, &python, &dist)?;
    println!("python: {} ({:.0} s)", describe(&wheel)?, started.elapsed().as_secs_f64());
    // The version rarely changes between runs: pip would keep the installed module, so the
    // extension is reinstalled from this wheel (its dependencies and pytest installed first).
    let pip = |args: &[&str]| {
        let mut cmd = Command::new(&python);
        cmd.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]).args(args);
        cmd
    };
    run(pip(&[]).arg(format!("{}[test]", wheel.display())), "pip install <wheel>[test]")?;
    run(pip(&["--force-reinstall", "--no-deps"]).arg(&wheel), "pip install --force-reinstall <wheel>")?;
    run(crate::cargo(root).args(["build", "-q", "-p", "lockstep-cli"]), "cargo build -p lockstep-cli")?;
    println!("python: pytest python/tests");
    run(
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-rs", "python/tests"])
            .env("LOCKSTEP_CLI", root.join("target/debug/lockstep"))
            .current_dir(root),
        "pytest python/tests",
    )?;
    let started = Instant::now();
    let fresh = fresh_venv(root, &wheel)?;
    let venv_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let (sdist, from_sdist) = sdist(root, &python, &dist, &fresh)?;
    println!(
        "python: the wheel installs and imports in a fresh venv ({venv_s:.0} s); {} builds a wheel outside the checkout that imports there too ({:.0} s): {}",
        describe(&sdist)?,
        started.elapsed().as_secs_f64(),
        describe(&from_sdist)?
    );
    Ok(())
}

/// `target/python-fresh`, made anew, with `wheel` installed from the file (pip fetches numpy):
/// `import lockstep; print(lockstep.gpu_info())` must run there. Returns its `python`.
fn fresh_venv(root: &Path, wheel: &Path) -> Result<PathBuf> {
    let dir = root.join("target/python-fresh");
    let _ = std::fs::remove_dir_all(&dir);
    run(Command::new("python3").args(["-m", "venv"]).arg(&dir), "python3 -m venv target/python-fresh")?;
    let python = dir.join("bin/python");
    run(
        Command::new(&python).args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]).arg(wheel),
        "pip install <wheel> (fresh venv)",
    )?;
    import_lockstep(&python, "the wheel, fresh venv")?;
    Ok(python)
}

/// `import lockstep` and its `gpu_info()` in `python`, run outside the checkout's `python/`.
fn import_lockstep(python: &Path, label: &str) -> Result<()> {
    let dir = python.parent().and_then(Path::parent).context("a venv's python")?;
    let out = Command::new(python)
        .args(["-c", "import lockstep; print(lockstep.__file__); print(lockstep.gpu_info())"])
        .current_dir(dir)
        .output()
        .with_context(|| format!("starting python ({label})"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!("import lockstep ({label}) failed:\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
    }
    let mut lines = stdout.lines();
    let (file, info) = (lines.next().unwrap_or_default(), lines.next().unwrap_or_default());
    if !file.starts_with(&*dir.to_string_lossy()) {
        bail!("import lockstep ({label}) found {file}, not the venv's package");
    }
    println!("python: import lockstep ({label}): gpu_info() = {info}");
    Ok(())
}

/// `maturin sdist` into `dist`; the sdist unpacked into a folder outside the checkout (no
/// `rust-toolchain.toml` or `.cargo/config.toml` of ours applies: the user's default toolchain
/// builds it) and `pip wheel` run on it; that wheel installed into the `fresh` venv and imported.
/// `--no-build-isolation`: the venv's maturin (the one `[build-system]` asks for) builds it, so
/// nothing is fetched. The folder has a fixed name and files dated now, so the target directory
/// `target/python-sdist` (kept between runs) reuses the dependencies and rebuilds lockstep's
/// crates in place. Returns (sdist, wheel built from it).
fn sdist(root: &Path, python: &Path, dist: &Path, fresh: &Path) -> Result<(PathBuf, PathBuf)> {
    println!("python: maturin sdist, then pip wheel on the unpacked sdist (outside the checkout)");
    run(
        Command::new(python)
            .args(["-m", "maturin", "sdist", "--manifest-path"])
            .arg(root.join("python/Cargo.toml"))
            .arg("--out")
            .arg(dist)
            .current_dir(root.join("python")),
        "maturin sdist",
    )?;
    let sdist = only_file(dist, ".tar.gz")?;
    let out = dist.join("from-sdist");
    std::fs::create_dir_all(&out)?;
    let work = std::env::temp_dir().join("lockstep-sdist-build");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    run(Command::new("tar").arg("xzmf").arg(&sdist).arg("-C").arg(&work), "tar xzmf <sdist>")?;
    let name = sdist.file_name().unwrap_or_default().to_string_lossy();
    let unpacked = work.join(name.trim_end_matches(".tar.gz"));
    let mut cmd = Command::new(python);
    cmd.args(["-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-build-isolation"])
        .arg("-w")
        .arg(&out)
        .arg(&unpacked)
        .current_dir(&work);
    for var in crate::reach::OUTER_ENV {
        cmd.env_remove(var);
    }
    // maturin's build hook runs `maturin` from PATH: the venv's, as if it were activated.
    let bin = python.parent().context("the venv's bin/")?;
    let path = std::env::var_os("PATH").unwrap_or_default();
    cmd.env("PATH", std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&path)))?);
    // cust's build script (feature gpu) needs CUDA_LIBRARY_PATH/lib64 without a CUDA install.
    cmd.env("CUDA_LIBRARY_PATH", root.join(".cargo/cuda-link"))
        .env("CARGO_TARGET_DIR", root.join("target/python-sdist"));
    let built = run(&mut cmd, "pip wheel <unpacked sdist>");
    let _ = std::fs::remove_dir_all(&work);
    built?;
    let wheel = only_file(&out, ".whl")?;
    run(
        Command::new(fresh)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--force-reinstall", "--no-deps"])
            .arg(&wheel),
        "pip install <wheel from the sdist> (fresh venv)",
    )?;
    import_lockstep(fresh, "the wheel built from the sdist, fresh venv")?;
    Ok((sdist, wheel))
}

/// The one file of `dir` whose name starts with `lockstep-` and ends with `suffix`.
fn only_file(dir: &Path, suffix: &str) -> Result<PathBuf> {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("lockstep-") && n.to_string_lossy().ends_with(suffix))
        })
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ => bail!("expected one lockstep-*{suffix} in {}, found {found:?}", dir.display()),
    }
}

/// `name (size)`.
fn describe(path: &Path) -> Result<String> {
    let bytes = std::fs::metadata(path)?.len();
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    Ok(format!("{name} ({:.1} MiB)", bytes as f64 / (1u64 << 20) as f64))
}

/// maturin (as `[build-system]` asks) in the venv.
fn install_maturin(python: &Path) -> Result<()> {
    run(
        Command::new(python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "maturin>=1.7,<2",
        ]),
        "pip install maturin",
    )
}

/// `maturin build --release` of `python/` into `out`; returns the wheel.
fn build_wheel(root: &Path, python: &Path, out: &Path) -> Result<PathBuf> {
    run(
        Command::new(python)
            .args(["-m", "maturin", "build", "--release", "--quiet", "--manifest-path"])
            .arg(root.join("python/Cargo.toml"))
            .arg("--out")
            .arg(out)
            .current_dir(root.join("python")),
        "maturin build",
    )?;
    only_file(out, ".whl")
}

/// Writes the abi3 wheel, pytest's wheels, the tests and `run-python-tests.sh` to `out`.
pub fn wheel(root: &Path, out: &Path) -> Result<()> {
    let python = venv(root)?;
    install_maturin(&python)?;
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out)?;
    build_wheel(root, &python, out)?;
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
