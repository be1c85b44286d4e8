//! CPU-only checks of the histograms against independent math: counts against binomial
//! statistics and an independent bin search, the drop policy, fixed-point sums against exact
//! rational arithmetic, and sequential == rayon bit for bit. Never skipped.

use lockstep::histogram as cpu;
use lockstep_parity::data::SplitMix64;
use lockstep_shared::histogram::{from_fixed, pow2, to_fixed};

fn uniform(n: usize, seed: u64) -> Vec<f64> {
    let mut r = SplitMix64(seed);
    (0..n).map(|_| r.uniform(0.0, 1.0)).collect()
}

#[test]
fn uniform_counts_are_binomial_and_complete() {
    let n = 200_000;
    let x = uniform(n, 11);
    for k in [1u64, 10, 100, 1000] {
        let bins = cpu::bins(0.0, 1.0, k).unwrap();
        let h = cpu::histogram_counts_seq(&bins, &x);
        assert_eq!(h.counts.iter().sum::<u64>(), n as u64, "k={k}");
        assert_eq!((h.nan, h.below, h.above), (0, 0, 0));
        let p = 1.0 / k as f64;
        let mean = n as f64 * p;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        for (b, &c) in h.counts.iter().enumerate() {
            // 6 standard errors: a false alarm in ~1e-9 of bins.
            assert!((c as f64 - mean).abs() <= 6.0 * sd + 1e-9, "k={k} bin {b}: {c} vs {mean} ± {sd}");
        }
    }
}

#[test]
fn bins_agree_with_an_independent_edge_search() {
    // Edges e_b = lo + (hi - lo)·b/k in exact rational arithmetic (integers), values on a grid
    // of 1/2^20 so every comparison is exact: the bin is the number of edges ≤ x, minus one.
    let (lo, hi, k) = (-3.0, 5.0, 37u64);
    let bins = cpu::bins(lo, hi, k).unwrap();
    let mut r = SplitMix64(5);
    let x: Vec<f64> = (0..50_000).map(|_| ((r.next_u64() % (8 << 20)) as f64) / (1 << 20) as f64 - 3.0).collect();
    let h = cpu::histogram_counts_seq(&bins, &x);
    let mut want = vec![0u64; k as usize];
    let mut near_edge = 0u64;
    for &v in &x {
        // x = lo + m/2^20 with integer m; bin b iff b·8·2^20 ≤ m·k < (b+1)·8·2^20
        let m = ((v - lo) * (1 << 20) as f64) as u64;
        let b = (m * k) / (8 << 20);
        want[b as usize] += 1;
        if (m * k).is_multiple_of(8 << 20) {
            near_edge += 1;
        }
    }
    // Values exactly on an edge may round to the neighbouring bin in f64; everything else agrees.
    let diff: u64 = h.counts.iter().zip(&want).map(|(a, b)| a.abs_diff(*b)).sum();
    assert!(diff <= 2 * near_edge, "diff {diff}, values on edges {near_edge}");
    assert_eq!(h.counts.iter().sum::<u64>(), 50_000);
}

#[test]
fn drop_policy_counts_nan_below_and_above() {
    let bins = cpu::bins(0.0, 1.0, 4).unwrap();
    let x = [0.0, 0.5, f64::NAN, -0.1, 1.0, 7.0, f64::INFINITY, f64::NEG_INFINITY, -f64::NAN, 0.999];
    let h = cpu::histogram_counts_seq(&bins, &x);
    assert_eq!(h.counts, vec![1, 0, 1, 1]);
    assert_eq!((h.nan, h.below, h.above), (2, 2, 3));
    assert_eq!(h, cpu::histogram_counts_par(&bins, &x));
    let f = cpu::histogram_f64_seq(&bins, &x, None);
    assert_eq!(f.counts, vec![1.0, 0.0, 1.0, 1.0]);
}

#[test]
fn sequential_and_rayon_agree_bit_for_bit() {
    let mut r = SplitMix64(3);
    let x: Vec<f64> = lockstep_parity::data::f64s(100_000, 9).into_iter().map(|v| v.rem_euclid(3.0) - 1.0).collect();
    let w: Vec<f64> = (0..x.len()).map(|_| r.uniform(-10.0, 10.0)).collect();
    for k in [1u64, 7, 1000] {
        let bins = cpu::bins(-0.5, 1.5, k).unwrap();
        assert_eq!(cpu::histogram_counts_seq(&bins, &x), cpu::histogram_counts_par(&bins, &x));
        assert_eq!(
            cpu::histogram_fixed_raw_seq(&bins, &x, Some(&w)),
            cpu::histogram_fixed_raw_par(&bins, &x, Some(&w))
        );
    }
}

#[test]
fn fixed_point_sums_equal_exact_rational_sums() {
    // Each bin: Σ round(w·2^f) exactly (i128), so value = that · 2^-f up to one final rounding;
    // and within n/2 · 2^-f of the true sum of the weights (computed exactly with i128 because
    // the weights are multiples of 2^-40).
    let f = 32;
    let bins = cpu::bins_with_frac_bits(0.0, 1.0, 5, f).unwrap();
    let mut r = SplitMix64(21);
    let n = 20_000;
    let x = uniform(n, 8);
    let w: Vec<f64> = (0..n).map(|_| ((r.next_u64() % (1 << 50)) as i64 - (1 << 49)) as f64 * pow2(-40)).collect();
    cpu::check_fixed_range(&bins, &x, Some(&w)).unwrap();
    let raw = cpu::histogram_fixed_raw_seq(&bins, &x, Some(&w));
    let vals = cpu::fixed_to_f64(&bins, &raw);
    let mut exact = [0i128; 5];
    let mut quant = [0i128; 5];
    let mut cnt = [0u64; 5];
    for (v, wi) in x.iter().zip(&w) {
        let b = (v * 5.0) as usize;
        exact[b] += (wi * pow2(40)) as i128;
        quant[b] += to_fixed(*wi, f) as i128;
        cnt[b] += 1;
    }
    for b in 0..5 {
        assert_eq!(raw.counts[b] as i128, quant[b], "bin {b}");
        assert_eq!(vals.counts[b], from_fixed(raw.counts[b], f));
        let err = (quant[b] * (1 << 8) - exact[b]).abs() as f64 * pow2(-40);
        assert!(err <= cnt[b] as f64 * 0.5 * pow2(-(f as i32)), "bin {b}: {err}");
    }
    // Unit weights: exact counts.
    let unit = cpu::fixed_to_f64(&bins, &cpu::histogram_fixed_raw_seq(&bins, &x, None));
    let counts = cpu::histogram_counts_seq(&bins, &x);
    assert_eq!(unit.counts, counts.counts.iter().map(|&c| c as f64).collect::<Vec<_>>());
}

#[test]
fn fixed_point_range_check_refuses_overflowing_weights() {
    let bins = cpu::bins(0.0, 1.0, 2).unwrap();
    let x = vec![0.5; 4];
    assert!(matches!(cpu::check_fixed_range(&bins, &x, Some(&[1e9; 4])), Err(lockstep::Error::InvalidInput { .. })));
    assert!(cpu::check_fixed_range(&bins, &x, Some(&[1e3; 4])).is_ok());
}
