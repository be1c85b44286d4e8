//! The parts of `cargo xtask test` that check lockstep's reach: its docs build without warnings,
//! its programs start without a driver, and a crate outside the workspace builds it on stable.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Variables of the enclosing `cargo xtask` that would pick a toolchain, flags or a driver
/// library for a child that must show what a user's own shell gives.
pub(crate) const OUTER_ENV: &[&str] = &[
    "RUSTUP_TOOLCHAIN",
    "RUSTC",
    "RUSTDOC",
    "CARGO",
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
    "CUDA_LIBRARY_PATH",
    "LD_LIBRARY_PATH",
    "LOCKSTEP_LIBCUDA",
];

/// `cargo doc --no-deps` over the workspace with every rustdoc warning an error.
pub fn docs(root: &Path) -> Result<()> {
    println!("=== cargo doc --no-deps --workspace (warnings are errors)");
    let status = crate::cargo(root)
        .args(["doc", "--no-deps", "--workspace", "--quiet"])
        .env("RUSTDOCFLAGS", "-D warnings")
        .status()
        .context("running cargo doc")?;
    if !status.success() {
        bail!("cargo doc reported warnings or errors");
    }
    println!("docs: no warnings");
    Ok(())
}

/// The CLI and an example, started with no driver library on the loader path: both must run
/// (CPU only) and name the missing driver, and neither may list libcuda as needed.
pub fn without_driver(root: &Path) -> Result<()> {
    println!("=== programs started without a driver library");
    let status = crate::cargo(root).args(["build", "--quiet", "-p", "lockstep-cli"]).status()?;
    if !status.success() {
        bail!("building the CLI failed");
    }
    let cli = root.join("target/debug/lockstep");
    let examples = ["foundation", "bridge"].map(|e| root.join("target/debug/examples").join(e));
    for exe in std::iter::once(&cli).chain(&examples) {
        no_libcuda_needed(exe)?;
    }
    run_clean(Command::new(&cli).arg("--help"), "lockstep --help")?;
    let info = run_clean(Command::new(&cli).arg("info"), "lockstep info")?;
    if !(info.contains("no CUDA driver") || info.contains("GPU 0")) {
        bail!("`lockstep info` without a driver printed neither the missing driver nor a GPU:\n{info}");
    }
    for exe in &examples {
        run_clean(&mut Command::new(exe), &exe.display().to_string())?;
    }
    Ok(())
}

/// The crate in `tests/downstream`, copied outside the checkout (so no `.cargo/config.toml` or
/// `rust-toolchain.toml` of ours applies), built and run on the stable toolchain: once as a
/// plain dependency (CPU), once with feature `gpu`, run with no driver library.
pub fn downstream(root: &Path) -> Result<()> {
    println!("=== downstream crate on stable Rust (tests/downstream)");
    ensure_stable()?;
    let dir = std::env::temp_dir().join(format!("lockstep-downstream-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src"))?;
    let manifest = std::fs::read_to_string(root.join("tests/downstream/Cargo.toml"))?;
    let host = root.join("crates/host");
    let manifest = manifest.replace("\"../../crates/host\"", &format!("{:?}", host.display().to_string()));
    if !manifest.contains(&host.display().to_string()) {
        bail!("tests/downstream/Cargo.toml must depend on lockstep by `path = \"../../crates/host\"`");
    }
    std::fs::write(dir.join("Cargo.toml"), manifest)?;
    std::fs::copy(root.join("tests/downstream/src/main.rs"), dir.join("src/main.rs"))?;
    let target = root.join("target/downstream");
    let stable_cargo = |args: &[&str]| {
        let mut cmd = Command::new("rustup");
        cmd.args(["run", "stable", "cargo"]).args(args).current_dir(&dir);
        for var in OUTER_ENV {
            cmd.env_remove(var);
        }
        cmd.env("CARGO_TARGET_DIR", &target);
        cmd
    };
    let result = (|| -> Result<()> {
        let plain = stable_cargo(&["run", "--release", "--quiet"]).output().context("running stable cargo")?;
        report("downstream (plain `cargo run`, stable)", &plain)?;
        let gpu = stable_cargo(&["build", "--release", "--quiet", "--features", "gpu"])
            .env("CUDA_LIBRARY_PATH", root.join(".cargo/cuda-link"))
            .output()
            .context("running stable cargo")?;
        report("downstream build with feature gpu (stable)", &gpu)?;
        let exe = target.join("release/lockstep-downstream");
        no_libcuda_needed(&exe)?;
        run_clean(&mut Command::new(&exe), "downstream (feature gpu)")?;
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Installs the stable toolchain when rustup lacks it (the downstream and package steps build
/// on stable).
pub(crate) fn ensure_stable() -> Result<()> {
    let installed = Command::new("rustup").args(["run", "stable", "rustc", "--version"]).output();
    if !installed.is_ok_and(|o| o.status.success()) {
        crate::run(
            Command::new("rustup").args(["toolchain", "install", "stable", "--profile", "minimal"]),
            "rustup toolchain install stable",
        )?;
    }
    Ok(())
}

/// Fails when `exe` lists libcuda among its needed libraries (skipped without `readelf`).
fn no_libcuda_needed(exe: &PathBuf) -> Result<()> {
    let Ok(out) = Command::new("readelf").arg("-d").arg(exe).output() else {
        println!("readelf not found: not checking {}'s needed libraries", exe.display());
        return Ok(());
    };
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!("readelf -d {} failed: {}", exe.display(), String::from_utf8_lossy(&out.stderr));
    }
    if let Some(line) = text.lines().find(|l| l.contains("NEEDED") && l.contains("libcuda")) {
        bail!("{} needs the driver library at load time: {line}", exe.display());
    }
    println!("{}: no libcuda among its needed libraries", exe.display());
    Ok(())
}

/// Runs `cmd` with no driver library on the loader path; its output is printed and returned.
fn run_clean(cmd: &mut Command, label: &str) -> Result<String> {
    for var in ["LD_LIBRARY_PATH", "LOCKSTEP_LIBCUDA"] {
        cmd.env_remove(var);
    }
    let out = cmd.output().with_context(|| format!("starting {label}"))?;
    report(label, &out)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Prints a child's output under `label`; an error when it failed.
pub(crate) fn report(label: &str, out: &Output) -> Result<()> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("--- {label}: {}", out.status);
    for line in stdout.lines().take(12) {
        println!("  {line}");
    }
    if !out.status.success() {
        bail!("{label} failed ({}):\n{stdout}{stderr}", out.status);
    }
    Ok(())
}
