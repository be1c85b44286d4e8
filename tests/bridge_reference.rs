//! The Brownian bridge on the CPU against independent checks (never skipped): the strategy
//! against a naive evaluation of eq. 5 in the user's order, bit for bit; stack depth; the law
//! of the paths (mean, covariance, increments) for several orders; Philox, Sobol and Φ⁻¹
//! against published values; one thread = rayon, bit for bit.

mod bridge_common;

use approx::assert_relative_eq;
use bridge_common::{naive, normals, random_spec};
use lockstep::bridge::{
    self as br, BridgeSpec, Noise, Output, Plan, Source, bisection_order, first_then_bisection, forward_order,
};
use lockstep_parity::{assert_bits_eq, config};
use lockstep_shared::bridge::normal::{
    acklam_lower, inverse_normal_cdf, normal_f32_from_bits, normal_from_bits, uniform,
};
use lockstep_shared::bridge::philox::philox4x32_10;
use lockstep_shared::bridge::sobol::sobol_u32;
use lockstep_shared::bridge::{increment, quotient, reciprocal};
use proptest::prelude::*;

/// `quotient(a, dt, reciprocal(dt))` against `a / dt`, bit for bit (NaNs as NaNs).
fn check_quotient_f32(a: f32, dt: f32) -> Result<(), TestCaseError> {
    let (got, want) = (quotient(a, dt, reciprocal(dt)), a / dt);
    prop_assert!(
        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
        "f32 {a:e} / {dt:e}: {got:e} ({:#x}), want {want:e} ({:#x})",
        got.to_bits(),
        want.to_bits()
    );
    Ok(())
}

/// As [`check_quotient_f32`] in f64.
fn check_quotient_f64(a: f64, dt: f64) -> Result<(), TestCaseError> {
    let (got, want) = (quotient(a, dt, reciprocal(dt)), a / dt);
    prop_assert!(
        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
        "f64 {a:e} / {dt:e}: {got:e} ({:#x}), want {want:e} ({:#x})",
        got.to_bits(),
        want.to_bits()
    );
    Ok(())
}

/// An f32 with the given sign, 23 mantissa bits and unbiased exponent (normal).
fn f32_of(neg: bool, mant: u32, exp: i32) -> f32 {
    f32::from_bits((neg as u32) << 31 | ((exp + 127) as u32) << 23 | (mant & 0x7f_ffff))
}

/// An f64 with the given sign, 52 mantissa bits and unbiased exponent (normal).
fn f64_of(neg: bool, mant: u64, exp: i32) -> f64 {
    f64::from_bits((neg as u64) << 63 | ((exp + 1023) as u64) << 52 | (mant & 0xf_ffff_ffff_ffff))
}

