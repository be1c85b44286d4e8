//! GPU = CPU, bit for bit, for every Brownian bridge kernel (proptest; skipped without a GPU):
//! random problems (d ≤ 4, every order kind, stacks in shared memory and in scratch memory), path
//! counts that are not multiples of the block size, several block sizes, f32 and f64, points
//! and increments, normals from a buffer, Philox and Sobol, fused and unfused.

mod bridge_common;

use bridge_common::{normals, random_spec};
use lockstep::bridge::{self as cpu, Output, Plan, Precision, Source};
use lockstep::bridge::{Bridge, QuadsKernel, Variant};
use lockstep_parity::{Bits, assert_bits_eq, config, gpu_or_skip};
use lockstep_shared::bridge::philox::MAX_CACHE_SLOTS;
use lockstep_shared::bridge::{FUSED_SHARED_LIMIT, LaunchShape, SINCOS_F32_BYTES, box_muller_normals_lanes};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn blocks() -> impl Strategy<Value = u32> {
    prop_oneof![Just(128u32), Just(32), Just(96), Just(256)]
}

/// The two kernels of the odd-count quads (`Auto` takes one of them by the grid's size).
fn quads_kernels() -> impl Strategy<Value = QuadsKernel> {
    prop_oneof![Just(QuadsKernel::Always), Just(QuadsKernel::Never)]
}

fn output(inc: bool) -> Output {
    if inc { Output::Increments } else { Output::Paths }
}

fn check<T: Precision + Bits>(
    what: &str,
    got: &[T],
    want: &[T],
    plan: &Plan,
    paths: usize,
) -> Result<(), TestCaseError> {
    assert_bits_eq(what, got, want, |i| {
        format!(
            "row {} path {} of {paths}; N = {}, d = {}, slots = {}, order {:?}",
            i / paths.max(1),
            i % paths.max(1),
            plan.interior(),
            plan.dims(),
            plan.stack_slots(),
            plan.order()
        )
    })
}

