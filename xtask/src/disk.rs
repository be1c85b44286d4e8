//! Disk space, a line at the start and the end of `cargo xtask test`: a landing CI once failed
//! late (`No space left on device` while building the packaged consumer, after 19 minutes of
//! passing tests), and nothing in its log said how full the disk had been. Now the log says how
//! much was free before the run, warns when that is less than a clean run needs, and says how
//! much `target/` holds after it.

use std::path::Path;
use std::process::Command;

/// What a clean `cargo xtask test` leaves in `target/`, in GiB, with a margin: 3.0 GiB measured
/// on a fresh clone (2026-11-28, the dev profile's line-tables-only debug info, see Cargo.toml;
/// 6.1 GiB before with full debug info and incremental state).
pub const CLEAN_RUN_GIB: f64 = 3.5;

/// Free bytes on the filesystem holding `path`, from POSIX `df -Pk` (no libc binding needed);
/// `None` when df cannot say.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let out = Command::new("df").arg("-Pk").arg(path).output().ok()?;
    if !out.status.success() {
        return None;
    }
    parse_df_available(&String::from_utf8_lossy(&out.stdout)).map(|kib| kib * 1024)
}

/// The "Available" column (KiB) of `df -P`'s one data line.
fn parse_df_available(text: &str) -> Option<u64> {
    text.lines().nth(1)?.split_whitespace().nth(3)?.parse().ok()
}

/// Bytes under `dir` (files' lengths; links not followed); 0 when it does not exist.
pub fn size_of(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => size_of(&entry.path()),
            Ok(kind) if kind.is_file() => entry.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// The line before a run: free space where `target/` lies, and a warning when it is less than
/// [`CLEAN_RUN_GIB`] more than `target/` already holds would need.
pub fn before(root: &Path) {
    let target = root.join("target");
    let probe = if target.exists() { target.as_path() } else { root };
    match free_bytes(probe) {
        Some(free) => {
            println!(
                "disk: {:.1} GiB free where target/ lies (a clean run fills about {CLEAN_RUN_GIB} GiB)",
                gib(free)
            );
            if gib(free) < CLEAN_RUN_GIB {
                println!(
                    "disk: WARNING: less free space than a clean run needs; the build may fail with \
                     `No space left on device` (free some, or set CARGO_TARGET_DIR elsewhere)"
                );
            }
        }
        None => println!("disk: free space unknown (df failed)"),
    }
}

/// The line after a run: what `target/` holds and what is left free.
pub fn after(root: &Path) {
    let target = root.join("target");
    let free = free_bytes(&target).map(|b| format!("{:.1} GiB", gib(b))).unwrap_or_else(|| "unknown".into());
    println!("disk: target/ holds {:.1} GiB; {free} free", gib(size_of(&target)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn df_posix_output_gives_the_available_column() {
        let text = "Filesystem     1024-blocks     Used Available Capacity Mounted on\n\
                    /dev/vda        263174212 20971520  75497472      22% /\n";
        assert_eq!(parse_df_available(text), Some(75_497_472));
        assert_eq!(parse_df_available("Filesystem 1024-blocks Used Available Capacity Mounted on\n"), None);
        assert_eq!(parse_df_available("header\n/dev/x 1 2 notanumber 3% /\n"), None);
    }

    #[test]
    fn size_of_sums_files_below_and_is_zero_for_a_missing_folder() {
        let dir = std::env::temp_dir().join(format!("xtask-disk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("x"), [0u8; 10]).unwrap();
        std::fs::write(dir.join("a/b/y"), [0u8; 32]).unwrap();
        assert_eq!(size_of(&dir), 42);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(size_of(&dir), 0);
    }
}
