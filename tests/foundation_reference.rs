//! The CPU references of the foundation kernels, checked against independent math (f64,
//! sorting, error bounds of the summation trees) and single-thread = rayon bit for bit.
//! Runs everywhere, never skipped.

use approx::assert_relative_eq;
use lockstep::foundation as cpu;
use lockstep_parity::{assert_bits_eq, config, data};
use proptest::prelude::*;

proptest! {
    #![proptest_config(config())]

    /// saxpy rounds the product and then the sum: within half an ulp of the product plus half
    /// an ulp of the result of the exact value (computed in f64, where the product is exact).
    #[test]
    fn saxpy_is_within_two_roundings_of_exact(len in 0usize..20_000, seed: u64, a in -1.0e3f32..1.0e3) {
        let x = data::f32_range(len, seed, -1.0e3, 1.0e3);
        let y0 = data::f32_range(len, seed ^ 1, -1.0e6, 1.0e6);
        let mut y = y0.clone();
        cpu::axpy_seq(a, &x, &mut y);
        for i in 0..len {
            let exact = a as f64 * x[i] as f64 + y0[i] as f64;
            let bound = ((a as f64 * x[i] as f64).abs() + (y[i] as f64).abs()) * f32::EPSILON as f64 / 2.0;
            prop_assert!((y[i] as f64 - exact).abs() <= bound, "i={} a={} x={} y={} got={} exact={}", i, a, x[i], y0[i], y[i], exact);
        }
    }

    /// daxpy on integers below 2^26 is exact.
    #[test]
    fn daxpy_is_exact_on_small_integers(v in prop::collection::vec((-(1i64 << 26)..(1 << 26), -(1i64 << 26)..(1 << 26)), 0..2000), a in -(1i64 << 20)..(1 << 20)) {
        let x: Vec<f64> = v.iter().map(|p| p.0 as f64).collect();
        let mut y: Vec<f64> = v.iter().map(|p| p.1 as f64).collect();
        cpu::axpy_seq(a as f64, &x, &mut y);
        for (i, p) in v.iter().enumerate() {
            prop_assert_eq!(y[i], (a * p.0 + p.1) as f64);
        }
    }

    /// The count equals the size of the part of the sorted non-NaN values above the threshold.
    #[test]
    fn count_matches_sorted_partition(len in 0usize..20_000, seed: u64, threshold in -150.0f32..150.0) {
        let x = data::f32s(len, seed);
        let mut finite: Vec<f32> = x.iter().copied().filter(|v| !v.is_nan()).collect();
        finite.sort_by(f32::total_cmp);
        let above = finite.len() - finite.partition_point(|v| *v <= threshold);
        prop_assert_eq!(cpu::count_exceeding_seq(&x, threshold) as usize, above);
    }

    /// Each warp sum is within the error bound of a depth-5 tree: 5·u·Σ|x| of the f64 sum.
    #[test]
    fn warp_sums_are_within_the_tree_error_bound(len in 0usize..20_000, seed: u64) {
        let x = data::f32_range(len, seed, -1.0e4, 1.0e4);
        let sums = cpu::warp_sums_seq(&x);
        prop_assert_eq!(sums.len(), len.div_ceil(32));
        for (w, s) in sums.iter().enumerate() {
            let chunk = &x[32 * w..(32 * w + 32).min(len)];
            let exact: f64 = chunk.iter().map(|&v| v as f64).sum();
            let abs: f64 = chunk.iter().map(|&v| (v as f64).abs()).sum();
            prop_assert!((*s as f64 - exact).abs() <= 5.0 * abs * f32::EPSILON as f64 / 2.0 + f64::MIN_POSITIVE, "warp {}: {} vs {}", w, s, exact);
        }
    }

    /// Each block sum is within 8·u·Σ|x| of a compensated (Neumaier) sum.
    #[test]
    fn block_sums_are_within_the_tree_error_bound(len in 0usize..20_000, seed: u64) {
        let x = data::f64_range(len, seed, -1.0e6, 1.0e6);
        let sums = cpu::block_sums_seq(&x);
        for (b, s) in sums.iter().enumerate() {
            let chunk = &x[256 * b..(256 * b + 256).min(len)];
            let (exact, abs) = neumaier(chunk);
            prop_assert!((s - exact).abs() <= 8.0 * abs * f64::EPSILON / 2.0, "block {}: {} vs {}", b, s, exact);
        }
    }

    /// Single-threaded and rayon twins agree bit for bit on wild data.
    #[test]
    fn sequential_equals_parallel(len in 0usize..50_000, seed: u64, a in any::<u32>().prop_map(f32::from_bits)) {
        let x = data::f32s(len, seed);
        let xd = data::f64s(len, seed);
        let (mut y1, mut y2) = (data::f32s(len, !seed), data::f32s(len, !seed));
        cpu::axpy_seq(a, &x, &mut y1);
        cpu::axpy_par(a, &x, &mut y2);
        assert_bits_eq("saxpy seq vs par", &y2, &y1, |i| format!("x={:?}", x[i]))?;
        assert_bits_eq("warp sums seq vs par", &cpu::warp_sums_par(&x), &cpu::warp_sums_seq(&x), |_| String::new())?;
        assert_bits_eq("block sums seq vs par", &cpu::block_sums_par(&xd), &cpu::block_sums_seq(&xd), |_| String::new())?;
        assert_bits_eq("exp_sin_log seq vs par", &cpu::exp_sin_log_par(&xd), &cpu::exp_sin_log_seq(&xd), |i| format!("x={:?}", xd[i]))?;
        prop_assert_eq!(cpu::count_exceeding_par(&x, 1.0), cpu::count_exceeding_seq(&x, 1.0));
    }
}

fn neumaier(xs: &[f64]) -> (f64, f64) {
    let (mut sum, mut c, mut abs) = (0.0f64, 0.0f64, 0.0f64);
    for &x in xs {
        let t = sum + x;
        c += if sum.abs() >= x.abs() { (sum - t) + x } else { (x - t) + sum };
        sum = t;
        abs += x.abs();
    }
    (sum + c, abs)
}

/// The libm mix agrees with the platform's math library to within a few ulps of its terms.
#[test]
fn exp_sin_log_agrees_with_platform_math() {
    let x = data::f64_range(100_000, 11, 1.0e-3, 700.0);
    let got = cpu::exp_sin_log_seq(&x);
    for (xi, gi) in x.iter().zip(&got) {
        let platform = xi.exp() * xi.sin() + xi.ln();
        let scale = (xi.exp() * xi.sin()).abs() + xi.ln().abs();
        assert!((gi - platform).abs() <= 8.0 * f64::EPSILON * scale, "x={xi}: libm {gi} vs platform {platform}");
    }
    assert_relative_eq!(cpu::exp_sin_log_seq(&[1.0])[0], std::f64::consts::E * 1.0f64.sin(), max_relative = 1e-15);
}