proptest! {
    #![proptest_config(config())]

    // The increments' quotient (`quotient`: precomputed reciprocal + Markstein's correction) is
    // `/` bit for bit: any bit patterns (NaN, ∞, zeros, subnormals, mostly the fallback), then
    // operands inside and around the fast path's range, then adversarial shapes.
    #[test]
    fn quotient_equals_division_on_any_bits(a: u32, dt: u32, a64: u64, dt64: u64) {
        check_quotient_f32(f32::from_bits(a), f32::from_bits(dt))?;
        check_quotient_f64(f64::from_bits(a64), f64::from_bits(dt64))?;
    }

    #[test]
    fn quotient_equals_division_in_and_around_the_fast_range(
        neg: bool, ma: u32, ea in -100i32..100, md: u32, ed in -24i32..24,
        ma64: u64, ea64 in -900i32..900, md64: u64, ed64 in -300i32..300,
    ) {
        check_quotient_f32(f32_of(neg, ma, ea), f32_of(false, md, ed))?;
        check_quotient_f64(f64_of(neg, ma64, ea64), f64_of(false, md64, ed64))?;
    }

    #[test]
    fn quotient_equals_division_on_adversarial_operands(md: u32, ed in -20i32..=20, k in 1u32..1 << 12, sub: u32, md64: u64, ed64 in -256i32..=256, k64 in 1u64..1 << 30) {
        let dt = f32_of(false, md, ed);
        // Exact quotients (a = k·dt exactly when k·mantissa fits 24 bits), a = dt, a = −dt.
        let a = dt * k as f32;
        check_quotient_f32(a, dt)?;
        check_quotient_f32(dt, dt)?;
        check_quotient_f32(-dt, dt)?;
        check_quotient_f32(f32_of(false, md & !0xfff, ed) * (k as f32), f32_of(false, md & !0xfff, ed))?;
        // Subnormal, zero and huge numerators, and numerators whose quotient sits at the
        // guard's edges 2^±60 (a step either side).
        check_quotient_f32(f32::from_bits(sub & 0x7f_ffff), dt)?;
        check_quotient_f32(-0.0, dt)?;
        check_quotient_f32(0.0, dt)?;
        check_quotient_f32(f32::MAX, dt)?;
        for e in [-61, -60, 59, 60] {
            let edge = f32_of(false, 0, e) * dt;
            for a in [edge, f32::from_bits(edge.to_bits() - 1), f32::from_bits(edge.to_bits() + 1)] {
                check_quotient_f32(a, dt)?;
                check_quotient_f32(-a, dt)?;
            }
        }
        // Divisors at the reciprocal's edges 2^±20 and one step outside.
        for d in [f32_of(false, 0, -20), f32_of(false, 0x7f_ffff, 19), f32_of(false, 0, 20), f32::from_bits(f32_of(false, 0, 20).to_bits() + 1), f32::from_bits(f32_of(false, 0, -20).to_bits() - 1)] {
            check_quotient_f32(f32_of(false, md, 0), d)?;
        }
        // The same shapes in f64.
        let dt64 = f64_of(false, md64, ed64);
        check_quotient_f64(dt64 * k64 as f64, dt64)?;
        check_quotient_f64(f64_of(false, md64 & !0x3fff_ffff, ed64) * k64 as f64, f64_of(false, md64 & !0x3fff_ffff, ed64))?;
        check_quotient_f64(dt64, dt64)?;
        check_quotient_f64(f64::from_bits(md64 & 0xf_ffff_ffff_ffff), dt64)?;
        check_quotient_f64(-0.0, dt64)?;
        check_quotient_f64(f64::MAX, dt64)?;
        for e in [-513, -512, 511, 512] {
            let edge = f64_of(false, 0, e) * dt64;
            for a in [edge, f64::from_bits(edge.to_bits() - 1), f64::from_bits(edge.to_bits() + 1)] {
                check_quotient_f64(a, dt64)?;
                check_quotient_f64(-a, dt64)?;
            }
        }
        // `increment` is the quotient of the difference.
        let (x0, x1) = (f32_of(neg_of(md), md >> 3, ed), f32_of(false, md >> 5, ed + 1));
        prop_assert_eq!(increment(x0, x1, dt, reciprocal(dt)).to_bits(), ((x1 - x0) / dt).to_bits());
    }

    #[test]
    fn strategy_equals_naive_eq5_in_user_order(seed: u64, n in 1usize..60, d in 1usize..=4, kind in 0u8..4, paths in 1usize..4, inc: bool) {
        let spec = random_spec(seed, n, d, kind);
        let plan = Plan::new(&spec)?;
        let output = if inc { Output::Increments } else { Output::Paths };
        let z64 = normals::<f64>(plan.rows() * paths, seed ^ 7);
        let got = br::generate_seq(&plan, Source::Buffer(&z64), paths, output)?;
        let want = naive(&plan, &z64, paths, inc);
        assert_bits_eq("f64", &got, &want, |i| format!("row {} path {} order {:?}", i / paths, i % paths, spec.order))?;
        let z32 = normals::<f32>(plan.rows() * paths, seed ^ 9);
        let got = br::generate_seq(&plan, Source::Buffer(&z32), paths, output)?;
        let want = naive(&plan, &z32, paths, inc);
        assert_bits_eq("f32", &got, &want, |i| format!("row {} path {} order {:?}", i / paths, i % paths, spec.order))?;
    }

    #[test]
    fn one_thread_equals_rayon(seed: u64, n in 1usize..20, d in 1usize..=3, kind in 0u8..4, paths in 0usize..9000, src in 0u8..3, inc: bool) {
        let spec = random_spec(seed, n, d, kind);
        let plan = Plan::new(&spec)?;
        let output = if inc { Output::Increments } else { Output::Paths };
        let z = normals::<f32>(plan.rows() * paths, seed);
        let source = match src { 0 => Source::Buffer(&z[..]), 1 => Source::Philox { seed }, _ => Source::Sobol { offset: 1 } };
        let a = br::generate_seq(&plan, source, paths, output)?;
        let b = br::generate_par(&plan, source, paths, output)?;
        assert_bits_eq("seq vs par", &b, &a, |i| format!("row {} path {}", i / paths.max(1), i % paths.max(1)))?;
        let seen = std::sync::atomic::AtomicUsize::new(0);
        let c = br::generate_par_with_progress(&plan, source, paths, output, |done, total| {
            assert!(done <= total && total == paths);
            seen.fetch_max(done, std::sync::atomic::Ordering::Relaxed);
        })?;
        prop_assert_eq!(seen.into_inner(), paths, "progress must reach the total");
        assert_bits_eq("seq vs par with progress", &c, &a, |i| format!("index {i}"))?;
    }
}