fn both<T: Precision + Bits>(
    bridge: &Bridge<'_>,
    plan: &Plan,
    source: Source<'_, T>,
    paths: usize,
    inc: bool,
    fused: bool,
) -> Result<(), TestCaseError> {
    let want = cpu::generate_seq(plan, source, paths, output(inc))?;
    let got = if fused {
        bridge.generate(plan, source, paths, output(inc))?
    } else {
        bridge.generate_unfused(plan, source, paths, output(inc))?
    };
    check(T::NAME, &got, &want, plan, paths)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn bridge_gpu_equals_cpu(seed: u64, n in 1usize..80, d in 1usize..=4, kind in 0u8..4, paths in 0usize..3000, inc: bool, block in blocks()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?;
        let plan = Plan::new(&random_spec(seed, n, d, kind))?;
        let z32 = normals::<f32>(plan.rows() * paths, seed);
        both(&bridge, &plan, Source::Buffer(&z32), paths, inc, true)?;
        let z64 = normals::<f64>(plan.rows() * paths, seed);
        both(&bridge, &plan, Source::Buffer(&z64), paths, inc, true)?;
    }

    /// The buffer kernels' specialised paths (`bridge_*` at d = 1, `bridge_dims_*` at
    /// d = 2..=4): an even path count takes two f32 paths per thread (`buffer_lanes`), an odd
    /// one a path per thread; f64 always one. Even and odd counts around multiples of the block
    /// size, every order kind (stacks in shared memory or not, so the general path too), d ≤ 4,
    /// points and increments.
    #[test]
    fn bridge_dims_and_pairs_gpu_equals_cpu(seed: u64, n in 1usize..80, d in 1usize..=4, kind in 0u8..4, half in 0usize..1500, odd: bool, inc: bool, block in blocks()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?;
        let plan = Plan::new(&random_spec(seed, n, d, kind))?;
        let paths = 2 * half + odd as usize;
        let z32 = normals::<f32>(plan.rows() * paths, seed);
        both(&bridge, &plan, Source::Buffer(&z32), paths, inc, true)?;
        let z64 = normals::<f64>(plan.rows() * paths, seed);
        both(&bridge, &plan, Source::Buffer(&z64), paths, inc, true)?;
    }

    /// Four f32 paths per thread (`F32x4`) at d = 1 when the path count is a multiple of 4 or
    /// odd and the 16-byte stack fits (`buffer_lanes`; 16-byte accesses for a multiple of 4, at
    /// odd counts each row's as its class mod 4 allows and a partial last quad), pairs at 2 mod
    /// 4: every residue mod 4 around multiples of the block size, every order kind, points and
    /// increments.
    #[test]
    fn bridge_quads_gpu_equals_cpu(seed: u64, n in 1usize..128, kind in 0u8..4, quarter in 0usize..1000, rem in 0usize..4, inc: bool, block in blocks(), quads in quads_kernels()) {
        let gpu = gpu_or_skip!();
        // Odd counts: `bridge_quads_f32`, or `bridge_f32`'s own path for them.
        let bridge = Bridge::with_block_size(gpu, block)?.with_quads_kernel(quads);
        let plan = Plan::new(&random_spec(seed, n, 1, kind))?;
        let paths = 4 * quarter + rem;
        let z32 = normals::<f32>(plan.rows() * paths, seed);
        both(&bridge, &plan, Source::Buffer(&z32), paths, inc, true)?;
    }

    /// Small path counts: odd ones take quads (a single, partial quad; one whole quad and a
    /// partial one; a partial quad in the second warp or block), 2 mod 4 pairs; every order kind,
    /// points and increments.
    #[test]
    fn bridge_quads_small_counts_gpu_equal_cpu(seed: u64, n in 1usize..128, kind in 0u8..4, paths in prop::sample::select(vec![1usize, 2, 3, 5, 6, 7, 9, 33, 130, 131, 515]), inc: bool, block in blocks(), quads in quads_kernels()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?.with_quads_kernel(quads);
        let plan = Plan::new(&random_spec(seed, n, 1, kind))?;
        let z32 = normals::<f32>(plan.rows() * paths, seed);
        both(&bridge, &plan, Source::Buffer(&z32), paths, inc, true)?;
    }

    /// The staged buffer kernels (`bridge_staged_*` at d = 1, `bridge_staged_dims_*` at
    /// d = 2..=4; a path count not a multiple of a sector's elements: every sector of a row's
    /// interior written by one block, from shared memory): launched where `buffer_staged` says,
    /// and the CPU twin's bits with staging on and off (the unstaged kernels at the same counts),
    /// f32 and f64, points and increments, every order kind, counts around multiples of the
    /// blocks' own paths.
    #[test]
    fn bridge_staged_gpu_equals_cpu(seed: u64, n in 1usize..128, d in 1usize..=4, kind in 0u8..4, blocks_in in 0usize..12, rem in 0usize..1100, inc: bool, block in blocks()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?;
        let plain = Bridge::with_block_size(gpu, block)?.with_staging(false);
        let plan = Plan::new(&random_spec(seed, n, d, kind))?;
        let own = plan.launch_shape::<f32>(block, 1).staged_own();
        let paths = (blocks_in * own + rem).max(1);
        let z32 = normals::<f32>(plan.rows() * paths, seed);
        let z64 = normals::<f64>(plan.rows() * paths, seed);
        for staged in [&bridge, &plain] {
            both(staged, &plan, Source::Buffer(&z32), paths, inc, true)?;
            both(staged, &plan, Source::Buffer(&z64), paths, inc, true)?;
        }
        let kind_of = |staged: bool| staged.then_some(Variant::BufferStagedDims);
        let want32 = kind_of(plan.launch_shape::<f32>(block, paths).buffer_staged());
        let want64 = kind_of(plan.launch_shape::<f64>(block, paths).buffer_staged());
        let v32 = bridge.launched(&bridge.upload::<f32>(&plan)?, paths, Variant::Buffer);
        let v64 = bridge.launched(&bridge.upload::<f64>(&plan)?, paths, Variant::Buffer);
        prop_assert!(want32.is_none_or(|v| v == v32) && (want32.is_some() || v32 != Variant::BufferStagedDims));
        prop_assert!(want64.is_none_or(|v| v == v64) && (want64.is_some() || v64 != Variant::BufferStagedDims));
        prop_assert!(d >= 2 || (want32.is_none() && want64.is_none()), "d = 1 never stages");
        let p32 = plain.launched(&plain.upload::<f32>(&plan)?, paths, Variant::Buffer);
        prop_assert!(p32 != Variant::BufferStagedDims);
    }

    #[test]
    fn bridge_philox_gpu_equals_cpu(seed: u64, n in 1usize..80, d in 1usize..=4, kind in 0u8..4, paths in 0usize..3000, inc: bool, fused: bool, block in blocks()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?;
        let plan = Plan::new(&random_spec(seed, n, d, kind))?;
        both::<f32>(&bridge, &plan, Source::Philox { seed }, paths, inc, fused)?;
        both::<f64>(&bridge, &plan, Source::Philox { seed }, paths, inc, fused)?;
    }

    #[test]
    fn bridge_sobol_gpu_equals_cpu(seed: u64, n in 1usize..80, d in 1usize..=4, kind in 0u8..4, paths in 0usize..3000, offset in 0u32..100_000, inc: bool, fused: bool, block in blocks()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?;
        let plan = Plan::new(&random_spec(seed, n, d, kind))?;
        both::<f32>(&bridge, &plan, Source::Sobol { offset }, paths, inc, fused)?;
        both::<f64>(&bridge, &plan, Source::Sobol { offset }, paths, inc, fused)?;
    }

    #[test]
    fn bridge_philox_d1_gpu_equals_cpu(seed: u64, n in 1usize..128, kind in 0u8..4, paths in 0usize..3000, inc: bool, block in blocks()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?;
        let plan = Plan::new(&random_spec(seed, n, 1, kind))?;
        let fast = plan.launch_shape::<f32>(block, paths).fused_fast_d1();
        let want = if fast { Variant::PhiloxD1 } else { Variant::Philox };
        prop_assert_eq!(bridge.launched(&bridge.upload::<f32>(&plan)?, paths, Variant::Philox), want);
        both::<f32>(&bridge, &plan, Source::Philox { seed }, paths, inc, true)?;
        both::<f64>(&bridge, &plan, Source::Philox { seed }, paths, inc, true)?;
    }

    /// The fused Box–Muller kernels (`bridge_philox_bm_*`, any d) and the unfused pipeline
    /// (normals kernel + buffer bridge): the CPU twin's bits.
    #[test]
    fn bridge_philox_bm_gpu_equals_cpu(seed: u64, n in 1usize..80, d in 1usize..=4, kind in 0u8..4, paths in 0usize..3000, inc: bool, fused: bool, block in blocks()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?;
        let plan = Plan::new(&random_spec(seed, n, d, kind))?;
        both::<f32>(&bridge, &plan, Source::PhiloxBoxMuller { seed }, paths, inc, fused)?;
        both::<f64>(&bridge, &plan, Source::PhiloxBoxMuller { seed }, paths, inc, fused)?;
    }

    /// `bridge_philox_bm_d1_*`: with the plan's schedule and a cache of normals when they fit
    /// (`box_muller_cached`), else the one-block cache; the d = 1 kernel is the one launched.
    #[test]
    fn bridge_philox_bm_d1_gpu_equals_cpu(seed: u64, n in 1usize..128, kind in 0u8..4, paths in 0usize..3000, inc: bool, block in blocks()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?;
        let plan = Plan::new(&random_spec(seed, n, 1, kind))?;
        let fast = plan.launch_shape::<f64>(block, paths).fused_fast_d1();
        let want = if fast { Variant::PhiloxBoxMullerD1 } else { Variant::PhiloxBoxMuller };
        prop_assert_eq!(bridge.launched(&bridge.upload::<f64>(&plan)?, paths, Variant::PhiloxBoxMuller), want);
        both::<f32>(&bridge, &plan, Source::PhiloxBoxMuller { seed }, paths, inc, true)?;
        both::<f64>(&bridge, &plan, Source::PhiloxBoxMuller { seed }, paths, inc, true)?;
    }

    /// `bridge_philox_bm_d1_pairs_f32`: two f32 paths per thread at even path counts where the
    /// pairs' cache fits (the kernel launched is asserted), the single-path kernel otherwise.
    #[test]
    fn bridge_philox_bm_d1_pairs_gpu_equals_cpu(seed: u64, n in 1usize..128, kind in 0u8..4, half in 0usize..1500, odd: bool, inc: bool, block in blocks()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?;
        let plan = Plan::new(&random_spec(seed, n, 1, kind))?;
        let paths = 2 * half + odd as usize;
        let shape = plan.launch_shape::<f32>(block, paths);
        let pairs = plan.philox_schedule().is_some_and(|(_, c)| shape.box_muller_pairs(c as usize));
        // The pairs' schedule and cache of 8-byte pairs fit beside the f32 angle table.
        let (s, c) = (shape.box_muller_pairs_shape(), plan.philox_schedule().map_or(0, |(_, c)| c as usize));
        let fits = (1..=MAX_CACHE_SLOTS).contains(&c)
            && s.fused_base_bytes() + s.box_muller_cache_bytes(c) + SINCOS_F32_BYTES <= FUSED_SHARED_LIMIT;
        prop_assert_eq!(pairs, !odd && shape.fused_fast_d1() && fits);
        let dp = bridge.upload::<f32>(&plan)?;
        let launched = bridge.launched(&dp, paths, Variant::PhiloxBoxMuller);
        if pairs {
            prop_assert_eq!(launched, Variant::PhiloxBoxMullerD1Pairs);
        } else {
            prop_assert_ne!(launched, Variant::PhiloxBoxMullerD1Pairs);
        }
        both::<f32>(&bridge, &plan, Source::PhiloxBoxMuller { seed }, paths, inc, true)?;
    }

    #[test]
    fn bridge_sobol_d1_gpu_equals_cpu(seed: u64, n in 1usize..128, kind in 0u8..4, paths in 0usize..3000, offset in 0u32..100_000, inc: bool, block in blocks()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?;
        let plan = Plan::new(&random_spec(seed, n, 1, kind))?;
        let fast = plan.launch_shape::<f32>(block, paths).fused_fast_d1();
        let want = if fast { Variant::SobolD1 } else { Variant::Sobol };
        prop_assert_eq!(bridge.launched(&bridge.upload::<f64>(&plan)?, paths, Variant::Sobol), want);
        both::<f32>(&bridge, &plan, Source::Sobol { offset }, paths, inc, true)?;
        both::<f64>(&bridge, &plan, Source::Sobol { offset }, paths, inc, true)?;
    }

    #[test]
    fn normals_philox_gpu_equals_cpu(seed: u64, n in 1usize..80, d in 1usize..=4, paths in 0usize..5000, block in blocks()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?;
        let plan = Plan::new(&random_spec(seed, n, d, 0))?;
        let src = Source::Philox { seed };
        check::<f32>("f32", &bridge.normals(&plan, src, paths)?, &cpu::normals_seq(&plan, src, paths)?, &plan, paths)?;
        let src = Source::Philox { seed };
        check::<f64>("f64", &bridge.normals(&plan, src, paths)?, &cpu::normals_seq(&plan, src, paths)?, &plan, paths)?;
    }

    #[test]
    fn normals_bm_philox_gpu_equals_cpu(seed: u64, n in 1usize..80, d in 1usize..=4, paths in 0usize..5000, block in blocks()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?;
        let plan = Plan::new(&random_spec(seed, n, d, 0))?;
        let src = Source::PhiloxBoxMuller { seed };
        check::<f32>("f32", &bridge.normals(&plan, src, paths)?, &cpu::normals_seq(&plan, src, paths)?, &plan, paths)?;
        let src = Source::PhiloxBoxMuller { seed };
        check::<f64>("f64", &bridge.normals(&plan, src, paths)?, &cpu::normals_seq(&plan, src, paths)?, &plan, paths)?;
    }

    #[test]
    fn normals_sobol_gpu_equals_cpu(seed: u64, n in 1usize..80, d in 1usize..=4, paths in 0usize..5000, offset in 0u32..1_000_000, block in blocks()) {
        let gpu = gpu_or_skip!();
        let bridge = Bridge::with_block_size(gpu, block)?;
        let plan = Plan::new(&random_spec(seed, n, d, 0))?;
        let src = Source::Sobol { offset };
        check::<f32>("f32", &bridge.normals(&plan, src, paths)?, &cpu::normals_seq(&plan, src, paths)?, &plan, paths)?;
        let src = Source::Sobol { offset };
        check::<f64>("f64", &bridge.normals(&plan, src, paths)?, &cpu::normals_seq(&plan, src, paths)?, &plan, paths)?;
    }
}

