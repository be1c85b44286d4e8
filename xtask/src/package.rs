//! The crates a user needs, as crates.io would hand them out: `cargo package` of lockstep and
//! what it depends on, then a crate outside the workspace built against the *packaged* sources
//! (unpacked `.crate` files, no git checkout) on stable Rust. A step of `cargo xtask test`, and
//! `cargo xtask package` on its own.
//!
//! - `cargo package --no-verify -p lockstep-shared -p lockstep-ptx-builder -p lockstep` writes
//!   the `.crate` files to `target/package/` (the manifests checked, path dependencies rewritten
//!   to versions, a lock file resolved through a temporary registry of the three).
//! - Each `.crate` (a gzipped tar) is unpacked into `target/packaged/<name>-<version>/`; every
//!   file of `crates/host/modules/` (the embedded device code) must be in lockstep's, byte for byte.
//! - Why `--no-verify`: cargo's own verification extracts the temporary registry's crates into
//!   `$CARGO_HOME/registry/src/<hash of target/package/tmp-registry>/` and, as for any registry,
//!   never extracts a name and version again, so every later run verifies against the *first*
//!   run's sources (seen here: a stale lockstep-ptx-builder without its new `images` module, so lockstep's
//!   build script failed to compile). The consumer below builds the unpacked packages afresh,
//!   on stable, with and without feature `gpu`, and checks that no build wrote into them (what
//!   cargo's verification checks too).
//! - `target/packaged/consumer/` is `tests/downstream` (the same program: a bridge on the CPU
//!   twins, bit for bit) with its manifest depending on `lockstep` by path to its unpacked package, with
//!   `[patch.crates-io]` sending `lockstep-shared` and `lockstep-ptx-builder` to theirs (the
//!   packaged manifests name them by version, as on crates.io). It is built and run with
//!   `rustup run stable cargo` (CPU twins), then built and run with feature `gpu` (the embedded
//!   device code; no driver library needed). Target directory: `target/packaged/target`.
//!   It lies inside the checkout (under target/): `rustup run stable` overrides
//!   our `rust-toolchain.toml`, and `.cargo/config.toml` adds only the `CUDA_LIBRARY_PATH` that
//!   the `gpu` build is given anyway (tests/downstream, in reach.rs, runs from a folder outside).

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The published crates, dependencies first (the rest of the workspace is `publish = false`).
const PUBLISHED: &[&str] = &["lockstep-shared", "lockstep-ptx-builder", "lockstep"];

/// The host crate's embedded device code, all of which its package must hold.
const MODULES: &str = "crates/host/modules";