/// A sign from a word's top bit.
fn neg_of(w: u32) -> bool {
    w >> 31 != 0
}

/// Every f32 numerator mantissa in `[1, 2)` (with both signs folded in: the quotient is odd in
/// `a`) against a few divisors: 1 (exact reciprocal), 3, 1.1, and the mantissa whose reciprocal
/// lies closest to a rounding boundary of all f32 mantissas (`1/dt` within 3·10⁻⁸ ulp of a
/// midpoint: the hardest case for `RN(a·RN(1/dt))`, which is often 1 ulp off there and must be
/// corrected). Scaling `a` and `dt` by powers of two inside the guard's range scales every
/// intermediate exactly, so `a ∈ [1, 2)`, `dt ∈ [1, 2)` stands for every exponent pair; the
/// divisors are also tried at 2^−20 and 2^19 (the reciprocal's range).
#[test]
fn quotient_equals_division_for_every_f32_mantissa_of_a_few_divisors() {
    // Found by scanning all 2^23 mantissas for max |1/dt − RN(1/dt)| / ulp (0.49999997).
    let hardest = f32::from_bits(0x3f80_0000 | 0x7c_3237);
    let divisors = [1.0f32, 3.0, 1.1, hardest, hardest * 2f32.powi(-20), hardest * 2f32.powi(19)];
    let mut checked = 0u64;
    for dt in divisors {
        let r = reciprocal(dt);
        assert!(r.is_finite(), "{dt:e} is inside the reciprocal's range");
        for m in (0u32..1 << 23).step_by(if dt == 1.0 || dt == 3.0 { 7 } else { 1 }) {
            let a = f32::from_bits(0x3f80_0000 | m);
            let (got, want) = (quotient(a, dt, r), a / dt);
            assert_eq!(got.to_bits(), want.to_bits(), "{a:e} / {dt:e}: {got:e}, want {want:e}");
            checked += 1;
        }
    }
    assert!(checked > 4 << 23);
}

#[test]
fn bisection_keeps_the_stack_logarithmic() {
    for k in 1..=16u32 {
        let plan = Plan::new(&BridgeSpec::standard(1 << k)).unwrap();
        assert!(plan.stack_slots() <= k as usize + 2, "N+1 = 2^{k}: {} slots", plan.stack_slots());
    }
    let mut spec = BridgeSpec::standard(64);
    assert!(Plan::new(&spec).unwrap().stack_in_shared(128));
    spec.order = forward_order(63);
    assert!(Plan::new(&spec).unwrap().stack_slots() <= 3);
}

