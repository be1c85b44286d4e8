//! The Himeno benchmark (himenoBMTxpa.c): Jacobi iteration for Poisson's equation, single
//! precision, on an `mi × mj × mk` grid with `k` contiguous (index `(i·mj + j)·mk + k`).
//!
//! Coefficients as the benchmark sets them: `a = (1, 1, 1, 1/6)`, `b = (0, 0, 0)`,
//! `c = (1, 1, 1)`, `bnd = 1`, `wrk1 = 0`, `p(i, j, k) = i² / (mi − 1)²` (f32 division),
//! `omega = 0.8`. Each interior point does [`FLOPS_PER_POINT`] = 34 operations per iteration
//! (the benchmark's count). lockstep ping-pongs two pressure buffers (both initialised to `p`,
//! so their boundaries agree) instead of copying `wrk2` back: the same values, fewer bytes.
//!
//! `gosa` (Σ ss² over interior points, f32) has three reductions: plain and aggregated atomics
//! (order-dependent) and the deterministic tree of [`gosa_tree`]: level 1 sums each run of 32
//! consecutive `k` of a row (`k = 1 + 32c .. 32c + 32`, missing points count as `+0`) with the
//! warp tree of [`crate::reduce::warp_tree_sum`]; level 2 sums those partials (stored in order
//! of `(i, j, c)`) with [`level2_sum`]: [`LEVEL2_GROUPS`] groups of [`LEVEL2_LANES`] strided
//! sequential sums, each group halved by a tree, then the group sums halved by a tree. Neither
//! level depends on a launch grid.

use crate::reduce::{WARP_SIZE, warp_tree_sum};

/// Relaxation factor.
pub const OMEGA: f32 = 0.8;
/// Floating-point operations per interior point and iteration (the benchmark's count).
pub const FLOPS_PER_POINT: f64 = 34.0;
/// Groups of level 2: group `g` sums the partials `g·LEVEL2_LANES + t + m·LEVEL2_STRIDE`
/// (`t < LEVEL2_LANES`, `m = 0, 1, …`) as [`LEVEL2_LANES`] sequential sums (each from `+0`) that
/// a halving tree joins ([`level2_group_sum`]); a halving tree joins the group sums. On the GPU
/// one block sums a group, and the block finishing the last group joins them, so level 2 of a
/// sweep runs inside the next sweep's launch (was one block of 1024 threads after each sweep:
/// ≈ 11 µs of a ≈ 104 µs sweep at size M on an H100).
pub const LEVEL2_GROUPS: usize = 64;
/// Strided sums (lanes) per level-2 group.
pub const LEVEL2_LANES: usize = 256;
/// Distance between the partials one lane adds: `LEVEL2_GROUPS · LEVEL2_LANES`.
pub const LEVEL2_STRIDE: usize = LEVEL2_GROUPS * LEVEL2_LANES;
/// Bytes each interior point moves per iteration with ping-pong buffers: read `a[4]`, `b[3]`,
/// `c[3]`, `bnd`, `wrk1`, `p` (13 f32; neighbours assumed cached) and write the new `p`.
pub const BYTES_PER_POINT: f64 = 56.0;

/// Most threads per block of the per-thread sweep (`himeno_jacobi`): its launch bounds
/// (`.maxntid`) — the host refuses larger blocks before launching.
pub const SWEEP_MAX_THREADS: u32 = 256;

/// Blocks of [`SWEEP_MAX_THREADS`] per SM the per-thread sweep's registers are allocated for
/// (`.minnctapersm`).
pub const SWEEP_MIN_BLOCKS: u32 = 6;

/// How the Jacobi kernel reduces gosa (the code it switches on).
pub mod gosa_via {
    /// One `atom.add.f32` per interior point into one address.
    pub const PLAIN: u32 = 0;
    /// Warp-aggregated atomics (match variant): one atomic per warp.
    pub const AGGREGATED: u32 = 1;
    /// The deterministic two-level tree (level-1 partials, then the level-2 kernel).
    pub const TREE: u32 = 2;
}

/// Grid extents and the gosa mode, passed to the Jacobi kernel by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    /// Points along i (slowest).
    pub mi: u32,
    /// Points along j.
    pub mj: u32,
    /// Points along k (contiguous).
    pub mk: u32,
    /// One of [`gosa_via`].
    pub gosa_via: u32,
}

/// The benchmark's grid sizes `(name, mi, mj, mk)`.
pub const SIZES: [(&str, u32, u32, u32); 5] =
    [("XS", 65, 33, 33), ("S", 129, 65, 65), ("M", 257, 129, 129), ("L", 513, 257, 257), ("XL", 1025, 513, 513)];

