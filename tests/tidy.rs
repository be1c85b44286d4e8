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

/// Parity tests that run several kernels (one generic body for f32 and f64, or every kernel of
/// a model), so no single kernel's name can start theirs: test function → the kernels it runs.
/// Every other kernel `K` needs a test named after it exactly: `fn K_…` (or `fn K(`), so
/// `bridge_f32` is not matched by `fn bridge_f64_…` or `fn bridge_dims_…`.
const SHARED_PARITY_TESTS: &[(&str, &[&str])] = &[
    ("aggregate_probe_floats_return_prefix_sums", &["aggregate_probe_f32", "aggregate_probe_f64"]),
    ("histogram_private_u32_u64_and_f64_units_are_exact", &["histogram_private_f64"]),
    ("nbody_global_gpu_equals_cpu", &["nbody_global_f32", "nbody_global_f64"]),
    ("nbody_shared_gpu_equals_cpu", &["nbody_shared_f32", "nbody_shared_f64"]),
    ("nbody_split_gpu_equals_cpu", &["nbody_split_f32", "nbody_split_f64"]),
    (
        "nbody_split_pdl_gpu_equals_cpu",
        &["nbody_split_pdl_f32", "nbody_split_pdl_f64", "nbody_split_pdl_f32_fast", "nbody_split_pdl_f64_fast"],
    ),
    ("bridge_gpu_equals_cpu", &["bridge_f32", "bridge_f64"]),
    ("bridge_quads_gpu_equals_cpu", &["bridge_quads_f32"]),
    ("bridge_dims_and_pairs_gpu_equals_cpu", &["bridge_dims_f32", "bridge_dims_f64"]),
    ("bridge_staged_gpu_equals_cpu", &["bridge_staged_dims_f32", "bridge_staged_dims_f64"]),
    ("bridge_philox_gpu_equals_cpu", &["bridge_philox_f32", "bridge_philox_f64"]),
    ("bridge_sobol_gpu_equals_cpu", &["bridge_sobol_f32", "bridge_sobol_f64"]),
    ("bridge_philox_d1_gpu_equals_cpu", &["bridge_philox_d1_f32", "bridge_philox_d1_f64"]),
    ("bridge_sobol_d1_gpu_equals_cpu", &["bridge_sobol_d1_f32", "bridge_sobol_d1_f64"]),
    ("bridge_philox_bm_gpu_equals_cpu", &["bridge_philox_bm_f32", "bridge_philox_bm_f64"]),
    ("bridge_philox_bm_d1_gpu_equals_cpu", &["bridge_philox_bm_d1_f32", "bridge_philox_bm_d1_f64"]),
    ("bridge_philox_bm_d1_pairs_gpu_equals_cpu", &["bridge_philox_bm_d1_pairs_f32"]),
    ("normals_philox_gpu_equals_cpu", &["normals_philox_f32", "normals_philox_f64"]),
    ("normals_sobol_gpu_equals_cpu", &["normals_sobol_f32", "normals_sobol_f64"]),
    ("normals_bm_philox_gpu_equals_cpu", &["normals_bm_philox_f32", "normals_bm_philox_f64"]),
    (
        "histogram_partition_counts_are_exact",
        &["histogram_partition_split", "histogram_partition_count_u32", "histogram_partition_count_u64"],
    ),
    ("mg_step_rank_shares_on_one_gpu_equal_the_game", &["mg_step_rank", "mg_step_rank_s2"]),
    (
        "nbody_rank_kernels_equal_the_one_gpu_run",
        &["nbody_rank_global_f32", "nbody_rank_global_f64", "nbody_rank_shared_f32", "nbody_rank_shared_f64"],
    ),
];