#[test]
fn helper_orders() {
    assert_eq!(bisection_order(12), vec![6, 3, 9, 1, 4, 7, 11, 2, 5, 8, 10, 12]);
    assert_eq!(forward_order(3), vec![1, 2, 3]);
    assert_eq!(first_then_bisection(12, &[4]).unwrap(), vec![4, 2, 8, 1, 3, 6, 10, 5, 7, 9, 11, 12]);
    assert_eq!(bisection_order(1), vec![1]);
}

/// Mean, covariance and increment variance of many paths against the law of Brownian motion:
/// E X_t = x, Cov(X_s^a, X_t^b) = (min(s,t) − t0)·Σ_ab, Var(increment_g^a) = Σ_aa/(t_g − t_{g−1}).
/// Tolerances: 5 standard errors of each estimator.
fn check_law(spec: &BridgeSpec, source: Source<'_, f64>, paths: usize) -> Vec<f64> {
    let plan = Plan::new(spec).unwrap();
    let d = plan.dims();
    let n1 = plan.steps();
    let x = br::generate_par(&plan, source, paths, Output::Paths).unwrap();
    let inc = br::generate_par(&plan, source, paths, Output::Increments).unwrap();
    let grid = plan.grid();
    let c = plan.cholesky();
    let sigma = |a: usize, b: usize| (0..d).map(|m| c[a * d + m] * c[b * d + m]).sum::<f64>();
    let row = |g: usize, k: usize| &x[(g * d + k) * paths..(g * d + k + 1) * paths];
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let pf = paths as f64;
    for g in 0..n1 {
        let t = grid[g + 1] - grid[0];
        for a in 0..d {
            let m = mean(row(g, a));
            let se = (t * sigma(a, a) / pf).sqrt();
            assert!((m - spec.start[a]).abs() < 5.0 * se, "E X[{g}][{a}] = {m}, want {} ± {}", spec.start[a], 5.0 * se);
            for h in 0..n1 {
                let s = grid[h + 1] - grid[0];
                for b in 0..d {
                    let (ra, rb) = (row(g, a), row(h, b));
                    let (ma, mb) = (spec.start[a], spec.start[b]);
                    let cov = ra.iter().zip(rb).map(|(&u, &v)| (u - ma) * (v - mb)).sum::<f64>() / pf;
                    let want = t.min(s) * sigma(a, b);
                    let se = ((t * sigma(a, a) * s * sigma(b, b) + want * want) / pf).sqrt();
                    assert!(
                        (cov - want).abs() < 5.0 * se,
                        "Cov(X[{g}][{a}], X[{h}][{b}]) = {cov}, want {want} ± {}",
                        5.0 * se
                    );
                }
            }
            let dt = grid[g + 1] - grid[g];
            let v = &inc[(g * d + a) * paths..(g * d + a + 1) * paths];
            let var = v.iter().map(|&u| u * u).sum::<f64>() / pf;
            let want = sigma(a, a) / dt;
            let se = want * (2.0 / pf).sqrt();
            assert!((var - want).abs() < 5.0 * se, "Var increment[{g}][{a}] = {var}, want {want} ± {}", 5.0 * se);
        }
    }
    x
}

