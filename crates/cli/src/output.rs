//! How the CLI writes its output files: never in place. A file is written to `<path>.partial`
//! beside its target and renamed over the target only once it is complete and on disk
//! ([`Partial::commit`]), so a failed or interrupted run never leaves a file that passes for
//! complete, and an existing file stays as it was until the new one replaces it. A run killed
//! outright (SIGKILL, power loss) can leave a `.partial` file, never a complete-looking one.
//!
//! Also the free disk space, checked before a run that writes large files ([`check_disk`]).

use anyhow::{Context, Result, bail};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `path` with `suffix` appended to its file name (`x.npy` → `x.npy.partial`).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

/// A file being written to `<target>.partial`; removed again unless [`Partial::commit`]ed.
/// Several processes may write one file (the ranks of a run): one creates and commits it, the
/// others [`Partial::join`] it and only write and [`Partial::sync`].
pub struct Partial {
    target: PathBuf,
    tmp: PathBuf,
    file: Option<File>,
    /// Created here: removed on drop, committed here. A joined file is neither.
    owner: bool,
}

impl Partial {
    /// Creates (or truncates) `<target>.partial`.
    pub fn create(target: &Path) -> Result<Partial> {
        let tmp = with_suffix(target, ".partial");
        let file = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        Ok(Partial { target: target.to_path_buf(), tmp, file: Some(file), owner: true })
    }

    /// Opens `<target>.partial`, which another process created, for writing (no truncation).
    pub fn join(target: &Path) -> Result<Partial> {
        let tmp = with_suffix(target, ".partial");
        let file =
            std::fs::OpenOptions::new().write(true).open(&tmp).with_context(|| format!("opening {}", tmp.display()))?;
        Ok(Partial { target: target.to_path_buf(), tmp, file: Some(file), owner: false })
    }

    /// Flushes what this process wrote to disk (`fsync`); the file stays `.partial`.
    pub fn sync(&mut self) -> Result<()> {
        let tmp = self.tmp.display().to_string();
        self.file().sync_all().with_context(|| format!("writing {tmp}"))
    }

    /// The file being written.
    pub fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("a Partial holds its file until commit")
    }

    /// The temporary path (`<target>.partial`), for messages.
    pub fn tmp(&self) -> &Path {
        &self.tmp
    }

    /// Makes the file the target: flushed to disk (`fsync`), then renamed over the target. A
    /// `.json` sidecar of the file it replaces is removed first, so an old description never
    /// sits beside a new file (the caller writes the new sidecar after this).
    pub fn commit(mut self) -> Result<()> {
        if !self.owner {
            bail!("{}: only the process that created it renames it", self.tmp.display());
        }
        let file = self.file.take().expect("a Partial holds its file until commit");
        file.sync_all().with_context(|| format!("writing {}", self.tmp.display()))?;
        drop(file);
        let sidecar = with_suffix(&self.target, ".json");
        match std::fs::remove_file(&sidecar) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => bail!("removing the old {}: {e}", sidecar.display()),
        }
        std::fs::rename(&self.tmp, &self.target)
            .with_context(|| format!("renaming {} to {}", self.tmp.display(), self.target.display()))?;
        // The rename itself on disk: best effort (not every platform opens folders).
        if let Some(dir) = self.target.parent().filter(|d| !d.as_os_str().is_empty())
            && let Ok(d) = File::open(dir)
        {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if self.file.take().is_some() && self.owner {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `bytes` to `target` through a [`Partial`] (temp file, then rename).
pub fn write_atomic(target: &Path, bytes: &[u8]) -> Result<()> {
    let mut p = Partial::create(target)?;
    p.file().write_all(bytes).with_context(|| format!("writing {}", p.tmp().display()))?;
    p.commit()
}

/// Bytes free to an unprivileged user on the file system that holds `dir`:
/// `LOCKSTEP_DISK_AVAILABLE` (bytes; for tests) or `statvfs`; `None` when unknown.
pub fn disk_available(dir: &Path) -> Option<u64> {
    if let Some(v) = std::env::var("LOCKSTEP_DISK_AVAILABLE").ok().and_then(|v| v.trim().parse().ok()) {
        return Some(v);
    }
    statvfs_available(dir)
}

#[cfg(unix)]
fn statvfs_available(dir: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(dir).ok()?;
    s.f_bavail.checked_mul(s.f_frsize)
}

#[cfg(not(unix))]
fn statvfs_available(_dir: &Path) -> Option<u64> {
    None
}

/// Refuses, before any work, a run whose file `path` (given with `flag`) needs `need` bytes
/// (`None`: more than 2^64) on a disk with less free; `lower` names the flags that shrink it.
pub fn check_disk(path: &Path, flag: &str, need: Option<u64>, lower: &str) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(free) = disk_available(&dir) else { return Ok(()) };
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    match need {
        Some(n) if n <= free => Ok(()),
        Some(n) => bail!(
            "{flag} {}: the file needs {n} bytes ({:.2} GiB), its disk has {free} bytes ({:.2} GiB) free; lower \
             {lower}, or write to another disk",
            path.display(),
            gib(n),
            gib(free)
        ),
        None => bail!("{flag} {}: the file would pass 2^64 bytes; lower {lower}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("lockstep-output-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_partial_becomes_the_file_only_on_commit() {
        let d = dir("commit");
        let target = d.join("x.npy");
        std::fs::write(&target, b"old").unwrap();
        std::fs::write(with_suffix(&target, ".json"), b"old sidecar").unwrap();
        {
            let mut p = Partial::create(&target).unwrap();
            p.file().write_all(b"half").unwrap();
            assert!(d.join("x.npy.partial").exists());
            // dropped without commit: an error mid-way
        }
        assert!(!d.join("x.npy.partial").exists(), "the partial file is removed");
        assert_eq!(std::fs::read(&target).unwrap(), b"old", "the old file is untouched");
        write_atomic(&target, b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert!(!with_suffix(&target, ".json").exists(), "the old sidecar went with the old file");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_disk_check_names_the_flag_and_the_sizes() {
        let d = dir("disk");
        assert!(disk_available(&d).is_some_and(|b| b > 0));
        let e = check_disk(&d.join("x.npy"), "--out", Some(u64::MAX), "--paths").unwrap_err().to_string();
        assert!(e.contains("--out") && e.contains("free") && e.contains("lower --paths"), "{e}");
        assert!(check_disk(&d.join("x.npy"), "--out", Some(1), "--paths").is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
