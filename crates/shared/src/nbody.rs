//! N-body gravity integrated with classic RK4: the pairwise term, the stage positions and the
//! RK4 combination, written once for the GPU kernels and the CPU reference.
//!
//! **Model.** Body `i` at `r_i` with mass `m_i` feels
//! `a_i = G · Σ_{j ≠ i} m_j (r_j − r_i) / (|r_j − r_i|² + ε²)^{3/2}` (Plummer softening ε ≥ 0).
//! The `j = i` term is always skipped ([`interacts`]). With ε = 0, two *distinct* bodies at the
//! same point give `r² = 0`, `m / 0 = ∞` and `0 · ∞ = NaN`: their accelerations, and from then
//! on their positions and velocities, are NaN. That is the documented outcome (tested); nothing
//! else is undefined.
//!
//! **Exact mode** ([`accumulate_exact`]): separate multiplies and adds (never contracted),
//! correctly rounded `sqrt` and division, the `j` sum in increasing `j` from `+0`. Every
//! kernel that claims exactness (global memory or shared-memory tiles) sums in this order, so
//! they all equal the CPU bit for bit.
//!
//! **RK4** on `y = (x, v)`, `y' = (v, a(x))`, step `h` (digest eqs. 5.16–5.22):
//! `k1 = (v, a(x))`, `k2 = (v + h/2·k1v, a(x + h/2·k1x))`, `k3 = (v + h/2·k2v, a(x + h/2·k2x))`,
//! `k4 = (v + h·k3v, a(x + h·k3x))`, `y ← y + h/6·(((k1 + 2k2) + 2k3) + k4)`.
//! Only the velocity parts `kv_s = a(stage position s)` are stored; the position parts are
//! recomputed from them with the same operations wherever needed.

use core::ops::{Add, Div, Mul, Sub};

/// The floating-point types the N-body code runs in (f32, f64).
pub trait Real:
    Copy + PartialEq + PartialOrd + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    /// `+0`.
    const ZERO: Self;
    /// `2`.
    const TWO: Self;
    /// `6`.
    const SIX: Self;
    /// Correctly rounded square root (`sqrt.rn` on nvptx, `sqrtss`/`sqrtsd` on x86).
    fn sqrt(self) -> Self;
    /// Fused `self·a + b`, one rounding (used by fast mode only).
    fn mul_add(self, a: Self, b: Self) -> Self;
}

/// `Real` for one float type: its constants, and `sqrt`/`mul_add` from [`crate::fmath`].
macro_rules! real {
    ($($t:ident),*) => {$(
        impl Real for $t {
            const ZERO: Self = 0.0;
            const TWO: Self = 2.0;
            const SIX: Self = 6.0;
            #[inline(always)]
            fn sqrt(self) -> Self {
                crate::fmath::$t::sqrt(self)
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                crate::fmath::$t::mul_add(self, a, b)
            }
        }
    )*};
}
real!(f32, f64);

/// Four components, 16-byte aligned so the GPU loads a body in one or two vector loads.
/// Positions carry the mass in `w`; velocities and accelerations have `w = 0`.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct V4<T> {
    /// x component.
    pub x: T,
    /// y component.
    pub y: T,
    /// z component.
    pub z: T,
    /// Mass (positions) or 0.
    pub w: T,
}

impl<T: Real> V4<T> {
    /// `(x, y, z, w)`.
    #[inline(always)]
    pub fn new(x: T, y: T, z: T, w: T) -> Self {
        V4 { x, y, z, w }
    }

    /// `self + s·d` on x, y, z (separate multiply and add); `w` is kept.
    #[inline(always)]
    pub fn add_scaled(self, s: T, d: V4<T>) -> Self {
        V4 { x: self.x + s * d.x, y: self.y + s * d.y, z: self.z + s * d.z, w: self.w }
    }

    /// `self + other` on x, y, z; `w` is kept.
    #[inline(always)]
    pub fn plus(self, d: V4<T>) -> Self {
        V4 { x: self.x + d.x, y: self.y + d.y, z: self.z + d.z, w: self.w }
    }
}

/// Whether body `j` acts on body `i`: every body but itself.
#[inline(always)]
pub fn interacts(i: u32, j: u32) -> bool {
    i != j
}

