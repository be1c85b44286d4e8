//! lockstep's PTX builder: our stand-in for Rust-CUDA's `cuda_builder`.
//!
//! [`build`] compiles a `no_std` device crate for `nvptx64-nvidia-cuda` with rustc's own NVPTX
//! backend and returns one self-contained PTX module:
//!
//! ```text
//! rustup run <channel of rust-toolchain.toml> cargo rustc -p <crate> --lib --profile ptx --target nvptx64-nvidia-cuda -Zbuild-std=core \
//!       --target-dir <own dir> -- --emit=asm -C linker=true        (RUSTFLAGS: -C target-cpu=<arch>)
//! ```
//!
//! The `ptx` profile (workspace `Cargo.toml`) has fat LTO, `panic = "abort"`, opt-level 3 and
//! one codegen unit, so the crate's `.s` output after LTO is the whole module: every kernel and
//! everything it calls (`core`, `libm`, `lockstep-shared`). `-C linker=true` replaces the
//! `llvm-bitcode-linker` that cargo would otherwise call for the cdylib (it cannot be installed
//! here); nothing needs linking, because LTO already merged the bitcode.
//!
//! Launch bounds the device crate declares (`lockstep_cuda_std::launch_bounds!`) become
//! `.maxntid` / `.minnctapersm` directives of their kernels ([`launch_bounds`]). The module is
//! then checked ([`check_module`]): it must define at least one `.entry`, declare
//! no `.extern .func` (the driver cannot resolve one), and declare each `.shared` symbol once.
//! [`census`] counts, per function, the instructions exact kernels are held to (`fma`,
//! `.approx`, `.ftz`, `.local`), and [`ptxas`] runs NVIDIA's assembler, when present, for
//! registers and spills.
//!
//! Invariants: the builder never contracts floating point (rustc's NVPTX target keeps
//! `mul.rn`/`add.rn`; nothing here passes `-C llvm-args=-nvptx-fma-level`), and it always uses
//! a target directory of its own, so calling it from a build script cannot deadlock on the outer
//! cargo's lock.
#![warn(missing_docs)]

pub mod census;
pub mod images;
pub mod launch_bounds;
pub mod ptxas;

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The rustc target the device crate is compiled for.
pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// The GPU architecture PTX is generated for (`sm_70`, `sm_90`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch(u32);

impl Arch {
    /// The default: runs on Volta (sm_70) and every newer GPU, JIT-compiled by the driver.
    /// sm_70 is the oldest architecture with the `*.sync` warp intrinsics and `match`.
    pub const DEFAULT: Arch = Arch(70);
    /// Ampere (A100; its cubin also runs on every other 8.x device).
    pub const AMPERE: Arch = Arch(80);
    /// Hopper (H100, H200).
    pub const HOPPER: Arch = Arch(90);

    /// `sm_<number>`, unchecked (for tables written by a build script; parse user input with
    /// [`str::parse`], which refuses architectures before sm_70).
    pub const fn new(number: u32) -> Arch {
        Arch(number)
    }

    /// The number after `sm_` (70, 80, 90, …).
    pub const fn number(self) -> u32 {
        self.0
    }

    /// `sm_NN`, as rustc's `-C target-cpu` and ptxas's `-arch` spell it.
    pub fn name(self) -> String {
        format!("sm_{}", self.0)
    }
}

impl std::str::FromStr for Arch {
    type Err = BuildError;

    /// Parses `sm_NN` (NN ≥ 70).
    fn from_str(s: &str) -> Result<Self, BuildError> {
        let bad = || BuildError::BadArch(s.to_string());
        let n: u32 = s.strip_prefix("sm_").ok_or_else(bad)?.parse().map_err(|_| bad())?;
        if n < 70 {
            return Err(bad());
        }
        Ok(Arch(n))
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.0)
    }
}

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// The workspace's `Cargo.toml`.
    pub manifest_path: PathBuf,
    /// The device crate's package name.
    pub package: String,
    /// Architecture for `-C target-cpu`.
    pub arch: Arch,
    /// A target directory used by nobody else at the same time (the builder's own).
    pub target_dir: PathBuf,
}

