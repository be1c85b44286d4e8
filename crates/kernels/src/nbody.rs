//! N-body RK4 stage kernels: global-memory and shared-memory tiled, exact and `_fast`.
//!
//! One launch is one RK4 stage `s ∈ 0..4` for every body `i < n`: it computes
//! `kv_s[i] = a(src)[i]` (positions and masses of stage `s` in `src`), then for `s < 3` stores
//! it in `k[s·n + i]` and writes the next stage position `dst[i]` (from `k[(s−1)·n + i]`)
//! (`lockstep_shared::nbody::stage_position`), and for `s = 3` replaces `x[i]`, `v[i]` by the
//! RK4 combination. Only thread `i` touches `x[i]`, `v[i]`, `k[·n + i]`, `dst[i]`; every thread
//! reads all of `src`, which the launcher guarantees is none of the written buffers.
//!
//! Exact kernels (`nbody_{global,shared}_{f32,f64}`) sum the pair terms in increasing `j` with
//! `accumulate_exact` — the tiled one walks tiles and slots in that same order; it groups four
//! terms and writes out ptxas's `sqrt.rn`/`div.rn` inline paths where they give the same
//! results ([`ExactGroup`]; one range test per group when the tile's masses allow, reduced at
//! the tile's barrier, [`Pair::TILE_CHECK`]) — so both equal the CPU bit for bit. Fast kernels (`..._fast`) use FMA and `rsqrt.approx` (f32: the `.ftz` form, one
//! MUFU.RSQ, with the same results in this term; f64: ptxas expands it to MUFU.RSQ64H plus a
//! refinement, so no Newton step of ours; where four terms are grouped and their `r²` are
//! positive normals, the same sequence written out without ptxas's slow-path call). The tiled
//! kernels stage the tile with `st.shared`/`ld.shared` on 32-bit shared addresses (SASS `LDS.128`, the device
//! prelude's `shared_addr` and `ld_shared_v4_*`/`st_shared_v4_*`).
//!
//! Split kernels (`nbody_split_{f32,f64}{,_fast}`, [`split_stage`]) sum each body's pairs over
//! `S = 2^shift` lanes (`lockstep_shared::nbody::accel_split`: lane `l` takes `j ≡ l mod S`,
//! the lanes combine by a fixed tree of warp butterflies); the launcher uses them whenever
//! `split_shift(N) > 0`, for a whole system and for a rank's bodies alike. The kernels above
//! are the `S = 1` case, unchanged.

use lockstep_cuda_std::math::{
    div_rn_f32_inline, div_rn_f32_inline_operand, div_rn_f32_inline_range, div_rn_f64_inline,
    div_rn_f64_inline_operand, div_rn_f64_inline_range, nbody_r2_inline_range_f32, nbody_r2_inline_range_f64,
    positive_normal_f64, rsqrt_approx_f64, rsqrt_approx_f64_normal, rsqrt_approx_ftz_f32, sqrt_rn_f32_inline,
    sqrt_rn_f32_inline_range, sqrt_rn_f64_inline, sqrt_rn_f64_inline_range,
};
use lockstep_cuda_std::prelude::*;
use lockstep_cuda_std::warp::WarpShuffleValue;
use lockstep_shared::nbody::{
    Real, Rk4, V4, accel_with, accumulate_exact, accumulate_fast, combine, exact_add, exact_denominator, exact_diff_r2,
    fast_add, fast_diff_r2, interacts, lane_add, scale_accel, stage_position,
};

/// Bodies per shared-memory tile at most (= the largest block size).
pub(crate) const MAX_TILE: usize = 1024;

/// A body in shared memory at a 32-bit shared address, 16-byte aligned.
pub(crate) trait TileIo: Real {
    /// Reads the body at `addr`.
    ///
    /// # Safety
    /// `addr` is a 16-byte aligned shared address inside this block's tile.
    unsafe fn load(addr: u32) -> V4<Self>;
    /// Writes `b` at `addr`.
    ///
    /// # Safety
    /// As [`TileIo::load`].
    unsafe fn store(addr: u32, b: V4<Self>);
}

impl TileIo for f32 {
    #[inline(always)]
    unsafe fn load(addr: u32) -> V4<f32> {
        // SAFETY: the caller's contract.
        let [x, y, z, w] = unsafe { ld_shared_v4_f32(addr) };
        V4 { x, y, z, w }
    }
    #[inline(always)]
    unsafe fn store(addr: u32, b: V4<f32>) {
        // SAFETY: the caller's contract.
        unsafe { st_shared_v4_f32(addr, [b.x, b.y, b.z, b.w]) };
    }
}

impl TileIo for f64 {
    #[inline(always)]
    unsafe fn load(addr: u32) -> V4<f64> {
        // SAFETY: the caller's contract.
        let [x, y, z, w] = unsafe { ld_shared_v4_f64(addr) };
        V4 { x, y, z, w }
    }
    #[inline(always)]
    unsafe fn store(addr: u32, b: V4<f64>) {
        // SAFETY: the caller's contract.
        unsafe { st_shared_v4_f64(addr, [b.x, b.y, b.z, b.w]) };
    }
}