#[test]
fn paths_have_the_law_of_brownian_motion_for_every_order() {
    let n = 6;
    let base = BridgeSpec {
        t0: 0.5,
        times: vec![0.7, 1.0, 1.1, 1.6, 2.0, 2.05],
        t_end: 2.5,
        order: bisection_order(n),
        start: vec![1.0, -2.0],
        noise: Noise::Covariance(vec![1.0, 0.6, 0.6, 2.0]),
    };
    let paths = 40_000;
    let mut outs = Vec::new();
    for order in [bisection_order(n), forward_order(n), vec![6, 1, 5, 2, 4, 3], first_then_bisection(n, &[3]).unwrap()]
    {
        let spec = BridgeSpec { order, ..base.clone() };
        outs.push(check_law(&spec, Source::Philox { seed: 42 }, paths));
    }
    // Same normals, different order: a different mapping from Z to paths (same law).
    assert_ne!(outs[0], outs[1]);
    let spec = BridgeSpec {
        times: vec![0.25, 0.5, 0.75],
        t_end: 1.0,
        t0: 0.0,
        order: bisection_order(3),
        start: vec![0.0],
        noise: Noise::Cholesky(vec![1.5]),
    };
    check_law(&spec, Source::Sobol { offset: 1 }, 1 << 14);
}