/// A built, checked PTX module.
#[derive(Clone, Debug)]
pub struct BuiltPtx {
    /// The architecture it was built for.
    pub arch: Arch,
    /// Where the module was written (`<target_dir>/<crate>.<arch>.ptx`).
    pub path: PathBuf,
    /// The module's text.
    pub ptx: String,
    /// The names of its kernels (`.entry` functions), in module order.
    pub entries: Vec<String>,
}

/// Why a build failed. Every variant carries what a person needs to act on it.
#[derive(Debug)]
pub enum BuildError {
    /// The architecture is not of the form `sm_NN` with NN ≥ 70.
    BadArch(String),
    /// cargo could not be started.
    Spawn(std::io::Error),
    /// cargo/rustc failed; `output` is everything the compiler printed.
    Compile {
        /// The command line that failed.
        command: String,
        /// The compiler's stdout and stderr.
        output: String,
    },
    /// cargo succeeded but the expected `.s` file is missing.
    MissingOutput(PathBuf),
    /// Reading or writing a file failed.
    Io(PathBuf, std::io::Error),
    /// The module would not load on a GPU or breaks an invariant.
    InvalidModule(String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::BadArch(s) => {
                write!(f, "unknown GPU architecture `{s}`: expected sm_NN with NN >= 70 (e.g. sm_70, sm_80, sm_90)")
            }
            BuildError::Spawn(e) => write!(
                f,
                "could not run `rustup run <pinned toolchain> cargo` for the device crate ({e}); install rustup \
                 (https://rustup.rs), then `rustup toolchain install` in lockstep's checkout"
            ),
            BuildError::Compile { command, output } => {
                write!(f, "building the device crate failed\ncommand: {command}\n--- compiler output ---\n{output}")
            }
            BuildError::MissingOutput(p) => write!(f, "cargo finished but wrote no PTX at {}", p.display()),
            BuildError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            BuildError::InvalidModule(why) => write!(f, "the PTX module is not usable: {why}"),
        }
    }
}

impl std::error::Error for BuildError {}

/// Environment variables of an enclosing cargo (a build script's) that must not leak into the
/// device build: they carry host flags, another target directory or wrappers.
const SCRUBBED_ENV: &[&str] = &[
    "RUSTC",
    "RUSTDOC",
    "CARGO",
    "RUSTUP_TOOLCHAIN",
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_TARGET_DIR",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_MAKEFLAGS",
    "MAKEFLAGS",
    "MFLAGS",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_PROFILE_RELEASE_LTO",
    "DEBUG",
    "OPT_LEVEL",
    "PROFILE",
    "TARGET",
    "HOST",
];

/// Compiles the device crate to PTX, checks it, and writes it to
/// `<target_dir>/<crate>.<arch>.ptx`.
pub fn build(opts: &BuildOptions) -> Result<BuiltPtx, BuildError> {
    let toolchain = pinned_toolchain(&opts.manifest_path)?;
    let crate_name = opts.package.replace('-', "_");
    let mut cmd = Command::new("rustup");
    cmd.args(["run", &toolchain, "cargo"])
        .arg("rustc")
        .arg("--manifest-path")
        .arg(&opts.manifest_path)
        .args(["-p", &opts.package, "--lib", "--profile", "ptx", "--target", TARGET])
        .args(["-Zbuild-std=core", "--message-format=short", "--color=never"])
        .arg("--target-dir")
        .arg(&opts.target_dir)
        .args(["--", "--emit=asm", "-C", "linker=true"]);
    for var in SCRUBBED_ENV {
        cmd.env_remove(var);
    }
    cmd.env("CARGO_ENCODED_RUSTFLAGS", format!("-Ctarget-cpu={}", opts.arch.name()));
    let command = format!("{cmd:?}");
    let out = cmd.output().map_err(BuildError::Spawn)?;
    if !out.status.success() {
        let output = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
        return Err(BuildError::Compile { command, output });
    }
    let asm = opts.target_dir.join(TARGET).join("ptx").join("deps").join(format!("{crate_name}.s"));
    if !asm.is_file() {
        return Err(BuildError::MissingOutput(asm));
    }
    let ptx = std::fs::read_to_string(&asm).map_err(|e| BuildError::Io(asm.clone(), e))?;
    let ptx = launch_bounds::apply(&ptx)?;
    let entries = check_module(&ptx)?;
    let path = opts.target_dir.join(format!("{crate_name}.{}.ptx", opts.arch.name()));
    write_if_changed(&path, &ptx)?;
    Ok(BuiltPtx { arch: opts.arch, path, ptx, entries })
}