/// The law of 10⁸ Box–Muller normals from the GPU in each precision (moments and χ², see
/// `lockstep_parity::normal_law`); the CPU suite checks 4·10⁶ (boxmuller_reference.rs).
#[test]
fn normals_bm_philox_law_of_1e8_draws() -> Result<(), TestCaseError> {
    let gpu = gpu_or_skip!();
    let bridge = Bridge::new(gpu)?;
    let plan = Plan::new(&lockstep::bridge::BridgeSpec::standard(101))?;
    let paths = 1_000_000;
    let z = bridge.normals::<f64>(&plan, Source::PhiloxBoxMuller { seed: 2028 }, paths)?;
    assert!(z.len() >= 100_000_000);
    lockstep_parity::normal_law(&z).map_err(TestCaseError::fail)?;
    let z = bridge.normals::<f32>(&plan, Source::PhiloxBoxMuller { seed: 2029 }, paths)?;
    lockstep_parity::normal_law(&z.iter().map(|&v| v as f64).collect::<Vec<_>>()).map_err(TestCaseError::fail)?;
    Ok(())
}

/// The benchmark's problem shape (bisection, 64 steps) at a moderate path count, every source.
#[test]
fn bridge_paper_shape_gpu_equals_cpu() -> Result<(), TestCaseError> {
    let gpu = gpu_or_skip!();
    let bridge = Bridge::new(gpu)?;
    let plan = Plan::new(&lockstep::bridge::BridgeSpec::standard(64))?;
    let paths = 100_003;
    let z = normals::<f32>(plan.rows() * paths, 5);
    // Four paths per thread at an odd count (rows of every class mod 4, a partial last quad),
    // then two (2 mod 4: pairs); f64 one path per thread.
    let even = 100_002;
    let ze = normals::<f32>(plan.rows() * even, 6);
    let ze64 = normals::<f64>(plan.rows() * even, 6);
    for inc in [false, true] {
        both::<f32>(&bridge, &plan, Source::Buffer(&z), paths, inc, true)?;
        both::<f32>(&bridge, &plan, Source::Buffer(&ze), even, inc, true)?;
        both::<f64>(&bridge, &plan, Source::Buffer(&ze64), even, inc, true)?;
        both::<f32>(&bridge, &plan, Source::Philox { seed: 9 }, paths, inc, true)?;
        both::<f32>(&bridge, &plan, Source::PhiloxBoxMuller { seed: 9 }, paths, inc, true)?;
        both::<f64>(&bridge, &plan, Source::PhiloxBoxMuller { seed: 10 }, paths, inc, true)?;
        both::<f64>(&bridge, &plan, Source::Sobol { offset: 1 }, paths, inc, true)?;
    }
    // d = 3 with 64 steps in bisection order (`bridge_dims_*`), even and odd path counts.
    let plan = Plan::new(&random_spec(11, 63, 3, 0))?;
    for paths in [20_002, 20_001] {
        let z32 = normals::<f32>(plan.rows() * paths, 12);
        let z64 = normals::<f64>(plan.rows() * paths, 12);
        for inc in [false, true] {
            both::<f32>(&bridge, &plan, Source::Buffer(&z32), paths, inc, true)?;
            both::<f64>(&bridge, &plan, Source::Buffer(&z64), paths, inc, true)?;
        }
    }
    Ok(())
}

