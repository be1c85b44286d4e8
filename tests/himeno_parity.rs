//! GPU = CPU for the Himeno sweep (proptest; skipped without a GPU): pressure bit-identical after
//! k sweeps, gosa bit-identical in the tree mode.

use lockstep::himeno::{self, HimenoProblem};
use lockstep::himeno::{Himeno, HimenoSweep};
use lockstep_parity::data::SplitMix64;
use lockstep_parity::{assert_bits_eq, assert_within, config, gpu_or_skip};
use lockstep_shared::himeno::gosa_via;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn random_problem(mi: u32, mj: u32, mk: u32, seed: u64, benchmark: bool) -> HimenoProblem {
    let mut pr = HimenoProblem::benchmark(mi, mj, mk).unwrap();
    if !benchmark {
        let mut r = SplitMix64(seed);
        for v in pr.a.iter_mut().chain(pr.b.iter_mut()).chain(pr.c.iter_mut()).chain(pr.wrk1.iter_mut()) {
            *v = r.uniform(-0.3, 0.3) as f32;
        }
        for v in pr.p.iter_mut().chain(pr.bnd.iter_mut()) {
            *v = r.uniform(0.0, 1.0) as f32;
        }
    }
    pr
}

/// Block shapes of the marching sweep.
fn himeno_blocks() -> impl Strategy<Value = (u32, u32)> {
    proptest::sample::select(vec![(32u32, 1u32), (32, 4), (64, 2), (128, 1), (32, 8), (256, 4)])
}

/// Block shapes of the per-thread sweep: at most 256 threads (its launch bounds).
fn thread_blocks() -> impl Strategy<Value = (u32, u32)> {
    proptest::sample::select(vec![(32u32, 1u32), (32, 4), (64, 2), (128, 1), (32, 8), (128, 2), (256, 1)])
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn himeno_jacobi_and_gosa_reduce_match_the_cpu(
        mi in 3u32..20, mj in 3u32..20, mk in 3u32..80, iters in 1u32..4, seed: u64, benchmark: bool,
        block in thread_blocks(), mode in 0u32..3, planes in 1u32..6,
    ) {
        let pr = random_problem(mi, mj, mk, seed, benchmark);
        let want = himeno::himeno_seq(&pr, iters)?;
        let gpu = gpu_or_skip!();
        let a = Himeno::new(gpu)?.with_sweep(HimenoSweep::PerThread).with_planes(planes)?;
        let (p, gosa) = a.himeno(&pr, iters, mode, block)?;
        assert_bits_eq("himeno_jacobi pressure", &p, &want.p, |i| format!("point {i} of {mi}x{mj}x{mk}, {iters} sweeps, block {block:?}, {planes} planes"))?;
        if mode == gosa_via::TREE {
            assert_bits_eq("himeno_gosa_reduce", &[gosa], &[want.gosa_tree], |_| format!("{mi}x{mj}x{mk}"))?;
        } else {
            // f32 sums of N positive terms in any order: |error| ≤ N·ε·Σ.
            let n_int = lockstep_shared::himeno::interior(mi, mj, mk) as f64;
            let tol = 2.0 * n_int * f32::EPSILON as f64 * want.gosa_seq as f64 + 1e-30;
            assert_within("himeno gosa", &[gosa], &[want.gosa_seq], tol, |_| format!("mode {mode}, {mi}x{mj}x{mk}"))?;
        }
    }
}

