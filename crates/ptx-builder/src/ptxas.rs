//! NVIDIA's PTX assembler as an offline check: validity, registers and spills per kernel.
//!
//! ptxas comes from PyPI (`nvidia-cuda-nvcc`; `cargo xtask setup` unpacks it into
//! `target/tools/bin`). No GPU is needed. When it is missing, the census is printed without
//! these columns and a line says so.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What ptxas reported for one function on one architecture.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtxasFunction {
    /// The PTX name.
    pub name: String,
    /// Registers per thread (kernels only).
    pub registers: Option<u32>,
    /// Stack frame bytes.
    pub stack_bytes: u32,
    /// Spill store bytes.
    pub spill_stores: u32,
    /// Spill load bytes.
    pub spill_loads: u32,
    /// Static shared memory bytes (kernels only).
    pub shared_bytes: u32,
}

/// Finds ptxas: `$LOCKSTEP_PTXAS`, then `<workspace>/target/tools/bin/ptxas`, then `PATH`.
pub fn find(workspace_root: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LOCKSTEP_PTXAS") {
        return Some(PathBuf::from(p));
    }
    let local = workspace_root.join("target/tools/bin/ptxas");
    if local.is_file() {
        return Some(local);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("ptxas")).find(|p| p.is_file())
}

/// Assembles `ptx_file` for `sm` (e.g. `sm_90`) and parses `-v` output. `Err` holds ptxas's
/// complete output when it rejects the module.
pub fn run(ptxas: &Path, ptx_file: &Path, sm: &str) -> Result<Vec<PtxasFunction>, String> {
    assemble(ptxas, ptx_file, sm, Path::new("/dev/null"))
}

/// As [`run`], writing the machine code (a cubin) to `cubin`. ptxas's output is a function of
/// its input, its version and its flags alone (the same bytes on every run).
pub fn assemble(ptxas: &Path, ptx_file: &Path, sm: &str, cubin: &Path) -> Result<Vec<PtxasFunction>, String> {
    let out = Command::new(ptxas)
        .arg(format!("-arch={sm}"))
        .arg("-v")
        .arg("-o")
        .arg(cubin)
        .arg(ptx_file)
        .output()
        .map_err(|e| format!("could not run {}: {e}", ptxas.display()))?;
    let text = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("ptxas -arch={sm} rejected {}:\n{text}", ptx_file.display()));
    }
    Ok(parse(&text))
}

/// ptxas's version as it prints it (`V13.5.37`), for the census header.
pub fn version(ptxas: &Path) -> Result<String, String> {
    let out =
        Command::new(ptxas).arg("--version").output().map_err(|e| format!("could not run {}: {e}", ptxas.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .find(|w| w.starts_with('V') && w[1..].starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_string)
        .ok_or_else(|| format!("{} --version printed no version:\n{text}", ptxas.display()))
}

/// Parses ptxas's `-v` report.
pub fn parse(text: &str) -> Vec<PtxasFunction> {
    let mut out: Vec<PtxasFunction> = Vec::new();
    let mut current: Option<usize> = None;
    for line in text.lines() {
        let l = line.trim();
        if let Some(rest) = l.split("Function properties for ").nth(1) {
            let name = rest.trim().to_string();
            current = Some(match out.iter().position(|f| f.name == name) {
                Some(i) => i,
                None => {
                    out.push(PtxasFunction { name, ..Default::default() });
                    out.len() - 1
                }
            });
        } else if let Some(rest) = l.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or("").to_string();
            out.push(PtxasFunction { name, ..Default::default() });
            current = Some(out.len() - 1);
        } else if let Some(i) = current {
            let f = &mut out[i];
            if l.contains("bytes stack frame") {
                f.stack_bytes = number_before(l, "bytes stack frame").unwrap_or(0);
                f.spill_stores = number_before(l, "bytes spill stores").unwrap_or(0);
                f.spill_loads = number_before(l, "bytes spill loads").unwrap_or(0);
            } else if l.contains("Used ") && l.contains(" registers") {
                f.registers = number_before(l, "registers");
                f.shared_bytes = number_before(l, "bytes smem").unwrap_or(0);
            }
        }
    }
    out
}

fn number_before(line: &str, marker: &str) -> Option<u32> {
    let head = &line[..line.find(marker)?];
    head.split(|c: char| !c.is_ascii_digit()).rfind(|s| !s.is_empty())?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'block_sum_f64' for 'sm_90'
ptxas info    : Function properties for block_sum_f64
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, used 1 barriers, 2048 bytes smem
ptxas info    : Compiling entry function 'exp_sin_log_f64' for 'sm_90'
ptxas info    : Function properties for exp_sin_log_f64
    584 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers
";

    #[test]
    fn parses_registers_and_spills() {
        let f = parse(REPORT);
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0],
            PtxasFunction {
                name: "block_sum_f64".into(),
                registers: Some(18),
                stack_bytes: 0,
                spill_stores: 0,
                spill_loads: 0,
                shared_bytes: 2048
            }
        );
        assert_eq!((f[1].registers, f[1].stack_bytes, f[1].spill_stores, f[1].spill_loads), (Some(40), 584, 8, 4));
    }
}