/// The grid of a size name (case-insensitive), or `None`.
pub fn size(name: &str) -> Option<(u32, u32, u32)> {
    SIZES.iter().find(|s| s.0.eq_ignore_ascii_case(name)).map(|s| (s.1, s.2, s.3))
}

/// Interior points `(mi − 2)(mj − 2)(mk − 2)` (zero for a grid without interior).
pub fn interior(mi: u32, mj: u32, mk: u32) -> u64 {
    mi.saturating_sub(2) as u64 * mj.saturating_sub(2) as u64 * mk.saturating_sub(2) as u64
}

/// Level-1 chunks per row: `ceil((mk − 2) / 32)`.
pub fn chunks_per_row(mk: u32) -> u32 {
    mk.saturating_sub(2).div_ceil(WARP_SIZE as u32)
}

/// Initial pressure at row `i`: `i² / (mi − 1)²` in f32, as the benchmark's `mat_set_init`.
#[inline(always)]
pub fn initial_p(i: u32, mi: u32) -> f32 {
    (i * i) as f32 / ((mi - 1) * (mi - 1)) as f32
}

/// The coefficients of one point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coefs {
    /// `a[0..4]`.
    pub a: [f32; 4],
    /// `b[0..3]`.
    pub b: [f32; 3],
    /// `c[0..3]`.
    pub c: [f32; 3],
    /// `bnd`.
    pub bnd: f32,
    /// `wrk1`.
    pub wrk1: f32,
}

/// The benchmark's coefficients (the same at every point).
pub const BENCHMARK_COEFS: Coefs =
    Coefs { a: [1.0, 1.0, 1.0, (1.0f64 / 6.0) as f32], b: [0.0; 3], c: [1.0; 3], bnd: 1.0, wrk1: 0.0 };

/// One Jacobi update, in the benchmark's evaluation order: returns `(ss, p + omega·ss)`.
/// `p(di, dj, dk)` reads the pressure at offset `(di, dj, dk)` from the point.
#[inline(always)]
pub fn jacobi_point(p: impl Fn(isize, isize, isize) -> f32, k: &Coefs, omega: f32) -> (f32, f32) {
    let s0 = k.a[0] * p(1, 0, 0)
        + k.a[1] * p(0, 1, 0)
        + k.a[2] * p(0, 0, 1)
        + k.b[0] * (p(1, 1, 0) - p(1, -1, 0) - p(-1, 1, 0) + p(-1, -1, 0))
        + k.b[1] * (p(0, 1, 1) - p(0, -1, 1) - p(0, 1, -1) + p(0, -1, -1))
        + k.b[2] * (p(1, 0, 1) - p(-1, 0, 1) - p(1, 0, -1) + p(-1, 0, -1))
        + k.c[0] * p(-1, 0, 0)
        + k.c[1] * p(0, -1, 0)
        + k.c[2] * p(0, 0, -1)
        + k.wrk1;
    let centre = p(0, 0, 0);
    let ss = (s0 * k.a[3] - centre) * k.bnd;
    (ss, centre + omega * ss)
}

/// Lane `t` of level-2 group `g`: `partials[g·LEVEL2_LANES + t + m·LEVEL2_STRIDE]` summed in
/// order of `m`, from `+0`.
#[inline(always)]
pub fn level2_lane_sum(partials: &[f32], g: usize, t: usize) -> f32 {
    let mut s = 0.0f32;
    let mut i = g * LEVEL2_LANES + t;
    while i < partials.len() {
        s += partials[i];
        i += LEVEL2_STRIDE;
    }
    s
}

/// Level-2 group `g`'s sum: its [`LEVEL2_LANES`] lane sums ([`level2_lane_sum`]) joined by
/// [`crate::reduce::halving_tree_sum`].
pub fn level2_group_sum(partials: &[f32], g: usize) -> f32 {
    let mut slots = [0.0f32; LEVEL2_LANES];
    for (t, slot) in slots.iter_mut().enumerate() {
        *slot = level2_lane_sum(partials, g, t);
    }
    crate::reduce::halving_tree_sum(&mut slots)
}

/// Level 2 of the deterministic gosa: the [`LEVEL2_GROUPS`] group sums ([`level2_group_sum`])
/// joined by [`crate::reduce::halving_tree_sum`].
pub fn level2_sum(partials: &[f32]) -> f32 {
    let mut groups = [0.0f32; LEVEL2_GROUPS];
    for (g, slot) in groups.iter_mut().enumerate() {
        *slot = level2_group_sum(partials, g);
    }
    crate::reduce::halving_tree_sum(&mut groups)
}