/// The d = 1 buffer kernel's lane widths (`buffer_lanes`: 4 when the path count is a multiple
/// of 4 or odd and the 16-byte stack fits, else 2 when even, 1 when odd), each shape checked to
/// take the intended width on the CPU and, on the GPU, the intended kernel (quads at an odd
/// count: `bridge_quads_f32`), then GPU = CPU at several block sizes, points and
/// increments: every residue mod 4 (at odd counts each row's class mod 4 and the partial last
/// quad) and small counts; then the widths that depend on the output's alignment alone (the
/// fused Box–Muller pairs, the Box–Muller normals' two paths per thread).
#[test]
fn bridge_quads_widths_gpu_equal_cpu() -> Result<(), TestCaseError> {
    let bisection = Plan::new(&lockstep::bridge::BridgeSpec::standard(64))?;
    let wide = Plan::new(&random_spec(21, 100, 1, 0))?;
    // A random order whose stack fits shared memory at block 256 with 8-byte elements but not
    // with 16-byte ones (9 to 16 slots): pairs although the path count is a multiple of 4.
    let deep = (0..200u64)
        .map(|seed| Plan::new(&random_spec(seed, 90, 1, 2)))
        .find(|p| p.as_ref().is_err() || p.as_ref().is_ok_and(|p| (9..=16).contains(&p.stack_slots())))
        .ok_or_else(|| TestCaseError::fail("no random order with 9 to 16 slots"))??;
    // (plan, block, paths, expected f32 lanes)
    let cases = [
        (&bisection, 128, 40_000, 4),
        (&bisection, 128, 40_002, 2),
        (&bisection, 128, 40_001, 4),
        (&bisection, 128, 40_003, 4),
        (&bisection, 32, 4_004, 4),
        (&bisection, 96, 4_005, 4),
        (&bisection, 256, 4_004, 4),
        (&bisection, 256, 4_006, 2),
        (&bisection, 32, 1, 4),
        (&bisection, 32, 2, 2),
        (&bisection, 32, 3, 4),
        (&bisection, 128, 5, 4),
        (&bisection, 128, 6, 2),
        (&bisection, 128, 7, 4),
        (&bisection, 32, 33, 4),
        (&bisection, 32, 130, 2),
        (&bisection, 96, 515, 4),
        (&wide, 128, 10_000, 4),
        (&wide, 256, 10_001, 4),
        (&wide, 96, 10_002, 2),
        (&wide, 32, 10_003, 4),
        (&deep, 256, 10_000, 2),
        (&deep, 256, 10_001, 1),
        (&deep, 128, 10_000, 4),
        (&deep, 128, 10_001, 4),
        (&deep, 128, 10_003, 4),
    ];
    for (k, &(plan, block, paths, lanes)) in cases.iter().enumerate() {
        let got = plan.launch_shape::<f32>(block, paths).buffer_lanes();
        assert_eq!(got, lanes, "case {k}: f32 lanes");
        assert_eq!(plan.launch_shape::<f64>(block, paths).buffer_lanes(), 1, "case {k}: f64");
    }
    let gpu = gpu_or_skip!();
    for &(plan, block, paths, lanes) in &cases {
        let bridge = Bridge::with_block_size(gpu, block)?;
        // Quads at a count not a multiple of 4 take their own kernel, `bridge_quads_f32`.
        let always = Bridge::with_block_size(gpu, block)?.with_quads_kernel(QuadsKernel::Always);
        let never = Bridge::with_block_size(gpu, block)?.with_quads_kernel(QuadsKernel::Never);
        let want = if lanes == 4 && paths % 4 != 0 { Variant::BufferQuads } else { Variant::Buffer };
        assert_eq!(always.launched(&always.upload::<f32>(plan)?, paths, Variant::Buffer), want, "{paths} paths");
        assert_eq!(always.launched(&always.upload::<f64>(plan)?, paths, Variant::Buffer), Variant::Buffer);
        assert_eq!(never.launched(&never.upload::<f32>(plan)?, paths, Variant::Buffer), Variant::Buffer);
        let z = normals::<f32>(plan.rows() * paths, paths as u64);
        for inc in [false, true] {
            both::<f32>(&bridge, plan, Source::Buffer(&z), paths, inc, true)?;
            both::<f32>(&always, plan, Source::Buffer(&z), paths, inc, true)?;
            both::<f32>(&never, plan, Source::Buffer(&z), paths, inc, true)?;
        }
    }
    // `Auto` takes the quads kernel by the two kernels' grids (`QuadsKernel::Auto`): not for one
    // block, but for 40,000,001 paths (78,125 blocks) on any GPU of fewer than 4,000 SMs.
    let auto = Bridge::new(gpu)?;
    let dp = auto.upload::<f32>(&bisection)?;
    assert_eq!(auto.launched(&dp, 5, Variant::Buffer), Variant::Buffer);
    assert_eq!(auto.launched(&dp, 40_000_001, Variant::Buffer), Variant::BufferQuads);
    Ok(())
}

