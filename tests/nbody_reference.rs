//! CPU-only, independent checks of the N-body and matrix-product math (never skipped):
//! an f64 nalgebra `Vector3` RK4 written separately from `lockstep-shared`, the analytic
//! two-body circular orbit, energy drift shrinking as dt⁴, momentum conservation, the
//! documented ε = 0 coincidence outcome, initial conditions, the closed form of the seed's
//! matrix product, and sequential == rayon bit for bit.

use approx::assert_relative_eq;
use lockstep::matmul as mcpu;
use lockstep::nbody::{self as cpu, energy, init, momentum};
use lockstep::nbody::{Params, System};
use lockstep_shared::matmul::{MODEL_MAX_N_I32, model_c};
use nalgebra::Vector3;

type V = Vector3<f64>;

/// Independent RK4 on `(x, v)` with nalgebra vectors: `a_i = G Σ_{j≠i} m_j d / (|d|² + ε²)^{3/2}`.
fn nalgebra_rk4(x: &mut [V], v: &mut [V], m: &[f64], g: f64, eps: f64, dt: f64, steps: usize) {
    let accel = |x: &[V]| -> Vec<V> {
        (0..x.len())
            .map(|i| {
                let mut a = V::zeros();
                for j in 0..x.len() {
                    if j != i {
                        let d = x[j] - x[i];
                        a += d * (m[j] / (d.norm_squared() + eps * eps).powf(1.5));
                    }
                }
                a * g
            })
            .collect()
    };
    let add = |a: &[V], b: &[V], s: f64| -> Vec<V> { a.iter().zip(b).map(|(p, q)| p + q * s).collect() };
    for _ in 0..steps {
        let (k1x, k1v) = (v.to_vec(), accel(x));
        let (k2x, k2v) = (add(v, &k1v, dt / 2.0), accel(&add(x, &k1x, dt / 2.0)));
        let (k3x, k3v) = (add(v, &k2v, dt / 2.0), accel(&add(x, &k2x, dt / 2.0)));
        let (k4x, k4v) = (add(v, &k3v, dt), accel(&add(x, &k3x, dt)));
        for i in 0..x.len() {
            x[i] += (k1x[i] + k2x[i] * 2.0 + k3x[i] * 2.0 + k4x[i]) * (dt / 6.0);
            v[i] += (k1v[i] + k2v[i] * 2.0 + k3v[i] * 2.0 + k4v[i]) * (dt / 6.0);
        }
    }
}

fn split(s: &System<f64>) -> (Vec<V>, Vec<V>, Vec<f64>) {
    let n = s.len();
    (
        (0..n).map(|i| V::new(s.pos[4 * i], s.pos[4 * i + 1], s.pos[4 * i + 2])).collect(),
        (0..n).map(|i| V::new(s.vel[4 * i], s.vel[4 * i + 1], s.vel[4 * i + 2])).collect(),
        (0..n).map(|i| s.pos[4 * i + 3]).collect(),
    )
}

#[test]
fn matches_an_independent_nalgebra_rk4() {
    let s0 = init::plummer(48, 11);
    let p = Params { g: 1.0, eps: 0.05, dt: 0.01 };
    let steps = 20;
    let (mut x, mut v, m) = split(&s0);
    nalgebra_rk4(&mut x, &mut v, &m, p.g, p.eps, p.dt, steps);
    let mut s = s0.clone();
    cpu::run_seq(&p, &mut s, steps as u64).unwrap();
    let (gx, gv, _) = split(&s);
    for i in 0..x.len() {
        assert_relative_eq!(gx[i], x[i], epsilon = 1e-12, max_relative = 1e-11);
        assert_relative_eq!(gv[i], v[i], epsilon = 1e-12, max_relative = 1e-11);
    }
    // f32 follows the f64 solution to single-precision accuracy.
    let mut s32 = s0.convert::<f32>();
    cpu::run_seq(&Params { g: 1.0f32, eps: 0.05, dt: 0.01 }, &mut s32, steps as u64).unwrap();
    let (fx, _, _) = split(&s32.convert::<f64>());
    for i in 0..x.len() {
        assert_relative_eq!(fx[i], x[i], epsilon = 1e-4, max_relative = 1e-4);
    }
}

/// Two equal masses on a circular orbit (G = 1, M = 1, separation 1: ω = 1, period 2π).
fn circular_pair() -> System<f64> {
    System::from_bodies([([0.5, 0.0, 0.0], [0.0, 0.5, 0.0], 0.5), ([-0.5, 0.0, 0.0], [0.0, -0.5, 0.0], 0.5)])
}