/// Level 1 of the deterministic gosa for one row: the warp-tree sums of `ss²` over chunks of
/// 32 consecutive interior `k` (`ss_row[k − 1]` for `k = 1..mk−1`), missing points `+0`.
pub fn level1_row(ss_row: &[f32], out: &mut [f32]) {
    for (c, o) in out.iter_mut().enumerate() {
        let mut lanes = [0.0f32; WARP_SIZE];
        for (l, lane) in lanes.iter_mut().enumerate() {
            if let Some(&s) = ss_row.get(c * WARP_SIZE + l) {
                *lane = s * s;
            }
        }
        *o = warp_tree_sum(lanes);
    }
}

/// The deterministic gosa of a full sweep from the per-point `ss` in `(i, j, k)` interior
/// order (rows of `mk − 2`).
pub fn gosa_tree(ss: &[f32], mk: u32, partials: &mut [f32]) -> f32 {
    let row = mk.saturating_sub(2) as usize;
    let cpr = chunks_per_row(mk) as usize;
    if row == 0 {
        return 0.0;
    }
    for (r, out) in ss.chunks(row).zip(partials.chunks_mut(cpr)) {
        level1_row(r, out);
    }
    level2_sum(partials)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn sizes_and_counts() {
        assert_eq!(size("m"), Some((257, 129, 129)));
        assert_eq!(size("XL"), Some((1025, 513, 513)));
        assert_eq!(size("XXL"), None);
        assert_eq!(interior(65, 33, 33), 63 * 31 * 31);
        assert_eq!(chunks_per_row(33), 1);
        assert_eq!(chunks_per_row(34), 1);
        assert_eq!(chunks_per_row(35), 2);
        assert_eq!(chunks_per_row(2), 0);
    }

    #[test]
    fn initial_pressure_is_quadratic_in_i() {
        assert_eq!(initial_p(0, 65), 0.0);
        assert_eq!(initial_p(64, 65), 1.0);
        assert_eq!(initial_p(32, 65), 0.25);
    }

    #[test]
    fn point_on_a_uniform_field_is_still() {
        let (ss, new) = jacobi_point(|_, _, _| 0.5, &BENCHMARK_COEFS, OMEGA);
        // s0 = 6 · 0.5 = 3, 3 · f32(1/6) − 0.5 is one rounding step from zero at most.
        assert!(ss.abs() < 1e-7, "{ss}");
        assert!((new - 0.5).abs() < 1e-7);
    }

    #[test]
    fn level2_of_ones_counts() {
        assert_eq!(level2_sum(&[1.0; 1000]), 1000.0);
        assert_eq!(level2_sum(&[]), 0.0);
        // Past one stride: lanes add several partials, every group is busy.
        let n = 3 * LEVEL2_STRIDE + 12_345;
        assert_eq!(level2_sum(&vec![1.0; n]), n as f32);
        assert_eq!(level2_group_sum(&vec![1.0; n], 0), (3 * LEVEL2_LANES + LEVEL2_LANES) as f32);
        assert_eq!(level2_group_sum(&vec![1.0; n], LEVEL2_GROUPS - 1), (3 * LEVEL2_LANES) as f32);
    }

    #[test]
    fn level2_order_is_the_documented_one() {
        // Every partial is added exactly once: integers sum exactly.
        let n = 2 * LEVEL2_STRIDE + 777;
        let v: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
        let exact: u64 = (0..n).map(|i| (i % 1000) as u64).sum();
        assert_eq!(level2_sum(&v), exact as f32);
        // The order: lane sums, group trees, a tree of groups, written out by hand.
        let v: Vec<f32> = (0..n).map(|i| 1.0 + (i as f32) * 1.0e-3).collect();
        let mut groups = [0.0f32; LEVEL2_GROUPS];
        for (g, gs) in groups.iter_mut().enumerate() {
            let mut slots = [0.0f32; LEVEL2_LANES];
            for (t, slot) in slots.iter_mut().enumerate() {
                let mut m = 0;
                while g * LEVEL2_LANES + t + m * LEVEL2_STRIDE < n {
                    *slot += v[g * LEVEL2_LANES + t + m * LEVEL2_STRIDE];
                    m += 1;
                }
            }
            *gs = crate::reduce::halving_tree_sum(&mut slots);
        }
        let want = crate::reduce::halving_tree_sum(&mut groups);
        assert_eq!(level2_sum(&v).to_bits(), want.to_bits());
        // Within n·ε·Σ of the f64 sum.
        let f64_sum: f64 = v.iter().map(|&x| x as f64).sum();
        let err = (level2_sum(&v) as f64 - f64_sum).abs();
        assert!(err <= n as f64 * f32::EPSILON as f64 * f64_sum, "{err}");
    }
}