#[test]
fn philox_matches_random123_known_answers() {
    assert_eq!(philox4x32_10([0; 4], [0; 2]), [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]);
    assert_eq!(philox4x32_10([u32::MAX; 4], [u32::MAX; 2]), [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]);
    assert_eq!(
        philox4x32_10([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0]),
        [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
    );
}

#[test]
fn sobol_matches_joe_kuo() {
    // Joe & Kuo's sobol.cc, dimensions 1–3, points 1–7 (Gray-code order).
    let want = [
        [0.5, 0.5, 0.5],
        [0.75, 0.25, 0.25],
        [0.25, 0.75, 0.75],
        [0.375, 0.375, 0.625],
        [0.875, 0.875, 0.125],
        [0.625, 0.125, 0.875],
        [0.125, 0.625, 0.375],
    ];
    let dirs = br::sobol_directions(3).unwrap();
    for (q, w) in want.iter().enumerate() {
        for j in 0..3 {
            let x = sobol_u32(&dirs[j * 32..j * 32 + 32], q as u32 + 1) as f64 / 4_294_967_296.0;
            assert_eq!(x, w[j], "point {} dim {}", q + 1, j + 1);
        }
    }
    // Direct evaluation = the `sobol` crate's recurrence, 50 dimensions × 2000 points.
    let dirs = br::sobol_directions(50).unwrap();
    let seq = sobol::Sobol::<u32>::new(50, &sobol::params::JoeKuoD6::extended());
    for (q, point) in seq.take(2000).enumerate() {
        for (j, &v) in point.iter().enumerate() {
            assert_eq!(sobol_u32(&dirs[j * 32..j * 32 + 32], q as u32), v, "point {q} dim {j}");
        }
    }
}

#[test]
fn inverse_normal_cdf_matches_high_precision_values() {
    let table = [
        (0.5, 0.0),
        (0.6, 0.2533471031357997),
        (0.75, 0.6744897501960817),
        (0.9, 1.2815515655446004),
        (0.975, 1.959963984540054),
        (0.99, 2.3263478740408408),
        (0.999, 3.090232306167813),
        (0.025, -1.959963984540054),
        (1e-10, -6.361340902404056),
    ];
    for (p, want) in table {
        assert_relative_eq!(inverse_normal_cdf(p), want, max_relative = 2e-15, epsilon = 1e-300);
        if p <= 0.5 && p > 0.0 {
            assert_relative_eq!(acklam_lower(p), want, max_relative = 1.2e-9, epsilon = 1e-300);
        }
    }
    // Monotone over the uniforms the generators produce.
    let mut prev = f64::NEG_INFINITY;
    for w in (0..=u32::MAX).step_by(1 << 20).chain([u32::MAX]) {
        let z = lockstep_shared::bridge::normal::normal_from_bits(w);
        assert!(z.is_finite() && z > prev, "w = {w}: {z} after {prev}");
        prev = z;
    }
}

/// The words of a stride sample of all 2^32 (plus the extremes, the median and the words where
/// the generators' two polynomials meet), sorted.
fn sample_words(stride: usize) -> Vec<u32> {
    // v = −log(4u(1 − u)) crosses V1 = 6 between m = 2663190 and 2663191 (and their mirrors).
    let edges = [0, 1, 2, 3, 2_663_189, 2_663_190, 2_663_191, 2_663_192, (1 << 31) - 2, (1 << 31) - 1];
    let mut words: Vec<u32> = (0..=u32::MAX).step_by(stride).chain(edges).chain(edges.map(|m| !m)).collect();
    words.sort_unstable();
    words.dedup();
    words
}

#[test]
fn generator_normals_match_high_precision_values() {
    // Φ⁻¹((w + 1/2)/2^32) = √2·erfinv(2u − 1) from mpmath at 40 digits, rounded to f64: the
    // extremes, the region boundary (v = V1 = 6 between w = 2663190 and 2663191), the median.
    let table = [
        (0u32, -6.3379577545537895),
        (1, -6.166429517819751),
        (2, -6.085104545783031),
        (3, -6.030967019118252),
        (1000, -5.0398511259687115),
        (1048576, -3.4871039765916905),
        (2663189, -3.2294826056766723),
        (2663190, -3.2294824983074717),
        (2663191, -3.2294823909383084),
        (2663192, -3.229482283569182),
        (123456789, -1.899573995506065),
        (1073741824, -0.6744897498297384),
        (2147483646, -8.754298118749868e-10),
        (2147483647, -2.918099372916623e-10),
        (2147483648, 2.918099372916623e-10),
        (2147483649, 8.754298118749868e-10),
        (4292304105, 3.2294824983074717),
        (3000000000, 0.5200680618488762),
        (4294967294, 6.166429517819751),
        (4294967295, 6.3379577545537895),
    ];
    // Measured: at most 1.24 f64 eps (f64) and 1.29 f32 eps (f32) on these words.
    for (w, want) in table {
        assert_relative_eq!(normal_from_bits(w), want, max_relative = 1.5 * f64::EPSILON);
        let z32 = normal_f32_from_bits(w) as f64;
        assert_relative_eq!(z32, want, max_relative = 1.5 * f32::EPSILON as f64);
    }
}

#[test]
fn f64_generator_normals_are_within_a_few_ulps_of_the_quantile() {
    // Against the accurate quantile, which is itself good to ~2 ulps relative away from the
    // median but only to ~1e-16 absolute near it (its Halley residual Φ(x) − p is absolute):
    // relative error for |z| ≥ 0.1, absolute below (the table above checks the median words).
    let (mut rel, mut abs) = (0.0f64, 0.0f64);
    let mut prev = f64::NEG_INFINITY;
    for w in sample_words(4093) {
        let z = normal_from_bits(w);
        assert!(z.is_finite() && z > prev, "w = {w}: {z} after {prev}");
        prev = z;
        assert_eq!(normal_from_bits(!w).to_bits(), (-z).to_bits(), "odd symmetry at w = {w}");
        let want = inverse_normal_cdf(uniform(w));
        if want.abs() >= 0.1 {
            rel = rel.max(((z - want) / want).abs());
        } else {
            abs = abs.max((z - want).abs());
        }
    }
    eprintln!("f64: rel {:.3} eps, abs {:.3} eps", rel / f64::EPSILON, abs / f64::EPSILON);
    // Measured: 5.00 and 0.56 eps (this quantile's error plus the reference's).
    assert!(rel < 5.5 * f64::EPSILON, "worst relative error {rel:e}");
    assert!(abs < 0.8 * f64::EPSILON, "worst absolute error {abs:e} near the median");
    // Strictly monotone in w through the words where the two polynomials meet.
    let mut prev = f64::NEG_INFINITY;
    for w in 2_600_000..2_700_000 {
        let z = normal_from_bits(w);
        assert!(z > prev, "w = {w}: {z} after {prev}");
        prev = z;
    }
}

#[test]
fn f32_normals_are_within_a_few_ulps_of_the_quantile() {
    let mut worst = 0.0f64;
    let mut prev = f32::NEG_INFINITY;
    for w in sample_words(4093) {
        let z = normal_f32_from_bits(w);
        // Non-decreasing (near the median neighbouring words can round to the same f32).
        assert!(z.is_finite() && z >= prev, "w = {w}: {z} after {prev}");
        prev = z;
        assert_eq!(normal_f32_from_bits(!w).to_bits(), (-z).to_bits(), "odd symmetry at w = {w}");
        let want = inverse_normal_cdf(uniform(w)); // f64, within ~1e-9 relative of Φ⁻¹ even at the median
        worst = worst.max(((z as f64 - want) / want).abs());
    }
    eprintln!("f32: rel {:.3} eps", worst / f32::EPSILON as f64);
    // Measured: 2.44 f32 eps (the uniform rounded to 24 bits, x rounded, the fit's 0.45 eps,
    // Horner and the last product). Was 8 eps with Acklam's approximation.
    assert!(worst < 3.0 * f32::EPSILON as f64, "worst relative error {worst:e}");
    // Non-decreasing in w through the words where the two polynomials meet.
    let mut prev = f32::NEG_INFINITY;
    for w in 2_600_000..2_700_000 {
        let z = normal_f32_from_bits(w);
        assert!(z >= prev, "w = {w}: {z} after {prev}");
        prev = z;
    }
    assert_eq!(normal_f32_from_bits(u32::MAX), -normal_f32_from_bits(0));
}

#[test]
fn normals_are_standard_normal() {
    let spec = BridgeSpec::standard(8);
    let plan = Plan::new(&spec).unwrap();
    for source in [Source::Philox { seed: 3 }, Source::PhiloxBoxMuller { seed: 3 }, Source::Sobol { offset: 1 }] {
        let paths = 1 << 13;
        let z: Vec<f64> = br::normals_seq(&plan, source, paths).unwrap();
        for j in 0..plan.rows() {
            let r = &z[j * paths..(j + 1) * paths];
            let m = r.iter().sum::<f64>() / paths as f64;
            let v = r.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / paths as f64;
            assert!(m.abs() < 5.0 / (paths as f64).sqrt(), "row {j}: mean {m}");
            assert!((v - 1.0).abs() < 5.0 * (2.0 / paths as f64).sqrt(), "row {j}: variance {v}");
        }
        let s32: Source<'_, f32> = match source {
            Source::Philox { seed } => Source::Philox { seed },
            Source::PhiloxBoxMuller { seed } => Source::PhiloxBoxMuller { seed },
            Source::Sobol { offset } => Source::Sobol { offset },
            Source::Buffer(_) => unreachable!("only generators here"),
        };
        let z: Vec<f32> = br::normals_seq(&plan, s32, paths).unwrap();
        let m = z.iter().map(|&x| x as f64).sum::<f64>() / z.len() as f64;
        let v = z.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / z.len() as f64;
        assert!(
            m.abs() < 5.0 / (z.len() as f64).sqrt() && (v - 1.0).abs() < 5.0 * (2.0 / z.len() as f64).sqrt(),
            "f32: mean {m}, variance {v}"
        );
    }
}