/// Exact pair term: `acc + m_j·d / (r²·r)` with `d = r_j − r_i`, `r² = ((dx² + dy²) + dz²) + ε²`,
/// `r = sqrt(r²)` (correctly rounded), one correctly rounded division. No FMA.
/// Composed of [`exact_diff_r2`], `sqrt`, [`exact_scale`] and [`exact_add`], which kernels may
/// also call phase by phase for several `j` at once (same operations, same `j` order, same bits).
#[inline(always)]
pub fn accumulate_exact<T: Real>(acc: [T; 3], xi: V4<T>, bj: V4<T>, eps2: T) -> [T; 3] {
    let (d, r2) = exact_diff_r2(xi, bj, eps2);
    let s = exact_scale(bj.w, r2, r2.sqrt());
    exact_add(acc, d, s)
}

/// Exact term, phase 1: `d = r_j − r_i` and `r² = ((dx² + dy²) + dz²) + ε²`.
#[inline(always)]
pub fn exact_diff_r2<T: Real>(xi: V4<T>, bj: V4<T>, eps2: T) -> ([T; 3], T) {
    let dx = bj.x - xi.x;
    let dy = bj.y - xi.y;
    let dz = bj.z - xi.z;
    ([dx, dy, dz], dx * dx + dy * dy + dz * dz + eps2)
}

/// Exact term, phase 2: `s = m_j / (r²·r)` with `r = sqrt(r²)` supplied (correctly rounded).
#[inline(always)]
pub fn exact_scale<T: Real>(m: T, r2: T, r: T) -> T {
    m / exact_denominator(r2, r)
}

/// The divisor of [`exact_scale`], `r²·r` (for callers that divide by their own means).
#[inline(always)]
pub fn exact_denominator<T: Real>(r2: T, r: T) -> T {
    r2 * r
}

/// Exact term, phase 3: `acc + d·s` per component.
#[inline(always)]
pub fn exact_add<T: Real>(acc: [T; 3], d: [T; 3], s: T) -> [T; 3] {
    [acc[0] + d[0] * s, acc[1] + d[1] * s, acc[2] + d[2] * s]
}

/// Fast pair term with FMA and a caller-supplied reciprocal square root (on the GPU the
/// `rsqrt.approx` instruction): `acc + m_j·d·rsqrt(r²)³`. Not bit-reproducible; checked against
/// the exact reference with a tolerance.
#[inline(always)]
pub fn accumulate_fast<T: Real>(acc: [T; 3], xi: V4<T>, bj: V4<T>, eps2: T, rsqrt: impl Fn(T) -> T) -> [T; 3] {
    let (d, r2) = fast_diff_r2(xi, bj, eps2);
    fast_add(acc, d, r2, bj.w, rsqrt)
}

/// Fast term, second phase: `acc + d·m·rsqrt(r²)³` from [`fast_diff_r2`]'s `d` and `r²`.
#[inline(always)]
pub fn fast_add<T: Real>(acc: [T; 3], d: [T; 3], r2: T, m: T, rsqrt: impl Fn(T) -> T) -> [T; 3] {
    let inv = rsqrt(r2);
    let s = m * (inv * inv * inv);
    [d[0].mul_add(s, acc[0]), d[1].mul_add(s, acc[1]), d[2].mul_add(s, acc[2])]
}

/// Fast term, first phase: `d = r_j − r_i` and `r² = fma(dx, dx, fma(dy, dy, fma(dz, dz, ε²)))`
/// (what [`accumulate_fast`] hands to its `rsqrt`).
#[inline(always)]
pub fn fast_diff_r2<T: Real>(xi: V4<T>, bj: V4<T>, eps2: T) -> ([T; 3], T) {
    let dx = bj.x - xi.x;
    let dy = bj.y - xi.y;
    let dz = bj.z - xi.z;
    ([dx, dy, dz], dx.mul_add(dx, dy.mul_add(dy, dz.mul_add(dz, eps2))))
}

/// `G · acc` as an acceleration vector (`w = 0`).
#[inline(always)]
pub fn scale_accel<T: Real>(acc: [T; 3], g: T) -> V4<T> {
    V4 { x: g * acc[0], y: g * acc[1], z: g * acc[2], w: T::ZERO }
}

