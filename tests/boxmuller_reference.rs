//! Box–Muller normals (`lockstep_shared::bridge::boxmuller`) against an independent evaluation
//! of the same map at 40 digits (`scripts/boxmuller_table.py` → `tests/data/boxmuller_mp.txt`:
//! extremes of both words — the smallest and largest uniforms, every quadrant and fold
//! boundary — and 4000 pseudo-random pairs), and the law of the stream they make.
//!
//! Accuracy is stated per component as `|z − z_ref| / ulp(r)`, in units of the last place of the
//! pair's radius `r = √(−2 ln u)` (a component's own ulp is meaningless where `cos θ` or `sin θ`
//! crosses zero). Measured on this table: f64 at most 1.63 ulp(r) (2026-11-26), f32 at most 2.62
//! ulp(r) (2026-11-27, stream version 3's angle table; 2.10 with version 2's polynomials; f32
//! also rounds `u` to 24 bits and reads the angle through f32 table entries, part of its
//! definition); the bounds below leave a margin and fail on any regression past it.

use lockstep_parity::normal_law;
use lockstep_shared::bridge::boxmuller::{pair_f32, pair_f64};

/// Largest error of the f64 pairs, in ulp(r).
const F64_BOUND: f64 = 2.0;
/// Largest error of the f32 pairs, in f32 ulp(r).
const F32_BOUND: f64 = 3.0;

fn ulp_f64(x: f64) -> f64 {
    let x = x.abs().max(f64::MIN_POSITIVE);
    f64::from_bits(x.to_bits() + 1) - x
}

fn ulp_f32(x: f64) -> f64 {
    let x = (x.abs() as f32).max(f32::MIN_POSITIVE);
    (f32::from_bits(x.to_bits() + 1) - x) as f64
}

/// A reference value as an f64 pair `hi + lo`.
type Ref = (f64, f64);

/// `(w0, w1, cos, sin)` rows of the table.
fn table() -> Vec<(u32, u32, Ref, Ref)> {
    let text = include_str!("data/boxmuller_mp.txt");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let v: Vec<&str> = l.split_whitespace().collect();
            let f = |i: usize| v[i].parse::<f64>().unwrap();
            (v[0].parse().unwrap(), v[1].parse().unwrap(), (f(2), f(3)), (f(4), f(5)))
        })
        .collect()
}

/// `(z − (hi + lo))` without losing `lo` (z and hi are close).
fn diff(z: f64, (hi, lo): (f64, f64)) -> f64 {
    (z - hi) - lo
}

#[test]
fn f64_pairs_are_within_their_bound_of_40_digits() {
    let rows = table();
    assert!(rows.len() > 4000);
    let mut worst = (0.0f64, 0, 0);
    for &(w0, w1, c, s) in &rows {
        let (zc, zs) = pair_f64(w0, w1);
        let r = (c.0 * c.0 + s.0 * s.0).sqrt();
        for e in [diff(zc, c), diff(zs, s)] {
            let u = e.abs() / ulp_f64(r);
            assert!(u.is_finite(), "{w0} {w1}: {zc} {zs}");
            if u > worst.0 {
                worst = (u, w0, w1);
            }
        }
    }
    eprintln!("f64 Box–Muller: max {:.3} ulp(r) at ({}, {})", worst.0, worst.1, worst.2);
    assert!(worst.0 <= F64_BOUND, "f64: {:.3} ulp(r) at words ({}, {})", worst.0, worst.1, worst.2);
}

#[test]
fn f32_pairs_are_within_their_bound_of_40_digits() {
    let mut worst = (0.0f64, 0, 0);
    for (w0, w1, c, s) in table() {
        let (zc, zs) = pair_f32(w0, w1);
        let r = (c.0 * c.0 + s.0 * s.0).sqrt();
        for e in [diff(zc as f64, c), diff(zs as f64, s)] {
            let u = e.abs() / ulp_f32(r);
            assert!(u.is_finite(), "{w0} {w1}: {zc} {zs}");
            if u > worst.0 {
                worst = (u, w0, w1);
            }
        }
    }
    eprintln!("f32 Box–Muller: max {:.3} f32 ulp(r) at ({}, {})", worst.0, worst.1, worst.2);
    assert!(worst.0 <= F32_BOUND, "f32: {:.3} ulp(r) at words ({}, {})", worst.0, worst.1, worst.2);
}

/// Exact symmetries the exact angle reduction must keep: a quarter turn (`w1 + 2^30`) maps
/// `(c, s)` to `(−s, c)` bit for bit, and the folded fraction `2^30 − n` swaps `c` and `s`.
#[test]
fn quarter_turns_and_folds_are_exact() {
    let mut x = 0x9e37_79b9u32;
    for _ in 0..10_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let w0 = x.rotate_left(7);
        let n = x & ((1 << 30) - 1);
        let (c, s) = pair_f64(w0, n);
        let (c1, s1) = pair_f64(w0, n + (1 << 30));
        assert_eq!((c1.to_bits(), s1.to_bits()), ((-s).to_bits(), c.to_bits()), "{w0} {n}");
        let (c, s) = pair_f32(w0, n);
        let (c1, s1) = pair_f32(w0, n + (1 << 30));
        assert_eq!((c1.to_bits(), s1.to_bits()), ((-s).to_bits(), c.to_bits()), "{w0} {n}");
        if n > 0 {
            // the complement of n inside the quadrant: sin and cos swap
            let (cc, sc) = pair_f64(w0, (1 << 30) - n);
            let (c, s) = pair_f64(w0, n);
            assert_eq!((cc.to_bits(), sc.to_bits()), (s.to_bits(), c.to_bits()), "{w0} {n}");
        }
    }
}

#[test]
fn the_stream_has_the_normal_law_cpu() {
    use lockstep::Backend;
    use lockstep::bridge::{self, BridgeSpec, Plan, Source};
    // 4·10⁶ draws per precision here (debug build); the GPU suite draws 10⁸ (bridge_parity.rs).
    let plan = Plan::new(&BridgeSpec::standard(99)).unwrap();
    let paths = 40_000;
    let z = bridge::normals::<f64>(Backend::Cpu, &plan, Source::PhiloxBoxMuller { seed: 2026 }, paths).unwrap();
    normal_law(&z).unwrap();
    let z = bridge::normals::<f32>(Backend::Cpu, &plan, Source::PhiloxBoxMuller { seed: 2027 }, paths).unwrap();
    normal_law(&z.iter().map(|&v| v as f64).collect::<Vec<_>>()).unwrap();
}
