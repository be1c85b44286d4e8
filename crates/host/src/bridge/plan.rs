//! Initialisation of the Brownian bridge: validates the user's problem, builds the execution
//! strategy (the user's points, neighbours and normals, reordered depth-first with a small
//! stack of live values) and the precomputed weights in f32 and f64.

use super::schedule::philox_schedule;
use crate::backend::Element;
use crate::dist::Plain;
use crate::error::{Error, Result};
use lockstep_shared::bridge::{self as sh, EMIT_LEFT, EMIT_RIGHT, LaunchShape, MAX_DIMS, NO_SLOT, Real, Step};
use std::collections::BTreeSet;

/// How the d-dimensional noise is correlated.
#[derive(Clone, Debug, PartialEq)]
pub enum Noise {
    /// Σ, row-major `d × d`, symmetric positive definite; C is its Cholesky factor (nalgebra).
    Covariance(Vec<f64>),
    /// C itself, row-major `d × d`, lower triangular with a positive diagonal (CC' = Σ).
    Cholesky(Vec<f64>),
}

/// A Brownian bridge problem.
#[derive(Clone, Debug, PartialEq)]
pub struct BridgeSpec {
    /// Start time t0 (where X = `start`).
    pub t0: f64,
    /// Interior times t1 < … < tN (N ≥ 1).
    pub times: Vec<f64>,
    /// End time T > tN.
    pub t_end: f64,
    /// The construction order θ1..θN as 1-based time indices (`k` means t_k): a permutation of
    /// 1..=N. X_T is always built first (θ0 = T, from Z_0); Z_i builds X_{θ_i}.
    pub order: Vec<usize>,
    /// The start value x (its length is the dimension d, 1..=8).
    pub start: Vec<f64>,
    /// Σ or C.
    pub noise: Noise,
}

impl BridgeSpec {
    /// A one-dimensional standard Brownian motion from 0 on `steps` equal steps of `[0, 1]`
    /// (N = steps − 1 interior times) in bisection order.
    pub fn standard(steps: usize) -> BridgeSpec {
        let n = steps.saturating_sub(1);
        BridgeSpec {
            t0: 0.0,
            times: (1..=n).map(|i| i as f64 / steps as f64).collect(),
            t_end: 1.0,
            order: bisection_order(n),
            start: vec![0.0],
            noise: Noise::Cholesky(vec![1.0]),
        }
    }
}

/// The bisection order of the paper's eq. 3 for N interior times: breadth first, each interval
/// `(a, b)` of the grid 0..=N+1 (0 = t0, N+1 = T) split at `⌊(a+b)/2⌋`. For N = 12:
/// 6 3 9 1 4 7 11 2 5 8 10 12.
pub fn bisection_order(n: usize) -> Vec<usize> {
    bisect_between(&[0, n + 1])
}

/// The forward (sequential) order 1, 2, …, N.
pub fn forward_order(n: usize) -> Vec<usize> {
    (1..=n).collect()
}

/// "These times first, then bisection between them": the 1-based indices `first` in the given
/// order, then breadth-first bisection of every gap they leave (with t0 and T).
pub fn first_then_bisection(n: usize, first: &[usize]) -> Result<Vec<usize>> {
    check_indices(n, first, false)?;
    let mut known: Vec<usize> = first.to_vec();
    known.push(0);
    known.push(n + 1);
    known.sort_unstable();
    let mut order = first.to_vec();
    order.extend(bisect_between(&known));
    Ok(order)
}

fn bisect_between(known: &[usize]) -> Vec<usize> {
    let mut queue: std::collections::VecDeque<(usize, usize)> = known.windows(2).map(|w| (w[0], w[1])).collect();
    let mut out = Vec::new();
    while let Some((a, b)) = queue.pop_front() {
        if b - a >= 2 {
            let m = (a + b) / 2;
            out.push(m);
            queue.push_back((a, m));
            queue.push_back((m, b));
        }
    }
    out
}

