//! GPU = CPU for the histograms (proptest; skipped without a GPU): integer and unit-weight
//! counts exact by every method, fixed-point weighted sums bit-identical, native f64 weighted
//! sums within rounding.

use lockstep::histogram as cpu;
use lockstep::histogram::{Histograms, Method};
use lockstep_parity::{assert_bits_eq, assert_within, config, data, gpu_or_skip};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn hist_input(n: usize, seed: u64, wild: bool) -> Vec<f64> {
    if wild {
        // NaN, ±∞, out-of-range and in-range values mixed.
        data::f64s(n, seed).into_iter().map(|v| if v.is_finite() { v.rem_euclid(1.4) - 0.2 } else { v }).collect()
    } else {
        data::f64_range(n, seed, 0.0, 1.0)
    }
}

fn hist_methods() -> impl Strategy<Value = Method> {
    proptest::sample::select(vec![
        Method::Plain,
        Method::Shared,
        Method::Shfl,
        Method::Match,
        Method::Block,
        Method::Count,
        Method::Private,
        Method::Wide,
        Method::Partition,
    ])
}

fn ks() -> impl Strategy<Value = u64> {
    prop_oneof![Just(1u64), 2u64..20, 20u64..3000, Just(6144), 6145u64..20_000]
}

/// Bins for the wide method: tiny, odd (the last word's high half unused), past the private
/// method's 12 288, and the paper's 10^5.
fn wide_ks() -> impl Strategy<Value = u64> {
    prop_oneof![Just(1u64), 2u64..100, 12_289u64..40_000, Just(100_000)]
}

/// Bins for the partition method: one bucket, a few, the bench's 10^5 and 10^6 (245 buckets of
/// 4 096), and the most it takes (1 024 buckets of 32 768).
fn partition_ks() -> impl Strategy<Value = u64> {
    // 10^7: buckets of 2^14 bins past 256 of them (611); 2^25: of 2^15 (1,024).
    prop_oneof![Just(1u64), 2u64..600, 600u64..300_000, Just(1_000_000), Just(10_000_000), Just(1 << 25)]
}

