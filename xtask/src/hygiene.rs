//! The 1 MiB rule, a step of `cargo xtask test`: no tracked file may be larger than 1 MiB, so
//! no generated text file grows the history again (a 3.3 MB PTX module recommitted at every
//! kernel change once pushed a submission past its size limit: issue 20). The one exception is
//! the host crate's compressed device code, a binary that changes only with the kernels.

use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::Command;

/// The largest tracked file allowed: 1 MiB.
const MAX_TRACKED_BYTES: u64 = 1 << 20;

/// The only tracked files exempt from [`MAX_TRACKED_BYTES`], as (folder, suffix): the host
/// crate's zstd-compressed PTX and cubins (`crates/host/modules/*.zst`, written by `cargo xtask
/// build-ptx`, binary and `-diff` in .gitattributes). Compressed already; nothing else belongs here.
const COMPRESSED_BINARIES: (&str, &str) = ("crates/host/modules/", ".zst");

/// Fails when a file of `git ls-files` is larger than [`MAX_TRACKED_BYTES`] and not one of
/// [`COMPRESSED_BINARIES`], naming each with its size.
pub fn check(root: &Path) -> Result<()> {
    println!("=== tracked files at most 1 MiB (compressed device code excepted)");
    let out =
        Command::new("git").args(["ls-files", "-z"]).current_dir(root).output().context("running git ls-files")?;
    if !out.status.success() {
        bail!("git ls-files failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let mut tracked = Vec::new();
    for name in out.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name).into_owned();
        // A tracked file deleted in the working tree (not yet committed) has no size to check.
        if let Ok(meta) = std::fs::symlink_metadata(root.join(&name)) {
            tracked.push((name, meta.len()));
        }
    }
    let (excepted, too_big) = oversized(&tracked);
    if !too_big.is_empty() {
        let list: Vec<String> =
            too_big.iter().map(|(name, bytes)| format!("  {name}: {bytes} bytes ({})", mib(*bytes))).collect();
        bail!(
            "tracked files larger than 1 MiB:\n{}\nEvery commit that changes such a file adds its size again to the history. \
             Keep generated output out of git (under target/, or built by build.rs into OUT_DIR); device code \
             belongs zstd-compressed in {}*{} (`cargo xtask build-ptx` writes it), the only exception. \
             Then `git rm --cached <file>` and commit.",
            list.join("\n"),
            COMPRESSED_BINARIES.0,
            COMPRESSED_BINARIES.1
        );
    }
    let largest = tracked.iter().filter(|(n, _)| !is_exempt(n)).map(|(_, b)| *b).max().unwrap_or(0);
    println!(
        "hygiene: {} tracked files, none over 1 MiB (largest {}); {} compressed module(s) excepted",
        tracked.len(),
        mib(largest),
        excepted.len()
    );
    Ok(())
}

fn is_exempt(name: &str) -> bool {
    name.starts_with(COMPRESSED_BINARIES.0) && name.ends_with(COMPRESSED_BINARIES.1)
}

/// Files as `(path, bytes)`.
type Files = Vec<(String, u64)>;

/// Of `files`, those over [`MAX_TRACKED_BYTES`]: (exempt ones, offending ones).
fn oversized(files: &[(String, u64)]) -> (Files, Files) {
    files.iter().filter(|(_, bytes)| *bytes > MAX_TRACKED_BYTES).cloned().partition(|(name, _)| is_exempt(name))
}

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_compressed_modules_may_exceed_the_limit() {
        let files = [
            ("crates/host/ptx/lockstep_kernels.sm_70.ptx", 3_353_841),
            ("crates/host/modules/lockstep_kernels.sm_90.cubin.zst", 2 << 20),
            ("crates/host/modules/census.txt", 2 << 20),
            ("crates/host/modules.zst", 2 << 20),
            ("README.md", MAX_TRACKED_BYTES),
        ]
        .map(|(n, b)| (n.to_string(), b));
        let (excepted, too_big) = oversized(&files);
        let names = |v: &[(String, u64)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&excepted), ["crates/host/modules/lockstep_kernels.sm_90.cubin.zst"]);
        assert_eq!(
            names(&too_big),
            ["crates/host/ptx/lockstep_kernels.sm_70.ptx", "crates/host/modules/census.txt", "crates/host/modules.zst"]
        );
    }
}
