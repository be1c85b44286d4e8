//! Shared by the bridge suites: random problems and an independent, naive evaluation of eq. 5
//! in the user's order (all N+2 points kept, neighbours found by scanning).
#![allow(dead_code)]

use lockstep::bridge::{BridgeSpec, Noise, Plan, Precision, bisection_order, first_then_bisection};
use lockstep_parity::data::SplitMix64;
use lockstep_shared::bridge::{MAX_DIMS, interpolate, noise, weights};

/// A random valid problem: N interior times, dimension d, order kind 0 bisection, 1 forward,
/// 2 random permutation, 3 some random times first then bisection; Σ or C at random.
pub fn random_spec(seed: u64, n: usize, d: usize, kind: u8) -> BridgeSpec {
    let mut r = SplitMix64(seed);
    let t0 = r.uniform(-1.0, 1.0);
    let mut t = t0;
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        t += r.uniform(0.01, 1.0);
        times.push(t);
    }
    let t_end = t + r.uniform(0.01, 1.0);
    let order = match kind % 4 {
        0 => bisection_order(n),
        1 => (1..=n).collect(),
        2 => shuffled(&mut r, n),
        _ => {
            let k = (r.next_u64() as usize % n) + 1;
            let first: Vec<usize> = shuffled(&mut r, n).into_iter().take(k.min(3)).collect();
            first_then_bisection(n, &first).expect("valid firsts")
        }
    };
    let start: Vec<f64> = (0..d).map(|_| r.uniform(-2.0, 2.0)).collect();
    let a: Vec<f64> = (0..d * d).map(|_| r.uniform(-1.0, 1.0)).collect();
    let mut sigma = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..d {
            let mut s = if i == j { 0.2 } else { 0.0 };
            for k in 0..d {
                s += a[i * d + k] * a[j * d + k];
            }
            sigma[i * d + j] = s;
        }
    }
    let noise = if r.next_u64().is_multiple_of(2) {
        Noise::Covariance(sigma)
    } else {
        let mut c = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..=i {
                c[i * d + j] = if i == j { r.uniform(0.1, 2.0) } else { r.uniform(-1.0, 1.0) };
            }
        }
        Noise::Cholesky(c)
    };
    BridgeSpec { t0, times, t_end, order, start, noise }
}

/// A uniformly random permutation of 1..=n.
pub fn shuffled(r: &mut SplitMix64, n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (1..=n).collect();
    for i in (1..n).rev() {
        let j = (r.next_u64() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

/// `len` standard-normal-ish finite values (Box–Muller on SplitMix), `T`.
pub fn normals<T: Precision>(len: usize, seed: u64) -> Vec<T> {
    let mut r = SplitMix64(seed);
    (0..len)
        .map(|_| {
            let u1 = r.uniform(1e-12, 1.0);
            let u2 = r.uniform(0.0, 1.0);
            T::from_f64((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos())
        })
        .collect()
}

/// Eq. 5 evaluated naively in the user's order for every path: `[row][path]`, points or
/// increments, from `z` (`[row][path]`).
pub fn naive<T: Precision>(plan: &Plan, z: &[T], paths: usize, increments: bool) -> Vec<T> {
    let n = plan.interior();
    let d = plan.dims();
    let grid = plan.grid();
    let c: Vec<T> = plan.cholesky().iter().map(|&v| T::from_f64(v)).collect();
    let start = &plan.tables::<T>().start;
    let mut out = vec![T::ZERO; (n + 1) * d * paths];
    for p in 0..paths {
        let mut x = vec![T::ZERO; (n + 2) * d];
        let mut known = vec![false; n + 2];
        x[..d].copy_from_slice(start);
        known[0] = true;
        let zvec = |i: usize| {
            let mut zs = [T::ZERO; MAX_DIMS];
            for k in 0..d {
                zs[k] = z[(i * d + k) * paths + p];
            }
            zs
        };
        // θ0 = T.
        let zs = zvec(0);
        let sd = T::from_f64((grid[n + 1] - grid[0]).sqrt());
        for k in 0..d {
            x[(n + 1) * d + k] = interpolate(T::from_f64(1.0), x[k], T::ZERO, x[k], sd, noise(&c, d, &zs, k));
        }
        known[n + 1] = true;
        for (i, &theta) in plan.order().iter().enumerate() {
            let l = (0..theta).rev().find(|&g| known[g]).expect("t0 is known");
            let r = (theta + 1..n + 2).find(|&g| known[g]).expect("T is known");
            let (wl, wr, sd) = weights(grid[l], grid[theta], grid[r]);
            let (wl, wr, sd) = (T::from_f64(wl), T::from_f64(wr), T::from_f64(sd));
            let zs = zvec(i + 1);
            for k in 0..d {
                x[theta * d + k] = interpolate(wl, x[l * d + k], wr, x[r * d + k], sd, noise(&c, d, &zs, k));
            }
            known[theta] = true;
        }
        for g in 1..n + 2 {
            for k in 0..d {
                out[((g - 1) * d + k) * paths + p] = if increments {
                    (x[g * d + k] - x[(g - 1) * d + k]) / T::from_f64(grid[g] - grid[g - 1])
                } else {
                    x[g * d + k]
                };
            }
        }
    }
    out
}