proptest! {
    #![proptest_config(config())]

    /// The marching sweep: the same bits as the CPU for every block shape (halo tiles cut by
    /// the grid's edges), planes per block (chunks of i shorter than the ring) and gosa mode.
    #[test]
    fn himeno_jacobi_march_matches_the_cpu(
        mi in 3u32..24, mj in 3u32..20, mk in 3u32..80, iters in 1u32..4, seed: u64, benchmark: bool,
        block in himeno_blocks(), mode in 0u32..3, planes in 1u32..9,
    ) {
        let pr = random_problem(mi, mj, mk, seed, benchmark);
        let want = himeno::himeno_seq(&pr, iters)?;
        let gpu = gpu_or_skip!();
        let a = Himeno::new(gpu)?.with_sweep(HimenoSweep::March).with_planes(planes)?;
        let (p, gosa) = a.himeno(&pr, iters, mode, block)?;
        assert_bits_eq("himeno_jacobi_march pressure", &p, &want.p, |i| format!("point {i} of {mi}x{mj}x{mk}, {iters} sweeps, block {block:?}, {planes} planes"))?;
        if mode == gosa_via::TREE {
            assert_bits_eq("himeno_jacobi_march tree gosa", &[gosa], &[want.gosa_tree], |_| format!("{mi}x{mj}x{mk}"))?;
        } else {
            // f32 sums of N positive terms in any order: |error| ≤ N·ε·Σ.
            let n_int = lockstep_shared::himeno::interior(mi, mj, mk) as f64;
            let tol = 2.0 * n_int * f32::EPSILON as f64 * want.gosa_seq as f64 + 1e-30;
            assert_within("himeno_jacobi_march gosa", &[gosa], &[want.gosa_seq], tol, |_| format!("mode {mode}, {mi}x{mj}x{mk}"))?;
        }
    }
}

proptest! {
    #![proptest_config(config())]

    /// The sm_90 marching sweep that overlaps the sweep before (`himeno_jacobi_march_pdl`, every
    /// tree-gosa sweep after a call's first): the CPU's bits, and the bits of the same run
    /// without overlap. The sm_90 cubin must have it.
    #[test]
    fn himeno_jacobi_march_pdl_matches_the_cpu(
        mi in 3u32..24, mj in 3u32..20, mk in 3u32..80, iters in 2u32..8, seed: u64, benchmark: bool,
        block in himeno_blocks(), planes in 1u32..9,
    ) {
        let pr = random_problem(mi, mj, mk, seed, benchmark);
        let want = himeno::himeno_seq(&pr, iters)?;
        let gpu = gpu_or_skip!();
        let a = Himeno::new(gpu)?.with_sweep(HimenoSweep::March).with_planes(planes)?;
        prop_assert_eq!(a.programmatic_launch(), gpu.loaded().what.contains("sm_90"), "module {}", gpu.loaded().what);
        let (p, gosa) = a.himeno(&pr, iters, gosa_via::TREE, block)?;
        let (p_off, gosa_off) = a.with_programmatic_launch(false).himeno(&pr, iters, gosa_via::TREE, block)?;
        let what = |i| format!("point {i} of {mi}x{mj}x{mk}, {iters} sweeps, block {block:?}, {planes} planes");
        assert_bits_eq("himeno_jacobi_march_pdl pressure", &p, &want.p, what)?;
        assert_bits_eq("himeno_jacobi_march pressure (no overlap)", &p_off, &want.p, what)?;
        assert_bits_eq("himeno_jacobi_march_pdl tree gosa", &[gosa, gosa_off], &[want.gosa_tree; 2], |_| format!("{mi}x{mj}x{mk}"))?;
    }
}

/// Many overlapped sweeps on a grid of many blocks (several waves of the next sweep waiting
/// while the one before retires): the bits of the same sweeps without overlap.
#[test]
fn himeno_jacobi_march_pdl_long_runs_equal_plain_launches() -> Result<(), TestCaseError> {
    let pr = random_problem(66, 130, 257, 3, false);
    let gpu = gpu_or_skip!();
    for (block, planes) in [((128, 2), 16), ((64, 4), 4)] {
        let a = Himeno::new(gpu)?.with_sweep(HimenoSweep::March).with_planes(planes)?;
        let (p, gosa) = a.himeno(&pr, 40, gosa_via::TREE, block)?;
        let (p_off, gosa_off) = a.with_programmatic_launch(false).himeno(&pr, 40, gosa_via::TREE, block)?;
        let bad = p.iter().zip(&p_off).position(|(x, y)| x.to_bits() != y.to_bits());
        prop_assert_eq!(bad, None, "{:?}/{}: pressure differs at {:?}", block, planes, bad);
        prop_assert_eq!(
            gosa.to_bits(),
            gosa_off.to_bits(),
            "{:?}/{}: gosa {:e} vs {:e}",
            block,
            planes,
            gosa,
            gosa_off
        );
    }
    Ok(())
}