/// The fused Sobol kernels' ways (warp method with its tables in shared memory, warp method with
/// the low tables read from global memory, Gray-code walk per element where not even the high
/// parts fit shared memory; each on the d = 1 fast path and on the general path), and the
/// normals-alone kernel over several chunks of rows, with offsets up to the last points below
/// 2^32.
#[test]
fn bridge_sobol_fallbacks_gpu_equal_cpu() -> Result<(), TestCaseError> {
    // (interior N, d, order kind, block, element size, expected fast d = 1 path, expected warp
    // method with shared tables, expected warp method with global low tables). Blocks stay
    // ≤ 512: the general Sobol kernel's 78 registers × 1024 threads exceed the register file
    // (run G1's launch of such a case failed).
    let cases = [
        (63, 1, 0, 128, 4, true, true, true),
        (127, 1, 0, 256, 8, true, false, true),
        (127, 1, 0, 512, 8, true, false, false),
        (200, 1, 0, 128, 4, false, true, true),
        (299, 1, 0, 256, 4, false, false, true),
        (999, 1, 0, 256, 4, false, false, false),
        (40, 3, 0, 96, 8, false, true, true),
        (64, 3, 0, 128, 8, false, false, true),
    ];
    let plans =
        cases.iter().enumerate().map(|(k, &(n, d, kind, ..))| Plan::new(&random_spec(11 + k as u64, n, d, kind)));
    let plans = plans.collect::<Result<Vec<_>, _>>()?;
    // The shapes take the intended ways (checked with or without a GPU).
    for (k, (&(_, d, _, block, elem, fast, warp, pairs), plan)) in cases.iter().zip(&plans).enumerate() {
        let (steps, slots, paths) = (plan.steps(), plan.stack_slots(), 1000 + 37 * k);
        assert_eq!(
            LaunchShape { steps, dims: d, slots, block: block as usize, paths, elem: 4 }.fused_fast_d1(),
            fast,
            "case {k}: fast d = 1 path"
        );
        assert_eq!(
            LaunchShape { steps, dims: d, slots, block: block as usize, paths, elem }.fused_sobol_warp(),
            warp,
            "case {k}: warp method"
        );
        assert_eq!(
            LaunchShape { steps, dims: d, slots, block: block as usize, paths, elem }.fused_sobol_pairs(),
            pairs,
            "case {k}: global low"
        );
    }
    let gpu = gpu_or_skip!();
    for (k, (&(_, _, _, block, elem, ..), plan)) in cases.iter().zip(&plans).enumerate() {
        let bridge = Bridge::with_block_size(gpu, block)?;
        let paths = 1000 + 37 * k;
        for offset in [1, 12_345, (u32::MAX - paths as u32) + 1] {
            for inc in [false, true] {
                if elem == 4 {
                    both::<f32>(&bridge, plan, Source::Sobol { offset }, paths, inc, true)?;
                } else {
                    both::<f64>(&bridge, plan, Source::Sobol { offset }, paths, inc, true)?;
                }
            }
            let src = Source::Sobol { offset };
            check::<f32>("f32", &bridge.normals(plan, src, paths)?, &cpu::normals_seq(plan, src, paths)?, plan, paths)?;
        }
    }
    Ok(())
}

