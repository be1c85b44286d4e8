//! Project rules checked as ordinary tests (rust-analyzer's "tidy" idea):
//! every kernel has a launcher and a GPU parity test; every `unsafe {` is explained by a
//! `// SAFETY:` comment; no test is ignored; the PTX census holds for exact kernels.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn read_all(dir: &str) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(&root().join(dir), &mut files);
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

#[test]
fn every_kernel_has_one_typed_handle_and_a_parity_test() {
    let host: String = read_all("crates/host/src").into_iter().map(|(_, t)| t).collect();
    let tests: String =
        read_all("tests").into_iter().filter(|(p, _)| p.to_string_lossy().contains("parity")).map(|(_, t)| t).collect();
    assert!(!lockstep::ptx::KERNELS.is_empty());
    for kernel in lockstep::ptx::KERNELS {
        // Exactly one typed handle per kernel: its name is written once in host code (as the
        // string the handle is looked up by), so a kernel without a launcher fails here.
        let uses = host.matches(&format!("\"{kernel}\"")).count();
        assert_eq!(uses, 1, "kernel `{kernel}` is named {uses} times in crates/host (one typed handle expected)");
        let stem = kernel.trim_end_matches("_f32").trim_end_matches("_f64");
        assert!(
            tests.contains(&format!("fn {stem}")) || tests.contains(&format!("fn {kernel}")),
            "kernel `{kernel}` has no parity test named after it in tests/*parity*.rs"
        );
    }
}

#[test]
fn every_unsafe_block_has_a_safety_comment() {
    let mut missing = Vec::new();
    for dir in ["crates", "tests", "xtask"] {
        for (path, text) in read_all(dir) {
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if !code.contains("unsafe {") || code.contains("\"") {
                    continue;
                }
                let window = &lines[i.saturating_sub(4)..=i];
                if !window.iter().any(|l| l.contains("SAFETY:")) {
                    missing.push(format!("{}:{}", path.display(), i + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "unsafe blocks without a `// SAFETY:` comment in the 4 lines before:\n{}",
        missing.join("\n")
    );
}

#[test]
fn no_test_is_ignored() {
    for dir in ["crates", "tests", "xtask"] {
        for (path, text) in read_all(dir) {
            let needle = ["#[", "ignore"].concat();
            assert!(!text.contains(&needle), "{} ignores a test", path.display());
        }
    }
}

/// Most inlined copies of the generators' Φ⁻¹ in one normals-alone kernel (see below).
const MAX_NORMAL_COPIES: usize = 64;

/// The fma count of one inlined generator Φ⁻¹ for the normals-alone kernels.
fn normal_fma_per_copy(kernel: &str) -> Option<usize> {
    use lockstep_shared::bridge::normal::{FMA_PER_NORMAL_F32, FMA_PER_NORMAL_F64};
    let stem = ["normals_philox_", "normals_sobol_"].into_iter().find(|s| kernel.starts_with(*s))?;
    match &kernel[stem.len()..] {
        "f32" => Some(FMA_PER_NORMAL_F32),
        "f64" => Some(FMA_PER_NORMAL_F64),
        _ => None,
    }
}

/// Bridge kernels whose fma come from the shared code's explicit `mul_add`: the increments'
/// division (`lockstep_shared::bridge::quotient`) in all of them, and in the fused ones also the
/// generators' Φ⁻¹ (see the test).
const BRIDGE_MUL_ADD_FMA: [&str; 12] = [
    "bridge_f32",
    "bridge_f64",
    "bridge_dims_f32",
    "bridge_dims_f64",
    "bridge_philox_f32",
    "bridge_philox_f64",
    "bridge_sobol_f32",
    "bridge_sobol_f64",
    "bridge_philox_d1_f32",
    "bridge_philox_d1_f64",
    "bridge_sobol_d1_f32",
    "bridge_sobol_d1_f64",
];

#[test]
fn exact_kernels_have_no_fma_approx_ftz_or_local_memory() {
    let funcs = lockstep_ptx_builder::census::functions(lockstep::ptx::MODULE);
    for kernel in lockstep::ptx::KERNELS {
        let f = funcs.iter().find(|f| f.name == *kernel).unwrap_or_else(|| panic!("{kernel} not in census"));
        // Kernels named `*_fast` are an explicit fast mode (e.g. nbody's FMA + rsqrt.approx),
        // checked against their CPU reference with a stated tolerance instead of bit for bit.
        // They may fuse and approximate, but never flush subnormals.
        if kernel.ends_with("_fast") {
            assert_eq!(f.ftz, 0, "{kernel}: ftz in a fast kernel: {f:?}");
            continue;
        }
        // The normals-alone kernels inline the generators' Φ⁻¹, whose two Horner polynomials use
        // explicit `mul_add` (fused and correctly rounded on the CPU too, so parity holds):
        // exactly `FMA_PER_NORMAL_*` fma per inlined copy, at most `MAX_NORMAL_COPIES` copies
        // (census of 2026-11-22: 1). Any other fma (a contraction, a stray `mul_add`) breaks the
        // multiple or the bound.
        if let Some(per) = normal_fma_per_copy(kernel) {
            assert_eq!((f.approx, f.ftz), (0, 0), "{kernel}: approx/ftz in an exact kernel: {f:?}");
            assert!(
                f.fma % per == 0 && f.fma / per <= MAX_NORMAL_COPIES,
                "{kernel}: {} fma is not a multiple ≤ {MAX_NORMAL_COPIES} × {per} (Φ⁻¹'s mul_adds): {f:?}",
                f.fma
            );
            continue;
        }
        // The bridge kernels divide through `lockstep_shared::bridge::quotient`, whose explicit
        // `mul_add`s (Markstein's correction, correctly rounded on both sides) give exactly `/`'s
        // bits, and the fused ones inline Φ⁻¹ too: fma on purpose; nothing approximate, nothing
        // flushed. (Their fma counts mix both sources, so only the normals-alone kernels above
        // can be held to a multiple.)
        if BRIDGE_MUL_ADD_FMA.contains(kernel) {
            assert_eq!((f.approx, f.ftz), (0, 0), "{kernel}: approx/ftz in an exact kernel: {f:?}");
            continue;
        }
        assert_eq!((f.fma, f.approx, f.ftz), (0, 0, 0), "{kernel}: fma/approx/ftz in an exact kernel: {f:?}");
    }
    // Only the libm kernel may use a local stack (libm's sin reduction keeps an array there).
    // (The bridge's f64 generators no longer call libm `exp`, whose `force_eval!` kept an 8-byte
    // depot there: no other kernel has one.)
    for f in funcs.iter().filter(|f| f.is_entry && f.local_depot_bytes > 0) {
        assert_eq!(f.name, "exp_sin_log_f64", "unexpected local memory: {f:?}");
    }
    assert!(lockstep_ptx_builder::check_module(lockstep::ptx::MODULE).is_ok());
}