/// A pair term.
pub(crate) trait Pair<T: Real> {
    /// Whether the tile walk feeds four slots at a time to [`Pair::term4`].
    const GROUPED: bool = false;
    /// The same for the split kernels' strided walk, whose runtime stride ptxas does not
    /// unroll by itself: f32 fast terms too (four sequential terms per iteration).
    const SPLIT_GROUPED: bool = Self::GROUPED;
    /// The same for the waiting split kernels (`_pdl_`, [`split_stage`] with `EARLY`), which run
    /// one block per SM, so that more registers cost them no occupancy.
    const WAITING_GROUPED: bool = Self::SPLIT_GROUPED;
    /// Whether the shared kernels' walk runs its groups of four up to a precomputed end (one
    /// equality test per group) rather than testing for four more slots.
    const GROUPS_TO_END: bool = false;
    /// Whether the tiled stages reduce [`Pair::tile_check`] over each staged tile (one
    /// `bar.red.and.pred` in place of the barrier after the tile's stores) for [`Pair::term4`].
    const TILE_CHECK: bool = false;
    /// What [`Pair::term4`] may assume of a tile whose every body passes it ([`Pair::TILE_CHECK`]).
    #[inline(always)]
    fn tile_check(_b: V4<T>) -> bool {
        true
    }
    fn term(acc: [T; 3], xi: V4<T>, bj: V4<T>, eps2: T) -> [T; 3];
    /// Four consecutive `j` in order (same bits as four [`Pair::term`] calls); `tile_ok`: every
    /// body of their tile passed [`Pair::tile_check`] (always `true` without
    /// [`Pair::TILE_CHECK`]).
    #[inline(always)]
    fn term4(acc: [T; 3], xi: V4<T>, b: [V4<T>; 4], eps2: T, _tile_ok: bool) -> [T; 3] {
        let acc = Self::term(acc, xi, b[0], eps2);
        let acc = Self::term(acc, xi, b[1], eps2);
        let acc = Self::term(acc, xi, b[2], eps2);
        Self::term(acc, xi, b[3], eps2)
    }
}

pub(crate) struct Exact;
pub(crate) struct Fast;

/// The exact term's two correctly rounded operations over a group of four `j`, and where the
/// tiled kernels group them.
pub(crate) trait ExactGroup: Real {
    /// [`Pair::GROUPED`] for the exact term.
    const GROUPED: bool;
    /// [`Pair::SPLIT_GROUPED`] for the exact term.
    const SPLIT_GROUPED: bool;
    /// [`Pair::WAITING_GROUPED`] for the exact term.
    const WAITING_GROUPED: bool;
    /// Whether [`ExactGroup::sqrt_inline`]`(x)` is `x.sqrt()`.
    fn sqrt_inline_range(x: Self) -> bool;
    /// The written-out correctly rounded square root (cuda-std `math.rs`).
    fn sqrt_inline(x: Self) -> Self;
    /// Whether [`ExactGroup::div_inline`]`(a, b)` is `a / b`.
    fn div_inline_range(a: Self, b: Self) -> bool;
    /// The written-out correctly rounded division (cuda-std `math.rs`).
    fn div_inline(a: Self, b: Self) -> Self;
    /// Whether a mass is in [`ExactGroup::div_inline_range`] as the dividend (the tile check).
    fn mass_inline_range(m: Self) -> bool;
    /// Whether four terms with these `r²` and masses in [`ExactGroup::mass_inline_range`] take
    /// both written-out operations: every `√r²` in [`ExactGroup::sqrt_inline_range`] and
    /// `m / (r²·√r²)` in [`ExactGroup::div_inline_range`].
    fn r2_inline_range(r2: [Self; 4]) -> bool;
    /// Four correctly rounded square roots: written out when all four are in range (straight-line
    /// code ptxas interleaves), else `sqrt`.
    #[inline(always)]
    fn sqrt4(x: [Self; 4]) -> [Self; 4] {
        let ok = |i: usize| Self::sqrt_inline_range(x[i]);
        if ok(0) & ok(1) & ok(2) & ok(3) {
            [Self::sqrt_inline(x[0]), Self::sqrt_inline(x[1]), Self::sqrt_inline(x[2]), Self::sqrt_inline(x[3])]
        } else {
            [x[0].sqrt(), x[1].sqrt(), x[2].sqrt(), x[3].sqrt()]
        }
    }
    /// Four correctly rounded quotients: written out when all four are in range, else `/`.
    #[inline(always)]
    fn div4(a: [Self; 4], b: [Self; 4]) -> [Self; 4] {
        let ok = |i: usize| Self::div_inline_range(a[i], b[i]);
        if ok(0) & ok(1) & ok(2) & ok(3) {
            let q = |i: usize| Self::div_inline(a[i], b[i]);
            [q(0), q(1), q(2), q(3)]
        } else {
            [a[0] / b[0], a[1] / b[1], a[2] / b[2], a[3] / b[3]]
        }
    }
}