/// Checks that `idx` are distinct values in 1..=n (and all of them when `complete`).
fn check_indices(n: usize, idx: &[usize], complete: bool) -> Result<()> {
    let bad = |why: String| Err(Error::InvalidInput { what: "construction order", why });
    if complete && idx.len() != n {
        return bad(format!(
            "it has {} entries but there are N = {n} interior times; give a permutation of 1..={n}",
            idx.len()
        ));
    }
    let mut seen = vec![false; n + 1];
    for (pos, &k) in idx.iter().enumerate() {
        if k == 0 || k > n {
            return bad(format!("entry {pos} is {k}, outside 1..={n} (indices are 1-based: k means t_k)"));
        }
        if seen[k] {
            return bad(format!("entry {pos} repeats time index {k}"));
        }
        seen[k] = true;
    }
    Ok(())
}

/// Strategy tables in one precision (what the kernels and the CPU generators read).
#[derive(Clone, Debug, PartialEq)]
pub struct Tables<T> {
    /// `COEFS` coefficients per step: wl, wr, sd, θ−ℓ, r−θ.
    pub coef: Vec<T>,
    /// `INDICES` indices per step: left, right, store, z, out, flags.
    pub idx: Vec<u32>,
    /// C, row-major `d × d`.
    pub chol: Vec<T>,
    /// x.
    pub start: Vec<T>,
}

/// The bridge kernels as a family: a [`Precision`]'s `Element<BridgeKernels>` picks its own.
pub(crate) enum BridgeKernels {}

/// f32 or f64 generation.
#[allow(private_bounds)] // sealed: `Element` picks the GPU kernels of each precision
pub trait Precision:
    Real + crate::DeviceValue + Plain + Element<BridgeKernels> + Default + Send + Sync + std::fmt::Debug + 'static
{
    /// The plan's tables in this precision.
    fn tables(plan: &Plan) -> &Tables<Self>;
    /// "f32" or "f64".
    const NAME: &'static str;
}

impl Precision for f32 {
    fn tables(plan: &Plan) -> &Tables<f32> {
        &plan.t32
    }
    const NAME: &'static str = "f32";
}

impl Precision for f64 {
    fn tables(plan: &Plan) -> &Tables<f64> {
        &plan.t64
    }
    const NAME: &'static str = "f64";
}

/// A validated problem with its execution strategy: reusable across any number of
/// generations (as long as times and order do not change).
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    n: usize,
    dims: usize,
    slots: usize,
    grid: Vec<f64>,
    order: Vec<usize>,
    chol: Vec<f64>,
    exec: Vec<Step<f64>>,
    t32: Tables<f32>,
    t64: Tables<f64>,
}