/// The public host method that launches each kernel: kernels → method.
const LAUNCHED_BY: &[(&[&str], &str)] = &[
    (&["saxpy"], "saxpy"),
    (&["daxpy"], "daxpy"),
    (&["count_exceeding"], "count_exceeding"),
    (&["warp_sum_f32"], "warp_sums"),
    (&["block_sum_f64"], "block_sums"),
    (&["exp_sin_log_f64"], "exp_sin_log"),
    (&["cluster_probe"], "probe"),
    (
        &[
            "aggregate_probe_u32",
            "aggregate_probe_i32",
            "aggregate_probe_u64",
            "aggregate_probe_f32",
            "aggregate_probe_f64",
        ],
        "probe",
    ),
    (
        &[
            "histogram_u32",
            "histogram_u64",
            "histogram_private_u32",
            "histogram_private_u64",
            "histogram_wide_u32",
            "histogram_wide_u64",
            "histogram_partition_split",
            "histogram_partition_count_u32",
            "histogram_partition_count_u64",
        ],
        "histogram_counts",
    ),
    (&["histogram_f64", "histogram_private_f64"], "histogram_f64"),
    (&["histogram_fixed"], "histogram_fixed"),
    (&["histogram_private_fixed"], "histogram_fixed_raw"),
    (&["himeno_jacobi", "himeno_jacobi_march", "himeno_jacobi_march_pdl", "himeno_gosa_reduce"], "himeno"),
    (&["matmul_global_i32", "matmul_global_i64", "matmul_shared_i32", "matmul_shared_i64"], "multiply"),
    (&["mg_init_tables", "mg_step", "mg_step_s2", "mg_grid_sync", "mg_grid_sync_s2"], "play"),
    (&["mg_standalone", "mg_standalone_s2", "mg_standalone_s2t"], "play_standalone"),
    (&["mg_step_rank", "mg_step_rank_s2"], "passes_on_device"),
    (&["nbody_rank_global_f32", "nbody_rank_global_f64", "nbody_rank_shared_f32", "nbody_rank_shared_f64"], "run"),
    (
        &[
            "nbody_global_f32",
            "nbody_global_f64",
            "nbody_shared_f32",
            "nbody_shared_f64",
            "nbody_global_f32_fast",
            "nbody_global_f64_fast",
            "nbody_shared_f32_fast",
            "nbody_shared_f64_fast",
            "nbody_split_f32",
            "nbody_split_f64",
            "nbody_split_f32_fast",
            "nbody_split_f64_fast",
            "nbody_split_pdl_f32",
            "nbody_split_pdl_f64",
            "nbody_split_pdl_f32_fast",
            "nbody_split_pdl_f64_fast",
        ],
        "run",
    ),
    (&BRIDGE_KERNELS, "generate"),
    (
        &[
            "normals_philox_f32",
            "normals_philox_f64",
            "normals_sobol_f32",
            "normals_sobol_f64",
            "normals_bm_philox_f32",
            "normals_bm_philox_f64",
        ],
        "normals",
    ),
];

/// The names of the functions a source file defines (`fn name(` or `fn name<`).
fn fn_names(text: &str) -> Vec<&str> {
    text.match_indices("fn ")
        .filter(|(i, _)| *i == 0 || !text.as_bytes()[i - 1].is_ascii_alphanumeric() && text.as_bytes()[i - 1] != b'_')
        .map(|(i, _)| {
            let rest = &text[i + 3..];
            &rest[..rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len())]
        })
        .collect()
}