/// The rows the d = 1 strategy of `plan` reads, in step order (the steps' `z`).
fn reads_d1(plan: &Plan) -> Vec<u32> {
    plan.tables::<f32>().idx.chunks_exact(lockstep_shared::bridge::INDICES).map(|r| r[3]).collect()
}

/// Runs the Philox schedule of `reads` for `path` as the fused d = 1 kernel does
/// (`scheduled_word` over a word cache, here a slice poisoned before the path) and checks every
/// word against `PhiloxNormals`; returns the number of Philox blocks it computed.
fn run_schedule(reads: &[u32], ops: &[u32], slots: u32, seed: u64, path: u64) -> Result<usize, TestCaseError> {
    use lockstep_shared::bridge::SliceStack;
    use lockstep_shared::bridge::philox::{COMPUTE, PhiloxNormals, key, scheduled_word, slot_field};
    let mut cache = vec![0xdead_beef_u32; slots as usize];
    let mut g = PhiloxNormals::new(seed, path);
    let mut computed = 0;
    for (s, (&row, &op)) in reads.iter().zip(ops).enumerate() {
        if op & COMPUTE != 0 {
            computed += 1;
            prop_assert!((0..4).all(|k| slot_field(op, k) < slots), "step {}: slot out of range", s);
        } else {
            prop_assert!(op > 0 && op < slots, "step {}: read slot {} of {}", s, op, slots);
        }
        let got = scheduled_word(key(seed), path, row, op, &mut SliceStack(&mut cache));
        prop_assert_eq!(got, g.word(row), "step {} row {} path {}", s, row, path);
    }
    Ok(computed)
}