/// When the group's four operands are in range — always, unless r² is below 2^−970, a mass or
/// `r²·r` outside `[2^−500, 2^500)` (a massless body, ε = 0 with coincident bodies, extreme
/// scales) — ptxas's inline paths of `sqrt.rn.f64` and `div.rn.f64` written out (cuda-std
/// `math.rs`: the same results), so the four chains interleave; otherwise `sqrt` and `/` as they
/// are. Grouped in every tiled kernel since the group's one test (`r²` in `[2^−332, 2^332)`,
/// the tile's masses checked once at its barrier) replaced the two per-operation ones (H100,
/// `bench/results/nbody-exact-onetest-2026-11-27.md`: the portable split kernels, ungrouped
/// before at a loss of 2–5% at 16 and 32 lanes, now gain there too; N = 65,536 1.05× → 1.21×
/// the peer).
impl ExactGroup for f64 {
    const GROUPED: bool = true;
    const SPLIT_GROUPED: bool = true;
    const WAITING_GROUPED: bool = true;
    #[inline(always)]
    fn sqrt_inline_range(x: f64) -> bool {
        sqrt_rn_f64_inline_range(x)
    }
    #[inline(always)]
    fn sqrt_inline(x: f64) -> f64 {
        sqrt_rn_f64_inline(x)
    }
    #[inline(always)]
    fn div_inline_range(a: f64, b: f64) -> bool {
        div_rn_f64_inline_range(a, b)
    }
    #[inline(always)]
    fn div_inline(a: f64, b: f64) -> f64 {
        div_rn_f64_inline(a, b)
    }
    #[inline(always)]
    fn mass_inline_range(m: f64) -> bool {
        div_rn_f64_inline_operand(m)
    }
    #[inline(always)]
    fn r2_inline_range(r2: [f64; 4]) -> bool {
        nbody_r2_inline_range_f64(r2)
    }
}

/// When the group's four operands are in range — always, unless r² is below 2^−101, a mass or
/// `r²·r` outside `[2^−60, 2^60)` (a massless body, ε = 0 with coincident bodies, extreme
/// scales) — ptxas's inline paths of `sqrt.rn.f32` and `div.rn.f32` written out (cuda-std
/// `math.rs`: the same results), so the four chains interleave; otherwise `sqrt` and `/` as they
/// are. Measured (H100, `bench/results/nbody-exact-inline-2026-11-27.md`): exact f32 RK4 step
/// at N = 1,024 22.3 → 18.8 µs, interactions/s +6–10% at N = 4,096 … 262,144.
impl ExactGroup for f32 {
    const GROUPED: bool = true;
    const SPLIT_GROUPED: bool = true;
    const WAITING_GROUPED: bool = true;
    #[inline(always)]
    fn sqrt_inline_range(x: f32) -> bool {
        sqrt_rn_f32_inline_range(x)
    }
    #[inline(always)]
    fn sqrt_inline(x: f32) -> f32 {
        sqrt_rn_f32_inline(x)
    }
    #[inline(always)]
    fn div_inline_range(a: f32, b: f32) -> bool {
        div_rn_f32_inline_range(a, b)
    }
    #[inline(always)]
    fn div_inline(a: f32, b: f32) -> f32 {
        div_rn_f32_inline(a, b)
    }
    #[inline(always)]
    fn mass_inline_range(m: f32) -> bool {
        div_rn_f32_inline_operand(m)
    }
    #[inline(always)]
    fn r2_inline_range(r2: [f32; 4]) -> bool {
        nbody_r2_inline_range_f32(r2)
    }
}

impl<T: ExactGroup> Pair<T> for Exact {
    const GROUPED: bool = T::GROUPED;
    const SPLIT_GROUPED: bool = T::SPLIT_GROUPED;
    const WAITING_GROUPED: bool = T::WAITING_GROUPED;
    const GROUPS_TO_END: bool = true;
    const TILE_CHECK: bool = true;
    #[inline(always)]
    fn tile_check(b: V4<T>) -> bool {
        T::mass_inline_range(b.w)
    }
    #[inline(always)]
    fn term(acc: [T; 3], xi: V4<T>, bj: V4<T>, eps2: T) -> [T; 3] {
        accumulate_exact(acc, xi, bj, eps2)
    }
    /// The phases of `accumulate_exact` grouped over four `j` (all differences and r², then the
    /// four square roots, then the four divisions, then the additions in `j` order): the same
    /// operations on the same values, so the same bits, but four independent sqrt/div chains
    /// in flight per thread instead of one serial chain. When every mass of the tile is in the
    /// division's range (`tile_ok`, reduced by the tile's barrier) and the four `r²` in
    /// [`ExactGroup::r2_inline_range`] (the usual case), one test sends the group through both
    /// written-out operations as straight-line code; otherwise each operation's own group test
    /// ([`ExactGroup::sqrt4`], [`ExactGroup::div4`]) decides, as before.
    #[inline(always)]
    fn term4(acc: [T; 3], xi: V4<T>, b: [V4<T>; 4], eps2: T, tile_ok: bool) -> [T; 3] {
        let p = [
            exact_diff_r2(xi, b[0], eps2),
            exact_diff_r2(xi, b[1], eps2),
            exact_diff_r2(xi, b[2], eps2),
            exact_diff_r2(xi, b[3], eps2),
        ];
        let r2 = [p[0].1, p[1].1, p[2].1, p[3].1];
        let m = [b[0].w, b[1].w, b[2].w, b[3].w];
        let denominators = |r: [T; 4]| {
            [
                exact_denominator(r2[0], r[0]),
                exact_denominator(r2[1], r[1]),
                exact_denominator(r2[2], r[2]),
                exact_denominator(r2[3], r[3]),
            ]
        };
        let s = if tile_ok & T::r2_inline_range(r2) {
            // One test for the group, then straight-line code over both operations.
            let d = denominators([
                T::sqrt_inline(r2[0]),
                T::sqrt_inline(r2[1]),
                T::sqrt_inline(r2[2]),
                T::sqrt_inline(r2[3]),
            ]);
            [T::div_inline(m[0], d[0]), T::div_inline(m[1], d[1]), T::div_inline(m[2], d[2]), T::div_inline(m[3], d[3])]
        } else {
            T::div4(m, denominators(T::sqrt4(r2)))
        };
        let acc = exact_add(acc, p[0].0, s[0]);
        let acc = exact_add(acc, p[1].0, s[1]);
        let acc = exact_add(acc, p[2].0, s[2]);
        exact_add(acc, p[3].0, s[3])
    }
}

