//! `cargo xtask setup`: libcuda for linking (when no driver is installed) and ptxas.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The nvcc wheel whose ptxas the census uses (pinned so every machine checks the same way).
const NVCC_WHEEL: &str = "nvidia-cuda-nvcc==13.5.37";

/// Where the stub libcuda lives once fetched (`target/cuda-stub/lib64`), if it does.
pub fn stub_lib_dir(root: &Path) -> Option<PathBuf> {
    let dir = root.join("target/cuda-stub/lib64");
    dir.join("libcuda.so").exists().then_some(dir)
}

/// Whether a libcuda the linker can find is installed system-wide.
fn system_libcuda() -> bool {
    let dirs = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/local/cuda/lib64",
        "/usr/local/cuda/lib64/stubs",
        "/usr/lib/wsl/lib",
        "/usr/local/nvidia/lib64",
    ];
    dirs.iter().any(|d| Path::new(d).join("libcuda.so").exists())
        || std::env::var_os("CUDA_LIBRARY_PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("lib64/libcuda.so").exists()))
}

pub fn run(root: &Path) -> Result<()> {
    if stub_lib_dir(root).is_none() && !system_libcuda() {
        fetch_libcuda(root).context("fetching libcuda1 (needed to link cust on a machine without an NVIDIA driver)")?;
    }
    if lockstep_ptx_builder::ptxas::find(root).is_none()
        && let Err(e) = fetch_ptxas(root)
    {
        eprintln!("warning: could not fetch ptxas ({e:#}); the census will lack registers and spills");
    }
    Ok(())
}

/// Downloads Debian non-free's `libcuda1` and unpacks it into target/cuda-stub (no install,
/// no change to the system's apt sources).
fn fetch_libcuda(root: &Path) -> Result<()> {
    let base = root.join("target/cuda-stub");
    let apt = base.join("apt");
    std::fs::create_dir_all(apt.join("lists/partial"))?;
    std::fs::create_dir_all(apt.join("archives/partial"))?;
    let codename = std::fs::read_to_string("/etc/os-release")?
        .lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME=").map(|s| s.trim_matches('"').to_string()))
        .context("no VERSION_CODENAME in /etc/os-release (not Debian?)")?;
    let list = apt.join("nonfree.list");
    std::fs::write(
        &list,
        format!(
            "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian {codename} non-free\n"
        ),
    )?;
    let opts = [
        format!("-oDir::Etc::SourceList={}", list.display()),
        "-oDir::Etc::SourceParts=/dev/null".to_string(),
        format!("-oDir::State::Lists={}", apt.join("lists").display()),
        format!("-oDir::Cache={}", apt.display()),
        format!("-oDir::Cache::Archives={}", apt.join("archives").display()),
        "-oAPT::Sandbox::User=root".to_string(),
        "-qq".to_string(),
    ];
    eprintln!("setup: fetching libcuda1 from Debian {codename} non-free into {}", base.display());
    run_cmd(Command::new("apt-get").args(&opts).arg("update"))?;
    run_cmd(Command::new("apt-get").args(&opts).args(["download", "libcuda1"]).current_dir(&apt))?;
    let deb = std::fs::read_dir(&apt)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("libcuda1_")))
        .context("apt-get download left no libcuda1_*.deb")?;
    let root_dir = base.join("root");
    run_cmd(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root_dir))?;
    let so = find_file(&root_dir, "libcuda.so.1").context("libcuda.so.1 not in the package")?;
    let lib64 = base.join("lib64");
    std::fs::create_dir_all(&lib64)?;
    for name in ["libcuda.so", "libcuda.so.1"] {
        let dst = lib64.join(name);
        let _ = std::fs::remove_file(&dst);
        std::fs::copy(&so, &dst)?;
    }
    eprintln!("setup: libcuda stub ready in {} (CUDA will report no device on this machine)", lib64.display());
    Ok(())
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

fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let p = entry.path();
        if p.is_dir() {
            if let Some(found) = find_file(&p, name) {
                return Some(found);
            }
        } else if p.file_name().is_some_and(|n| n == name) {
            return Some(p);
        }
    }
    None
}

fn run_cmd(cmd: &mut Command) -> Result<()> {
    let out = cmd.output().with_context(|| format!("could not start {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}