/// The fused Philox d = 1 kernels' two ways: the host's schedule (each Philox block once per
/// path, words waiting in a shared word cache) where schedule and cache fit shared memory, the
/// one-block cache where they do not (a random order of 127 steps needs 70 slots: 35 KiB of
/// cache at 128 threads fits, 70 KiB at 256 does not), in both precisions, points and increments.
#[test]
fn bridge_philox_d1_schedule_gpu_equals_cpu() -> Result<(), TestCaseError> {
    // (seed, interior N, order kind, block, element size, expected: scheduled)
    let cases =
        [(1, 127, 0, 128, 4, true), (12, 127, 2, 256, 8, false), (3, 63, 1, 96, 8, true), (12, 127, 2, 128, 4, true)];
    let plans = cases.iter().map(|&(seed, n, kind, ..)| Plan::new(&random_spec(seed, n, 1, kind)));
    let plans = plans.collect::<Result<Vec<_>, _>>()?;
    // The shapes take the intended ways (checked with or without a GPU, with the host's planner).
    for (k, (&(_, _, _, block, elem, cached), plan)) in cases.iter().zip(&plans).enumerate() {
        let reads: Vec<u32> = plan.tables::<f32>().idx.chunks_exact(8).map(|r| r[3]).collect();
        let (_, slots) = lockstep::bridge::philox_schedule(&reads).expect("a schedule");
        let (steps, stack, paths) = (plan.steps(), plan.stack_slots(), 1001 + 38 * k);
        assert!(
            LaunchShape { steps, dims: 1, slots: stack, block: block as usize, paths, elem: 4 }.fused_fast_d1(),
            "case {k}: fast d = 1 path"
        );
        let got = LaunchShape { steps, dims: 1, slots: stack, block: block as usize, paths, elem }
            .philox_cached(slots as usize);
        assert_eq!(got, cached, "case {k}: scheduled ({slots} slots)");
    }
    let gpu = gpu_or_skip!();
    for (k, (&(seed, _, _, block, elem, cached), plan)) in cases.iter().zip(&plans).enumerate() {
        let bridge = Bridge::with_block_size(gpu, block)?;
        let paths = 1001 + 38 * k;
        let f32_plan = bridge.upload::<f32>(plan)?;
        assert_eq!(bridge.launched(&f32_plan, paths, Variant::Philox), Variant::PhiloxD1, "case {k}");
        if elem == 4 {
            assert_eq!(bridge.philox_cached(&f32_plan, paths), cached, "case {k}");
        } else {
            assert_eq!(bridge.philox_cached(&bridge.upload::<f64>(plan)?, paths), cached, "case {k}");
        }
        for inc in [false, true] {
            if elem == 4 {
                both::<f32>(&bridge, plan, Source::Philox { seed }, paths, inc, true)?;
            } else {
                both::<f64>(&bridge, plan, Source::Philox { seed }, paths, inc, true)?;
            }
        }
    }
    Ok(())
}

/// The fused Box–Muller d = 1 kernels' two ways, as the Philox ones': the host's schedule with
/// a cache of normals (4 bytes each in f32, 8 in f64) where it fits, the one-block cache where
/// it does not (a 70-slot order: 70 KiB in f64 or at 256 threads does not fit; 35 KiB at 128
/// threads in f32 does not either beside the strategy and the f32 angle table's 4 KiB of static
/// shared memory — `SINCOS_F32_BYTES`), in both precisions, points and increments.
#[test]
fn bridge_philox_bm_d1_schedule_gpu_equals_cpu() -> Result<(), TestCaseError> {
    // (seed, interior N, order kind, block, element size, expected: scheduled)
    let cases = [
        (1, 127, 0, 128, 4, true),
        (1, 127, 0, 128, 8, true),
        (12, 127, 2, 128, 8, false),
        (12, 127, 2, 128, 4, false),
        (3, 63, 1, 96, 8, true),
        (12, 127, 2, 256, 4, false),
    ];
    let plans = cases.iter().map(|&(seed, n, kind, ..)| Plan::new(&random_spec(seed, n, 1, kind)));
    let plans = plans.collect::<Result<Vec<_>, _>>()?;
    for (k, (&(_, _, _, block, elem, cached), plan)) in cases.iter().zip(&plans).enumerate() {
        let reads: Vec<u32> = plan.tables::<f32>().idx.chunks_exact(8).map(|r| r[3]).collect();
        let (_, slots) = lockstep::bridge::philox_schedule(&reads).expect("a schedule");
        let (steps, stack, paths) = (plan.steps(), plan.stack_slots(), 1001 + 38 * k);
        let shape = LaunchShape { steps, dims: 1, slots: stack, block: block as usize, paths, elem };
        assert!(shape.fused_fast_d1(), "case {k}: fast d = 1 path");
        assert_eq!(shape.box_muller_cached(slots as usize), cached, "case {k}: scheduled ({slots} slots)");
    }
    let gpu = gpu_or_skip!();
    for (k, (&(seed, _, _, block, elem, cached), plan)) in cases.iter().zip(&plans).enumerate() {
        let bridge = Bridge::with_block_size(gpu, block)?;
        let paths = 1001 + 38 * k;
        for inc in [false, true] {
            if elem == 4 {
                let dp = bridge.upload::<f32>(plan)?;
                assert_eq!(bridge.launched(&dp, paths, Variant::PhiloxBoxMuller), Variant::PhiloxBoxMullerD1);
                assert_eq!(bridge.box_muller_cached(&dp, paths), cached, "case {k}");
                both::<f32>(&bridge, plan, Source::PhiloxBoxMuller { seed }, paths, inc, true)?;
            } else {
                assert_eq!(bridge.box_muller_cached(&bridge.upload::<f64>(plan)?, paths), cached, "case {k}");
                both::<f64>(&bridge, plan, Source::PhiloxBoxMuller { seed }, paths, inc, true)?;
            }
        }
    }
    Ok(())
}

