//! GPU = CPU, bit for bit, for every Minority Game model (proptest; skipped without a GPU):
//! the paper's five items (winners per step, history, every agent's tables, the table each
//! agent used at each step, every generator's output) from the kernel-per-step, grid-sync and
//! standalone models, for random small games, group counts that do not divide n, and several
//! block shapes and grid sizes; plus outcomes of larger games without trace.

use lockstep::mg::{Distributed, Mg};
use lockstep::mg::{Trace, play};
use lockstep_parity::{assert_bits_eq, config, gpu_or_skip};
use lockstep_shared::mg::MgParams;
use proptest::prelude::*;

fn blocks() -> impl Strategy<Value = u32> {
    prop_oneof![Just(32u32), Just(64), Just(96), Just(128), Just(256)]
}

fn small_params() -> impl Strategy<Value = MgParams> {
    (0u64..1_500, 1u32..=7, 1u32..=4, 1u32..50, 1u64..200).prop_map(|(half, m, s, p, g)| {
        let n = 2 * half + 1;
        MgParams::new(n, m, s, p, g.min(n))
    })
}

fn same_trace(model: &str, got: &Trace, want: &Trace, tables: bool) -> Result<(), TestCaseError> {
    assert_bits_eq(&format!("{model}: winners"), &got.winners, &want.winners, |t| format!("step {t}"))?;
    let (gh, wh): (Vec<u32>, Vec<u32>) = (got.history.clone(), want.history.clone());
    assert_bits_eq(&format!("{model}: history"), &gh, &wh, |t| format!("before step {t}"))?;
    if tables {
        assert_bits_eq(&format!("{model}: tables"), &got.tables, &want.tables, |i| format!("word {i}"))?;
    }
    let gu: Vec<u32> = got.used.iter().map(|&u| u as u32).collect();
    let wu: Vec<u32> = want.used.iter().map(|&u| u as u32).collect();
    assert_bits_eq(&format!("{model}: used tables"), &gu, &wu, |i| format!("[t·n + a] = {i}"))?;
    prop_assert_eq!(got.draws.len(), want.draws.len());
    for (g, (a, b)) in got.draws.iter().zip(&want.draws).enumerate() {
        assert_bits_eq(&format!("{model}: draws of group {g}"), a, b, |i| format!("draw {i}"))?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: config().cases.min(48), ..config() })]

    #[test]
    fn mg_init_tables_and_mg_step_equal_cpu(params in small_params(), seed: u32, trial in 0u64..5, block in blocks()) {
        let (_, want) = play(&params, seed, trial, None, true)?;
        let gpu = gpu_or_skip!();
        let mg = Mg::with_block_size(gpu, block)?;
        let (_, got) = mg.play(&params, seed, trial, Distributed::KernelPerStep, true)?;
        same_trace(&format!("kernel-per-step {params:?} block {block}"), &got.unwrap(), &want.unwrap(), true)?;
    }

    #[test]
    fn mg_grid_sync_equals_cpu(params in small_params(), seed: u32, trial in 0u64..5, block in blocks(), frac in 1u32..=4) {
        let (_, want) = play(&params, seed, trial, None, true)?;
        let gpu = gpu_or_skip!();
        let mg = Mg::with_block_size(gpu, block)?;
        let cap = mg.grid_sync_capacity(&params, true)?;
        // the full co-resident grid, or a fraction of it (fewer threads than groups)
        let blocks = (cap / frac).max(1);
        let (_, got) = mg.play(&params, seed, trial, Distributed::GridSync { blocks: Some(blocks) }, true)?;
        same_trace(&format!("grid-sync {params:?} block {block} grid {blocks}"), &got.unwrap(), &want.unwrap(), true)?;
    }

    #[test]
    fn mg_standalone_equals_cpu(params in small_params(), seed: u32, first in 0u64..5, trials in 1u64..5, block in blocks(), few in any::<bool>()) {
        let want = (first..first + trials).map(|t| play(&params, seed, t, None, true)).collect::<Result<Vec<_>, _>>()?;
        let gpu = gpu_or_skip!();
        let mg = Mg::with_block_size(gpu, block)?;
        // one block per trial (tables comparable), or fewer blocks looping over trials
        let nblocks = if few { Some(1) } else { None };
        let got = mg.play_standalone(&params, seed, first, trials, nblocks, true)?;
        prop_assert_eq!(got.len() as u64, trials);
        for (i, ((o, tr), (wo, want))) in got.iter().zip(want).enumerate() {
            prop_assert_eq!(o, &wo);
            same_trace(&format!("standalone {params:?} block {block} trial {}", first + i as u64), tr.as_ref().unwrap(), &want.unwrap(), !few)?;
        }
    }
}