fn launcher(gpu: &'static lockstep::Gpu, grid: Option<u32>) -> Result<Histograms<'static>, TestCaseError> {
    let a = Histograms::new(gpu)?;
    Ok(match grid {
        Some(g) => a.with_grid_blocks(g)?,
        None => a,
    })
}

fn counts_case<T: lockstep::histogram::Counter + lockstep_parity::Bits>(
    method: Method,
    k: u64,
    n: usize,
    seed: u64,
    wild: bool,
    grid: Option<u32>,
) -> Result<(), TestCaseError> {
    let bins = cpu::bins(0.0, 1.0, k)?;
    let x = hist_input(n, seed, wild);
    let want = cpu::histogram_counts_seq(&bins, &x);
    let gpu = gpu_or_skip!();
    let a = launcher(gpu, grid)?;
    let got = a.histogram_counts::<T>(method, &bins, &x)?;
    let got: Vec<u64> = got_u64(&got.counts);
    prop_assert_eq!(&got, &want.counts, "k={} method={:?} n={}", k, method, n);
    let h = a.histogram_counts::<T>(method, &bins, &x)?;
    prop_assert_eq!((h.nan, h.below, h.above), (want.nan, want.below, want.above));
    Ok(())
}

fn got_u64<T: lockstep_parity::Bits>(v: &[T]) -> Vec<u64> {
    v.iter().map(|c| c.bits()).collect()
}

fn usable(method: Method, k: u64, cap: usize) -> bool {
    method != Method::Private || k as usize <= cap
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn histogram_u32_counts_are_exact(method in hist_methods(), k in ks(), n in 0usize..60_000, seed: u64, wild: bool, grid in proptest::option::of(1u32..50)) {
        prop_assume!(usable(method, k, 12_288));
        counts_case::<u32>(method, k, n, seed, wild, grid)?;
    }

    #[test]
    fn histogram_u64_counts_are_exact(method in hist_methods(), k in ks(), n in 0usize..60_000, seed: u64, wild: bool, grid in proptest::option::of(1u32..50)) {
        prop_assume!(usable(method, k, 12_288));
        counts_case::<u64>(method, k, n, seed, wild, grid)?;
    }

    #[test]
    fn histogram_private_u64_counts_are_exact(k in 1u64..=12_288, n in 0usize..60_000, seed: u64, wild: bool, grid in proptest::option::of(1u32..50)) {
        counts_case::<u64>(Method::Private, k, n, seed, wild, grid)?;
    }

    #[test]
    fn histogram_wide_u32_counts_are_exact(k in wide_ks(), n in 0usize..200_000, seed: u64, wild: bool, grid in proptest::option::of(1u32..8)) {
        counts_case::<u32>(Method::Wide, k, n, seed, wild, grid)?;
    }

    #[test]
    fn histogram_wide_u64_counts_are_exact(k in wide_ks(), n in 0usize..200_000, seed: u64, wild: bool, grid in proptest::option::of(1u32..8)) {
        counts_case::<u64>(Method::Wide, k, n, seed, wild, grid)?;
    }

    #[test]
    fn histogram_partition_counts_are_exact(k in partition_ks(), n in 0usize..200_000, seed: u64, wild: bool, chunks_per_piece in proptest::option::of(1u64..5), wide: bool, shift in proptest::option::of(0u32..=15)) {
        // Pieces of 1–4 chunks run the piece loop on inputs of up to 25 chunks; a fixed bucket
        // width too narrow for k (more than 1,024 buckets) is refused before any work.
        let bins = cpu::bins(0.0, 1.0, k)?;
        let x = hist_input(n, seed, wild);
        let want = cpu::histogram_counts_seq(&bins, &x);
        let gpu = gpu_or_skip!();
        let a = match chunks_per_piece {
            Some(c) => Histograms::new(gpu)?.with_partition_piece(c * 8192)?,
            None => Histograms::new(gpu)?,
        };
        let a = match shift {
            Some(s) => a.with_partition_shift(s)?,
            None => a,
        };
        if let Some(s) = shift && (k - 1) >> s >= 1024 {
            prop_assert!(a.check(Method::Partition, lockstep::histogram::CounterKind::Count, k as u32).is_err());
            prop_assert!(a.histogram_counts::<u32>(Method::Partition, &bins, &x).is_err(), "k={} shift={}", k, s);
            return Ok(());
        }
        let (got, h) = if wide {
            let h = a.histogram_counts::<u64>(Method::Partition, &bins, &x)?;
            (got_u64(&h.counts), (h.nan, h.below, h.above))
        } else {
            let h = a.histogram_counts::<u32>(Method::Partition, &bins, &x)?;
            (got_u64(&h.counts), (h.nan, h.below, h.above))
        };
        prop_assert_eq!(&got, &want.counts, "k={} n={} piece={:?} shift={:?}", k, n, chunks_per_piece, shift);
        prop_assert_eq!(h, (want.nan, want.below, want.above));
    }

    #[test]
    fn histogram_counts_from_an_unaligned_slice_are_exact(method in proptest::sample::select(vec![Method::Plain, Method::Private, Method::Match, Method::Wide, Method::Partition]), k in prop_oneof![1u64..40, 40u64..6000], n in 1usize..40_000, seed: u64, wild: bool, grid in proptest::option::of(1u32..8)) {
        // x starts 8 bytes past a 16-byte boundary: the kernels' 16-byte loads must not be used.
        // The counters start with stale values: every method zeroes or overwrites them.
        let bins = cpu::bins(0.0, 1.0, k)?;
        let x = hist_input(n + 1, seed, wild);
        let want = cpu::histogram_counts_seq(&bins, &x[1..]);
        let gpu = gpu_or_skip!();
        let a = launcher(gpu, grid)?;
        let fail = |e| TestCaseError::fail(lockstep::error::cuda("cuMemcpy")(e).to_string());
        let dx = lockstep::DeviceBuffer::from_slice(&x).map_err(fail)?;
        let mut counts = lockstep::DeviceBuffer::from_slice(&vec![0xdead_beef_u32; k as usize]).map_err(fail)?;
        let mut dropped = lockstep::DeviceBuffer::from_slice(&[7u64; 3]).map_err(fail)?;
        let xs = dx.index(1..);
        a.histogram_counts_on_device(method, &bins, &xs, &mut counts, &mut dropped)?;
        gpu.synchronize()?;
        let mut got = vec![0u32; k as usize];
        let mut d = [0u64; 3];
        lockstep::CopyDestination::copy_to(&*counts, &mut got[..]).map_err(fail)?;
        lockstep::CopyDestination::copy_to(&*dropped, &mut d[..]).map_err(fail)?;
        let got: Vec<u64> = got.iter().map(|&c| c as u64).collect();
        prop_assert_eq!(&got, &want.counts, "k={} method={:?} n={}", k, method, n);
        prop_assert_eq!((d[0], d[1], d[2]), (want.nan, want.below, want.above));
    }

    #[test]
    fn histogram_private_u32_u64_and_f64_units_are_exact(k in 1u64..6144, n in 0usize..60_000, seed: u64, wild: bool, grid in proptest::option::of(1u32..50)) {
        let bins = cpu::bins(0.0, 1.0, k)?;
        let x = hist_input(n, seed, wild);
        let want = cpu::histogram_counts_seq(&bins, &x);
        let gpu = gpu_or_skip!();
        let a = launcher(gpu, grid)?;
        let got = a.histogram_counts::<u64>(Method::Private, &bins, &x)?;
        prop_assert_eq!(&got.counts, &want.counts);
        let got = a.histogram_counts::<u32>(Method::Private, &bins, &x)?;
        prop_assert_eq!(got.counts.iter().map(|&c| c as u64).collect::<Vec<_>>(), want.counts.clone());
        let got = a.histogram_f64(Method::Private, &bins, &x, None)?;
        prop_assert_eq!(got.counts, want.counts.iter().map(|&c| c as f64).collect::<Vec<_>>());
        prop_assert_eq!((got.nan, got.below, got.above), (want.nan, want.below, want.above));
    }

    #[test]
    fn histogram_f64_unit_weights_are_exact_and_weights_within_rounding(
        method in proptest::sample::select(vec![Method::Plain, Method::Shared, Method::Shfl, Method::Match, Method::Block, Method::Cas, Method::CasAggregated, Method::Private]),
        k in prop_oneof![Just(1u64), 2u64..5000], n in 0usize..40_000, seed: u64, wild: bool, grid in proptest::option::of(1u32..50),
    ) {
        let bins = cpu::bins(0.0, 1.0, k)?;
        let x = hist_input(n, seed, wild);
        let want_units = cpu::histogram_counts_seq(&bins, &x);
        let w = data::f64_range(n, seed ^ 7, -3.0, 5.0);
        let want = cpu::histogram_f64_seq(&bins, &x, Some(&w));
        let gpu = gpu_or_skip!();
        let a = launcher(gpu, grid)?;
        let got = a.histogram_f64(method, &bins, &x, None)?;
        prop_assert_eq!(got.counts, want_units.counts.iter().map(|&c| c as f64).collect::<Vec<_>>());
        let got = a.histogram_f64(method, &bins, &x, Some(&w))?;
        // Order-dependent: |error| ≤ (adds in the bin) · ε · Σ|w| of the bin, bounded by n·ε·Σ|w|.
        let bound = n as f64 * f64::EPSILON * w.iter().map(|v| v.abs()).sum::<f64>() + 1e-300;
        assert_within("histogram_f64 weighted", &got.counts, &want.counts, bound, |b| format!("bin {b} of {k}, {method:?}, n={n}"))?;
    }

    #[test]
    fn histogram_fixed_is_bit_identical(
        method in proptest::sample::select(vec![Method::Plain, Method::Shared, Method::Shfl, Method::Match, Method::Block, Method::Private]),
        k in prop_oneof![Just(1u64), 2u64..6144], n in 0usize..40_000, seed: u64, wild: bool, frac in 0u32..=32, grid in proptest::option::of(1u32..50),
    ) {
        let bins = cpu::bins_with_frac_bits(-0.2, 1.2, k, frac)?;
        let x = hist_input(n, seed, wild);
        let w = data::f64_range(n, seed ^ 9, -1000.0, 1000.0);
        let want = cpu::fixed_to_f64(&bins, &cpu::histogram_fixed_raw_seq(&bins, &x, Some(&w)));
        let gpu = gpu_or_skip!();
        let a = launcher(gpu, grid)?;
        let got = a.histogram_fixed(method, &bins, &x, Some(&w))?;
        assert_bits_eq("histogram_fixed", &got.counts, &want.counts, |b| format!("bin {b} of {k}, {method:?}, frac {frac}"))?;
        prop_assert_eq!((got.nan, got.below, got.above), (want.nan, want.below, want.above));
    }

    #[test]
    fn histogram_private_fixed_is_bit_identical(k in 1u64..6144, n in 0usize..40_000, seed: u64, grid in proptest::option::of(1u32..50)) {
        let bins = cpu::bins(0.0, 1.0, k)?;
        let x = hist_input(n, seed, true);
        let w = data::f64_range(n, seed ^ 9, -1.0, 1.0);
        let want = cpu::histogram_fixed_raw_seq(&bins, &x, Some(&w));
        let gpu = gpu_or_skip!();
        let a = launcher(gpu, grid)?;
        let got = a.histogram_fixed_raw(Method::Private, &bins, &x, Some(&w))?;
        prop_assert_eq!(got, want);
    }
}

/// The partition's rare paths: a bucket segment of more than 64 values (all values in one
/// bin, and in one bucket of 245), the scratch reused and grown between calls on one
/// launcher, and counts of many pieces added into the same counters.
#[test]
fn histogram_partition_long_segments_and_reused_scratch_are_exact() -> Result<(), TestCaseError> {
    let gpu = gpu_or_skip!();
    let a = Histograms::new(gpu)?.with_partition_piece(3 * 8192)?;
    for (k, n) in [(1_000_000u64, 50_000usize), (1, 100_000), (1_000_000, 200_001), (300, 8192)] {
        let bins = cpu::bins(0.0, 1.0, k)?;
        let mut x: Vec<f64> = (0..n).map(|i| (i % 5) as f64 * 1e-6).collect();
        x.extend(data::f64_range(n / 3, k, 0.0, 1.0));
        let want = cpu::histogram_counts_seq(&bins, &x);
        let got = a.histogram_counts::<u32>(Method::Partition, &bins, &x)?;
        prop_assert_eq!(got_u64(&got.counts), want.counts, "k={} n={}", k, n);
    }
    Ok(())
}

/// A wide block's 16-bit counters hold at most 65 535: one block taking 300 001 values of one
/// bin (and a few of another) must add its counters to the global ones before they wrap.
#[test]
fn histogram_wide_counters_are_flushed_before_they_wrap() -> Result<(), TestCaseError> {
    let gpu = gpu_or_skip!();
    for k in [1u64, 2, 3, 50_001] {
        let bins = cpu::bins(0.0, 1.0, k)?;
        let mut x = vec![0.0; 300_001];
        for (i, v) in x.iter_mut().enumerate().step_by(97) {
            *v = ((i % 7) as f64 + 0.5) / 7.0;
        }
        let want = cpu::histogram_counts_seq(&bins, &x);
        for grid in [1u32, 3] {
            let a = launcher(gpu, Some(grid))?;
            let got = a.histogram_counts::<u32>(Method::Wide, &bins, &x)?;
            prop_assert_eq!(got_u64(&got.counts), want.counts.clone(), "k={} grid={}", k, grid);
        }
    }
    Ok(())
}