impl Plan {
    /// Validates `spec` and builds the strategy. Errors (`InvalidInput`/`TooLarge`, nothing
    /// else happens): N = 0; times not finite or not strictly increasing, t0 ≥ t1, T ≤ tN; an
    /// order that is not a permutation of 1..=N; d = 0 or d > 8; x not finite; Σ not
    /// symmetric or not positive definite, C not lower triangular with a positive diagonal.
    pub fn new(spec: &BridgeSpec) -> Result<Plan> {
        let n = spec.times.len();
        if n == 0 {
            return Err(Error::InvalidInput {
                what: "time points",
                why: "N = 0: give at least one interior time t1 with t0 < t1 < T".into(),
            });
        }
        let mut grid = Vec::with_capacity(n + 2);
        grid.push(spec.t0);
        grid.extend_from_slice(&spec.times);
        grid.push(spec.t_end);
        let name = |g: usize| match g {
            0 => "t0".to_string(),
            g if g == n + 1 => "T".to_string(),
            g => format!("t{g}"),
        };
        for (g, &t) in grid.iter().enumerate() {
            if !t.is_finite() {
                return Err(Error::InvalidInput {
                    what: "time points",
                    why: format!("{} = {t} is not finite", name(g)),
                });
            }
        }
        for g in 1..grid.len() {
            if grid[g] <= grid[g - 1] {
                return Err(Error::InvalidInput {
                    what: "time points",
                    why: format!(
                        "{} = {} is not after {} = {}; times must satisfy t0 < t1 < … < tN < T",
                        name(g),
                        grid[g],
                        name(g - 1),
                        grid[g - 1]
                    ),
                });
            }
        }
        check_indices(n, &spec.order, true)?;
        let d = spec.start.len();
        if d == 0 {
            return Err(Error::InvalidInput { what: "dimension", why: "d = 0: the start value x is empty".into() });
        }
        if d > MAX_DIMS {
            return Err(Error::TooLarge { what: "dimension d", value: d as u64, max: MAX_DIMS as u64 });
        }
        if let Some(k) = spec.start.iter().position(|v| !v.is_finite()) {
            return Err(Error::InvalidInput {
                what: "start value",
                why: format!("x[{k}] = {} is not finite", spec.start[k]),
            });
        }
        let chol = cholesky(&spec.noise, d)?;
        // Rows and slot indices are u32 on the device.
        if (n as u64 + 1) * d as u64 > u32::MAX as u64 / 2 {
            return Err(Error::TooLarge {
                what: "(N+1)·d rows per path",
                value: (n as u64 + 1) * d as u64,
                max: u32::MAX as u64 / 2,
            });
        }
        let (exec, slots) = strategy(&grid, &spec.order);
        // Each precision's coefficients are the f64 ones rounded to it, with the reciprocals
        // for `increment` computed from the rounded divisors (`Step::round`).
        let idx: Vec<u32> = exec.iter().flat_map(|s| s.indices()).collect();
        let t64 = Tables {
            coef: exec.iter().flat_map(|s| s.round::<f64>().coefs()).collect(),
            idx: idx.clone(),
            chol: chol.clone(),
            start: spec.start.clone(),
        };
        let t32 = Tables {
            coef: exec.iter().flat_map(|s| s.round::<f32>().coefs()).collect(),
            idx,
            chol: chol.iter().map(|&c| c as f32).collect(),
            start: spec.start.iter().map(|&c| c as f32).collect(),
        };
        Ok(Plan { n, dims: d, slots, grid, order: spec.order.clone(), chol, exec, t32, t64 })
    }

    /// N, the number of interior times.
    pub fn interior(&self) -> usize {
        self.n
    }

    /// Steps per path (N + 1: the interior times and T).
    pub fn steps(&self) -> usize {
        self.n + 1
    }

    /// The dimension d.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Rows per path in the normal and output buffers: (N + 1)·d.
    pub fn rows(&self) -> usize {
        (self.n + 1) * self.dims
    }

    /// The strategy's maximum stack depth: live values (d-vectors) at once, t0 included.
    pub fn stack_slots(&self) -> usize {
        self.slots
    }

    /// The times t0, t1, …, tN, T.
    pub fn grid(&self) -> &[f64] {
        &self.grid
    }

    /// The user's order (1-based).
    pub fn order(&self) -> &[usize] {
        &self.order
    }

    /// C (row-major, lower triangular), f64.
    pub fn cholesky(&self) -> &[f64] {
        &self.chol
    }

    /// The execution strategy in f64 (in execution order).
    pub fn exec(&self) -> &[Step<f64>] {
        &self.exec
    }

    /// The tables in precision `T`.
    pub fn tables<T: Precision>(&self) -> &Tables<T> {
        T::tables(self)
    }

    /// Whether the GPU keeps the stack in shared memory at `block` threads per block
    /// (`slots·d·block ≤ SHARED_STACK`); otherwise it needs a scratch buffer of
    /// `slots·d·paths` elements.
    pub fn stack_in_shared(&self, block: u32) -> bool {
        sh::stack_fits_shared(self.slots, self.dims, block as usize)
    }

    /// The [`LaunchShape`] of a GPU generation of `paths` paths in precision `T` at `block`
    /// threads per block: what the kernels' launch policy is decided from.
    pub fn launch_shape<T: Precision>(&self, block: u32, paths: usize) -> LaunchShape {
        let (steps, dims, slots) = (self.steps(), self.dims, self.slots);
        LaunchShape { steps, dims, slots, block: block as usize, paths, elem: core::mem::size_of::<T>() }
    }