/// Block shapes for the lean `*_s2` kernels (fewer registers: 512 threads fit too; 352 and 384
/// are the standalone shapes that leave some threads one group fewer).
fn lean_blocks() -> impl Strategy<Value = u32> {
    prop_oneof![Just(32u32), Just(96), Just(128), Just(256), Just(352), Just(384), Just(512)]
}

fn larger_game(half: u64, g: u64, m: u32) -> MgParams {
    MgParams::new(2 * half + 1, m, 2, 100, g)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: config().cases.min(6), ..config() })]

    // s = 2 without trace runs the register-lean `*_s2` kernels: their winners (and so the
    // history, which depends on every agent's choice) must equal the CPU's.

    #[test]
    fn mg_step_s2_equals_cpu_on_larger_games(half in 50_000u64..150_000, g in 1_000u64..40_000, seed: u32, m in 2u32..=6, block in lean_blocks()) {
        let gpu = gpu_or_skip!(); // the CPU games alone take minutes unoptimised
        let params = larger_game(half, g, m);
        let (want, _) = play(&params, seed, 1, Some(0), false)?;
        let (got, _) = Mg::with_block_size(gpu, block)?.play(&params, seed, 1, Distributed::KernelPerStep, false)?;
        prop_assert_eq!(&got, &want);
    }

    #[test]
    fn mg_grid_sync_s2_equals_cpu_on_larger_games(half in 50_000u64..150_000, g in 1_000u64..40_000, seed: u32, m in 2u32..=6, block in lean_blocks()) {
        let gpu = gpu_or_skip!(); // the CPU games alone take minutes unoptimised
        let params = larger_game(half, g, m);
        let (want, _) = play(&params, seed, 1, Some(0), false)?;
        let (got, _) = Mg::with_block_size(gpu, block)?.play(&params, seed, 1, Distributed::GridSync { blocks: None }, false)?;
        prop_assert_eq!(&got, &want);
    }

    #[test]
    fn mg_standalone_s2_equals_cpu_on_larger_games(half in 20_000u64..60_000, g in 1_000u64..10_000, seed: u32, m in 2u32..=6, block in lean_blocks()) {
        let gpu = gpu_or_skip!(); // the CPU games alone take minutes unoptimised
        let params = larger_game(half, g, m);
        let want = (3..6).map(|t| play(&params, seed, t, Some(0), false).map(|(o, _)| o)).collect::<Result<Vec<_>, _>>()?;
        let got = Mg::with_block_size(gpu, block)?.play_standalone(&params, seed, 3, 3, None, false)?;
        prop_assert_eq!(got.len(), want.len());
        for (i, ((o, _), want)) in got.iter().zip(&want).enumerate() {
            prop_assert_eq!(o, want, "trial {}", 3 + i);
        }
    }

    // s = 2 without trace, p ≤ S2_SIDE_MAX_P and a multiple of 32 groups runs
    // `mg_standalone_s2t` (tables transposed after the build, the played side in the state):
    // its winners equal the CPU's for m up to 7 (up to four table words, so four transposed
    // rows a table), a partial last tile (n is odd), blocks up to 512, and one block looping
    // over the trials (the workspace transposed again for each).
    #[test]
    fn mg_standalone_s2t_equals_cpu_on_larger_games(half in 20_000u64..60_000, k in 1u64..320, seed: u32, m in 1u32..=7, block in lean_blocks(), few in any::<bool>()) {
        let gpu = gpu_or_skip!(); // the CPU games alone take minutes unoptimised
        let params = MgParams::new(2 * half + 1, m, 2, 100, 32 * k);
        let want = (3..6).map(|t| play(&params, seed, t, Some(0), false).map(|(o, _)| o)).collect::<Result<Vec<_>, _>>()?;
        let got = Mg::with_block_size(gpu, block)?.play_standalone(&params, seed, 3, 3, few.then_some(1), false)?;
        prop_assert_eq!(got.len(), want.len());
        for (i, ((o, _), want)) in got.iter().zip(&want).enumerate() {
            prop_assert_eq!(o, want, "trial {} block {} few {}", 3 + i, block, few);
        }
    }

    // `mg_standalone_s2t`'s packed state holds |score difference| ≤ p ≤ S2_SIDE_MAX_P; one
    // step more runs `mg_standalone_s2`. Both ends equal the CPU (long games of few agents,
    // the block the launcher picks).
    #[test]
    fn mg_standalone_s2t_equals_cpu_at_its_p_limit(half in 16u64..1_500, k in 1u64..4, seed: u32, m in 1u32..=7, over in any::<bool>()) {
        let gpu = gpu_or_skip!(); // the CPU games alone take minutes unoptimised
        let n = 2 * half + 1;
        let p = lockstep_shared::mg::S2_SIDE_MAX_P + over as u32;
        let params = MgParams::new(n, m, 2, p, 32 * k.min(n / 32));
        let (want, _) = play(&params, seed, 2, None, false)?;
        prop_assert_eq!(&Mg::new(gpu)?.play_standalone(&params, seed, 2, 1, None, false)?[0].0, &want);
    }

    // The paper's Table 4 shape, smaller (1,024 groups, a partial last tile of 31 agents), in
    // the block the launcher picks for this GPU (`Mg::new`) and in blocks of 128 and 352:
    // every trial's winners equal the CPU's.
    #[test]
    fn mg_standalone_s2t_in_the_picked_block_equals_cpu(seed: u32, block in prop_oneof![Just(None), Just(Some(128u32)), Just(Some(352))]) {
        let gpu = gpu_or_skip!(); // the CPU games alone take minutes unoptimised
        let params = MgParams::new(131_071, 5, 2, 200, 1024);
        let want = (0..4).map(|t| play(&params, seed, t, Some(0), false).map(|(o, _)| o)).collect::<Result<Vec<_>, _>>()?;
        let mg = match block {
            Some(b) => Mg::with_block_size(gpu, b)?,
            None => Mg::new(gpu)?,
        };
        let got = mg.play_standalone(&params, seed, 0, 4, None, false)?;
        for (i, ((o, _), want)) in got.iter().zip(&want).enumerate() {
            prop_assert_eq!(o, want, "trial {} block {:?}", i, block);
        }
    }

    // More groups than the step kernel keeps resident threads: the kernel-per-step grid is
    // capped at one wave and threads stride over groups (the lean and the general kernels).
    #[test]
    fn mg_step_s2_equals_cpu_with_more_groups_than_resident_threads(half in 150_000u64..250_000, g in 100_000u64..300_000, seed: u32, m in 2u32..=6, block in prop_oneof![Just(256u32), Just(512)]) {
        let gpu = gpu_or_skip!(); // the CPU games alone take minutes unoptimised
        let params = MgParams::new(2 * half + 1, m, 2, 40, g);
        let (want, _) = play(&params, seed, 4, Some(0), false)?;
        let general = MgParams::new(2 * half + 1, m, 3, 12, g);
        let (want_general, _) = play(&general, seed, 4, Some(0), false)?;
        let mg = Mg::with_block_size(gpu, block)?;
        prop_assert_eq!(&mg.play(&params, seed, 4, Distributed::KernelPerStep, false)?.0, &want);
        prop_assert_eq!(&Mg::new(gpu)?.play(&general, seed, 4, Distributed::KernelPerStep, false)?.0, &want_general);
    }

    // The lean kernels' packed i16 state holds |score difference| ≤ p ≤ S2_MAX_P; one step
    // more runs the general kernels. Both ends equal the CPU (long games of few agents).
    #[test]
    fn mg_s2_kernels_equal_cpu_at_the_lean_p_limit(half in 500u64..1_500, g in 1u64..64, seed: u32, m in 1u32..=7, over in any::<bool>()) {
        let gpu = gpu_or_skip!(); // the CPU games alone take minutes unoptimised
        let p = lockstep_shared::mg::S2_MAX_P + over as u32;
        let params = MgParams::new(2 * half + 1, m, 2, p, g);
        let (want, _) = play(&params, seed, 2, None, false)?;
        let mg = Mg::new(gpu)?;
        prop_assert_eq!(&mg.play(&params, seed, 2, Distributed::KernelPerStep, false)?.0, &want);
        prop_assert_eq!(&mg.play(&params, seed, 2, Distributed::GridSync { blocks: None }, false)?.0, &want);
        prop_assert_eq!(&mg.play_standalone(&params, seed, 2, 1, None, false)?[0].0, &want);
    }

    // Untraced runs of the general kernels (s ≠ 2) equal the CPU too.
    #[test]
    fn mg_step_and_grid_sync_untraced_general_kernels_equal_cpu(params in small_params(), seed: u32, trial in 0u64..5) {
        let (want, _) = play(&params, seed, trial, None, false)?;
        let gpu = gpu_or_skip!();
        let mg = Mg::new(gpu)?;
        prop_assert_eq!(&mg.play(&params, seed, trial, Distributed::KernelPerStep, false)?.0, &want);
        prop_assert_eq!(&mg.play(&params, seed, trial, Distributed::GridSync { blocks: None }, false)?.0, &want);
        prop_assert_eq!(&mg.play_standalone(&params, seed, trial, 1, None, false)?[0].0, &want);
    }
}
