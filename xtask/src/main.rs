//! lockstep's developer commands, run as `cargo xtask <command>` (alias in .cargo/config.toml).
//!
//! - `setup`: fetches `ptxas` (PyPI `nvidia-cuda-nvcc`) into `target/tools/bin` when none is on
//!   PATH, for the census. Idempotent.
//! - `build-ptx [--arch sm_NN]`: builds the device crate to PTX with the PTX builder, checks the
//!   module, runs ptxas for sm_80 and sm_90 when present, and prints the instruction census. For
//!   the default architecture it also writes the module shipped with the host crate
//!   (`crates/host/ptx/lockstep_kernels.sm_70.ptx`) when it changed.
//! - `test`: setup, build-ptx in check mode (fails when the shipped module is not byte-identical
//!   to a fresh build), every test of the workspace (GPU suites say they are skipped when no GPU
//!   is present; a failure with LOCKSTEP_REQUIRE_GPU=1), `cargo doc` without warnings, the CLI
//!   and an example started with no driver library, and the downstream crate
//!   (`tests/downstream`) built and run on the stable toolchain, then the Python package's
//!   pytest suite in a venv under `target/` (python.rs). The one test command of
//!   README.md and .ci/run.
//! - `demo`: runs every kernel (on the GPU if present, else the CPU references).
//! - `bench <name> [args]`: runs `lockstep bench <name>` in release mode.
//! - `wheel`: the Python package's abi3 wheel, pytest and the Python tests in `target/wheels/`
//!   (`run-python-tests.sh` there), for a GPU machine without Rust (python.rs).
//! - `bundle`: writes `target/bundle/` (release test binaries, the CLI, run-gpu-tests.sh) for a
//!   GPU machine that has a driver but no Rust.

mod bundle;
mod python;
mod reach;
mod setup;

use anyhow::{Context, Result, bail};
use lockstep_ptx_builder::{Arch, BuildOptions, census, ptxas};
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
        _ => {
            eprintln!(
                "usage: cargo xtask <setup | build-ptx [--arch sm_NN] | test | demo | bench <name> | bundle | wheel>"
            );
            bail!("unknown or missing command")
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

fn parse_arch(args: &[String]) -> Result<Arch> {
    match args {
        [] => Ok(Arch::DEFAULT),
        [flag, arch] if flag == "--arch" => Ok(arch.parse()?),
        _ => bail!("usage: cargo xtask build-ptx [--arch sm_NN]"),
    }
}

/// The module shipped with the host crate (for [`Arch::DEFAULT`]), relative to the root.
const SHIPPED_PTX: &str = "crates/host/ptx/lockstep_kernels.sm_70.ptx";

/// What [`build_ptx`] does with the shipped module when it builds the default architecture.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shipped {
    /// Replace it when the fresh build differs (`cargo xtask build-ptx`).
    Write,
    /// Fail when the fresh build differs (`cargo xtask test`: a stale module never lands).
    Check,
}

/// Builds the PTX for `arch`, checks it, prints the census and ptxas's report, and writes or
/// checks the shipped module.
fn build_ptx(root: &Path, arch: Arch, shipped: Shipped) -> Result<()> {
    let opts = BuildOptions {
        manifest_path: root.join("Cargo.toml"),
        package: "lockstep-kernels".into(),
        arch,
        target_dir: root.join("target/ptx").join(arch.name()),
    };
    let built = lockstep_ptx_builder::build(&opts)?;
    println!("PTX for {arch}: {} ({} kernels, no .extern .func)", built.path.display(), built.entries.len());
    if arch == Arch::DEFAULT {
        let path = root.join(SHIPPED_PTX);
        let current = std::fs::read_to_string(&path).ok();
        match (current.as_deref() == Some(built.ptx.as_str()), shipped) {
            (true, _) => println!("shipped module {SHIPPED_PTX}: byte-identical to this build"),
            (false, Shipped::Write) => {
                std::fs::write(&path, &built.ptx).with_context(|| format!("writing {}", path.display()))?;
                println!("shipped module {SHIPPED_PTX}: updated from this build (commit it)");
            }
            (false, Shipped::Check) => bail!(
                "{SHIPPED_PTX} is not byte-identical to a fresh build of the device crate: run `cargo xtask build-ptx` and commit the module"
            ),
        }
    }
    let funcs = census::functions(&built.ptx);
    let Some(ptxas) = ptxas::find(root) else {
        println!("{}", census::table(&funcs, &[]));
        println!("ptxas not found (run `cargo xtask setup` or put it on PATH): registers and spills not checked");
        return Ok(());
    };
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
    setup::run(root)?;
    build_ptx(root, Arch::DEFAULT, Shipped::Check)?;
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

/// `cargo` in the workspace.
pub(crate) fn cargo(root: &Path) -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root);
    cmd
}