/// `cargo package` of [`PUBLISHED`], unpacked, and a consumer crate built and run against it.
pub fn check(root: &Path) -> Result<()> {
    println!("=== cargo package ({}) and a crate built against the packages", PUBLISHED.join(", "));
    let versions = versions(root)?;
    for (name, version) in &versions {
        let _ = std::fs::remove_file(root.join(format!("target/package/{name}-{version}.crate")));
    }
    let _ = std::fs::remove_dir_all(root.join("target/package/tmp-registry"));
    let started = Instant::now();
    let mut package = crate::cargo(root);
    package.args(["package", "--quiet", "--allow-dirty", "--no-verify"]);
    for name in PUBLISHED {
        package.args(["-p", name]);
    }
    let status = package.status().context("running cargo package")?;
    if !status.success() {
        bail!("cargo package failed ({status})");
    }
    let packaged_in = started.elapsed();

    let dir = root.join("target/packaged");
    std::fs::create_dir_all(&dir)?;
    let mut sizes = Vec::new();
    let mut unpacked_dirs = Vec::new();
    for (name, version) in &versions {
        let crate_file = root.join(format!("target/package/{name}-{version}.crate"));
        let bytes = std::fs::metadata(&crate_file).with_context(|| format!("{}", crate_file.display()))?.len();
        sizes.push(format!("{name}-{version}.crate {}", human(bytes)));
        let unpacked = dir.join(format!("{name}-{version}"));
        let _ = std::fs::remove_dir_all(&unpacked);
        // `m`: files dated now. A .crate gives every file one fixed date, and cargo judges a path
        // dependency fresh by modification times, so a changed file would not be rebuilt.
        crate::run(
            Command::new("tar").arg("xzmf").arg(&crate_file).arg("-C").arg(&dir),
            "tar xzmf (unpacking a .crate)",
        )?;
        if !unpacked.join("Cargo.toml").is_file() {
            bail!("{} did not unpack into {}", crate_file.display(), unpacked.display());
        }
        unpacked_dirs.push(unpacked);
    }
    let before = snapshot(&unpacked_dirs)?;
    let host = versions.iter().find(|(name, _)| name == "lockstep").context("lockstep's version")?;
    modules_packaged(root, &dir.join(format!("lockstep-{}", host.1)))?;

    let consumer = dir.join("consumer");
    write_consumer(root, &consumer, &versions)?;
    crate::reach::ensure_stable()?;
    let target = dir.join("target");
    let stable_cargo = |args: &[&str]| {
        let mut cmd = Command::new("rustup");
        cmd.args(["run", "stable", "cargo"]).args(args).current_dir(&consumer);
        for var in crate::reach::OUTER_ENV {
            cmd.env_remove(var);
        }
        // No debug info or incremental state: this target directory holds two builds of
        // lockstep and its dependencies, and lockstep's crates are rebuilt on every run.
        cmd.env("CARGO_TARGET_DIR", &target).env("CARGO_PROFILE_DEV_DEBUG", "false").env("CARGO_INCREMENTAL", "0");
        cmd
    };
    let built = Instant::now();
    let plain = stable_cargo(&["run", "--quiet"]).output().context("running stable cargo")?;
    crate::reach::report("consumer of the packaged crates (stable)", &plain)?;
    // Feature `gpu`: cust's build script wants CUDA_LIBRARY_PATH (an empty lib64/ will do), as
    // a user without a CUDA installation sets it; the program then runs without a driver.
    let gpu = stable_cargo(&["run", "--quiet", "--features", "gpu"])
        .env("CUDA_LIBRARY_PATH", root.join(".cargo/cuda-link"))
        .output()
        .context("running stable cargo")?;
    crate::reach::report("consumer with feature gpu (stable, no driver library)", &gpu)?;
    if snapshot(&unpacked_dirs)? != before {
        bail!("building the packaged crates changed their sources (a build script wrote outside OUT_DIR?)");
    }
    println!(
        "package: {} (cargo package {:.0} s); a crate built on stable against the unpacked packages ran, CPU and feature gpu ({:.0} s)",
        sizes.join(", "),
        packaged_in.as_secs_f64(),
        built.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `(name, version)` of each [`PUBLISHED`] crate, from `cargo metadata`.
fn versions(root: &Path) -> Result<Vec<(String, String)>> {
    let out = crate::cargo(root)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).context("cargo metadata's JSON")?;
    let packages = meta["packages"].as_array().context("cargo metadata: no packages")?;
    PUBLISHED
        .iter()
        .map(|name| {
            let version = packages
                .iter()
                .find(|p| p["name"] == *name)
                .and_then(|p| p["version"].as_str())
                .with_context(|| format!("cargo metadata: no package {name}"))?;
            Ok((name.to_string(), version.to_string()))
        })
        .collect()
}

/// Every file under [`MODULES`] is in the unpacked host package with the same bytes.
fn modules_packaged(root: &Path, unpacked: &Path) -> Result<()> {
    let source = root.join(MODULES);
    if !source.is_dir() {
        return Ok(());
    }
    let mut files = Vec::new();
    walk(&source, &mut files)?;
    for file in &files {
        let rel = file.strip_prefix(root.join("crates/host"))?;
        let packaged = std::fs::read(unpacked.join(rel)).ok();
        if packaged.as_deref() != Some(std::fs::read(file)?.as_slice()) {
            bail!(
                "{} is not in lockstep's package as it is in the checkout: check `include` in crates/host/Cargo.toml (`cargo package --list -p lockstep`)",
                file.strip_prefix(root)?.display()
            );
        }
    }
    println!("package: lockstep's package holds the {} files of {MODULES}/", files.len());
    Ok(())
}

/// Every file under `dirs` with its length and modification time.
fn snapshot(dirs: &[PathBuf]) -> Result<Vec<(PathBuf, u64, std::time::SystemTime)>> {
    let mut files = Vec::new();
    for dir in dirs {
        walk(dir, &mut files)?;
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let meta = std::fs::metadata(&path)?;
            Ok((path, meta.len(), meta.modified()?))
        })
        .collect()
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, files)?;
        } else {
            files.push(path);
        }
    }
    Ok(())
}

/// The consumer crate: `tests/downstream` (the program a downstream user writes) with its
/// manifest pointed at the unpacked packages — lockstep by path, the other two patched in from
/// theirs, as crates.io would resolve them (rewritten on every run: no lock file is kept).
fn write_consumer(root: &Path, dir: &Path, versions: &[(String, String)]) -> Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("src"))?;
    let path = |name: &str| -> String {
        let (name, version) = versions.iter().find(|(n, _)| n == name).expect("a published crate");
        format!("../{name}-{version}")
    };
    let manifest = std::fs::read_to_string(root.join("tests/downstream/Cargo.toml"))?;
    let dependency = "lockstep = { path = \"../../crates/host\" }";
    if !manifest.contains(dependency) {
        bail!("tests/downstream/Cargo.toml must depend on lockstep by `{dependency}`");
    }
    let manifest = manifest.replace(dependency, &format!("lockstep = {{ path = {:?} }}", path("lockstep")))
        + &format!(
            "\n# Written by `cargo xtask package`: the packaged lockstep names these by version, from\n\
             # crates.io; take the packaged ones.\n[patch.crates-io]\nlockstep-shared = {{ path = {:?} }}\n\
             lockstep-ptx-builder = {{ path = {:?} }}\n",
            path("lockstep-shared"),
            path("lockstep-ptx-builder")
        );
    std::fs::write(dir.join("Cargo.toml"), manifest)?;
    std::fs::copy(root.join("tests/downstream/src/main.rs"), dir.join("src/main.rs"))?;
    Ok(())
}

/// `123 KiB` / `1.2 MiB`.
fn human(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{} KiB", bytes.div_ceil(1024))
    } else {
        format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
    }
}