impl Pair<f32> for Fast {
    const SPLIT_GROUPED: bool = true;
    #[inline(always)]
    fn term(acc: [f32; 3], xi: V4<f32>, bj: V4<f32>, eps2: f32) -> [f32; 3] {
        // `.ftz`: the same results as the unflushed `rsqrt.approx.f32` here (`r²` is never a negative
        // subnormal: a sum of squares and `ε² ≥ 0`; a positive subnormal `r²` makes `inv³`
        // overflow to +∞ either way, see `rsqrt_approx_ftz_f32`), three instructions fewer
        // per interaction (17 → 14 in the shared kernel's loop, SASS of sm_90).
        accumulate_fast(acc, xi, bj, eps2, rsqrt_approx_ftz_f32)
    }
}

impl Pair<f64> for Fast {
    // Grouped (`term4` below) where it was measured faster: the shared kernel (one lane per
    // body, large N) and the waiting split kernels (one block per SM); the portable split
    // kernels were slower grouped at 16 and 32 lanes (H100: N = 4,096 −10%, 16,384 −7%; 56 → 80
    // registers), `bench/results/nbody-f64fast-2026-11-27.md`.
    const GROUPED: bool = true;
    const SPLIT_GROUPED: bool = false;
    const WAITING_GROUPED: bool = true;
    #[inline(always)]
    fn term(acc: [f64; 3], xi: V4<f64>, bj: V4<f64>, eps2: f64) -> [f64; 3] {
        // `rsqrt.approx.f64` alone: ptxas already expands it to MUFU.RSQ64H plus a cubic
        // refinement (DMUL, 2 DFMA, DMUL, DFMA; SASS of sm_90), far below the 1e-10 tolerance;
        // a Newton step of ours on top cost 4 more DP instructions per interaction (~20%).
        accumulate_fast(acc, xi, bj, eps2, rsqrt_approx_f64)
    }
    /// Four terms in `j` order, the same bits as four [`Pair::term`] calls: when all four `r²`
    /// are positive normals (always, unless bodies coincide with ε = 0 or `r²` is subnormal,
    /// infinite or NaN) `rsqrt_approx_f64_normal` gives `rsqrt.approx.f64`'s results without
    /// the slow path's call region around each, so ptxas can interleave the four chains;
    /// otherwise the four terms as they are.
    #[inline(always)]
    fn term4(acc: [f64; 3], xi: V4<f64>, b: [V4<f64>; 4], eps2: f64, _tile_ok: bool) -> [f64; 3] {
        let p = [
            fast_diff_r2(xi, b[0], eps2),
            fast_diff_r2(xi, b[1], eps2),
            fast_diff_r2(xi, b[2], eps2),
            fast_diff_r2(xi, b[3], eps2),
        ];
        let four = |rsqrt: fn(f64) -> f64| {
            let acc = fast_add(acc, p[0].0, p[0].1, b[0].w, rsqrt);
            let acc = fast_add(acc, p[1].0, p[1].1, b[1].w, rsqrt);
            let acc = fast_add(acc, p[2].0, p[2].1, b[2].w, rsqrt);
            fast_add(acc, p[3].0, p[3].1, b[3].w, rsqrt)
        };
        let ok = |k: usize| positive_normal_f64(p[k].1);
        if ok(0) & ok(1) & ok(2) & ok(3) { four(rsqrt_approx_f64_normal) } else { four(rsqrt_approx_f64) }
    }
}

/// Stores stage `stage`'s result for body `i` (see the module docs): `i` is the body's index in
/// `x`, `v` and `k` (`n` bodies each; `k` holds three stages of them) and `at` its index in
/// `dst` (equal to `i` unless a rank holds bodies `first..first + n` of a larger system, whose
/// stage positions `dst` holds).
///
/// # Safety
/// `i < n`; `x`, `v` hold `n` bodies and `k` `3n`, `dst` more than `at`; no other thread writes
/// these slots.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn finish<T: Real>(
    i: u32,
    at: u32,
    n: u32,
    stage: u32,
    a: V4<T>,
    h: T,
    x: *mut V4<T>,
    v: *mut V4<T>,
    k: *mut V4<T>,
    dst: *mut V4<T>,
) {
    let (iu, nu) = (i as usize, n as usize);
    let c = Rk4::new(h);
    // SAFETY: i < n and the buffer lengths are the caller's contract.
    unsafe {
        let (xi, vi) = (*x.add(iu), *v.add(iu));
        if stage < 3 {
            // The next position needs k_{stage}v, stored by this thread one launch earlier.
            let before = if stage >= 1 { *k.add((stage as usize - 1) * nu + iu) } else { a };
            *k.add(stage as usize * nu + iu) = a;
            *dst.add(at as usize) = stage_position(stage + 1, xi, vi, before, c);
        } else {
            let kv = [*k.add(iu), *k.add(nu + iu), *k.add(2 * nu + iu), a];
            let (x1, v1) = combine(xi, vi, kv, c);
            *x.add(iu) = x1;
            *v.add(iu) = v1;
        }
    }
}