/// The acceleration of body `i` (at `xi`) from bodies `0..n` in increasing `j`, `body(j)` giving
/// body `j`'s stage position and mass, `term` the pair term ([`accumulate_exact`] or a fast one).
#[inline(always)]
pub fn accel_with<T: Real>(
    i: u32,
    xi: V4<T>,
    n: u32,
    body: impl Fn(u32) -> V4<T>,
    eps2: T,
    g: T,
    term: impl Fn([T; 3], V4<T>, V4<T>, T) -> [T; 3],
) -> V4<T> {
    let mut acc = [T::ZERO; 3];
    let mut j = 0;
    while j < n {
        if interacts(i, j) {
            acc = term(acc, xi, body(j), eps2);
        }
        j += 1;
    }
    scale_accel(acc, g)
}

/// The exact acceleration of body `i`: [`accel_with`] and [`accumulate_exact`]. The
/// global-memory kernel and the CPU both call this; the tiled kernel walks the same `j` order.
#[inline(always)]
pub fn accel_exact<T: Real>(i: u32, xi: V4<T>, n: u32, body: impl Fn(u32) -> V4<T>, eps2: T, g: T) -> V4<T> {
    accel_with(i, xi, n, body, eps2, g, accumulate_exact)
}

/// The largest pair-sum split shift: at most `2^5 = 32` lanes (one warp) share a body.
pub const MAX_SPLIT_SHIFT: u32 = 5;

/// The pair-sum split of an `n`-body system: body `i`'s sum runs over `S = 2^split_shift(n)`
/// lanes. `S = 32` up to `n = 8192`, then halving as `n` doubles (`n` rounded up to a power of
/// two): 16 up to 16384, 8 up to 32768, 4 up to 65536, 2 up to 131072 and 1 from 131073 on.
/// It depends on `n` alone (never on the GPU), so the CPU twin and every launch agree: the
/// split is part of the summation order, hence of the bits ([`accel_split`]). The rule keeps
/// `n·S` at about 2^18 threads while `n` is small (enough to fill a large GPU) and one lane
/// per body once `n` alone is.
#[inline(always)]
pub fn split_shift(n: u32) -> u32 {
    let log = n.max(1).next_power_of_two().trailing_zeros();
    let s = 18u32.saturating_sub(log);
    if s > MAX_SPLIT_SHIFT { MAX_SPLIT_SHIFT } else { s }
}

/// Lane `lane`'s share of body `i`'s pair sum under split `S = 2^shift`: the pair terms of
/// `j = lane, lane + S, lane + 2S, … < n` in increasing `j` (skipping `j = i`) from `+0`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn lane_sum<T: Real>(
    i: u32,
    xi: V4<T>,
    n: u32,
    lane: u32,
    shift: u32,
    body: impl Fn(u32) -> V4<T>,
    eps2: T,
    term: impl Fn([T; 3], V4<T>, V4<T>, T) -> [T; 3],
) -> [T; 3] {
    let mut acc = [T::ZERO; 3];
    let mut j = lane;
    while j < n {
        if interacts(i, j) {
            acc = term(acc, xi, body(j), eps2);
        }
        j += 1 << shift;
    }
    acc
}

/// `lower + upper` per component: one node of the lanes' combining tree (the lower lane's
/// partial sum always the left operand).
#[inline(always)]
pub fn lane_add<T: Real>(lower: [T; 3], upper: [T; 3]) -> [T; 3] {
    [lower[0] + upper[0], lower[1] + upper[1], lower[2] + upper[2]]
}

/// The split acceleration of body `i`: the `S = 2^shift` lane sums ([`lane_sum`]), combined by
/// a fixed binary tree — level `m = 1, 2, 4, …, S/2`, lane `l` (a multiple of `2m`) takes
/// `lane_add(acc[l], acc[l + m])` — then scaled by `G`. On the GPU the levels are warp
/// butterflies (`shfl.bfly` by `m`, the lower lane's value on the left), which give every lane
/// of the group the same value as this loop. The pair term is [`accumulate_exact`]; with
/// `shift` = [`split_shift`]`(n)` this is what the CPU twin and every exact kernel compute, and
/// `shift = 0` is [`accel_exact`] exactly.
#[inline(always)]
pub fn accel_split<T: Real>(
    i: u32,
    xi: V4<T>,
    n: u32,
    shift: u32,
    body: impl Fn(u32) -> V4<T>,
    eps2: T,
    g: T,
) -> V4<T> {
    let lanes = 1usize << shift;
    let mut acc = [[T::ZERO; 3]; 1 << MAX_SPLIT_SHIFT];
    let mut l = 0;
    while l < lanes {
        acc[l] = lane_sum(i, xi, n, l as u32, shift, &body, eps2, accumulate_exact);
        l += 1;
    }
    let mut m = 1;
    while m < lanes {
        let mut l = 0;
        while l < lanes {
            acc[l] = lane_add(acc[l], acc[l + m]);
            l += 2 * m;
        }
        m *= 2;
    }
    scale_accel(acc[0], g)
}