/// Level 2 over more than one stride of partials (lanes add several, every group busy, the
/// groups finished by blocks of the next sweep and by the closing reduce launch), both sweeps,
/// against the CPU twin's tree: a 40 × 140 × 260 grid has 38·138·8 = 41,952 partials.
#[test]
fn himeno_gosa_reduce_over_many_partials_matches_the_cpu() -> Result<(), TestCaseError> {
    let pr = random_problem(40, 140, 260, 11, false);
    let want = himeno::himeno_par(&pr, 3)?;
    let gpu = gpu_or_skip!();
    for (sweep, block, planes) in
        [(HimenoSweep::PerThread, (128, 2), 2), (HimenoSweep::March, (128, 4), 8), (HimenoSweep::March, (64, 2), 3)]
    {
        let a = Himeno::new(gpu)?.with_sweep(sweep).with_planes(planes)?;
        let (p, gosa) = a.himeno(&pr, 3, gosa_via::TREE, block)?;
        let bad = p.iter().zip(&want.p).position(|(x, y)| x.to_bits() != y.to_bits());
        assert_eq!(bad, None, "{sweep:?} {block:?}/{planes}: pressure differs at {bad:?}");
        assert_eq!(gosa.to_bits(), want.gosa_tree.to_bits(), "{sweep:?}: tree gosa {gosa:e} vs {:e}", want.gosa_tree);
    }
    Ok(())
}

/// The level-2 kernel is exercised by every tree-mode case above; this one pins the benchmark's
/// own initialisation at size XS (both kernels, every gosa mode).
#[test]
fn himeno_gosa_reduce_and_jacobi_at_size_xs_match_the_cpu_in_every_mode() -> Result<(), TestCaseError> {
    let pr = HimenoProblem::by_name("XS")?;
    let want = himeno::himeno_par(&pr, 5)?;
    let gpu = gpu_or_skip!();
    let n_int = lockstep_shared::himeno::interior(pr.mi, pr.mj, pr.mk) as f64;
    for (mode, planes) in
        [gosa_via::PLAIN, gosa_via::AGGREGATED, gosa_via::TREE].into_iter().flat_map(|m| [1, 2, 3, 4].map(|q| (m, q)))
    {
        for sweep in [HimenoSweep::PerThread, HimenoSweep::March] {
            let a = Himeno::new(gpu).unwrap().with_sweep(sweep).with_planes(planes).unwrap();
            let (p, gosa) = a.himeno(&pr, 5, mode, (64, 4)).unwrap();
            let bad = p.iter().zip(&want.p).position(|(x, y)| x.to_bits() != y.to_bits());
            assert_eq!(bad, None, "{sweep:?}, mode {mode}, {planes} planes: pressure differs at {bad:?}");
            if mode == gosa_via::TREE {
                assert_eq!(
                    gosa.to_bits(),
                    want.gosa_tree.to_bits(),
                    "{sweep:?}: tree gosa {gosa:e} vs {:e}",
                    want.gosa_tree
                );
            } else {
                // f32 sums of N positive terms in any order: |error| ≤ N·ε·Σ.
                let tol = 2.0 * n_int * f32::EPSILON as f64 * want.gosa_seq as f64;
                assert_within("himeno gosa at size XS", &[gosa], &[want.gosa_seq], tol, |_| {
                    format!("{sweep:?}, mode {mode}, {planes} planes; tree gosa {:e}", want.gosa_tree)
                })?;
            }
        }
    }
    Ok(())
}