/// What [`finish`] reads for body `i` at stage `stage`, loaded early (the `_pdl_` split
/// kernels, right after their wait): `x[i]`, `v[i]` and, at stages 1 and 2, `k[(stage − 1)·n +
/// i]` (stage 3's three are loaded at the finish, as [`finish`] does: three more vectors would
/// cost twelve f32 registers for one stage in four).
pub(crate) struct Early<T> {
    xi: V4<T>,
    vi: V4<T>,
    before: V4<T>,
}

impl<T: Real> Early<T> {
    /// Loads them.
    ///
    /// # Safety
    /// As [`finish`], and the grids that wrote `x`, `v`, `k` have completed (after the wait).
    #[inline(always)]
    unsafe fn load(i: u32, n: u32, stage: u32, x: *const V4<T>, v: *const V4<T>, k: *const V4<T>) -> Self {
        let (iu, nu) = (i as usize, n as usize);
        // SAFETY: i < n and the buffer lengths are the caller's contract.
        unsafe {
            let before = if stage >= 1 && stage < 3 { *k.add((stage as usize - 1) * nu + iu) } else { *x.add(iu) };
            Early { xi: *x.add(iu), vi: *v.add(iu), before }
        }
    }
}

/// [`finish`] from values loaded early ([`Early`]): the same operations on the same values.
/// Its stores repeat `finish`'s: one body for both (loads passed as closures) re-laid the
/// portable kernels' PTX, which this change keeps byte-identical.
///
/// # Safety
/// As [`finish`]; `e` is [`Early::load`] of the same `i`, `n`, `stage` and buffers.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn finish_early<T: Real>(
    e: Early<T>,
    i: u32,
    at: u32,
    n: u32,
    stage: u32,
    a: V4<T>,
    h: T,
    x: *mut V4<T>,
    v: *mut V4<T>,
    k: *mut V4<T>,
    dst: *mut V4<T>,
) {
    let (iu, nu) = (i as usize, n as usize);
    let c = Rk4::new(h);
    let (xi, vi) = (e.xi, e.vi);
    // SAFETY: i < n and the buffer lengths are the caller's contract.
    unsafe {
        if stage < 3 {
            let before = if stage >= 1 { e.before } else { a };
            *k.add(stage as usize * nu + iu) = a;
            *dst.add(at as usize) = stage_position(stage + 1, xi, vi, before, c);
        } else {
            let kv = [*k.add(iu), *k.add(nu + iu), *k.add(2 * nu + iu), a];
            let (x1, v1) = combine(xi, vi, kv, c);
            *x.add(iu) = x1;
            *v.add(iu) = v1;
        }
    }
}

/// Global-memory stage: thread `t` handles body `i = first + t` (`t < count`), reading every
/// body from `src` in order. A whole system is `first = 0`, `count = n`.
///
/// # Safety
/// As the kernels: `src`, `dst` hold `n` bodies, `x`, `v` `count` and `k` `3·count`;
/// `first + count ≤ n`; `src` is not written.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn global_stage<T: Real, P: Pair<T>>(
    n: u32,
    first: u32,
    count: u32,
    stage: u32,
    g: T,
    eps2: T,
    h: T,
    src: *const V4<T>,
    x: *mut V4<T>,
    v: *mut V4<T>,
    k: *mut V4<T>,
    dst: *mut V4<T>,
) {
    let t = index_1d();
    if t >= count {
        return;
    }
    let i = first + t;
    // SAFETY: i, j < n = src's length; t < count; the rest is forwarded.
    unsafe {
        let xi = *src.add(i as usize);
        let a = accel_with(i, xi, n, |j| *src.add(j as usize), eps2, g, P::term);
        finish(t, i, count, stage, a, h, x, v, k, dst);
    }
}