/// RK4 step constants derived from `h` the same way on both sides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rk4<T> {
    /// `h`.
    pub h: T,
    /// `h / 2`.
    pub half: T,
    /// `h / 6`.
    pub sixth: T,
}

impl<T: Real> Rk4<T> {
    /// Constants for step `h`.
    #[inline(always)]
    pub fn new(h: T) -> Self {
        Rk4 { h, half: h / T::TWO, sixth: h / T::SIX }
    }
}

/// Number of force evaluations (stages) per RK4 step.
pub const STAGES: u32 = 4;

/// The position at which stage `next` (1, 2 or 3) evaluates forces, from the state `(x, v)` and
/// `kv = a(stage position next−2)` (stage 1 does not use it):
/// stage 1: `x + h/2·k1x = x + h/2·v`; stage 2: `x + h/2·k2x = x + h/2·(v + h/2·kv1)`;
/// stage 3: `x + h·k3x = x + h·(v + h/2·kv2)`. The mass in `x.w` is carried along.
#[inline(always)]
pub fn stage_position<T: Real>(next: u32, x: V4<T>, v: V4<T>, kv: V4<T>, c: Rk4<T>) -> V4<T> {
    match next {
        1 => x.add_scaled(c.half, v),
        2 => x.add_scaled(c.half, v.add_scaled(c.half, kv)),
        _ => x.add_scaled(c.h, v.add_scaled(c.half, kv)),
    }
}