/// Every kernel is launched by its host method and run by a parity test named after it:
///
/// 1. **One typed handle.** The kernel's name is written exactly once in `crates/host` (the
///    string its handle is looked up by), so a kernel without a launcher fails here.
/// 2. **A launch, not just a lookup.** [`LAUNCHED_BY`] names the public method that launches
///    it; that method is defined (`fn method`) in the same host file that looks the kernel up.
/// 3. **A parity test named after it, exactly.** A `tests/*parity*.rs` file defines `fn K_…`
///    (or `fn K`) for the kernel's full name `K` — no suffix trimmed — or a test listed for `K` in
///    [`SHARED_PARITY_TESTS`].
/// 4. **The test's suite calls the launch.** The file holding that test calls the method
///    (`.method(` or `.method::<`).
///
/// Both tables must name only existing kernels, each once. What tidy cannot see is whether the
/// method reaches this particular kernel for the inputs the test draws (a dispatch on type,
/// dimension or path count): the tables are the reviewed claim, this test keeps them honest
/// against renames, new kernels and deleted tests.
#[test]
fn every_kernel_has_one_typed_handle_a_launch_and_a_parity_test() {
    let host = read_all("crates/host/src");
    let parity: Vec<(PathBuf, String)> =
        read_all("tests").into_iter().filter(|(p, _)| p.to_string_lossy().contains("parity")).collect();
    // every image's kernels: the portable ones and the architecture-specific ones
    let kernels: Vec<&str> = lockstep::ptx::KERNELS
        .iter()
        .copied()
        .chain(lockstep::ptx::IMAGES.iter().flat_map(|i| i.own_kernels().iter().copied()))
        .collect();
    assert!(!kernels.is_empty());
    let listed = |table: Vec<&str>, what: &str| {
        for k in &table {
            assert!(kernels.contains(k), "{what} names `{k}`, which is not a kernel");
            assert_eq!(table.iter().filter(|t| *t == k).count(), 1, "{what} names `{k}` more than once");
        }
    };
    listed(LAUNCHED_BY.iter().flat_map(|(ks, _)| ks.iter().copied()).collect(), "LAUNCHED_BY");
    listed(SHARED_PARITY_TESTS.iter().flat_map(|(_, ks)| ks.iter().copied()).collect(), "SHARED_PARITY_TESTS");
    for kernel in &kernels {
        // 1. One typed handle.
        let quoted = format!("\"{kernel}\"");
        let uses: usize = host.iter().map(|(_, t)| t.matches(&quoted).count()).sum();
        assert_eq!(uses, 1, "kernel `{kernel}` is named {uses} times in crates/host (one typed handle expected)");
        let (handle_file, handle_src) = host.iter().find(|(_, t)| t.contains(&quoted)).unwrap();
        // 2. The method that launches it, beside the lookup.
        let method = LAUNCHED_BY
            .iter()
            .find(|(ks, _)| ks.contains(kernel))
            .unwrap_or_else(|| panic!("kernel `{kernel}` is missing from LAUNCHED_BY (which method launches it?)"))
            .1;
        assert!(
            fn_names(handle_src).contains(&method),
            "LAUNCHED_BY: `{method}` (for `{kernel}`) is not defined in {}, where the kernel is looked up",
            handle_file.display()
        );
        // 3. A parity test named after it.
        let prefix = format!("{kernel}_");
        let shared = SHARED_PARITY_TESTS.iter().find(|(_, ks)| ks.contains(kernel)).map(|(t, _)| *t);
        let suite = parity
            .iter()
            .find(|(_, t)| fn_names(t).iter().any(|f| *f == *kernel || f.starts_with(&prefix) || Some(*f) == shared));
        let Some((suite_file, suite_src)) = suite else {
            panic!(
                "kernel `{kernel}` has no parity test named after it in tests/*parity*.rs \
                 (`fn {kernel}_…`, or one listed in SHARED_PARITY_TESTS)"
            )
        };
        // 4. The suite calls the launch.
        assert!(
            suite_src.contains(&format!(".{method}(")) || suite_src.contains(&format!(".{method}::<")),
            "{}: the parity test of `{kernel}` never calls `.{method}(`, its launch",
            suite_file.display()
        );
    }
}