/// Shared-memory tiled stage: each block stages `blockDim.x` bodies at a time in `tile`, every
/// thread walks the tile in order (so `j` still increases), all threads reach every barrier.
/// Thread `t` of the grid handles body `first + t` (`t < count`), as [`global_stage`].
///
/// # Safety
/// As [`global_stage`], and `tile` is this block's shared array of at least `blockDim.x`
/// (≤ [`MAX_TILE`]) bodies.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn shared_stage<T: TileIo, P: Pair<T>>(
    tile: *mut V4<T>,
    n: u32,
    first: u32,
    count: u32,
    stage: u32,
    g: T,
    eps2: T,
    h: T,
    src: *const V4<T>,
    x: *mut V4<T>,
    v: *mut V4<T>,
    k: *mut V4<T>,
    dst: *mut V4<T>,
) {
    let t = thread_idx_x();
    let dim = block_dim_x();
    let mine = block_idx_x() * dim + t;
    let live = mine < count;
    let i = first + mine;
    let tile = shared_addr(tile);
    let size = core::mem::size_of::<V4<T>>() as u32;
    // SAFETY: read only below n.
    let xi = if live { unsafe { *src.add(i as usize) } } else { V4::new(T::ZERO, T::ZERO, T::ZERO, T::ZERO) };
    let mut acc = [T::ZERO; 3];
    let mut base = 0u32;
    while base < n {
        let j = base + t;
        let tile_ok = if P::TILE_CHECK && P::GROUPED {
            let mut passes = true;
            if j < n {
                // SAFETY: j < n.
                let b = unsafe { *src.add(j as usize) };
                passes = P::tile_check(b);
                // SAFETY: t < blockDim.x ≤ the tile's length.
                unsafe { T::store(tile + t * size, b) };
            }
            sync_threads_and(passes)
        } else {
            if j < n {
                // SAFETY: t < blockDim.x ≤ the tile's length; j < n.
                unsafe { T::store(tile + t * size, *src.add(j as usize)) };
            }
            sync_threads();
            true
        };
        if live {
            let count = if n - base < dim { n - base } else { dim };
            // Slots `lo..hi` in order, without a per-slot test: the tile that holds body i is
            // walked as `0..me` then `me+1..count`, so the j order is unchanged and j = i is
            // skipped exactly as `interacts` says.
            let walk = |mut acc: [T; 3], lo: u32, hi: u32| {
                let (mut q, end) = (tile + lo * size, tile + hi * size);
                // Whole groups of four (with `GROUPS_TO_END`, up to `groups_end`).
                let groups_end = q + (hi - lo) / 4 * 4 * size;
                while P::GROUPED && (if P::GROUPS_TO_END { q != groups_end } else { q + 4 * size <= end }) {
                    // SAFETY: four slots below `end` (`groups_end ≤ end`), written before the barrier.
                    let b = unsafe { [T::load(q), T::load(q + size), T::load(q + 2 * size), T::load(q + 3 * size)] };
                    acc = P::term4(acc, xi, b, eps2, tile_ok);
                    q += 4 * size;
                }
                while q < end {
                    // SAFETY: slot (q − tile)/size < count ≤ blockDim.x was written before the barrier.
                    acc = P::term(acc, xi, unsafe { T::load(q) }, eps2);
                    q += size;
                }
                acc
            };
            let me = i.wrapping_sub(base);
            if me < count {
                debug_assert!(!interacts(i, base + me));
                acc = walk(walk(acc, 0, me), me + 1, count);
            } else {
                acc = walk(acc, 0, count);
            }
        }
        sync_threads();
        base += dim;
    }
    if live {
        // SAFETY: i < n; forwarded.
        unsafe { finish(mine, i, count, stage, scale_accel(acc, g), h, x, v, k, dst) };
    }
}

/// Split tiled stage (`lockstep_shared::nbody::accel_split`): `S = 2^shift` consecutive threads
/// (`1 ≤ S ≤ 32`, so within one warp) share body `i`. The block stages `blockDim.x` bodies at a
/// time in `tile` (the tile's base a multiple of `blockDim.x`, itself a multiple of `S`, so slot
/// `q` is body `j ≡ q (mod S)`); lane `l` walks slots `l, l + S, …` in order — over all tiles
/// exactly `lane_sum`'s `j = l, l + S, …` — then the lanes combine by warp butterflies
/// `m = 1, 2, …, S/2`, the lower lane's value always on the left (`lane_add`), and lane 0
/// stores. Block `b` handles bodies `first + b·(blockDim.x / S) + …` below `first + count`.
///
/// `wait` runs before the first memory access (after the index arithmetic, which reads only
/// the launch's parameters); with `EARLY`, lane 0 of each body then loads what its finish reads
/// ([`Early`]) at once, so the finish does not wait for global memory (the `_pdl_` kernels:
/// they run one block per SM, where the registers this holds cost nothing).
///
/// # Safety
/// As [`shared_stage`], and `blockDim.x` a multiple of 32, `shift ≤ 5`; `wait` touches no
/// memory the kernel uses.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn split_stage<T: TileIo + WarpShuffleValue, P: Pair<T>, const EARLY: bool>(
    wait: impl FnOnce(),
    tile: *mut V4<T>,
    n: u32,
    first: u32,
    count: u32,
    shift: u32,
    stage: u32,
    g: T,
    eps2: T,
    h: T,
    src: *const V4<T>,
    x: *mut V4<T>,
    v: *mut V4<T>,
    k: *mut V4<T>,
    dst: *mut V4<T>,
) {
    let t = thread_idx_x();
    let dim = block_dim_x();
    let lanes = 1u32 << shift;
    let lane = t & (lanes - 1);
    let mine = block_idx_x() * (dim >> shift) + (t >> shift);
    let live = mine < count;
    let i = first + mine;
    let tile = shared_addr(tile);
    let size = core::mem::size_of::<V4<T>>() as u32;
    let stride = lanes * size;
    let grouped = if EARLY { P::WAITING_GROUPED } else { P::SPLIT_GROUPED };
    wait();
    // SAFETY: mine < count (the rank's bodies in x, v, k); after the wait.
    let early =
        if EARLY && live && lane == 0 { Some(unsafe { Early::load(mine, count, stage, x, v, k) }) } else { None };
    // SAFETY: read only below n.
    let xi = if live { unsafe { *src.add(i as usize) } } else { V4::new(T::ZERO, T::ZERO, T::ZERO, T::ZERO) };
    let mut acc = [T::ZERO; 3];
    let zero = V4::new(T::ZERO, T::ZERO, T::ZERO, T::ZERO);
    // This thread's body of the next tile, loaded one tile ahead: the global load's latency
    // overlaps the current tile's pair terms (small N has few warps to hide it).
    // SAFETY: read only below n.
    let mut next = if t < n { unsafe { *src.add(t as usize) } } else { zero };
    let mut base = 0u32;
    while base < n {
        let tile_ok = if P::TILE_CHECK && grouped {
            let mut passes = true;
            if base + t < n {
                passes = P::tile_check(next);
                // SAFETY: t < blockDim.x ≤ the tile's length.
                unsafe { T::store(tile + t * size, next) };
            }
            sync_threads_and(passes)
        } else {
            if base + t < n {
                // SAFETY: t < blockDim.x ≤ the tile's length.
                unsafe { T::store(tile + t * size, next) };
            }
            sync_threads();
            true
        };
        let ahead = base + dim + t;
        if ahead < n {
            // SAFETY: ahead < n.
            next = unsafe { *src.add(ahead as usize) };
        }
        if live {
            let count = if n - base < dim { n - base } else { dim };
            // Slots `lo, lo + S, …` below `hi`, in order.
            let walk = |mut acc: [T; 3], lo: u32, hi: u32| {
                let (mut q, end) = (tile + lo * size, tile + hi * size);
                while grouped && q + 3 * stride < end {
                    // SAFETY: four slots below `end`, written before the barrier.
                    let b =
                        unsafe { [T::load(q), T::load(q + stride), T::load(q + 2 * stride), T::load(q + 3 * stride)] };
                    acc = P::term4(acc, xi, b, eps2, tile_ok);
                    q += 4 * stride;
                }
                while q < end {
                    // SAFETY: slot (q − tile)/size < count ≤ blockDim.x was written before the barrier.
                    acc = P::term(acc, xi, unsafe { T::load(q) }, eps2);
                    q += stride;
                }
                acc
            };
            // Body i's own slot, when this tile holds it and it is this lane's: walked around,
            // so j = i is skipped exactly as `interacts` says and the order is unchanged.
            let me = i.wrapping_sub(base);
            if me < count && me & (lanes - 1) == lane {
                debug_assert!(!interacts(i, base + me));
                acc = walk(walk(acc, lane, me), me + lanes, count);
            } else {
                acc = walk(acc, lane, count);
            }
        }
        sync_threads();
        base += dim;
    }
    // The combining tree: every lane of the warp takes part (the body's lanes are aligned
    // groups of S inside one warp); a lane with bit m set holds the upper half's sum.
    let mut m = 1u32;
    while m < lanes {
        let other = [
            warp_shuffle_xor(u32::MAX, acc[0], m),
            warp_shuffle_xor(u32::MAX, acc[1], m),
            warp_shuffle_xor(u32::MAX, acc[2], m),
        ];
        acc = if lane & m == 0 { lane_add(acc, other) } else { lane_add(other, acc) };
        m <<= 1;
    }
    if live && lane == 0 {
        let a = scale_accel(acc, g);
        match early {
            // SAFETY: i < n; `e` was loaded for this body and stage; forwarded.
            Some(e) => unsafe { finish_early(e, mine, i, count, stage, a, h, x, v, k, dst) },
            // SAFETY: i < n; forwarded.
            None => unsafe { finish(mine, i, count, stage, a, h, x, v, k, dst) },
        }
    }
}

