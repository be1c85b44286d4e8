//! What every family's command shares: the device choice (with the announced CPU fallback), the
//! precision, number parsers that read negative numbers as numbers, the memory check made before
//! any work, output paths checked writable before the run, files of numbers read with the
//! entry named in errors, and the progress bar.

use anyhow::{Context, Result, anyhow, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lockstep::{Error, Gpu};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Where a run goes: the same flag in every family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Device {
    /// The GPU when there is one, else the CPU twin (announced).
    Auto,
    /// The GPU; an error when there is none.
    Gpu,
    /// The CPU twin (rayon), even when a GPU is present.
    Cpu,
}

/// `--precision`: the floating-point type a run computes in (the command-line value; the
/// library's element traits are `lockstep::bridge::Precision` and `lockstep::nbody::NbodyFloat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrecisionArg {
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
}

impl PrecisionArg {
    /// "f32" or "f64".
    pub fn name(self) -> &'static str {
        match self {
            PrecisionArg::F32 => "f32",
            PrecisionArg::F64 => "f64",
        }
    }

    /// Bytes per value.
    pub fn bytes(self) -> u64 {
        match self {
            PrecisionArg::F32 => 4,
            PrecisionArg::F64 => 8,
        }
    }

    /// The largest finite value.
    pub fn max(self) -> f64 {
        match self {
            PrecisionArg::F32 => f32::MAX as f64,
            PrecisionArg::F64 => f64::MAX,
        }
    }

    /// `v` rounded to this precision is finite. The one rule for every value that enters a run
    /// in a precision, from a flag or from a file.
    pub fn holds(self, v: f64) -> bool {
        match self {
            PrecisionArg::F32 => (v as f32).is_finite(),
            PrecisionArg::F64 => v.is_finite(),
        }
    }
}

/// The GPU for `device`, or `None` for the CPU. `Auto` without a GPU announces the fallback on
/// stdout; `Gpu` without one is an error that names `--device cpu`.
pub fn pick(device: Device) -> Result<Option<Gpu>> {
    match device {
        Device::Cpu => Ok(None),
        Device::Auto | Device::Gpu => match Gpu::new() {
            Ok(g) => Ok(Some(g)),
            Err(Error::NoDevice { reason } | Error::NoDriver { reason }) if device == Device::Auto => {
                println!("no GPU ({reason}); running on the CPU");
                Ok(None)
            }
            Err(e @ (Error::NoDevice { .. } | Error::NoDriver { .. })) => {
                bail!("no GPU: {e}; --device cpu (or auto) runs the CPU twin")
            }
            Err(e) => Err(e.into()),
        },
    }
}

/// The GPU a benchmark measures: an error starting "no GPU: " without one.
pub fn bench_gpu() -> Result<Gpu> {
    Gpu::new().map_err(|e| match e {
        Error::NoDevice { .. } | Error::NoDriver { .. } => {
            anyhow!("no GPU: {e}; benchmarks measure the GPU (the CPU twins run with `lockstep <family> --device cpu`)")
        }
        e => e.into(),
    })
}

// ---- numbers on the command line ------------------------------------------------------------

fn whole(s: &str, min: u64) -> std::result::Result<u64, String> {
    let t = s.trim().replace('_', "");
    if t.starts_with('-') {
        return Err(format!("{s} is negative; give a whole number ≥ {min}"));
    }
    if let Ok(v) = t.parse::<u64>() {
        return Ok(v);
    }
    match exact_integer(&t) {
        Some(Some(v)) => Ok(v),
        Some(None) => Err(format!("{s} is larger than {}", u64::MAX)),
        None if t.parse::<f64>().is_ok_and(f64::is_finite) => {
            Err(format!("{s} is not a whole number; give a whole number ≥ {min}"))
        }
        None => Err(format!("`{s}` is not a number; give a whole number ≥ {min}")),
    }
}

/// A decimal (`1e6`, `2.5E3`, `+100`) read exactly: `Some(Some(v))` when it is a whole number
/// that fits `u64`, `Some(None)` when it is a whole number beyond `u64`, `None` when it is not
/// a whole number (or not a decimal at all).
pub fn exact_integer(t: &str) -> Option<Option<u64>> {
    let t = t.strip_prefix('+').unwrap_or(t);
    let (mant, exp) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i64>().ok()?),
        None => (t, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    // value = digits · 10^(exp − len(frac))
    let shift = exp.checked_sub(frac.len() as i64)?;
    let digits = if shift < 0 {
        let cut = shift.unsigned_abs() as usize;
        let (keep, drop) = digits.split_at(digits.len().saturating_sub(cut));
        if !drop.bytes().all(|b| b == b'0') {
            return None;
        }
        keep.to_string()
    } else {
        if digits.is_empty() {
            return Some(Some(0));
        }
        if shift > 40 {
            return Some(None);
        }
        format!("{digits}{}", "0".repeat(shift as usize))
    };
    if digits.is_empty() {
        return Some(Some(0));
    }
    Some(digits.parse::<u64>().ok())
}

