//! What `lockstep mg` and `lockstep nbody` share for checkpoints: the flags (`--checkpoint`,
//! `--checkpoint-every`, `--resume`), the checks made before any work, and SIGINT/SIGTERM turned
//! into a flag the run checks between steps (so it writes a checkpoint and stops cleanly).

use crate::common;
use anyhow::{Result, bail};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The checkpoint flags of a resumable command.
#[derive(clap::Args, Clone, Debug)]
pub struct CheckpointArgs {
    /// Write a checkpoint to FILE every --checkpoint-every steps and when stopped by SIGINT
    /// (Ctrl-C) or SIGTERM (a batch system's time limit); written atomically, with a checksum.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// Steps between checkpoints (game steps for mg, counted over all trials); without it a
    /// checkpoint is written only on SIGINT/SIGTERM.
    #[arg(long, value_name = "N", value_parser = common::u64_pos)]
    pub checkpoint_every: Option<u64>,
    /// Continue from this checkpoint: give the same command line as the interrupted run; the
    /// result is bit-identical to an uninterrupted run (the device may differ). Checkpoints go
    /// on to --checkpoint, else to this file.
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
}

impl CheckpointArgs {
    /// Where checkpoints are written: `--checkpoint`, else the `--resume` file; `None` when
    /// neither is given (then `--checkpoint-every` is refused). Checks, before any work, that the
    /// resume file exists and the checkpoint's folder can be written.
    pub fn target(&self) -> Result<Option<PathBuf>> {
        if let Some(r) = self.resume.as_ref().filter(|r| !r.is_file()) {
            bail!("--resume {}: no such file; give a checkpoint written by --checkpoint", r.display());
        }
        let target = self.checkpoint.clone().or_else(|| self.resume.clone());
        match (&target, self.checkpoint_every) {
            (None, Some(n)) => bail!("--checkpoint-every {n} needs --checkpoint FILE (where to write them)"),
            (Some(t), _) => check_folder(t)?,
            (None, None) => {}
        }
        Ok(target)
    }

    /// Steps between checkpoints (0: only when stopped).
    pub fn every(&self) -> u64 {
        self.checkpoint_every.unwrap_or(0)
    }
}

/// The checkpoint's folder must exist and take a new file (the write goes to a temporary file
/// there, then is renamed); a folder is no file name.
fn check_folder(path: &Path) -> Result<()> {
    if path.is_dir() {
        bail!("--checkpoint {}: is a folder; give a file name", path.display());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let probe = dir.join(format!(".lockstep-probe-{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => bail!("--checkpoint {}: cannot write in its folder ({e})", path.display()),
    }
}

/// A flag raised by SIGINT or SIGTERM from now on (the run checks it between steps, writes its
/// checkpoint and stops); the signals keep their default action when no checkpoint is written.
pub fn stop_on_signals() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    Ok(flag)
}

/// The one-line error of a run stopped by a signal after writing its checkpoint.
pub fn interrupted(unit: &str, step: u64, total: u64, file: Option<&Path>) -> anyhow::Error {
    match file {
        Some(f) => anyhow::anyhow!(
            "interrupted by a signal after {step} of {total} {unit}; checkpoint written to {}: run the same command with --resume {} to finish it",
            f.display(),
            f.display()
        ),
        None => anyhow::anyhow!("interrupted by a signal after {step} of {total} {unit}"),
    }
}