macro_rules! nbody_kernels {
    ($(($global:ident, $shared:ident, $tile:ident, $t:ty, $pair:ty, $what:literal)),* $(,)?) => {$(
        #[doc = concat!("One RK4 stage, global memory, ", $what, ".")]
        ///
        /// # Safety
        /// `src`, `x`, `v`, `dst` hold `n` bodies and `k` `3n` (16-byte aligned, `n < 2^31`);
        /// `src` is none of the written buffers (`x` only when `stage < 3`); `stage < 4`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $global(
            n: u32, stage: u32, g: $t, eps2: $t, h: $t,
            src: *const V4<$t>, x: *mut V4<$t>, v: *mut V4<$t>, k: *mut V4<$t>, dst: *mut V4<$t>,
        ) {
            // SAFETY: the launcher checked every length and the aliasing rule.
            unsafe { global_stage::<$t, $pair>(n, 0, n, stage, g, eps2, h, src, x, v, k, dst) }
        }

        #[doc = concat!("One RK4 stage, shared-memory tiles of `blockDim.x` bodies, ", $what, ".")]
        ///
        /// # Safety
        /// As the global-memory kernel, and `blockDim.x ≤ 1024`, `blockDim.y = blockDim.z = 1`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $shared(
            n: u32, stage: u32, g: $t, eps2: $t, h: $t,
            src: *const V4<$t>, x: *mut V4<$t>, v: *mut V4<$t>, k: *mut V4<$t>, dst: *mut V4<$t>,
        ) {
            let tile = shared_array![$tile: [V4<$t>; MAX_TILE]];
            // SAFETY: the launcher checked every length, the aliasing rule and the block size.
            unsafe { shared_stage::<$t, $pair>(tile, n, 0, n, stage, g, eps2, h, src, x, v, k, dst) }
        }
    )*};
}

nbody_kernels!(
    (nbody_global_f32, nbody_shared_f32, NBODY_TILE_F32, f32, Exact, "f32, exact"),
    (nbody_global_f64, nbody_shared_f64, NBODY_TILE_F64, f64, Exact, "f64, exact"),
    (nbody_global_f32_fast, nbody_shared_f32_fast, NBODY_TILE_F32_FAST, f32, Fast, "f32, fast (FMA, rsqrt.approx)"),
    (
        nbody_global_f64_fast,
        nbody_shared_f64_fast,
        NBODY_TILE_F64_FAST,
        f64,
        Fast,
        "f64, fast (FMA, rsqrt.approx; ptxas refines it)"
    ),
);

