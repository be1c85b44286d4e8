//! lockstep's developer commands, run as `cargo xtask <command>` (alias in .cargo/config.toml).
//!
//! - `setup`: fetches the pinned `ptxas` (PyPI `nvidia-cuda-nvcc`) into `target/tools/bin`, for
//!   the cubins and the census. Idempotent.
//! - `build-ptx [--arch sm_NN]`: builds the device crate for sm_70 and sm_90, assembles the
//!   sm_80 and sm_90 cubins with ptxas and writes what changed of the device code shipped with
//!   the host crate (`crates/host/modules/`: zstd-compressed images and `census.txt`; see
//!   modules.rs). With `--arch`, that architecture's PTX alone, with its census; nothing stored.
//! - `test`: setup, build-ptx in check mode (fails when a shipped image, decompressed, or the
//!   census differs from a fresh build), every test of the workspace (GPU suites say they are
//!   skipped when no GPU is present; a failure with LOCKSTEP_REQUIRE_GPU=1), `cargo doc` without
//!   warnings, the CLI and an example started with no driver library, the downstream crate
//!   (`tests/downstream`) built and run on the stable toolchain, the 1 MiB rule for tracked files
//!   (hygiene.rs), the published crates packaged and a crate built against the packages
//!   (package.rs), then the Python package's pytest suite, its wheel in a fresh venv and a wheel
//!   built from its sdist (python.rs). The one test command of README.md and .ci/run; it says
//!   how much disk was free before and what `target/` holds after (disk.rs).
//! - `package`: the packaging step of `test` alone.
//! - `demo`: runs every kernel (on the GPU if present, else the CPU references).
//! - `bench <name> [args]`: runs `lockstep bench <name>` in release mode.
//! - `wheel`: the Python package's abi3 wheel, pytest and the Python tests in `target/wheels/`
//!   (`run-python-tests.sh` there), for a GPU machine without Rust (python.rs).
//! - `bundle`: writes `target/bundle/` (release test binaries, the CLI, run-gpu-tests.sh) for a
//!   GPU machine that has a driver but no Rust.

mod bundle;
mod disk;
mod hygiene;
mod modules;
mod package;
mod python;
mod reach;
mod setup;

