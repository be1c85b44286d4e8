//! The sidecar: `x.npy.json` beside every result file `x.npy` the CLI writes (and `x.csv.json`
//! beside `lockstep mg --out x.csv`), saying how to make the file again — lockstep's version, the
//! stream version (whose bits it holds), the family, the command line as given and every
//! parameter as parsed (defaults included), the seed and the device. numpy refuses unknown keys
//! in an `.npy` header, so this lives beside the file, not in it.
//!
//! Written after the result file is complete, through a temporary file and a rename; the result
//! file's own rename removes an older sidecar first ([`crate::output::Partial::commit`]), so a
//! sidecar never describes another file.

use crate::output::{with_suffix, write_atomic};
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The sidecar's own format version (its keys).
pub const SIDECAR_VERSION: u32 = 1;

/// What a sidecar holds.
#[derive(Serialize)]
struct Sidecar<'a> {
    /// [`SIDECAR_VERSION`].
    sidecar_version: u32,
    /// The result file's name (beside this one).
    file: String,
    /// lockstep's version.
    lockstep_version: &'static str,
    /// `lockstep::STREAM_VERSION`: runs with the same parameters give these bits in every
    /// release of this stream version (`--stream-version N` refuses to run otherwise).
    stream_version: u32,
    /// `bridge`, `nbody`, `mg`.
    family: &'a str,
    /// The command line as given (program name first).
    command: Vec<String>,
    /// Every option of the command as parsed, defaults included.
    parameters: serde_json::Value,
    /// The seed of the run's generator, when it has one.
    seed: Option<u64>,
    /// Where it ran: `cpu`, or `gpu: <name>`.
    device: String,
}

/// The device a run used, as sidecars name it: `cpu`, or `gpu: <name>`.
pub fn device_name(gpu: Option<&lockstep::Gpu>) -> String {
    gpu.map_or_else(|| "cpu".to_string(), |g| format!("gpu: {}", g.name()))
}

/// The sidecar path of a result file: `x.npy` → `x.npy.json`.
pub fn path_of(result: &Path) -> PathBuf {
    with_suffix(result, ".json")
}

/// Writes the sidecar of the complete result file `result`: `family`, the command's parsed
/// `parameters`, the run's `seed`, the `device` ([`device_name`]).
pub fn write(result: &Path, family: &str, parameters: &impl Serialize, seed: Option<u64>, device: &str) -> Result<()> {
    let sidecar = Sidecar {
        sidecar_version: SIDECAR_VERSION,
        file: result.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        lockstep_version: lockstep::VERSION,
        stream_version: lockstep::STREAM_VERSION,
        family,
        command: std::env::args().collect(),
        parameters: serde_json::to_value(parameters).context("describing the run's parameters")?,
        seed,
        device: device.to_string(),
    };
    let mut text = serde_json::to_string_pretty(&sidecar).context("describing the run")?;
    text.push('\n');
    let path = path_of(result);
    write_atomic(&path, text.as_bytes()).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct P {
        paths: u64,
        out: Option<PathBuf>,
    }

    #[test]
    fn a_sidecar_says_how_to_make_the_file_again() {
        let dir = std::env::temp_dir().join(format!("lockstep-sidecar-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let x = dir.join("x.npy");
        write(&x, "bridge", &P { paths: 5, out: Some(x.clone()) }, Some(7), "cpu").unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("x.npy.json")).unwrap()).unwrap();
        assert_eq!(v["file"], "x.npy");
        assert_eq!(v["stream_version"], lockstep::STREAM_VERSION);
        assert_eq!(v["lockstep_version"], lockstep::VERSION);
        assert_eq!(v["family"], "bridge");
        assert_eq!(v["parameters"]["paths"], 5);
        assert_eq!(v["seed"], 7);
        assert_eq!(v["device"], "cpu");
        assert!(v["command"].as_array().is_some_and(|c| !c.is_empty()));
        assert!(!dir.join("x.npy.json.partial").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