/// The RK4 update from `(x, v)` and the four stage accelerations:
/// `x + h/6·(((v + 2·k2x) + 2·k3x) + k4x)` with `k2x = v + h/2·kv1`, `k3x = v + h/2·kv2`,
/// `k4x = v + h·kv3`, and `v + h/6·(((kv1 + 2·kv2) + 2·kv3) + kv4)`.
#[inline(always)]
pub fn combine<T: Real>(x: V4<T>, v: V4<T>, kv: [V4<T>; 4], c: Rk4<T>) -> (V4<T>, V4<T>) {
    let k2x = v.add_scaled(c.half, kv[0]);
    let k3x = v.add_scaled(c.half, kv[1]);
    let k4x = v.add_scaled(c.h, kv[2]);
    let sx = v.add_scaled(T::TWO, k2x).add_scaled(T::TWO, k3x).plus(k4x);
    let sv = kv[0].add_scaled(T::TWO, kv[1]).add_scaled(T::TWO, kv[2]).plus(kv[3]);
    (x.add_scaled(c.sixth, sx), v.add_scaled(c.sixth, sv))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_term_of_unit_distance_is_the_mass() {
        let a = accumulate_exact([0.0f64; 3], V4::new(0.0, 0.0, 0.0, 1.0), V4::new(1.0, 0.0, 0.0, 3.0), 0.0);
        assert_eq!(a, [3.0, 0.0, 0.0]);
        let b = accumulate_exact([0.0f32; 3], V4::new(0.0, 0.0, 0.0, 1.0), V4::new(0.0, -2.0, 0.0, 4.0), 0.0);
        assert_eq!(b, [0.0, -1.0, 0.0]); // 4·(−2)/8
    }

    #[test]
    fn coincident_bodies_without_softening_give_nan_and_softening_cures_it() {
        let p = V4::new(1.0f64, 2.0, 3.0, 1.0);
        let a = accumulate_exact([0.0; 3], p, p, 0.0);
        assert!(a.iter().all(|v| v.is_nan()), "{a:?}");
        let a = accumulate_exact([0.0; 3], p, p, 0.01);
        assert_eq!(a, [0.0; 3]);
        assert!(!interacts(5, 5) && interacts(5, 6));
    }

    #[test]
    fn exact_and_fast_terms_agree_closely() {
        let xi = V4::new(0.1f64, -0.2, 0.3, 1.0);
        let bj = V4::new(-0.7f64, 0.4, 0.9, 2.5);
        let e = accumulate_exact([0.5; 3], xi, bj, 1e-3);
        let f = accumulate_fast([0.5; 3], xi, bj, 1e-3, |r2: f64| 1.0 / r2.sqrt());
        for k in 0..3 {
            assert!((e[k] - f[k]).abs() < 1e-14, "{e:?} {f:?}");
        }
    }

    #[test]
    fn rk4_is_exact_for_constant_acceleration() {
        // x(t) = x0 + v0 t + a t²/2 is a cubic-free polynomial: RK4 reproduces it exactly here.
        let c = Rk4::new(1.5f64); // h/2 and h/6 exact
        let (x, v) = (V4::new(1.0, 0.0, 0.0, 7.0), V4::new(0.0, 2.0, 0.0, 0.0));
        let g = V4::new(0.0, 0.0, -4.0, 0.0);
        let (x1, v1) = combine(x, v, [g; 4], c);
        assert_eq!(x1, V4::new(1.0, 3.0, -4.5, 7.0)); // x + h·v + h²/2·g
        assert_eq!(v1, V4::new(0.0, 2.0, -6.0, 0.0));
        assert_eq!(stage_position(1, x, v, g, c), V4::new(1.0, 1.5, 0.0, 7.0));
        assert_eq!(stage_position(2, x, v, g, c), V4::new(1.0, 1.5, -2.25, 7.0));
        assert_eq!(stage_position(3, x, v, g, c), V4::new(1.0, 3.0, -4.5, 7.0));
    }

    #[test]
    fn split_shift_follows_the_documented_table() {
        for (n, s) in [(1, 5), (2, 5), (1024, 5), (8192, 5), (8193, 4), (16384, 4), (32768, 3), (65536, 2)] {
            assert_eq!(split_shift(n), s, "n = {n}");
        }
        for (n, s) in [(131072, 1), (131073, 0), (262144, 0), (1 << 30, 0)] {
            assert_eq!(split_shift(n), s, "n = {n}");
        }
    }

    #[test]
    fn split_sum_is_the_lane_tree_and_shift_zero_is_the_plain_sum() {
        let bodies: [V4<f64>; 7] =
            core::array::from_fn(|j| V4::new(j as f64 * 0.7 - 1.0, (j * j) as f64 * 0.1, 0.3, 1.0 + j as f64));
        let body = |j: u32| bodies[j as usize];
        let plain = accel_exact(2, bodies[2], 7, body, 1e-3, 1.5);
        assert_eq!(accel_split(2, bodies[2], 7, 0, body, 1e-3, 1.5), plain);
        // S = 4: lanes {0, 4}, {1, 5}, {6} (2 skipped), {3}; tree ((l0 + l1) + (l2 + l3)).
        let lane =
            |js: &[u32]| js.iter().fold([0.0; 3], |acc, &j| accumulate_exact(acc, bodies[2], bodies[j as usize], 1e-3));
        let tree = lane_add(lane_add(lane(&[0, 4]), lane(&[1, 5])), lane_add(lane(&[6]), lane(&[3])));
        assert_eq!(accel_split(2, bodies[2], 7, 2, body, 1e-3, 1.5), scale_accel(tree, 1.5));
        // More lanes than bodies: empty lanes add +0.
        let s32 = accel_split(2, bodies[2], 7, 5, body, 1e-3, 1.5);
        assert!((s32.x - plain.x).abs() < 1e-12 && (s32.y - plain.y).abs() < 1e-12);
    }

    #[test]
    fn accel_skips_self_and_sums_in_j_order() {
        let bodies = [V4::new(0.0f32, 0.0, 0.0, 1.0), V4::new(1.0, 0.0, 0.0, 1.0), V4::new(-2.0, 0.0, 0.0, 8.0)];
        let a = accel_exact(0, bodies[0], 3, |j| bodies[j as usize], 0.0, 2.0);
        assert_eq!(a, V4::new(2.0 * (1.0 - 2.0), 0.0, 0.0, 0.0));
    }
}
