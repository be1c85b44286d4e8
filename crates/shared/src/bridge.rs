//! Brownian bridge: the per-path construction (du Toit, NAG; eq. 5 of the seed paper), written
//! once for the GPU kernels and the CPU generators.
//!
//! A path on `t0 < t1 < … < tN < T` is built point by point: `X_T = x + sqrt(T − t0)·C·Z_0`, then
//! every other point θ from its nearest already-known neighbours ℓ < θ < r:
//!
//! ```text
//! X_θ = wl·X_ℓ + wr·X_r + sd·(C·Z),  wl = (r−θ)/(r−ℓ), wr = (θ−ℓ)/(r−ℓ), sd = sqrt((r−θ)(θ−ℓ)/(r−ℓ))
//! ```
//!
//! The host turns the user's construction order into an *execution strategy* (a list of
//! [`Step`]s): the same points with the same neighbours and the same `Z`, reordered depth-first
//! so that few values are live at once; each live value sits in a numbered *stack slot*. The
//! weights are computed once on the host in f64 ([`weights`]) and rounded to the working
//! precision, so the device and the CPU read identical numbers.
//!
//! **Memory layout** (`[row][path]`, consecutive paths adjacent, so a warp's accesses coalesce):
//! normals `z[(i·d + k)·paths + p]` for construction index `i` (0 builds `X_T`), dimension `k`,
//! path `p`; output `x[(g·d + k)·paths + p]` for time index `g` (0..N−1 = t1..tN, N = T).
//! Scaled increments use the output layout: row `g` holds `(X_{g} − X_{g−1})/(t_g − t_{g−1})`
//! with `X_{−1} = x` at `t0`.
//!
//! Arithmetic: separate `*` and `+` (never contracted), `sqrt` and `/` correctly rounded on both
//! targets; the noise `(C·Z)_k = Σ_{m≤k} C_km·Z_m` is summed left to right from `m = 0`.

pub mod boxmuller;
pub mod normal;
pub mod philox;
pub mod sobol;

mod launch;
mod real;
mod staged;
mod step;

pub use launch::*;
pub use real::*;
pub use staged::*;
pub use step::*;

/// Largest dimension `d` the generators support (registers hold one d-vector per operand).
pub const MAX_DIMS: usize = 8;

/// What one path's generation needs besides its normals: the strategy, `d`, the
/// Cholesky factor `C` (row-major, lower triangular, `d·d`), the start `x` (`d`) and whether to
/// write scaled increments instead of points.
#[derive(Clone, Copy)]
pub struct PathPlan<'a, T, S> {
    /// The strategy.
    pub table: S,
    /// Steps (N + 1).
    pub steps: usize,
    /// Dimension d (1..=MAX_DIMS; `D` of [`generate_path`] must be at least d).
    pub dims: usize,
    /// C, row-major `d × d`.
    pub chol: &'a [T],
    /// x, `d` values.
    pub start: &'a [T],
    /// Scaled increments instead of points.
    pub increments: bool,
}

/// Generates one path: runs every step of the strategy, reading normals from `z`, keeping
/// live values in `stack` (slot 0 starts as `x`) and writing points or increments to `out`.
///
/// `D` bounds the dimension at compile time (loops over `0..D` unroll; components `≥ d` are
/// skipped), so per-step vectors stay in registers on the GPU. `P` is the prefetch depth: the
/// steps are taken `P` at a time, their table rows and normals read first (up to `P·d`
/// independent loads in flight per thread, the paper's lesson 3), then computed in order. The
/// arithmetic and its order are the same for every `P`, so every `P` gives the same bits.
#[inline(always)]
pub fn generate_path<T: Real, const D: usize, const P: usize>(
    plan: &PathPlan<'_, T, impl Steps<T>>,
    z: &mut impl Normals<T>,
    stack: &mut impl Stack<T>,
    out: &mut impl Sink<T>,
) {
    let d = plan.dims;
    let mut k = 0;
    while k < D {
        if k < d {
            stack.set(k as u32, plan.start[k]);
        }
        k += 1;
    }
    let mut s = 0;
    while s < plan.steps {
        // Prefetch: the normals of the next P steps (only each step's z index is needed).
        let mut zs = [[T::ZERO; D]; P];
        let mut j = 0;
        while j < P {
            if s + j < plan.steps {
                let zi = plan.table.step(s + j).z;
                let mut k = 0;
                while k < D {
                    if k < d {
                        place2(&mut zs, j, k, z.normal(zi * d as u32 + k as u32));
                    }
                    k += 1;
                }
            }
            j += 1;
        }
        let mut j = 0;
        while j < P {
            if s + j < plan.steps {
                let step = plan.table.step(s + j);
                let zj = pick(&zs, j);
                let mut k = 0;
                while k < D {
                    if k < d {
                        let xl = stack.get(step.left * d as u32 + k as u32);
                        let xr = stack.get(step.right * d as u32 + k as u32);
                        let x = interpolate(step.wl, xl, step.wr, xr, step.sd, noise(plan.chol, d, &zj, k));
                        if step.store != NO_SLOT {
                            stack.set(step.store * d as u32 + k as u32, x);
                        }
                        let row = step.out * d as u32 + k as u32;
                        if !plan.increments {
                            out.put(row, x);
                        } else {
                            if step.flags & EMIT_LEFT != 0 {
                                out.put(row, increment(xl, x, step.dt_left, step.recip_left));
                            }
                            if step.flags & EMIT_RIGHT != 0 {
                                out.put(row + d as u32, increment(x, xr, step.dt_right, step.recip_right));
                            }
                        }
                    }
                    k += 1;
                }
            }
            j += 1;
        }
        s += P;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_interpolate_linearly_and_vanish_at_the_ends() {
        let (wl, wr, sd) = weights(0.0, 0.25, 1.0);
        assert_eq!((wl, wr), (0.75, 0.25));
        assert!((sd * sd - 0.1875).abs() < 1e-15);
        assert_eq!(interpolate(wl, 4.0, wr, 8.0, sd, 0.0), 5.0);
    }

    #[test]
    fn noise_is_lower_triangular() {
        let c = [2.0f64, 0.0, 1.0, 3.0];
        let z = [1.0, 10.0];
        assert_eq!(noise(&c, 2, &z, 0), 2.0);
        assert_eq!(noise(&c, 2, &z, 1), 31.0);
    }

    #[test]
    fn steps_round_trip_through_tables() {
        let st = Step {
            wl: 0.5f32,
            wr: 0.5,
            sd: 0.1,
            dt_left: 1.0,
            dt_right: 2.0,
            recip_left: 1.0,
            recip_right: 0.5,
            left: 1,
            right: 2,
            store: 3,
            z: 4,
            out: 5,
            flags: 3,
        };
        assert_eq!(Step::load(&st.coefs(), &st.indices(), 0), st);
    }
}