use anyhow::{Context, Result, bail};
use lockstep_ptx_builder::{Arch, census, ptxas};
use modules::Shipped;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    match args.first().map(String::as_str) {
        Some("setup") => setup::run(&root).map(|_| ()),
        Some("build-ptx") => build_ptx(&root, parse_arch(&args[1..])?, Shipped::Write),
        Some("test") => test(&root, &args[1..]),
        Some("demo") => {
            cargo_with_cuda(&root, &["run", "--release", "-q", "-p", "lockstep-cli", "--", "demo"], &args[1..])
        }
        Some("bench") => {
            cargo_with_cuda(&root, &["run", "--release", "-q", "-p", "lockstep-cli", "--", "bench"], &args[1..])
        }
        Some("bundle") => bundle::run(&root),
        Some("wheel") => python::wheel(&root, &root.join("target/wheels")),
        Some("package") => package::check(&root),
        _ => {
            eprintln!(
                "usage: cargo xtask <setup | build-ptx [--arch sm_NN] | test | demo | bench <name> | bundle | wheel | package>"
            );
            bail!("unknown or missing command")
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

fn parse_arch(args: &[String]) -> Result<Option<Arch>> {
    match args {
        [] => Ok(None),
        [flag, arch] if flag == "--arch" => Ok(Some(arch.parse()?)),
        _ => bail!("usage: cargo xtask build-ptx [--arch sm_NN]"),
    }
}

/// `cargo xtask build-ptx [--arch sm_NN]`. Without `--arch`: every shipped image
/// (modules.rs), written (`Shipped::Write`) or checked (`Shipped::Check`) against
/// `crates/host/modules/`. With `--arch`: that architecture's PTX alone, checked and assembled
/// for the census, nothing stored.
fn build_ptx(root: &Path, arch: Option<Arch>, shipped: Shipped) -> Result<()> {
    let ptxas = setup::ptxas(root)?;
    let Some(arch) = arch else {
        return modules::build(root, &ptxas, shipped);
    };
    let built = modules::build_arch(root, arch)?;
    let funcs = census::functions(&built.ptx);
    // sm_80 and sm_90, or the module's own architecture when it is newer (ptxas cannot
    // assemble PTX for an older target than the module's `.target`).
    let targets: Vec<String> = match arch.number() {
        ..=80 => vec!["sm_80".into(), "sm_90".into()],
        81..=90 => vec!["sm_90".into()],
        _ => vec![arch.name()],
    };
    let mut reports = Vec::new();
    for sm in &targets {
        let report = ptxas::run(&ptxas, &built.path, sm).map_err(anyhow::Error::msg)?;
        println!("ptxas -arch={sm}: accepted");
        reports.push((sm.as_str(), report));
    }
    println!("\n{}", census::table(&funcs, &reports));
    Ok(())
}

/// `cargo xtask test`: the one test command (README and .ci/run). Runs every test of the
/// workspace, passes its output through, and closes with one summary line
/// `summary: P passed, F failed, S skipped`, where S counts the GPU tests that said
/// `SKIPPED (no GPU)` (they are not counted as passed).
fn test(root: &Path, extra: &[String]) -> Result<()> {
    disk::before(root);
    let result = test_steps(root, extra);
    disk::after(root);
    result
}

/// The steps of [`test()`], in order.
fn test_steps(root: &Path, extra: &[String]) -> Result<()> {
    setup::run(root)?;
    build_ptx(root, None, Shipped::Check)?;
    let mut args = vec!["test".to_string(), "--workspace".into()];
    args.extend(extra.iter().cloned());
    let mut child = cargo(root)
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("running cargo test")?;
    let stdout = child.stdout.take().context("cargo test stdout")?;
    let stderr = child.stderr.take().context("cargo test stderr")?;
    let skips = std::thread::spawn(move || relay(stderr, false));
    let results = relay(stdout, true);
    let skipped = skips.join().map_err(|_| anyhow::anyhow!("stderr relay panicked"))?;
    let status = child.wait()?;
    let (passed, failed) = results.tally;
    let skipped = skipped.skips;
    println!("summary: {} passed, {failed} failed, {skipped} skipped", passed.saturating_sub(skipped));
    if !status.success() {
        bail!("tests failed");
    }
    reach::docs(root)?;
    reach::without_driver(root)?;
    reach::downstream(root)?;
    hygiene::check(root)?;
    package::check(root)?;
    python::test(root)?;
    println!("test: all passed");
    Ok(())
}

/// What [`relay`] counted.
#[derive(Default)]
struct Relayed {
    /// (passed, failed) summed over `test result:` lines.
    tally: (u64, u64),
    /// Lines announcing a skipped GPU test.
    skips: u64,
}

/// Copies a child's output line by line to our stdout (`to_stdout`) or stderr, counting test
/// results and skipped GPU tests on the way.
fn relay(stream: impl std::io::Read, to_stdout: bool) -> Relayed {
    use std::io::{BufRead, Write};
    let mut counted = Relayed::default();
    for line in std::io::BufReader::new(stream).lines().map_while(Result::ok) {
        if let Some(rest) = line.strip_prefix("test result: ") {
            let number = |word: &str| {
                rest.split(';').find_map(|part| {
                    part.trim().strip_suffix(word).and_then(|n| n.trim().rsplit(' ').next()?.parse::<u64>().ok())
                })
            };
            counted.tally.0 += number("passed").unwrap_or(0);
            counted.tally.1 += number("failed").unwrap_or(0);
        }
        if line.starts_with("SKIPPED (no GPU) ") {
            counted.skips += 1;
        }
        if to_stdout {
            let _ = writeln!(std::io::stdout(), "{line}");
        } else {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    }
    counted
}

fn cargo_with_cuda(root: &Path, base: &[&str], extra: &[String]) -> Result<()> {
    setup::run(root)?;
    let status = cargo(root).args(base).args(extra).status()?;
    if !status.success() {
        bail!("command failed");
    }
    Ok(())
}

/// Runs `cmd` to the end; an error naming `what` when it cannot start or fails.
pub(crate) fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd.status().with_context(|| format!("starting {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// `cargo` in the workspace, without incremental state: in a clean `cargo xtask test` it held
/// 2.0 GiB of 6.1 for rebuilds these commands do not make (an edit-compile loop runs `cargo test
/// -p ...` itself, which keeps it). Every call sets it alike, so their builds share artifacts.
pub(crate) fn cargo(root: &Path) -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root).env("CARGO_INCREMENTAL", "0");
    cmd
}