#[test]
fn circular_orbit_returns_to_its_start_after_one_period() {
    let s0 = circular_pair();
    let steps = 1000;
    let p = Params { g: 1.0, eps: 0.0, dt: 2.0 * std::f64::consts::PI / steps as f64 };
    let mut s = s0.clone();
    cpu::run_seq(&p, &mut s, steps).unwrap();
    for (a, b) in s.pos.iter().zip(&s0.pos).chain(s.vel.iter().zip(&s0.vel)) {
        assert!((a - b).abs() < 1e-8, "{a} vs {b}");
    }
    // Half a period later the bodies have swapped places (the analytic solution), not merely
    // stayed put: a test that could not fail would not show this.
    let mut half = s0.clone();
    cpu::run_seq(&p, &mut half, steps / 2).unwrap();
    assert!((half.pos[0] + 0.5).abs() < 1e-8 && (half.pos[4] - 0.5).abs() < 1e-8, "{:?}", half.pos);
}

/// |ΔE/E| after `frac` of a period of an eccentric (e = 0.5) two-body orbit, `steps` steps per period.
fn energy_drift(steps: u64, frac: f64) -> f64 {
    // apocentre of a = 1, e = 0.5: separation 1.5, relative speed sqrt((1 − e)/(1 + e)).
    let vrel = (0.5f64 / 1.5).sqrt();
    let s0 = System::from_bodies([
        ([0.75, 0.0, 0.0], [0.0, 0.5 * vrel, 0.0], 0.5),
        ([-0.75, 0.0, 0.0], [0.0, -0.5 * vrel, 0.0], 0.5),
    ]);
    let p = Params { g: 1.0, eps: 0.0, dt: 2.0 * std::f64::consts::PI / steps as f64 };
    let e0 = energy(&s0, 1.0, 0.0);
    let mut s = s0;
    cpu::run_seq(&p, &mut s, (steps as f64 * frac).round() as u64).unwrap();
    ((energy(&s, 1.0, 0.0) - e0) / e0).abs()
}

#[test]
fn energy_drift_shrinks_as_dt_to_the_fourth() {
    let orders = |frac: f64| {
        let d: Vec<f64> = [200u64, 400, 800].iter().map(|&s| energy_drift(s, frac)).collect();
        let o: Vec<f64> = d.windows(2).map(|w| (w[0] / w[1]).log2()).collect();
        eprintln!("|dE/E| after {frac} period, 200/400/800 steps per period: {d:?}, observed orders {o:?}");
        (d, o)
    };
    // Before pericentre (0.3 period) the drift is the plain global RK4 error: halving dt
    // divides it by 2^4 (measured 3.96, 3.98). A 2nd-order method would give 2.
    let (d, o) = orders(0.3);
    assert!(o.iter().all(|o| (3.8..=4.2).contains(o)), "{d:?}: orders {o:?}");
    // Over a whole orbit the errors of the symmetric pericentre passage partly cancel and the
    // drift falls even faster (measured order 5.0): never slower than dt^4.
    let (d, o) = orders(1.0);
    assert!(o.iter().all(|o| *o >= 3.8), "{d:?}: orders {o:?}");
    assert!(d[2] < 1e-8, "{d:?}");
}

#[test]
fn momentum_is_conserved_and_energy_nearly() {
    let mut s = init::plummer(64, 3);
    let p = Params { g: 1.0, eps: 0.05, dt: 0.005 };
    let (p0, e0) = (momentum(&s), energy(&s, 1.0, 0.05));
    cpu::run_par(&p, &mut s, 100).unwrap();
    let (p1, e1) = (momentum(&s), energy(&s, 1.0, 0.05));
    for k in 0..3 {
        assert!((p1[k] - p0[k]).abs() < 1e-13, "momentum {p0:?} -> {p1:?}");
    }
    assert!(((e1 - e0) / e0).abs() < 1e-6, "energy {e0} -> {e1}");
    // ... and the system actually moved.
    assert!(s.pos.iter().zip(init::plummer(64, 3).pos.iter()).any(|(a, b)| (a - b).abs() > 1e-3));
}

#[test]
fn coincident_bodies_without_softening_give_nan_everywhere_and_softening_avoids_it() {
    let mut s = init::ball(5, 1.0, 1.0, 9);
    let p0: Vec<f64> = s.pos[0..3].to_vec();
    s.pos[4..7].copy_from_slice(&p0);
    let mut hard = s.clone();
    cpu::run_seq(&Params { g: 1.0, eps: 0.0, dt: 0.01 }, &mut hard, 1).unwrap();
    // bodies 0 and 1 get NaN in stage 0; every stage-1 force then sees a NaN position.
    assert!(hard.pos.chunks(4).all(|b| b[0].is_nan()), "{:?}", hard.pos);
    assert!(hard.pos.chunks(4).all(|b| b[3] == 0.2), "masses are carried, never NaN");
    let mut soft = s.clone();
    cpu::run_seq(&Params { g: 1.0, eps: 0.01, dt: 0.01 }, &mut soft, 1).unwrap();
    assert!(soft.pos.iter().chain(&soft.vel).all(|v| v.is_finite()));
}