proptest! {
    #![proptest_config(config())]

    /// The host's Philox schedule (fused d = 1 kernels) gives every row the word of
    /// `PhiloxNormals`, computing each block of four rows exactly once per path, for every
    /// order kind.
    #[test]
    fn philox_schedule_computes_each_block_once(seed: u64, n in 1usize..128, kind in 0u8..4) {
        use lockstep::bridge::philox_schedule;
        let plan = Plan::new(&random_spec(seed, n, 1, kind))?;
        let reads = reads_d1(&plan);
        let Some((ops, slots)) = philox_schedule(&reads) else {
            return Err(TestCaseError::fail(format!("no schedule for {} steps", reads.len())));
        };
        prop_assert_eq!(ops.len(), reads.len());
        // The plan's own schedule is the schedule of the rows its device tables read.
        prop_assert_eq!(plan.philox_schedule(), Some((ops.clone(), slots)));
        for path in [0u64, 1, seed % 100_000, u32::MAX as u64] {
            let computed = run_schedule(&reads, &ops, slots, seed, path)?;
            prop_assert_eq!(computed, reads.len().div_ceil(4), "blocks computed");
        }
    }
}

/// The paper's bisection (64 steps): 16 Philox blocks per path instead of the one-block cache's
/// 46, with a small word cache; rows read twice keep their word until the last read.
#[test]
fn philox_schedule_of_the_paper_shape() -> Result<(), TestCaseError> {
    use lockstep::bridge::philox_schedule;
    use lockstep_shared::bridge::philox::COMPUTE;
    let plan = Plan::new(&BridgeSpec::standard(64))?;
    let reads = reads_d1(&plan);
    assert_eq!(reads.len(), 64);
    let (ops, slots) = philox_schedule(&reads).expect("a schedule");
    assert_eq!(ops.iter().filter(|&&op| op & COMPUTE != 0).count(), 16);
    // The one-block cache's count, for the record.
    let misses = reads.iter().fold((u32::MAX, 0), |(b, m), &r| if r / 4 == b { (b, m) } else { (r / 4, m + 1) }).1;
    assert_eq!(misses, 46);
    assert!(slots <= 16, "{slots} slots"); // 14 (13 words waiting at most)
    run_schedule(&reads, &ops, slots, 42, 7)?;
    // Only a d = 1 strategy of at most TABLE_STEPS steps has one.
    assert_eq!(plan.philox_schedule(), Some((ops, slots)));
    let long = Plan::new(&BridgeSpec::standard(lockstep_shared::bridge::TABLE_STEPS + 1))?;
    assert!(long.philox_schedule().is_none(), "{} steps", long.steps());
    // A row read twice (not a strategy, but the planner allows it): computed once, cached until
    // its second read.
    let reads = [0u32, 5, 1, 0, 4, 2, 3, 1, 6, 7];
    let (ops, slots) = philox_schedule(&reads).expect("a schedule");
    assert_eq!(run_schedule(&reads, &ops, slots, 1, 2)?, 2);
    Ok(())
}