/// The `channel` of the `rust-toolchain.toml` beside `manifest_path`: the one toolchain the
/// device crate is built with, whatever toolchain runs the caller.
pub fn pinned_toolchain(manifest_path: &Path) -> Result<String, BuildError> {
    let file = manifest_path.with_file_name("rust-toolchain.toml");
    let text = std::fs::read_to_string(&file).map_err(|e| BuildError::Io(file.clone(), e))?;
    text.lines()
        .find_map(|l| {
            let (key, value) = l.split_once('=')?;
            (key.trim() == "channel").then(|| value.trim().trim_matches('"').to_string())
        })
        .ok_or_else(|| BuildError::InvalidModule(format!("{} names no `channel`", file.display())))
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), BuildError> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| BuildError::Io(path.to_path_buf(), e))
}

/// Checks that a PTX module can load as it is, and returns its kernel names.
///
/// Fails when the module has no `.entry`, declares an `.extern .func` (a call the driver
/// cannot resolve — e.g. a `libm` symbol that LTO did not pull in), or declares the same
/// `.shared` symbol twice (two `shared_array!` with one name).
pub fn check_module(ptx: &str) -> Result<Vec<String>, BuildError> {
    let mut externs = Vec::new();
    let mut shared = std::collections::BTreeMap::<&str, usize>::new();
    for line in ptx.lines() {
        let t = line.trim_start();
        if t.starts_with(".extern .func") {
            externs.push(t.to_string());
        }
        if let Some(rest) = t.strip_prefix(".shared ")
            && let Some(name) = rest.split_whitespace().last().and_then(|w| w.split('[').next())
        {
            *shared.entry(name.trim_end_matches(';')).or_default() += 1;
        }
    }
    if !externs.is_empty() {
        return Err(BuildError::InvalidModule(format!(
            "{} unresolved external function(s); the driver cannot load this module:\n  {}",
            externs.len(),
            externs.join("\n  ")
        )));
    }
    if let Some((name, n)) = shared.iter().find(|(_, n)| **n > 1) {
        return Err(BuildError::InvalidModule(format!(
            "shared-memory symbol `{name}` is declared {n} times; give each shared_array! a unique name"
        )));
    }
    let entries: Vec<String> = census::functions(ptx).into_iter().filter(|f| f.is_entry).map(|f| f.name).collect();
    if entries.is_empty() {
        return Err(BuildError::InvalidModule("no kernel (.entry) in the module".into()));
    }
    Ok(entries)
}

