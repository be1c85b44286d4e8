//! `cargo xtask setup`: ptxas for the cubins and the census. (Nothing else is needed to build: lockstep links no
//! driver library — see crates/host/src/driver.rs — and cust's build script finds the empty
//! `.cargo/cuda-link/lib64` through `CUDA_LIBRARY_PATH` in `.cargo/config.toml`.)

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The nvcc wheel whose ptxas the census uses (pinned so every machine checks the same way).
const NVCC_WHEEL: &str = "nvidia-cuda-nvcc==13.5.37";

pub fn run(root: &Path) -> Result<()> {
    if std::env::var_os("LOCKSTEP_PTXAS").is_none()
        && !pinned(root).is_file()
        && let Err(e) = fetch_ptxas(root)
    {
        eprintln!("warning: could not fetch ptxas ({e:#}); `cargo xtask build-ptx` needs it");
    }
    Ok(())
}

/// `target/tools/bin/ptxas`: where [`fetch_ptxas`] puts the pinned one.
fn pinned(root: &Path) -> PathBuf {
    root.join("target/tools/bin/ptxas")
}

/// The ptxas that assembles the shipped cubins: `$LOCKSTEP_PTXAS`, else the pinned one
/// ([`NVCC_WHEEL`], fetched when missing). Never one found on `PATH`: another version writes
/// other machine code, and the stored cubins would look stale.
pub fn ptxas(root: &Path) -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("LOCKSTEP_PTXAS") {
        return Ok(PathBuf::from(p));
    }
    let path = pinned(root);
    if !path.is_file() {
        fetch_ptxas(root).context("ptxas is needed to assemble the shipped cubins")?;
    }
    Ok(path)
}

/// Downloads the pinned nvcc wheel and extracts ptxas into target/tools/bin.
fn fetch_ptxas(root: &Path) -> Result<()> {
    let wheels = root.join("target/tools/wheels");
    std::fs::create_dir_all(&wheels)?;
    eprintln!("setup: fetching ptxas ({NVCC_WHEEL}) from PyPI");
    run_cmd(
        Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary=:all:",
                "--platform",
                "manylinux2014_x86_64",
                "-d",
            ])
            .arg(&wheels)
            .arg(NVCC_WHEEL),
    )?;
    let wheel = std::fs::read_dir(&wheels)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .context("pip left no wheel")?;
    let bin = root.join("target/tools/bin");
    std::fs::create_dir_all(&bin)?;
    let script = "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nname = next(n for n in z.namelist() if n.endswith('/bin/ptxas'))\nopen(sys.argv[2], 'wb').write(z.read(name))\n";
    run_cmd(Command::new("python3").args(["-c", script]).arg(&wheel).arg(bin.join("ptxas")))?;
    run_cmd(Command::new("chmod").arg("+x").arg(bin.join("ptxas")))?;
    let _ = std::fs::remove_file(&wheel);
    eprintln!("setup: ptxas ready in {}", bin.display());
    Ok(())
}

fn run_cmd(cmd: &mut Command) -> Result<()> {
    let out = cmd.output().with_context(|| format!("could not start {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}