/// A whole number ≥ 0 (`u64`).
pub fn u64_any(s: &str) -> std::result::Result<u64, String> {
    whole(s, 0)
}

/// A whole number ≥ 1 (`u64`).
pub fn u64_pos(s: &str) -> std::result::Result<u64, String> {
    match whole(s, 1)? {
        0 => Err("0 is not accepted; give a whole number ≥ 1".into()),
        v => Ok(v),
    }
}

/// A whole number ≥ 1 (`usize`).
pub fn count(s: &str) -> std::result::Result<usize, String> {
    let v = u64_pos(s)?;
    usize::try_from(v).map_err(|_| format!("{s} is larger than {}", usize::MAX))
}

/// A whole number ≥ 1 that fits `u32`.
pub fn u32_pos(s: &str) -> std::result::Result<u32, String> {
    let v = u64_pos(s)?;
    u32::try_from(v).map_err(|_| format!("{s} is larger than {}", u32::MAX))
}

fn real(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("`{s}` is not a number"))?;
    if !v.is_finite() {
        return Err(format!("{s} is not finite; give a finite number"));
    }
    Ok(v)
}

/// A finite real number.
pub fn finite(s: &str) -> std::result::Result<f64, String> {
    real(s)
}

/// A finite real number > 0.
pub fn positive(s: &str) -> std::result::Result<f64, String> {
    match real(s)? {
        v if v > 0.0 => Ok(v),
        v => Err(format!("{v} is not > 0; give a finite number > 0")),
    }
}

/// A finite real number ≥ 0.
pub fn nonneg(s: &str) -> std::result::Result<f64, String> {
    match real(s)? {
        v if v >= 0.0 => Ok(v),
        v => Err(format!("{v} is negative; give a finite number ≥ 0")),
    }
}

/// Checks that `v` (from `what`) is finite in `precision`; the one rule for flags and files.
pub fn check_in(precision: PrecisionArg, what: &str, v: f64) -> Result<()> {
    if !precision.holds(v) {
        bail!(
            "{what} = {v:e} is not finite in {}; give a value of magnitude below {:e}",
            precision.name(),
            precision.max()
        );
    }
    Ok(())
}

// ---- files ---------------------------------------------------------------------------------

/// The whitespace-separated numbers of `path` (`what` names the file in errors). Each entry must
/// be a number, finite in `precision` (the same rule as for flags); errors name the file and the
/// 1-based entry.
pub fn read_numbers(path: &Path, what: &str, precision: PrecisionArg) -> Result<Vec<f64>> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow!("{what} {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, w) in text.split_whitespace().enumerate() {
        let v: f64 =
            w.parse().map_err(|_| anyhow!("{what} {}: entry {} `{w}` is not a number", path.display(), i + 1))?;
        if !precision.holds(v) {
            bail!(
                "{what} {}: entry {} is {w}, not finite in {}; every entry must be a finite number below {:e} in magnitude",
                path.display(),
                i + 1,
                precision.name(),
                precision.max()
            );
        }
        out.push(v);
    }
    Ok(out)
}

/// Checks, before the run, that `path` (given with `flag`) can be written: its folder exists,
/// it is not a folder, and a file can be created there. `path` itself is never created: an
/// existing file is opened for writing (not truncated), a missing one is stood in for by a
/// file of this process's own name in the same folder, created and removed — the ranks of one
/// run check the same path at once, and a check that created and removed `path` could have its
/// file re-created by another rank's check and left behind. `ext`: the extension the writer
/// needs.
pub fn check_writable(path: &Path, flag: &str, ext: Option<&str>) -> Result<()> {
    if let Some(ext) = ext {
        let ok = path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case(ext));
        if !ok {
            bail!("{flag} {}: the file name must end in .{ext}", path.display());
        }
    }
    if path.is_dir() {
        bail!("{flag} {}: is a folder; give a file name", path.display());
    }
    let probe = if path.exists() {
        std::fs::OpenOptions::new().write(true).open(path).map(drop)
    } else {
        let folder = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let stand_in = folder.join(format!(".{name}.lockstep-check-{}", std::process::id()));
        let made = std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(&stand_in).map(drop);
        if made.is_ok() {
            let _ = std::fs::remove_file(&stand_in);
        }
        made
    };
    if let Err(e) = probe {
        bail!("{flag} {}: cannot be written ({e}); give a path in a writable folder", path.display());
    }
    Ok(())
}

/// Checks `path` for every `(flag, path, ext)` given.
pub fn check_outputs(outputs: &[(&str, &Option<PathBuf>, Option<&str>)]) -> Result<()> {
    for (flag, path, ext) in outputs {
        if let Some(p) = path {
            check_writable(p, flag, *ext)?;
        }
    }
    Ok(())
}

// ---- memory --------------------------------------------------------------------------------