/// Every kernel's parameter sizes in bytes, in order, from its `.entry` declaration:
/// `.param .u32 x` is 4, `.param .u64 .ptr .align 1 p` 8, `.param .align 8 .b8 s[40]` 40 (a
/// struct passed by value). What the host's typed launch handles are checked against when they
/// are looked up (`lockstep::ptx::parameter_sizes`): the driver copies exactly these many bytes
/// from each argument, so a tuple that disagrees would launch with wrong arguments.
pub fn entry_params(ptx: &str) -> Result<Vec<(String, Vec<u32>)>, BuildError> {
    let bad = |why: String| BuildError::InvalidModule(why);
    let mut out = Vec::new();
    let mut lines = ptx.lines();
    while let Some(line) = lines.next() {
        let Some(rest) =
            line.trim_start().strip_prefix(".visible .entry ").or(line.trim_start().strip_prefix(".entry "))
        else {
            continue;
        };
        let name = rest.split('(').next().unwrap_or("").trim().to_string();
        let mut sizes = Vec::new();
        if !rest.trim_end().ends_with("()") {
            for p in lines.by_ref() {
                let t = p.trim();
                if t.starts_with(')') {
                    break;
                }
                let decl = t.trim_end_matches(',');
                let words: Vec<&str> = decl.split_whitespace().collect();
                let size = match words.get(1).copied() {
                    Some(".u8" | ".s8" | ".b8") if !decl.contains('[') => 1,
                    Some(".u16" | ".s16" | ".b16" | ".f16") => 2,
                    Some(".u32" | ".s32" | ".b32" | ".f32") => 4,
                    Some(".u64" | ".s64" | ".b64" | ".f64") => 8,
                    Some(".align") => {
                        let n = decl
                            .rsplit('[')
                            .next()
                            .and_then(|x| x.strip_suffix(']'))
                            .and_then(|x| x.parse::<u32>().ok());
                        n.ok_or_else(|| bad(format!("kernel `{name}`: cannot read the parameter `{decl}`")))?
                    }
                    _ => return Err(bad(format!("kernel `{name}`: cannot read the parameter `{decl}`"))),
                };
                sizes.push(size);
            }
        }
        out.push((name, sizes));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_params_reads_every_form() {
        let ptx = ".visible .entry k(\n\t.param .align 8 .b8 k_param_0[40],\n\t.param .u32 k_param_1,\n\t.param .u64 .ptr .align 1 k_param_2,\n\t.param .f64 k_param_3\n)\n{\n\tret;\n}\n.visible .entry e()\n{\n\tret;\n}\n";
        let got = entry_params(ptx).unwrap();
        assert_eq!(got, vec![("k".to_string(), vec![40, 4, 8, 8]), ("e".to_string(), vec![])]);
        assert!(entry_params(".visible .entry k(\n\t.param .weird k_param_0\n)\n").is_err());
    }

    const GOOD: &str = ".version 7.0\n.target sm_70\n.address_size 64\n\n.visible .entry k(\n\t.param .u32 k_param_0\n)\n{\n\tret;\n\n}\n";

    #[test]
    fn arch_parses_and_refuses() {
        assert_eq!("sm_90".parse::<Arch>().unwrap(), Arch::HOPPER);
        assert_eq!("sm_70".parse::<Arch>().unwrap().name(), "sm_70");
        for bad in ["sm_60", "90", "sm_x", "compute_90", ""] {
            assert!(bad.parse::<Arch>().is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn good_module_passes() {
        assert_eq!(check_module(GOOD).unwrap(), vec!["k".to_string()]);
    }

    #[test]
    fn extern_func_is_refused() {
        let bad = GOOD.replace(".visible .entry", ".extern .func (.param .b64 r) exp(.param .b64 x);\n.visible .entry");
        let err = check_module(&bad).unwrap_err().to_string();
        assert!(err.contains("unresolved external"), "{err}");
        assert!(err.contains("exp("), "{err}");
    }

    #[test]
    fn duplicate_shared_symbol_is_refused() {
        let bad = GOOD.replace(
            ".visible .entry",
            ".shared .align 16 .b8 TILE[64];\n.shared .align 16 .b8 TILE[64];\n.visible .entry",
        );
        assert!(check_module(&bad).unwrap_err().to_string().contains("TILE"));
        let ok = GOOD
            .replace(".visible .entry", ".shared .align 16 .b8 A[64];\n.shared .align 16 .b8 B[64];\n.visible .entry");
        assert!(check_module(&ok).is_ok());
    }

    #[test]
    fn module_without_kernels_is_refused() {
        assert!(check_module(".version 7.0\n.target sm_70\n").is_err());
    }
}