/// Buffers that start 4, 8 or 12 bytes into their allocations (sub-slices): the f32 buffer
/// kernels narrow their lanes to what the addresses allow (`buffer_lanes_at`: 16-byte lanes need
/// 16-byte aligned rows, 8-byte lanes 8-byte aligned ones) and still give the CPU's bits; each
/// case's lane count is checked against the intended one first.
#[test]
fn bridge_unaligned_slices_gpu_equal_cpu() -> Result<(), TestCaseError> {
    use lockstep::bridge::DeviceSource;
    use lockstep::{CopyDestination, DeviceBuffer};
    // (d, paths, offset of z in elements, offset of out in elements, expected lanes)
    let cases = [
        (1, 4_000, 0, 0, 4),
        (1, 4_000, 1, 0, 1),
        (1, 4_000, 2, 2, 2),
        (1, 4_000, 0, 3, 1),
        (1, 4_001, 2, 0, 1),
        (1, 4_002, 2, 0, 2),
        (3, 2_000, 0, 2, 2),
        (3, 2_000, 1, 1, 1),
    ];
    let plans: Vec<Plan> = cases
        .iter()
        .enumerate()
        .map(|(k, c)| Plan::new(&random_spec(k as u64, 40, c.0, 0)))
        .collect::<Result<_, _>>()?;
    // Aligned, these shapes take the widest lanes (so each case's narrowing is alignment's).
    for (k, (plan, &(d, paths, ..))) in plans.iter().zip(&cases).enumerate() {
        assert_eq!(plan.dims(), d, "case {k}");
        let widest = plan.launch_shape::<f32>(128, paths).buffer_lanes();
        let want = if d == 1 && (paths % 4 == 0 || paths % 2 == 1) { 4 } else { 2 };
        assert_eq!(widest, want, "case {k}: widest lanes");
    }
    let gpu = gpu_or_skip!();
    let bridge = Bridge::new(gpu)?;
    for (k, (plan, &(_, paths, oz, oo, lanes))) in plans.iter().zip(&cases).enumerate() {
        let dp = bridge.upload::<f32>(plan)?;
        let len = plan.rows() * paths;
        let z = normals::<f32>(len, k as u64);
        let mut zpad = vec![0.0f32; oz];
        zpad.extend_from_slice(&z);
        let dz = DeviceBuffer::from_slice(&zpad)?;
        let dout = DeviceBuffer::from_slice(&vec![0.0f32; len + oo])?;
        for inc in [false, true] {
            let zs = dz.index(oz..);
            let mut outs = dout.index(oo..);
            let addrs = zs.as_device_ptr().as_raw() | outs.as_device_ptr().as_raw();
            let got_lanes = plan.launch_shape::<f32>(128, paths).buffer_lanes_at(addrs);
            prop_assert_eq!(got_lanes, lanes, "case {}: lanes", k);
            bridge.generate_on_device(&dp, DeviceSource::Buffer(&zs), paths, output(inc), None, &mut outs)?;
            gpu.synchronize()?;
            let mut got = vec![0.0f32; len + oo];
            dout.copy_to(&mut got[..])?;
            let want = cpu::generate_seq(plan, Source::Buffer(&z), paths, output(inc))?;
            check("f32 unaligned", &got[oo..], &want, plan, paths)?;
        }
    }
    // The fused Box–Muller pairs store 8 bytes a row: an output 4 bytes into its allocation
    // takes the single-path kernel, with the same bits.
    let plan = Plan::new(&random_spec(3, 63, 1, 0))?;
    let paths = 4_000;
    let dp = bridge.upload::<f32>(&plan)?;
    assert_eq!(bridge.launched(&dp, paths, Variant::PhiloxBoxMuller), Variant::PhiloxBoxMullerD1Pairs);
    let len = plan.rows() * paths;
    let dout = DeviceBuffer::from_slice(&vec![0.0f32; len + 1])?;
    let want = cpu::generate_seq(&plan, Source::PhiloxBoxMuller { seed: 9 }, paths, Output::Paths)?;
    for off in [0, 1] {
        let mut outs = dout.index(off..off + len);
        bridge.generate_on_device(
            &dp,
            DeviceSource::PhiloxBoxMuller { seed: 9 },
            paths,
            Output::Paths,
            None,
            &mut outs,
        )?;
        gpu.synchronize()?;
        let mut got = vec![0.0f32; len + 1];
        dout.copy_to(&mut got[..])?;
        check("f32 Box–Muller, out offset", &got[off..off + len], &want, &plan, paths)?;
    }
    // The Box–Muller normals alone take two paths per thread at an even count into an 8-byte
    // aligned output (`box_muller_normals_lanes`); 4 bytes into the allocation, or at an odd
    // count, one — the same bits every way.
    for (paths, off, lanes) in [(4_000usize, 0usize, 2u32), (4_000, 1, 1), (4_001, 0, 1), (2, 0, 2), (1, 0, 1)] {
        let src = Source::PhiloxBoxMuller { seed: 11 };
        let want = cpu::normals_seq(&plan, src, paths)?;
        let len = want.len();
        let dout = DeviceBuffer::from_slice(&vec![0.0f32; len + 1])?;
        let mut outs = dout.index(off..off + len);
        let addr = outs.as_device_ptr().as_raw();
        prop_assert_eq!(box_muller_normals_lanes(paths as u32, 4, addr), lanes, "{} paths at offset {}", paths, off);
        bridge.normals_on_device(&dp, DeviceSource::PhiloxBoxMuller { seed: 11 }, paths, &mut outs)?;
        gpu.synchronize()?;
        let mut got = vec![0.0f32; len + 1];
        dout.copy_to(&mut got[..])?;
        check("f32 Box–Muller normals, out offset", &got[off..off + len], &want, &plan, paths)?;
    }
    Ok(())
}