/// Host memory available to a run and what bounds it: `LOCKSTEP_MEM_AVAILABLE` (bytes; for
/// tests), else the smallest of `MemAvailable`, `RLIMIT_AS` and the cgroup's limit
/// ([`crate::limits`]); `None` when none can be read.
pub fn host_limit() -> Option<(u64, &'static str)> {
    if let Some(v) = std::env::var("LOCKSTEP_MEM_AVAILABLE").ok().and_then(|v| v.trim().parse().ok()) {
        return Some((v, "LOCKSTEP_MEM_AVAILABLE"));
    }
    crate::limits::host_bound().map(|b| (b.bytes, b.source))
}

/// Host memory available to a run ([`host_limit`]'s bytes).
pub fn host_available() -> Option<u64> {
    host_limit().map(|(b, _)| b)
}

fn human(bytes: u64) -> String {
    const G: f64 = (1u64 << 30) as f64;
    if bytes as f64 >= G / 10.0 {
        format!("{:.1} GiB", bytes as f64 / G)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
    }
}

/// A byte count from checked arithmetic: `None` means it overflowed `u64`.
pub type Bytes = Option<u64>;

/// Refuses a run that needs more than is available: `need` bytes (`None`: more than 2^64) of
/// `place` memory, `available` bytes, `lower` the flags that shrink it.
pub fn check_memory(place: &str, need: Bytes, available: Option<u64>, lower: &str) -> Result<()> {
    check_memory_under(place, need, available.map(|a| (a, "")), lower)
}

/// [`check_memory`] with the source of the available amount named in the refusal (e.g.
/// `RLIMIT_AS (ulimit -v)`).
pub fn check_memory_under(place: &str, need: Bytes, available: Option<(u64, &str)>, lower: &str) -> Result<()> {
    let Some((avail, source)) = available else { return Ok(()) };
    let under = if source.is_empty() { String::new() } else { format!(" (limit: {source})") };
    match need {
        Some(n) if n <= avail => Ok(()),
        Some(n) => bail!(
            "this run needs {n} bytes ({}) of {place} memory, {avail} bytes ({}) are available{under}; lower {lower}",
            human(n),
            human(avail)
        ),
        None => bail!(
            "this run needs more than 2^64 bytes of {place} memory, {avail} bytes ({}) are available{under}; lower {lower}",
            human(avail)
        ),
    }
}

/// Checks host memory (`need`) and, with a GPU, its free memory (`device_need`).
pub fn check_run_memory(gpu: Option<&Gpu>, host_need: Bytes, device_need: Bytes, lower: &str) -> Result<()> {
    check_memory_under("host", host_need, host_limit(), lower)?;
    if let Some(g) = gpu {
        let (free, _) = g.memory_info().context("asking the GPU for its free memory")?;
        let free =
            std::env::var("LOCKSTEP_MEM_AVAILABLE").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(free as u64);
        check_memory("GPU", device_need, Some(free), lower)?;
    }
    Ok(())
}

/// Checked `a·b·…` of byte counts.
pub fn mul(factors: &[u64]) -> Bytes {
    factors.iter().try_fold(1u64, |acc, &f| acc.checked_mul(f))
}

/// Checked sum of byte counts.
pub fn add(terms: &[Bytes]) -> Bytes {
    terms.iter().try_fold(0u64, |acc, t| acc.checked_add((*t)?))
}

// ---- progress ------------------------------------------------------------------------------

/// A progress bar (indicatif) that appears only on a terminal and only once the run has taken
/// a second; on pipes and files the command's final line says what was done.
pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    shown: AtomicBool,
    tty: bool,
}

impl Progress {
    /// A bar over `len` units named `unit` (e.g. "paths", "steps", "trials").
    pub fn new(len: u64, unit: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
        let template = format!("{{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {unit} ({{eta}} left) {{msg}}");
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress { bar, start: Instant::now(), shown: AtomicBool::new(false), tty: std::io::stderr().is_terminal() }
    }

    /// Sets a message beside the bar.
    pub fn message(&self, msg: String) {
        self.bar.set_message(msg);
    }

    /// Moves the bar to `pos` (monotone; safe from several threads).
    pub fn set(&self, pos: u64) {
        if pos > self.bar.position() {
            self.bar.set_position(pos);
        }
        if self.tty
            && !self.shown.load(Ordering::Relaxed)
            && self.start.elapsed().as_secs_f64() >= 1.0
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::check_writable;

    #[test]
    fn checking_an_output_never_creates_or_changes_it() {
        let dir = std::env::temp_dir().join(format!("lockstep-check-writable-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("out.npy");
        check_writable(&missing, "--out", Some("npy")).unwrap();
        assert!(!missing.exists(), "the check created the output");
        let kept = dir.join("kept.npy");
        std::fs::write(&kept, b"data").unwrap();
        check_writable(&kept, "--out", Some("npy")).unwrap();
        assert_eq!(std::fs::read(&kept).unwrap(), b"data");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "a stand-in file was left behind");
        let e = check_writable(&dir.join("no/such/folder/out.npy"), "--out", Some("npy")).unwrap_err().to_string();
        assert!(e.contains("cannot be written"), "{e}");
        let e = check_writable(&dir, "--out", None).unwrap_err().to_string();
        assert!(e.contains("is a folder"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