    /// The Philox schedule of this strategy for the fused Philox d = 1 kernels
    /// ([`philox_schedule`] of the rows its steps read): the entries and the word-cache slots
    /// they use. `None` unless d = 1 with at most `TABLE_STEPS` steps and the schedule needs at
    /// most `MAX_CACHE_SLOTS` slots.
    pub fn philox_schedule(&self) -> Option<(Vec<u32>, u32)> {
        if self.dims != 1 || self.steps() > sh::TABLE_STEPS {
            return None;
        }
        let reads: Vec<u32> = self.exec.iter().map(|s| s.z).collect();
        philox_schedule(&reads)
    }
}

/// C from the user's Σ (Cholesky via nalgebra) or C checked.
fn cholesky(noise: &Noise, d: usize) -> Result<Vec<f64>> {
    let (m, what) = match noise {
        Noise::Covariance(m) => (m, "covariance Σ"),
        Noise::Cholesky(m) => (m, "Cholesky factor C"),
    };
    if m.len() != d * d {
        return Err(Error::InvalidInput {
            what,
            why: format!("it has {} entries; a {d}×{d} matrix (row-major) has {}", m.len(), d * d),
        });
    }
    if let Some(i) = m.iter().position(|v| !v.is_finite()) {
        return Err(Error::InvalidInput {
            what,
            why: format!("entry ({}, {}) = {} is not finite", i / d, i % d, m[i]),
        });
    }
    match noise {
        Noise::Covariance(s) => {
            for i in 0..d {
                for j in 0..i {
                    if s[i * d + j] != s[j * d + i] {
                        return Err(Error::InvalidInput {
                            what,
                            why: format!(
                                "it is not symmetric: Σ[{i}][{j}] = {} but Σ[{j}][{i}] = {}",
                                s[i * d + j],
                                s[j * d + i]
                            ),
                        });
                    }
                }
            }
            let sigma = nalgebra::DMatrix::from_row_slice(d, d, s);
            let c = nalgebra::linalg::Cholesky::new(sigma).ok_or(Error::InvalidInput {
                what,
                why: "it is not positive definite (its Cholesky factorisation fails)".into(),
            })?;
            let l = c.l();
            let out: Vec<f64> = (0..d).flat_map(|i| (0..d).map(move |j| (i, j))).map(|(i, j)| l[(i, j)]).collect();
            if out.iter().enumerate().any(|(i, &v)| i / d == i % d && v <= 0.0) {
                return Err(Error::InvalidInput { what, why: "it is not positive definite (a zero pivot)".into() });
            }
            Ok(out)
        }
        Noise::Cholesky(c) => {
            for i in 0..d {
                for j in i + 1..d {
                    if c[i * d + j] != 0.0 {
                        return Err(Error::InvalidInput {
                            what,
                            why: format!(
                                "C[{i}][{j}] = {} above the diagonal; C must be lower triangular",
                                c[i * d + j]
                            ),
                        });
                    }
                }
                if c[i * d + i] <= 0.0 {
                    return Err(Error::InvalidInput {
                        what,
                        why: format!("C[{i}][{i}] = {}; the diagonal must be positive", c[i * d + i]),
                    });
                }
            }
            Ok(c.clone())
        }
    }
}

