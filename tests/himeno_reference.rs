//! CPU-only checks of the Himeno solver against independent math: its closed form after one
//! sweep, an independent f64 implementation, sequential == rayon bit for bit. Never skipped.

use lockstep::himeno::{self, HimenoProblem};
use lockstep_parity::data::SplitMix64;

/// An independent Himeno: f64, the original copy-back structure, no shared code.
fn himeno_f64(pr: &HimenoProblem, iters: u32) -> (Vec<f64>, f64) {
    let (mi, mj, mk) = (pr.mi as usize, pr.mj as usize, pr.mk as usize);
    let n = mi * mj * mk;
    let id = |i: usize, j: usize, k: usize| (i * mj + j) * mk + k;
    let mut p: Vec<f64> = pr.p.iter().map(|&v| v as f64).collect();
    let mut wrk2 = vec![0.0f64; n];
    let mut gosa = 0.0;
    let g = |v: &Vec<f32>, m: usize, x: usize| v[m * n + x] as f64;
    for _ in 0..iters {
        gosa = 0.0;
        for i in 1..mi - 1 {
            for j in 1..mj - 1 {
                for k in 1..mk - 1 {
                    let x = id(i, j, k);
                    let s0 = g(&pr.a, 0, x) * p[id(i + 1, j, k)]
                        + g(&pr.a, 1, x) * p[id(i, j + 1, k)]
                        + g(&pr.a, 2, x) * p[id(i, j, k + 1)]
                        + g(&pr.b, 0, x)
                            * (p[id(i + 1, j + 1, k)] - p[id(i + 1, j - 1, k)] - p[id(i - 1, j + 1, k)]
                                + p[id(i - 1, j - 1, k)])
                        + g(&pr.b, 1, x)
                            * (p[id(i, j + 1, k + 1)] - p[id(i, j - 1, k + 1)] - p[id(i, j + 1, k - 1)]
                                + p[id(i, j - 1, k - 1)])
                        + g(&pr.b, 2, x)
                            * (p[id(i + 1, j, k + 1)] - p[id(i - 1, j, k + 1)] - p[id(i + 1, j, k - 1)]
                                + p[id(i - 1, j, k - 1)])
                        + g(&pr.c, 0, x) * p[id(i - 1, j, k)]
                        + g(&pr.c, 1, x) * p[id(i, j - 1, k)]
                        + g(&pr.c, 2, x) * p[id(i, j, k - 1)]
                        + pr.wrk1[x] as f64;
                    let ss = (s0 * g(&pr.a, 3, x) - p[x]) * pr.bnd[x] as f64;
                    gosa += ss * ss;
                    wrk2[x] = p[x] + 0.8 * ss;
                }
            }
        }
        for i in 1..mi - 1 {
            for j in 1..mj - 1 {
                for k in 1..mk - 1 {
                    p[id(i, j, k)] = wrk2[id(i, j, k)];
                }
            }
        }
    }
    (p, gosa)
}

fn random_problem(mi: u32, mj: u32, mk: u32, seed: u64) -> HimenoProblem {
    let mut pr = HimenoProblem::benchmark(mi, mj, mk).unwrap();
    let mut r = SplitMix64(seed);
    for v in pr.a.iter_mut().chain(pr.b.iter_mut()).chain(pr.c.iter_mut()).chain(pr.wrk1.iter_mut()) {
        *v = r.uniform(-0.3, 0.3) as f32;
    }
    for v in pr.p.iter_mut().chain(pr.bnd.iter_mut()) {
        *v = r.uniform(0.0, 1.0) as f32;
    }
    pr
}

#[test]
fn himeno_first_sweep_matches_the_closed_form() {
    // p = i²h with h = 1/(mi−1)², b = 0, a = c = 1, a3 = 1/6: s0 = 6p + 2h, so ss = h/3 at every
    // interior point and gosa = N·h²/9 (up to f32 rounding).
    let pr = HimenoProblem::by_name("XS").unwrap();
    let r = himeno::himeno_seq(&pr, 1).unwrap();
    let h = 1.0 / (64.0f64 * 64.0);
    let nint = (63 * 31 * 31) as f64;
    let want = nint * h * h / 9.0;
    approx::assert_relative_eq!(r.gosa_seq as f64, want, max_relative = 1e-3);
    approx::assert_relative_eq!(r.gosa_tree as f64, want, max_relative = 1e-3);
    let (mj, mk) = (33usize, 33usize);
    let x = (10 * mj + 5) * mk + 7;
    approx::assert_relative_eq!(r.p[x] as f64, 100.0 * h + 0.8 * h / 3.0, max_relative = 1e-5);
}

#[test]
fn himeno_agrees_with_an_independent_f64_solver() {
    for (seed, (mi, mj, mk)) in [(1u64, (9u32, 7u32, 40u32)), (2, (5, 12, 3)), (3, (4, 4, 70))] {
        let pr = random_problem(mi, mj, mk, seed);
        let iters = 3;
        let r = himeno::himeno_seq(&pr, iters).unwrap();
        let (p64, gosa64) = himeno_f64(&pr, iters);
        for (i, (&a, &b)) in r.p.iter().zip(&p64).enumerate() {
            assert!((a as f64 - b).abs() <= 1e-5 * (1.0 + b.abs()), "p[{i}] {a} vs {b}");
        }
        approx::assert_relative_eq!(r.gosa_tree as f64, gosa64, max_relative = 1e-4);
        approx::assert_relative_eq!(r.gosa_seq as f64, gosa64, max_relative = 1e-4);
    }
}

#[test]
fn himeno_sequential_and_rayon_agree_bit_for_bit() {
    for (mi, mj, mk) in [(9u32, 7u32, 40u32), (3, 3, 3), (6, 33, 35)] {
        let pr = random_problem(mi, mj, mk, 4);
        let a = himeno::himeno_seq(&pr, 2).unwrap();
        let b = himeno::himeno_par(&pr, 2).unwrap();
        assert_eq!(
            a.p.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            b.p.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(a.gosa_tree.to_bits(), b.gosa_tree.to_bits());
        assert_eq!(a.gosa_seq.to_bits(), b.gosa_seq.to_bits());
    }
}

#[test]
fn himeno_boundaries_never_change() {
    let pr = random_problem(6, 5, 9, 7);
    let r = himeno::himeno_seq(&pr, 3).unwrap();
    let (mi, mj, mk) = (6usize, 5usize, 9usize);
    for i in 0..mi {
        for j in 0..mj {
            for k in 0..mk {
                let x = (i * mj + j) * mk + k;
                if i == 0 || j == 0 || k == 0 || i == mi - 1 || j == mj - 1 || k == mk - 1 {
                    assert_eq!(r.p[x].to_bits(), pr.p[x].to_bits(), "({i},{j},{k})");
                }
            }
        }
    }
}

#[test]
fn himeno_xs_sequential_and_tree_gosa_differ_only_by_f32_rounding() {
    // Both sum the same N = 60 543 positive terms in different orders: within N·ε relative.
    let pr = HimenoProblem::by_name("XS").unwrap();
    let r = himeno::himeno_par(&pr, 5).unwrap();
    let rel = ((r.gosa_seq - r.gosa_tree) / r.gosa_tree).abs() as f64;
    eprintln!("XS after 5 sweeps: gosa_seq {:e}, gosa_tree {:e}, relative difference {rel:e}", r.gosa_seq, r.gosa_tree);
    assert!(rel <= 60_543.0 * f32::EPSILON as f64, "{rel}");
}