macro_rules! nbody_rank_kernels {
    ($(($global:ident, $shared:ident, $tile:ident, $t:ty, $what:literal)),* $(,)?) => {$(
        #[doc = concat!("One RK4 stage of one rank's bodies `first..first + count` of an `n`-body system, global memory, ", $what, ".")]
        ///
        /// `src` and `dst` hold the whole system's stage positions (`n` bodies: the ranks
        /// all-gather `dst` before the next stage); `x`, `v` hold the rank's `count` bodies and
        /// `k` three stages of them.
        ///
        /// # Safety
        /// `src`, `dst` hold `n` bodies, `x`, `v` `count` and `k` `3·count` (16-byte aligned,
        /// `first + count ≤ n < 2^31`); `src` is none of the written buffers; `stage < 4`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $global(
            n: u32, first: u32, count: u32, stage: u32, g: $t, eps2: $t, h: $t,
            src: *const V4<$t>, x: *mut V4<$t>, v: *mut V4<$t>, k: *mut V4<$t>, dst: *mut V4<$t>,
        ) {
            // SAFETY: the launcher checked every length and the aliasing rule.
            unsafe { global_stage::<$t, Exact>(n, first, count, stage, g, eps2, h, src, x, v, k, dst) }
        }

        #[doc = concat!("One RK4 stage of one rank's bodies, shared-memory tiles of `blockDim.x` bodies, ", $what, ".")]
        ///
        /// # Safety
        /// As the global-memory rank kernel, and `blockDim.x ≤ 1024`, `blockDim.y = blockDim.z = 1`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $shared(
            n: u32, first: u32, count: u32, stage: u32, g: $t, eps2: $t, h: $t,
            src: *const V4<$t>, x: *mut V4<$t>, v: *mut V4<$t>, k: *mut V4<$t>, dst: *mut V4<$t>,
        ) {
            let tile = shared_array![$tile: [V4<$t>; MAX_TILE]];
            // SAFETY: the launcher checked every length, the aliasing rule and the block size.
            unsafe { shared_stage::<$t, Exact>(tile, n, first, count, stage, g, eps2, h, src, x, v, k, dst) }
        }
    )*};
}

nbody_rank_kernels!(
    (nbody_rank_global_f32, nbody_rank_shared_f32, NBODY_RANK_TILE_F32, f32, "f32, exact"),
    (nbody_rank_global_f64, nbody_rank_shared_f64, NBODY_RANK_TILE_F64, f64, "f64, exact"),
);

/// The split stage kernels, one per `(name, tile, float, pair term)`. After `prologue:`, an
/// expression each kernel evaluates before its first memory access, whether it loads its
/// finish's values early (`early:`, [`split_stage`]) and a line its doc adds (the sm_90 kernels
/// of `crate::hopper::nbody` wait there for the grids before them).
macro_rules! nbody_split_kernels {
    ($(($name:ident, $tile:ident, $t:ty, $pair:ty, $what:literal)),* $(,)?) => {
        nbody_split_kernels!(prologue: (), early: false, ""; $(($name, $tile, $t, $pair, $what)),*);
    };
    (prologue: $prologue:expr, early: $early:expr, $prologue_doc:literal; $(($name:ident, $tile:ident, $t:ty, $pair:ty, $what:literal)),* $(,)?) => {$(
        #[doc = concat!("One RK4 stage with the pair sum split over `2^shift` lanes per body, shared-memory tiles, ", $what, ".")]
        ///
        /// Bodies `first..first + count` of an `n`-body system (a whole system: `first = 0`,
        /// `count = n`); `src`, `dst` hold the whole system's stage positions, `x`, `v` the
        /// `count` bodies and `k` three stages of them.
        #[doc = $prologue_doc]
        ///
        /// # Safety
        /// `src`, `dst` hold `n` bodies, `x`, `v` `count` and `k` `3·count` (16-byte aligned,
        /// `first + count ≤ n < 2^31`); `src` is none of the written buffers; `stage < 4`;
        /// `shift ≤ 5`; `blockDim.x` a multiple of 32 up to 1024, `blockDim.y = blockDim.z = 1`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(
            n: u32, first: u32, count: u32, shift: u32, stage: u32, g: $t, eps2: $t, h: $t,
            src: *const V4<$t>, x: *mut V4<$t>, v: *mut V4<$t>, k: *mut V4<$t>, dst: *mut V4<$t>,
        ) {
            let tile = shared_array![$tile: [V4<$t>; MAX_TILE]];
            // SAFETY: the launcher checked every length, the aliasing rule, the shift and the block size.
            unsafe {
                $crate::nbody::split_stage::<$t, $pair, { $early }>(
                    || $prologue, tile, n, first, count, shift, stage, g, eps2, h, src, x, v, k, dst,
                )
            }
        }
    )*};
}
pub(crate) use nbody_split_kernels;

nbody_split_kernels!(
    (nbody_split_f32, NBODY_SPLIT_TILE_F32, f32, Exact, "f32, exact"),
    (nbody_split_f64, NBODY_SPLIT_TILE_F64, f64, Exact, "f64, exact"),
    (nbody_split_f32_fast, NBODY_SPLIT_TILE_F32_FAST, f32, Fast, "f32, fast (FMA, rsqrt.approx)"),
    (nbody_split_f64_fast, NBODY_SPLIT_TILE_F64_FAST, f64, Fast, "f64, fast (FMA, rsqrt.approx; ptxas refines it)"),
);