#[test]
fn fn_names_finds_exact_function_names() {
    let src = "fn bridge_f64_x() {}\npub fn run<T>(x: T) {}\nfn_names(); my_fn a() ";
    assert_eq!(fn_names(src), ["bridge_f64_x", "run"]);
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

/// The fma count of one inlined Box–Muller pair for the Box–Muller normals kernels, and the
/// pairs each inlines: one path per thread, a pass of two Philox blocks (four pairs) and a
/// one-block tail (two); f32 also two paths per thread (`normals_bm_philox_pairs`), a pass of
/// one block of each path (four) and a tail of both blocks (four).
fn boxmuller_fma_per_pair(kernel: &str) -> Option<(usize, usize)> {
    use lockstep_shared::bridge::boxmuller::{FMA_PER_PAIR_F32, FMA_PER_PAIR_F64};
    match kernel.strip_prefix("normals_bm_philox_")? {
        "f32" => Some((FMA_PER_PAIR_F32, 6 + 8)),
        "f64" => Some((FMA_PER_PAIR_F64, 6)),
        _ => None,
    }
}

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

/// The twenty bridge kernels (all launched by `Bridge::generate`), whose fma come from the
/// shared code's explicit `mul_add`: the increments' division (`lockstep_shared::bridge::quotient`) in all of them, and in the fused ones also the
/// generators' Φ⁻¹ or Box–Muller pairs (see the test).
const BRIDGE_KERNELS: [&str; 20] = [
    "bridge_f32",
    "bridge_f64",
    "bridge_dims_f32",
    "bridge_dims_f64",
    "bridge_staged_dims_f32",
    "bridge_staged_dims_f64",
    "bridge_philox_f32",
    "bridge_philox_f64",
    "bridge_sobol_f32",
    "bridge_sobol_f64",
    "bridge_philox_d1_f32",
    "bridge_philox_d1_f64",
    "bridge_sobol_d1_f32",
    "bridge_sobol_d1_f64",
    "bridge_philox_bm_f32",
    "bridge_philox_bm_f64",
    "bridge_philox_bm_d1_f32",
    "bridge_philox_bm_d1_f64",
    "bridge_philox_bm_d1_pairs_f32",
    "bridge_quads_f32",
];

/// The census rule for one kernel `f` (see the test below).
fn check_kernel_census(f: &lockstep_ptx_builder::census::FunctionCensus) {
    let kernel = f.name.as_str();
    // Kernels named `*_fast` are an explicit fast mode (e.g. nbody's FMA + rsqrt.approx),
    // checked against their CPU reference with a stated tolerance instead of bit for bit.
    // They may fuse and approximate, but never flush subnormals — except the n-body fast
    // terms' `rsqrt.approx.ftz.f32` (f32: results equal the unflushed instruction's there,
    // `rsqrt_approx_ftz_f32`) and `rsqrt.approx.ftz.f64` (f64: only the seed of
    // `rsqrt_approx_f64_normal`, taken for positive normal inputs alone): no other flushing
    // mnemonic (checked where the census comes from PTX; the sm_90 rows read back from the
    // census file carry counts only) and no more than the kernel's approximate instructions.
    if kernel.ends_with("_fast") {
        if kernel.starts_with("nbody_") {
            let allowed = if kernel.contains("_f32") { "rsqrt.approx.ftz.f32" } else { "rsqrt.approx.ftz.f64" };
            assert!(f.ftz <= f.approx, "{kernel}: ftz beyond its rsqrt.approx: {f:?}");
            assert!(
                f.ftz_mnemonics.iter().all(|m| m == allowed),
                "{kernel}: a flushing instruction other than {allowed}: {f:?}"
            );
        } else {
            assert_eq!(f.ftz, 0, "{kernel}: ftz in a fast kernel: {f:?}");
        }
        return;
    }
    // The normals-alone kernels inline the generators' Φ⁻¹, whose two Horner polynomials use
    // explicit `mul_add` (fused and correctly rounded on the CPU too, so parity holds):
    // exactly `FMA_PER_NORMAL_*` fma per inlined copy, at most `MAX_NORMAL_COPIES` copies
    // (census of 2026-11-22: 1). Any other fma (a contraction, a stray `mul_add`) breaks the
    // multiple or the bound.
    // The Box–Muller normals kernels: `mul_add` in the uniform (f32), the angle and the `ln`
    // — exactly `FMA_PER_PAIR_*` per inlined pair, exactly the pairs its bodies inline (a
    // missing or stray fma, or another copy, breaks the count), nothing approximate or flushed.
    if let Some((per, pairs)) = boxmuller_fma_per_pair(kernel) {
        assert_eq!((f.approx, f.ftz), (0, 0), "{kernel}: approx/ftz in an exact kernel: {f:?}");
        assert_eq!(f.fma, pairs * per, "{kernel}: {} fma, not {pairs} pairs × {per}: {f:?}", f.fma);
        return;
    }
    if let Some(per) = normal_fma_per_copy(kernel) {
        assert_eq!((f.approx, f.ftz), (0, 0), "{kernel}: approx/ftz in an exact kernel: {f:?}");
        assert!(
            f.fma.is_multiple_of(per) && f.fma / per <= MAX_NORMAL_COPIES,
            "{kernel}: {} fma is not a multiple ≤ {MAX_NORMAL_COPIES} × {per} (Φ⁻¹'s mul_adds): {f:?}",
            f.fma
        );
        return;
    }
    // The bridge kernels divide through `lockstep_shared::bridge::quotient`, whose explicit
    // `mul_add`s (Markstein's correction, correctly rounded on both sides) give exactly `/`'s
    // bits, and the fused ones inline Φ⁻¹ too: fma on purpose; nothing approximate, nothing
    // flushed. (Their fma counts mix both sources, so only the normals-alone kernels above
    // can be held to a multiple.)
    if BRIDGE_KERNELS.contains(&kernel) {
        assert_eq!((f.approx, f.ftz), (0, 0), "{kernel}: approx/ftz in an exact kernel: {f:?}");
        return;
    }
    // The exact n-body tiled kernels that group terms write out ptxas's own inline paths of
    // `sqrt.rn` and `div.rn` (cuda-std `sqrt_rn_f32_inline`, `div_rn_f32_inline`,
    // `sqrt_rn_f64_inline`, `div_rn_f64_inline`, taken only where they give those instructions'
    // results). Per f32 term: one `rsqrt.approx.ftz.f32` seed and 2 fma, one `rcp.approx.ftz.f32`
    // seed and 5 fma, so 2·fma = 7·approx; per f64 term: one `rsqrt.approx.ftz.f64` seed and 5
    // fma, one `rcp.approx.ftz.f64` seed and 7 fma, so fma = 6·approx. Every approximate
    // instruction is one of its precision's two flushed seeds: a contraction, a stray `mul_add`
    // or another approximation breaks the rule.
    if let Some(&(_, seeds, fma_per_two_approx)) = NBODY_EXACT_INLINE.iter().find(|(k, _, _)| *k == kernel) {
        assert!(f.approx > 0 && f.approx == f.ftz, "{kernel}: approx/ftz other than the seeds: {f:?}");
        assert!(
            f.ftz_mnemonics.iter().all(|m| seeds.contains(&m.as_str())),
            "{kernel}: a flushing instruction other than the two seeds {seeds:?}: {f:?}"
        );
        assert_eq!(2 * f.fma, fma_per_two_approx * f.approx, "{kernel}: fma other than the written-out paths': {f:?}");
        return;
    }
    assert_eq!((f.fma, f.approx, f.ftz), (0, 0, 0), "{kernel}: fma/approx/ftz in an exact kernel: {f:?}");
}

const SEEDS_F32: &[&str] = &["rsqrt.approx.ftz.f32", "rcp.approx.ftz.f32"];
const SEEDS_F64: &[&str] = &["rsqrt.approx.ftz.f64", "rcp.approx.ftz.f64"];

/// The exact kernels that group terms (`ExactGroup` in the kernel crate's `nbody`), their two
/// seeds and the fma of one sqrt-and-division pair (two approximate instructions).
const NBODY_EXACT_INLINE: &[(&str, &[&str], usize)] = &[
    ("nbody_shared_f32", SEEDS_F32, 7),
    ("nbody_split_f32", SEEDS_F32, 7),
    ("nbody_rank_shared_f32", SEEDS_F32, 7),
    ("nbody_split_pdl_f32", SEEDS_F32, 7),
    ("nbody_shared_f64", SEEDS_F64, 12),
    ("nbody_split_f64", SEEDS_F64, 12),
    ("nbody_rank_shared_f64", SEEDS_F64, 12),
    ("nbody_split_pdl_f64", SEEDS_F64, 12),
];

/// Only the libm kernel may use a local stack (libm's sin reduction keeps an array there).
/// (The bridge's f64 generators no longer call libm `exp`, whose `force_eval!` kept an 8-byte
/// depot there: no other kernel has one.)
fn check_kernel_local_memory(f: &lockstep_ptx_builder::census::FunctionCensus) {
    if f.is_entry && (f.local_depot_bytes > 0 || f.local > 0) {
        assert_eq!(f.name, "exp_sin_log_f64", "unexpected local memory: {f:?}");
    }
}

#[test]
fn exact_kernels_have_no_fma_approx_ftz_or_local_memory() {
    let funcs = lockstep_ptx_builder::census::functions(lockstep::ptx::module());
    for kernel in lockstep::ptx::KERNELS {
        check_kernel_census(
            funcs.iter().find(|f| f.name == *kernel).unwrap_or_else(|| panic!("{kernel} not in census")),
        );
    }
    funcs.iter().for_each(check_kernel_local_memory);
    assert!(lockstep_ptx_builder::check_module(lockstep::ptx::module()).is_ok());
}

/// The same rules for the sm_90-only kernels, which the portable PTX above lacks: their rows in
/// the committed census (`crates/host/modules/census.txt`, read back by the PTX builder).
#[test]
fn sm90_kernels_follow_the_census_rules() {
    use lockstep_ptx_builder::{census, images};
    let text = std::fs::read_to_string(root().join("crates/host/modules").join(images::CENSUS)).unwrap();
    let rows = census::read_census(&text).unwrap();
    let sm90: Vec<_> = rows.iter().filter(|(_, images)| images == "sm_90").map(|(f, _)| f).collect();
    assert!(sm90.len() >= 6, "sm_90 kernels in the census: {}", sm90.len());
    for f in sm90 {
        check_kernel_census(f);
        check_kernel_local_memory(f);
    }
}