/// The buffer kernels at any path count. d = 3 (64 steps): each shape's kernel checked first
/// (staged exactly where the count splits sectors: not a multiple of 8 in f32, of 4 in f64),
/// then GPU = CPU for f32 and f64, points and increments, at 32 and 128 threads; d = 2 (f32
/// staged at odd counts only) at 128 and d = 4 (never staged) at 32 threads likewise. The
/// benchmark's problem shape (d = 1, bisection, 64 steps; never staged): path counts of every
/// residue mod 8, small counts (one block, a partial last quad, fewer paths than a sector) and
/// block sizes 32, 128, 256.
#[test]
fn bridge_staged_shapes_gpu_equal_cpu() -> Result<(), TestCaseError> {
    let plan = Plan::new(&lockstep::bridge::BridgeSpec::standard(64))?;
    let counts = [1usize, 3, 7, 9, 502, 503, 504, 505, 507, 1009, 100_000, 100_001, 100_002, 100_003, 100_004, 100_005];
    for &paths in &counts {
        for block in [32usize, 128, 256] {
            assert!(!plan.launch_shape::<f32>(block as u32, paths).buffer_staged(), "f32 {paths} at {block}");
            assert!(!plan.launch_shape::<f64>(block as u32, paths).buffer_staged(), "f64 {paths} at {block}");
        }
    }
    // d = 3 (`bridge_staged_dims_*`): f32 pairs, f64 one path per thread.
    let d3 = Plan::new(&random_spec(11, 63, 3, 0))?;
    let counts3 = [1usize, 3, 247, 248, 249, 20_001, 20_002, 20_003, 20_004, 20_005];
    for &paths in &counts3 {
        assert_eq!(d3.launch_shape::<f32>(128, paths).buffer_staged(), paths % 8 != 0, "d = 3 f32 {paths}");
        assert_eq!(d3.launch_shape::<f64>(128, paths).buffer_staged(), paths % 4 != 0, "d = 3 f64 {paths}");
    }
    // d = 2: f32 staged at odd counts only; d = 4 never.
    let d2 = Plan::new(&random_spec(12, 63, 2, 0))?;
    let d4 = Plan::new(&random_spec(13, 31, 4, 0))?;
    for &paths in &counts3 {
        assert_eq!(d2.launch_shape::<f32>(128, paths).buffer_staged(), paths % 2 != 0, "d = 2 f32 {paths}");
        assert_eq!(d2.launch_shape::<f64>(128, paths).buffer_staged(), paths % 4 != 0, "d = 2 f64 {paths}");
        assert!(
            !d4.launch_shape::<f32>(32, paths).buffer_staged() && !d4.launch_shape::<f64>(32, paths).buffer_staged()
        );
    }
    let gpu = gpu_or_skip!();
    // Both precisions, paths and increments, of `plan` at every count and block.
    let every = |plan: &Plan, counts: &[usize], blocks: &[u32]| -> Result<(), TestCaseError> {
        for &block in blocks {
            let bridge = Bridge::with_block_size(gpu, block)?;
            for &paths in counts {
                let z32 = normals::<f32>(plan.rows() * paths, paths as u64);
                let z64 = normals::<f64>(plan.rows() * paths, paths as u64);
                for inc in [false, true] {
                    both::<f32>(&bridge, plan, Source::Buffer(&z32), paths, inc, true)?;
                    both::<f64>(&bridge, plan, Source::Buffer(&z64), paths, inc, true)?;
                }
            }
        }
        Ok(())
    };
    every(&d3, &counts3, &[32, 128])?;
    every(&d2, &counts3, &[128])?;
    every(&d4, &counts3, &[32])?;
    every(&plan, &counts, &[32, 128, 256])
}