/// The execution strategy of a valid problem: steps in depth-first order with stack slots, and
/// the maximum stack depth.
fn strategy(grid: &[f64], order: &[usize]) -> (Vec<Step<f64>>, usize) {
    let n = order.len();
    let tt = n + 1; // grid index of T
    // Neighbours in the user's order, and the construction index of every point.
    let mut left = vec![0usize; n + 2];
    let mut right = vec![usize::MAX; n + 2];
    let mut zidx = vec![0u32; n + 2];
    let mut known = BTreeSet::from([0usize, tt]);
    for (i, &theta) in order.iter().enumerate() {
        left[theta] = *known.range(..theta).next_back().unwrap_or(&0);
        right[theta] = *known.range(theta + 1..).next().unwrap_or(&tt);
        zidx[theta] = (i + 1) as u32;
        known.insert(theta);
    }
    // Interval tree: the point splitting (ℓ, r) is a child of whichever end was built later.
    let created = |g: usize| {
        if g == 0 {
            -1i64
        } else if g == tt {
            0
        } else {
            zidx[g] as i64
        }
    };
    let mut lchild = vec![usize::MAX; n + 2];
    let mut rchild = vec![usize::MAX; n + 2];
    for &theta in order {
        let (l, r) = (left[theta], right[theta]);
        if created(l) > created(r) {
            rchild[l] = theta;
        } else {
            lchild[r] = theta;
        }
    }
    // Depth-first, left subtree first.
    let mut exec_order = Vec::with_capacity(n + 1);
    let mut todo = vec![tt];
    while let Some(g) = todo.pop() {
        exec_order.push(g);
        if rchild[g] != usize::MAX {
            todo.push(rchild[g]);
        }
        if lchild[g] != usize::MAX {
            todo.push(lchild[g]);
        }
    }
    // Liveness and slots: a value is live from its step to the last step that reads it.
    let reads = |g: usize| if g == tt { (0, 0) } else { (left[g], right[g]) };
    let mut last_use = vec![usize::MAX; n + 2];
    for (s, &g) in exec_order.iter().enumerate() {
        let (l, r) = reads(g);
        last_use[l] = s;
        last_use[r] = s;
    }
    let mut slot_of = vec![NO_SLOT; n + 2];
    let mut free: BTreeSet<u32> = BTreeSet::new();
    let mut high = 1u32;
    slot_of[0] = 0;
    let mut steps = Vec::with_capacity(n + 1);
    for (s, &g) in exec_order.iter().enumerate() {
        let (l, r) = reads(g);
        let (sl, sr) = (slot_of[l], slot_of[r]);
        for v in [l, r] {
            if last_use[v] == s && slot_of[v] != NO_SLOT {
                free.insert(slot_of[v]);
                slot_of[v] = NO_SLOT;
            }
        }
        let store = if last_use[g] != usize::MAX {
            let slot = match free.pop_first() {
                Some(f) => f,
                None => {
                    high += 1;
                    high - 1
                }
            };
            slot_of[g] = slot;
            slot
        } else {
            NO_SLOT
        };
        let (wl, wr, sd, dl, dr, flags) = if g == tt {
            let flags = if n == 0 { EMIT_LEFT } else { 0 };
            (1.0, 0.0, (grid[tt] - grid[0]).sqrt(), grid[tt] - grid[0], 0.0, flags)
        } else {
            let (wl, wr, sd) = sh::weights(grid[l], grid[g], grid[r]);
            let mut flags = 0;
            if l + 1 == g {
                flags |= EMIT_LEFT;
            }
            if r == g + 1 {
                flags |= EMIT_RIGHT;
            }
            (wl, wr, sd, grid[g] - grid[l], grid[r] - grid[g], flags)
        };
        steps.push(Step {
            wl,
            wr,
            sd,
            dt_left: dl,
            dt_right: dr,
            recip_left: sh::reciprocal(dl),
            recip_right: sh::reciprocal(dr),
            left: sl,
            right: sr,
            store,
            z: if g == tt { 0 } else { zidx[g] },
            out: (g - 1) as u32,
            flags,
        });
    }
    (steps, high as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bisection_matches_the_paper() {
        assert_eq!(bisection_order(12), vec![6, 3, 9, 1, 4, 7, 11, 2, 5, 8, 10, 12]);
    }

    #[test]
    fn first_then_bisection_starts_with_the_given_times() {
        assert_eq!(first_then_bisection(12, &[4]).unwrap(), vec![4, 2, 8, 1, 3, 6, 10, 5, 7, 9, 11, 12]);
    }
}