#[test]
fn sequential_and_rayon_twins_agree_bit_for_bit() {
    let s0 = init::plummer(200, 5);
    let mut a = s0.convert::<f32>();
    let mut b = a.clone();
    let p = Params { g: 1.0f32, eps: 0.0, dt: 0.01 };
    cpu::run_seq(&p, &mut a, 3).unwrap();
    cpu::run_par(&p, &mut b, 3).unwrap();
    assert!(a.pos.iter().zip(&b.pos).chain(a.vel.iter().zip(&b.vel)).all(|(x, y)| x.to_bits() == y.to_bits()));
    let mut c = s0.clone();
    let mut d = s0.clone();
    let p = Params { g: 1.0, eps: 0.01, dt: 0.01 };
    cpu::run_seq(&p, &mut c, 3).unwrap();
    cpu::run_par(&p, &mut d, 3).unwrap();
    assert!(c.pos.iter().zip(&d.pos).chain(c.vel.iter().zip(&d.vel)).all(|(x, y)| x.to_bits() == y.to_bits()));
    assert_ne!(c, s0);
}

#[test]
fn ball_is_uniform_in_the_sphere() {
    let n = 4000;
    let s = init::ball(n, 2.0, 3.0, 1);
    let r: Vec<f64> = s.pos.chunks(4).map(|b| (b[0] * b[0] + b[1] * b[1] + b[2] * b[2]).sqrt()).collect();
    assert!(r.iter().all(|&r| r <= 2.0));
    assert_relative_eq!(s.pos.chunks(4).map(|b| b[3]).sum::<f64>(), 3.0, max_relative = 1e-12);
    // uniform in volume: P(r < R/2) = 1/8; binomial standard error sqrt(p(1−p)/n) ≈ 0.0052.
    let inner = r.iter().filter(|&&r| r < 1.0).count() as f64 / n as f64;
    assert!((inner - 0.125).abs() < 4.0 * (0.125f64 * 0.875 / n as f64).sqrt(), "{inner}");
    assert!(s.vel.iter().all(|&v| v == 0.0));
}

#[test]
fn plummer_sphere_is_in_henon_units_and_virialised() {
    let s = init::plummer(1500, 2);
    let p = momentum(&s);
    assert!(p.iter().all(|v| v.abs() < 1e-12), "{p:?}");
    let k: f64 =
        s.pos.chunks(4).zip(s.vel.chunks(4)).map(|(b, v)| 0.5 * b[3] * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2])).sum();
    let e = energy(&s, 1.0, 0.0);
    let w = e - k;
    // Hénon units: E = −1/4, 2K/|W| = 1; sampling noise with N = 1500 is a few per cent.
    assert!((e + 0.25).abs() < 0.03, "E = {e}");
    assert!((2.0 * k / -w - 1.0).abs() < 0.12, "virial ratio {}", 2.0 * k / -w);
}

#[test]
fn csv_initial_conditions_parse() {
    let s = init::from_csv("x,y,z,vx,vy,vz,m\n# comment\n1,2,3,4,5,6,7\n\n 0.5 0 0 0 0 0 1e-3\n").unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(&s.pos[0..4], &[1.0, 2.0, 3.0, 7.0]);
    assert_eq!(&s.vel[0..4], &[4.0, 5.0, 6.0, 0.0]);
    assert_eq!(s.pos[7], 1e-3);
}

#[test]
fn matrix_product_matches_the_closed_form() {
    for n in [1usize, 2, 3, 16, 17, 31, 64, 100] {
        let a: Vec<i64> = mcpu::model_matrix(n);
        let c = mcpu::multiply_seq(n, &a, &a);
        for (e, &v) in c.iter().enumerate() {
            assert_eq!(v as i128, model_c(n as u64, (e / n) as u64, (e % n) as u64), "n={n} C({}, {})", e / n, e % n);
        }
        let c32 = mcpu::multiply_par(n, &mcpu::model_matrix::<i32>(n), &mcpu::model_matrix::<i32>(n));
        assert!(c32.iter().zip(&c).all(|(&x, &y)| x as i64 == y), "i32 fits for n={n} <= {MODEL_MAX_N_I32}");
    }
}

#[test]
fn matrix_product_wraps_identically_and_rayon_equals_sequential() {
    let n = 37;
    let a: Vec<i32> = (0..n * n).map(|i| (i as i32).wrapping_mul(0x9E37_79B1u32 as i32)).collect();
    let seq = mcpu::multiply_seq(n, &a, &a);
    assert_eq!(seq, mcpu::multiply_par(n, &a, &a));
    // against i128 arithmetic reduced mod 2^32
    for e in [0usize, 5, n * n - 1] {
        let exact: i128 = (0..n).map(|k| a[(e / n) * n + k] as i128 * a[k * n + e % n] as i128).sum();
        assert_eq!(seq[e], exact as i32, "C({}, {})", e / n, e % n);
    }
}
