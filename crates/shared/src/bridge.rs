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

pub mod normal;
pub mod philox;
pub mod sobol;

use core::ops::{Add, Div, Mul, Sub};

/// Largest dimension `d` the generators support (registers hold one d-vector per operand).
pub const MAX_DIMS: usize = 8;

/// Elements of the per-block shared-memory stack on the GPU: thread `t` of a block of `b`
/// threads keeps element `i` at `i·b + t` (conflict-free). A strategy uses it when
/// `slots · d · b ≤ SHARED_STACK`; otherwise its stack lives in a device scratch buffer laid
/// out `[slot·d + k][path]`.
pub const SHARED_STACK: usize = 4096;

/// Whether a strategy of `slots` d-vectors fits the shared-memory stack at `block` threads.
pub fn stack_fits_shared(slots: usize, dims: usize, block: usize) -> bool {
    slots.saturating_mul(dims).saturating_mul(block) <= SHARED_STACK
}

/// Strategy steps the buffer kernels' specialised path copies into shared memory (longer
/// strategies take the general path): 128 rows are 8 KiB (f32) or 12 KiB (f64) of coefficients
/// and indices.
pub const TABLE_STEPS: usize = 128;

/// Largest dimension of the buffer kernels' specialised path ([`buffer_fast`]).
pub const FAST_DIMS: usize = 4;

/// Whether the buffer kernels (`bridge_f32/f64`) take their specialised path (one instance per
/// `d`, strategy in shared memory, 32-bit indices): `1 ≤ d ≤ FAST_DIMS`, the stack fits in
/// shared memory, at most [`TABLE_STEPS`] steps, and `rows·paths = steps·d·paths ≤ 2^32` (32-bit
/// element indices). The kernel and its launcher both decide with this function.
pub fn buffer_fast(steps: usize, dims: usize, slots: usize, block: usize, paths: usize) -> bool {
    (1..=FAST_DIMS).contains(&dims)
        && stack_fits_shared(slots, dims, block)
        && steps <= TABLE_STEPS
        && (steps as u64).saturating_mul(dims as u64).saturating_mul(paths as u64) <= 1u64 << 32
}

/// Paths each thread of the buffer kernels handles: on the f32 specialised path
/// ([`buffer_fast`], `elem` = 4 bytes) 4 at d = 1 when `paths` is a multiple of 4 or odd and the
/// stack of 16-byte elements stays within `SHARED_STACK / 2` 16-byte elements (32 KiB, as
/// f64's): thread `q` takes paths `4q..4q + 4` as one `F32x4`, read and written as one
/// `ld/st.global.v4.f32` where the row's first element is 16-byte aligned (always for a multiple
/// of 4; at an odd count as the row's class `(row·paths) mod 4` allows, uniform over the grid,
/// and the last thread only its existing paths); else 2 when `paths` is even
/// (`ld/st.global.v2.f32`, any d ≤ 4; at d = 1 a count of 2 mod 4 stays with pairs: quads there
/// measured 20% slower than pairs, run Y1 in bench/results/bridge-predictions.md); 1 otherwise.
/// Each lane computes exactly the scalar f32 operations. The kernel and its launcher (grid of
/// `ceil(paths / lanes)` threads) both decide with this function.
pub fn buffer_lanes(steps: usize, dims: usize, slots: usize, block: usize, paths: usize, elem: usize) -> usize {
    let (quads, even) = (paths.is_multiple_of(4) || !paths.is_multiple_of(2), paths.is_multiple_of(2));
    if elem != 4 || !buffer_fast(steps, dims, slots, block, paths) {
        1
    } else if dims == 1 && quads && stack_fits_shared(slots, 2, block) {
        4
    } else if even {
        2
    } else {
        1
    }
}

/// [`buffer_lanes`] for buffers at the device addresses whose bitwise OR is `addrs` (z's and
/// out's): four lanes need both 16-byte aligned, two lanes 8-byte aligned (and an even count);
/// otherwise fewer. Whole allocations are 256-byte aligned, but a sub-slice may start at any
/// element. The kernel (from its pointer arguments) and its launcher (from the slices' device
/// pointers) both decide with this function; shared memory is sized by [`buffer_shared_bytes`]
/// for the widest lanes, which is enough for narrower ones.
pub fn buffer_lanes_at(
    steps: usize,
    dims: usize,
    slots: usize,
    block: usize,
    paths: usize,
    elem: usize,
    addrs: u64,
) -> usize {
    match buffer_lanes(steps, dims, slots, block, paths, elem) {
        4 if addrs.is_multiple_of(16) => 4,
        4 | 2 if paths.is_multiple_of(2) && addrs.is_multiple_of(8) => 2,
        _ => 1,
    }
}

/// Bytes of the buffer kernels' shared stack (dynamic shared memory, sized per launch):
/// `slots·d·block` elements of `elem` bytes rounded up to 16, or 0 when it does not fit
/// ([`stack_fits_shared`]).
pub fn buffer_stack_bytes(slots: usize, dims: usize, block: usize, elem: usize) -> usize {
    if stack_fits_shared(slots, dims, block) { (slots * dims * block * elem).div_ceil(16) * 16 } else { 0 }
}

/// Bytes of a strategy of `steps` steps staged in shared memory: its coefficient rows
/// (`COEFS·elem` bytes each) followed by its index rows (`INDICES·4`).
pub fn table_bytes(steps: usize, elem: usize) -> usize {
    steps * (COEFS * elem + INDICES * 4)
}

/// Bytes of dynamic shared memory a launch of the buffer kernels needs: the stack
/// ([`buffer_stack_bytes`]), then on the specialised path ([`buffer_fast`]) the strategy's
/// `steps` coefficient rows (`COEFS·elem` bytes each) followed by its index rows (`INDICES·4`).
/// With several paths per thread ([`buffer_lanes`]) a stack element holds all (`lanes·elem` bytes).
/// At most 32 KiB + 12 KiB (f64), under the 48 KiB a launch may use without opting in.
pub fn buffer_shared_bytes(steps: usize, dims: usize, slots: usize, block: usize, paths: usize, elem: usize) -> usize {
    let lanes = buffer_lanes(steps, dims, slots, block, paths, elem);
    let stack = buffer_stack_bytes(slots, dims, block, elem * lanes);
    if buffer_fast(steps, dims, slots, block, paths) { stack + table_bytes(steps, elem) } else { stack }
}

/// `store` of a step whose value no later step reads.
pub const NO_SLOT: u32 = u32::MAX;

/// Flag: the step also emits the increment between ℓ and θ (they are adjacent in time).
pub const EMIT_LEFT: u32 = 1;
/// Flag: the step also emits the increment between θ and r (they are adjacent in time).
pub const EMIT_RIGHT: u32 = 2;

/// Coefficients per step in the flat table: `wl, wr, sd, θ−ℓ, r−θ`, the reciprocals
/// [`reciprocal`]`(θ−ℓ)`, [`reciprocal`]`(r−θ)` (for [`increment`]) and one zero of padding (a
/// step's row is 16-byte aligned, so the GPU reads it with vector loads).
pub const COEFS: usize = 8;
/// Indices per step in the flat table: `left, right, store, z, out, flags` and 2 zeros.
pub const INDICES: usize = 8;

/// The two floating-point types the generators run in.
pub trait Real:
    Copy + PartialEq + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    /// `0`.
    const ZERO: Self;
    /// Rounds an f64 to this type (round to nearest even).
    fn from_f64(x: f64) -> Self;
    /// The standard normal of a 32-bit generator word in this precision (see [`normal`]).
    fn normal_from_bits(w: u32) -> Self;
    /// `self·b + c` with one rounding (`fma.rn` on the GPU, `fma` on the CPU: correctly rounded on
    /// both, so the same bits).
    fn fma(self, b: Self, c: Self) -> Self;
    /// `−self` (exact).
    fn neg(self) -> Self;
    /// Whether `|self|` lies in `[2^−QUOTIENT_EXP, 2^QUOTIENT_EXP]` (false for 0, ∞ and NaN):
    /// the range of the first quotient approximation inside which [`quotient`] is exact.
    fn quotient_in_range(self) -> bool;
    /// Whether `dt` lies in `[2^−DIVISOR_EXP, 2^DIVISOR_EXP]`: the divisors [`reciprocal`] gives a
    /// reciprocal for.
    fn divisor_in_range(self) -> bool;
    /// A quiet NaN.
    const NAN: Self;
}

/// f32: divisors in `[2^−20, 2^20]` and first quotients in `[2^−60, 2^60]` keep every
/// intermediate of [`quotient`] normal (see there).
const F32_DIVISOR_EXP: u32 = 20;
/// See [`F32_DIVISOR_EXP`].
const F32_QUOTIENT_EXP: u32 = 60;
/// f64: divisors in `[2^−256, 2^256]`, first quotients in `[2^−512, 2^512]`.
const F64_DIVISOR_EXP: u32 = 256;
/// See [`F64_DIVISOR_EXP`].
const F64_QUOTIENT_EXP: u32 = 512;

/// Whether the magnitude of the f32 with bits `bits` lies in `[2^−e, 2^e]` (an integer compare on
/// the biased exponent field and mantissa: one subtraction and one unsigned compare; NaN and ∞
/// fall outside).
#[inline(always)]
const fn f32_in(bits: u32, e: u32) -> bool {
    let mag = bits & 0x7fff_ffff;
    let lo = (127 - e) << 23;
    let hi = (127 + e) << 23;
    mag.wrapping_sub(lo) <= hi - lo
}

/// As [`f32_in`] for the high word of an f64 (its sign, exponent and top 20 mantissa bits): the
/// bound `2^e` has a zero low word, so `hi ≤ bound` on the high word alone admits values up to
/// `2^e·(1 + 2^−20)`, still far inside the range the proof needs.
#[inline(always)]
const fn f64_in(bits: u64, e: u32) -> bool {
    let mag = (bits >> 32) as u32 & 0x7fff_ffff;
    let lo = (1023 - e) << 20;
    let hi = (1023 + e) << 20;
    mag.wrapping_sub(lo) <= hi - lo
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
    const NAN: f32 = f32::NAN;
    #[inline(always)]
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    #[inline(always)]
    fn normal_from_bits(w: u32) -> f32 {
        normal::normal_f32_from_bits(w)
    }
    #[inline(always)]
    fn fma(self, b: f32, c: f32) -> f32 {
        crate::fmath::f32::mul_add(self, b, c)
    }
    #[inline(always)]
    fn neg(self) -> f32 {
        -self
    }
    #[inline(always)]
    fn quotient_in_range(self) -> bool {
        f32_in(self.to_bits(), F32_QUOTIENT_EXP)
    }
    #[inline(always)]
    fn divisor_in_range(self) -> bool {
        f32_in(self.to_bits(), F32_DIVISOR_EXP)
    }
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    const NAN: f64 = f64::NAN;
    #[inline(always)]
    fn from_f64(x: f64) -> f64 {
        x
    }
    #[inline(always)]
    fn normal_from_bits(w: u32) -> f64 {
        normal::normal_from_bits(w)
    }
    #[inline(always)]
    fn fma(self, b: f64, c: f64) -> f64 {
        crate::fmath::f64::mul_add(self, b, c)
    }
    #[inline(always)]
    fn neg(self) -> f64 {
        -self
    }
    #[inline(always)]
    fn quotient_in_range(self) -> bool {
        f64_in(self.to_bits(), F64_QUOTIENT_EXP)
    }
    #[inline(always)]
    fn divisor_in_range(self) -> bool {
        f64_in(self.to_bits(), F64_DIVISOR_EXP)
    }
}

/// The weights of eq. 5 for θ between ℓ and r (f64, computed once on the host):
/// `(wl, wr, sd)`. For the first point (`X_T`), the host uses `(1, 0, sqrt(T − t0))`.
pub fn weights(l: f64, theta: f64, r: f64) -> (f64, f64, f64) {
    let span = r - l;
    let wl = (r - theta) / span;
    let wr = (theta - l) / span;
    let sd = libm::sqrt((r - theta) * (theta - l) / span);
    (wl, wr, sd)
}

/// Eq. 5 for one component: `wl·xl + wr·xr + sd·noise`, two roundings per product, sums left
/// to right.
#[inline(always)]
pub fn interpolate<T: Real>(wl: T, xl: T, wr: T, xr: T, sd: T, noise: T) -> T {
    wl * xl + wr * xr + sd * noise
}

/// A scaled increment `(b − a) / dt`, correctly rounded (bit for bit `(b − a) / dt`), with
/// `r = reciprocal(dt)` from the step table: see [`quotient`].
#[inline(always)]
pub fn increment<T: Real>(a: T, b: T, dt: T, r: T) -> T {
    quotient(b - a, dt, r)
}

/// The reciprocal the step table stores next to a divisor `dt` for [`quotient`]: `RN(1/dt)` in
/// the working precision when `dt` lies in `[2^−E, 2^E]` (E = 20 in f32, 256 in f64), otherwise
/// NaN (then every quotient by `dt` takes the `/` fallback).
pub fn reciprocal<T: Real>(dt: T) -> T {
    if dt.divisor_in_range() { T::from_f64(1.0) / dt } else { T::NAN }
}

/// `a / dt` rounded to nearest even, bit for bit, computed from the precomputed `r =
/// reciprocal(dt)` with one multiplication and two fused multiply-adds instead of a division:
///
/// ```text
/// q = RN(a·r),  e = RN(a − q·dt) (fma, exact here),  q' = RN(q + e·r) (fma)  =  RN(a/dt)
/// ```
///
/// This is Markstein's correction (P. Markstein, "Computation of elementary functions on the IBM
/// RISC System/6000 processor", IBM J. Res. Dev. 34(1), 1990); that a correctly rounded
/// reciprocal `r = RN(1/dt)` suffices for the result to be the correctly rounded quotient, in
/// binary32 and binary64 with round-to-nearest, is stated in N. Brisebarre, J.-M. Muller, S. K.
/// Raina, "Accelerating correctly rounded floating-point division when the divisor is known in
/// advance", IEEE Trans. Computers 53(8), 2004 (and J.-M. Muller et al., *Handbook of
/// Floating-Point Arithmetic*, 2nd ed., 2018, division with an FMA), for operands whose
/// computation neither underflows nor overflows. The guard makes that hold: `dt ∈ [2^−B, 2^B]`
/// (else `r` is NaN, from [`reciprocal`]) and `|q| ∈ [2^−C, 2^C]` (which also rejects `a = ±0`,
/// ∞ and NaN) with B + C ≤ 80 in f32 (20 + 60) and ≤ 917 in f64 (256 + 512): then `r` and `q`
/// are normal, `a − q·dt` is a multiple of `2^(e_dt + e_q − 2p + 2) ≥ 2^−126` (resp.
/// `2^−1022`), so the fma rounds it as in unbounded exponent range, and `q'` is normal. Outside
/// the guard the function returns `a / dt`. Tests in tests/bridge_reference.rs check equality
/// with `/` for every f32 mantissa of `a` against a few divisors (including those whose
/// reciprocal lies closest to a rounding boundary) and with random and adversarial f32/f64
/// operands (subnormal, huge, exact quotients, the guard's edges).
///
/// Plain `a / dt` is `div.rn` on the GPU (a reciprocal estimate, a Newton–Raphson refinement, a
/// range check and a slow-path call per division); this is 3 floating-point operations and an
/// integer range check, with the same bits on both sides because the CPU runs this same function.
#[inline(always)]
pub fn quotient<T: Real>(a: T, dt: T, r: T) -> T {
    let q = a * r;
    if q.quotient_in_range() {
        let e = q.neg().fma(dt, a);
        e.fma(r, q)
    } else {
        a / dt
    }
}

/// Element `i` of a small array through a select over constant indices, so that on the GPU the
/// array stays in registers whatever `i` is (a dynamic index would put it in local memory).
#[inline(always)]
pub fn pick<T: Copy, const D: usize>(a: &[T; D], i: usize) -> T {
    let mut v = a[0];
    let mut j = 1;
    while j < D {
        if j == i {
            v = a[j];
        }
        j += 1;
    }
    v
}

/// Sets element `i` of a small array through a select over constant indices (see [`pick`]).
#[inline(always)]
pub fn place<T: Copy, const D: usize>(a: &mut [T; D], i: usize, v: T) {
    let mut j = 0;
    while j < D {
        if j == i {
            a[j] = v;
        }
        j += 1;
    }
}

/// Sets element `[j][k]` of a small 2-D array through selects over constant indices.
#[inline(always)]
pub fn place2<T: Copy, const D: usize, const P: usize>(a: &mut [[T; D]; P], j: usize, k: usize, v: T) {
    let mut jj = 0;
    while jj < P {
        if jj == j {
            place(&mut a[jj], k, v);
        }
        jj += 1;
    }
}

/// Component `k` of `C·Z` for the lower-triangular `c` (row-major `d × d`):
/// `Σ_{m ≤ k} c[k·d + m]·z[m]`, left to right, starting from the first product.
#[inline(always)]
pub fn noise<T: Real, const D: usize>(c: &[T], d: usize, z: &[T; D], k: usize) -> T {
    let mut s = c[k * d] * z[0];
    let mut m = 1;
    while m < D {
        if m <= k {
            s = s + c[k * d + m] * pick(z, m);
        }
        m += 1;
    }
    s
}

/// One step of an execution strategy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step<T> {
    /// Weight of the left neighbour.
    pub wl: T,
    /// Weight of the right neighbour.
    pub wr: T,
    /// Standard deviation of the bridge at θ.
    pub sd: T,
    /// θ − ℓ (divisor of the left increment).
    pub dt_left: T,
    /// r − θ (divisor of the right increment).
    pub dt_right: T,
    /// [`reciprocal`]`(dt_left)` in this precision.
    pub recip_left: T,
    /// [`reciprocal`]`(dt_right)` in this precision.
    pub recip_right: T,
    /// Stack slot of X_ℓ.
    pub left: u32,
    /// Stack slot of X_r (the left slot again for X_T, whose right weight is 0).
    pub right: u32,
    /// Stack slot that receives X_θ, or [`NO_SLOT`].
    pub store: u32,
    /// Construction index `i` of the normal Z_i that builds this point.
    pub z: u32,
    /// Time index `g` of θ in the output (0..N−1 = t1..tN, N = T).
    pub out: u32,
    /// [`EMIT_LEFT`] | [`EMIT_RIGHT`].
    pub flags: u32,
}

impl<T: Real> Step<T> {
    /// A step of zeros (a placeholder before a prefetch fills it).
    #[inline(always)]
    pub fn zero() -> Step<T> {
        Step {
            wl: T::ZERO,
            wr: T::ZERO,
            sd: T::ZERO,
            dt_left: T::ZERO,
            dt_right: T::ZERO,
            recip_left: T::ZERO,
            recip_right: T::ZERO,
            left: 0,
            right: 0,
            store: 0,
            z: 0,
            out: 0,
            flags: 0,
        }
    }

    /// Step `s` of the flat tables (`COEFS` coefficients and `INDICES` indices per step).
    #[inline(always)]
    pub fn load(coef: &[T], idx: &[u32], s: usize) -> Step<T> {
        let c = &coef[s * COEFS..s * COEFS + COEFS];
        let i = &idx[s * INDICES..s * INDICES + INDICES];
        Step {
            wl: c[0],
            wr: c[1],
            sd: c[2],
            dt_left: c[3],
            dt_right: c[4],
            recip_left: c[5],
            recip_right: c[6],
            left: i[0],
            right: i[1],
            store: i[2],
            z: i[3],
            out: i[4],
            flags: i[5],
        }
    }

    /// The step's coefficients in table order (the inverse of [`Step::load`]).
    pub fn coefs(&self) -> [T; COEFS] {
        [self.wl, self.wr, self.sd, self.dt_left, self.dt_right, self.recip_left, self.recip_right, T::ZERO]
    }

    /// The step's indices in table order.
    pub fn indices(&self) -> [u32; INDICES] {
        [self.left, self.right, self.store, self.z, self.out, self.flags, 0, 0]
    }

    /// A step from one row of each table.
    #[inline(always)]
    pub fn from_rows(c: &CoefRow<T>, i: &IndexRow) -> Step<T> {
        let (c, i) = (c.0, i.0);
        Step {
            wl: c[0],
            wr: c[1],
            sd: c[2],
            dt_left: c[3],
            dt_right: c[4],
            recip_left: c[5],
            recip_right: c[6],
            left: i[0],
            right: i[1],
            store: i[2],
            z: i[3],
            out: i[4],
            flags: i[5],
        }
    }
}

impl Step<f64> {
    /// This step (its coefficients computed in f64) in precision `T`: every coefficient rounded
    /// to `T`, then the reciprocals computed from the rounded divisors in `T` ([`reciprocal`]:
    /// `RN(1/dt)` of the very divisor the generators divide by, not a double rounding of the
    /// f64 reciprocal).
    pub fn round<T: Real>(&self) -> Step<T> {
        let (dt_left, dt_right) = (T::from_f64(self.dt_left), T::from_f64(self.dt_right));
        Step {
            wl: T::from_f64(self.wl),
            wr: T::from_f64(self.wr),
            sd: T::from_f64(self.sd),
            dt_left,
            dt_right,
            recip_left: reciprocal(dt_left),
            recip_right: reciprocal(dt_right),
            left: self.left,
            right: self.right,
            store: self.store,
            z: self.z,
            out: self.out,
            flags: self.flags,
        }
    }
}

/// One step's coefficients as the device reads them (16-byte aligned: vector loads).
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct CoefRow<T>(pub [T; COEFS]);

/// One step's indices as the device reads them (16-byte aligned: vector loads).
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct IndexRow(pub [u32; INDICES]);

/// Where a path generator reads its steps from.
pub trait Steps<T> {
    /// Step `s`.
    fn step(&self, s: usize) -> Step<T>;
}

/// Steps from flat slices (`COEFS` and `INDICES` per step).
#[derive(Clone, Copy)]
pub struct SliceSteps<'a, T> {
    /// Coefficients.
    pub coef: &'a [T],
    /// Indices.
    pub idx: &'a [u32],
}

impl<T: Real> Steps<T> for SliceSteps<'_, T> {
    #[inline(always)]
    fn step(&self, s: usize) -> Step<T> {
        Step::load(self.coef, self.idx, s)
    }
}

/// Where the normals come from: row `i·d + k` (construction index i, dimension k) of this path.
pub trait Normals<T> {
    /// The normal of row `row`.
    fn normal(&mut self, row: u32) -> T;
}

/// Where the results go: row `g·d + k` of this path.
pub trait Sink<T> {
    /// Writes `v` to row `row`.
    fn put(&mut self, row: u32, v: T);
}

/// The live values of one path: element `slot·d + k`.
pub trait Stack<T> {
    /// Element `i`.
    fn get(&self, i: u32) -> T;
    /// Sets element `i`.
    fn set(&mut self, i: u32, v: T);
}

/// A stack in a slice (the CPU generators).
pub struct SliceStack<'a, T>(pub &'a mut [T]);

impl<T: Copy> Stack<T> for SliceStack<'_, T> {
    #[inline(always)]
    fn get(&self, i: u32) -> T {
        self.0[i as usize]
    }
    #[inline(always)]
    fn set(&mut self, i: u32, v: T) {
        self.0[i as usize] = v;
    }
}

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

/// Dynamic shared memory a launch of the fused kernels may use (the default limit without
/// opting in).
pub const FUSED_SHARED_LIMIT: usize = 48 * 1024;

/// Whether the fused kernels take their d = 1 kernels (`bridge_philox_d1_*`, `bridge_sobol_d1_*`):
/// d = 1 and the buffer kernels' specialised path ([`buffer_fast`]). The kernels and the launcher
/// both decide with this function.
pub fn fused_fast_d1(steps: usize, dims: usize, slots: usize, block: usize, paths: usize) -> bool {
    dims == 1 && buffer_fast(steps, dims, slots, block, paths)
}

/// Bytes of the fused kernels' stack and strategy in dynamic shared memory: the stack (one path
/// per thread, [`buffer_stack_bytes`]), then on the d = 1 path ([`fused_fast_d1`]) the strategy's
/// `steps` coefficient and index rows, as in [`buffer_shared_bytes`].
pub fn fused_base_bytes(steps: usize, dims: usize, slots: usize, block: usize, paths: usize, elem: usize) -> usize {
    let stack = buffer_stack_bytes(slots, dims, block, elem);
    if fused_fast_d1(steps, dims, slots, block, paths) { stack + table_bytes(steps, elem) } else { stack }
}

/// Whether the fused Sobol kernels use the warp method ([`sobol::warp_shared_bytes`]): its
/// tables for `steps·d` rows fit after the fused stack and strategy ([`fused_base_bytes`])
/// within [`FUSED_SHARED_LIMIT`]. Otherwise the warp method with the low tables read from
/// global memory when the high parts alone fit ([`fused_sobol_pairs`]), else each element walks
/// its Gray-code bits ([`sobol::sobol_u32`]).
pub fn fused_sobol_warp(steps: usize, dims: usize, slots: usize, block: usize, paths: usize, elem: usize) -> bool {
    let rows = steps.saturating_mul(dims);
    fused_base_bytes(steps, dims, slots, block, paths, elem).saturating_add(sobol::warp_shared_bytes(rows, block))
        <= FUSED_SHARED_LIMIT
}

/// Whether the fused Sobol kernels, when [`fused_sobol_warp`] does not hold, use the warp method
/// with only the warps' high parts in shared memory ([`sobol::pairs_shared_bytes`]) and the low
/// tables read from global memory (one 128-byte line per row and warp, the same for every warp:
/// L1 hits): the high parts fit after the fused stack and strategy ([`fused_base_bytes`]) within [`FUSED_SHARED_LIMIT`].
pub fn fused_sobol_pairs(steps: usize, dims: usize, slots: usize, block: usize, paths: usize, elem: usize) -> bool {
    let rows = steps.saturating_mul(dims);
    fused_base_bytes(steps, dims, slots, block, paths, elem).saturating_add(sobol::pairs_shared_bytes(rows, block))
        <= FUSED_SHARED_LIMIT
}

/// Bytes of the fused Philox d = 1 kernels' schedule and word cache: `steps` schedule entries
/// (rounded up to 16 bytes), then `cache_slots` words per thread (`[slot][thread]`).
pub fn philox_cache_bytes(steps: usize, cache_slots: usize, block: usize) -> usize {
    steps.saturating_mul(4).div_ceil(16).saturating_mul(16).saturating_add(cache_slots.saturating_mul(block * 4))
}

/// Whether the fused Philox d = 1 kernels compute each Philox block once per path by the host's
/// schedule (`philox::scheduled_word`, `cache_slots` from the host's planner, 0 when it has
/// none): the d = 1 fast path ([`fused_fast_d1`]), at most `philox::MAX_CACHE_SLOTS` slots, and
/// the schedule and cache ([`philox_cache_bytes`]) fit after the fused stack and strategy ([`fused_base_bytes`]) within
/// [`FUSED_SHARED_LIMIT`]. Otherwise the one-block cache of `philox::PhiloxNormals`.
pub fn fused_philox_cached(
    steps: usize,
    dims: usize,
    slots: usize,
    block: usize,
    paths: usize,
    elem: usize,
    cache_slots: usize,
) -> bool {
    (1..=philox::MAX_CACHE_SLOTS).contains(&cache_slots)
        && fused_fast_d1(steps, dims, slots, block, paths)
        && fused_base_bytes(steps, dims, slots, block, paths, elem).saturating_add(philox_cache_bytes(
            steps,
            cache_slots,
            block,
        )) <= FUSED_SHARED_LIMIT
}

/// Bytes of dynamic shared memory a launch of the fused kernels needs: [`fused_base_bytes`]
/// (stack, then on the d = 1 path the strategy), then for Sobol on the warp method
/// ([`fused_sobol_warp`]) its tables, or its high parts alone ([`fused_sobol_pairs`]). (The
/// fused Philox d = 1 kernels add [`philox_cache_bytes`] when [`fused_philox_cached`] holds.)
pub fn fused_shared_bytes(
    steps: usize,
    dims: usize,
    slots: usize,
    block: usize,
    paths: usize,
    elem: usize,
    sobol: bool,
) -> usize {
    let base = fused_base_bytes(steps, dims, slots, block, paths, elem);
    if sobol && fused_sobol_warp(steps, dims, slots, block, paths, elem) {
        base + sobol::warp_shared_bytes(steps * dims, block)
    } else if sobol && fused_sobol_pairs(steps, dims, slots, block, paths, elem) {
        base + sobol::pairs_shared_bytes(steps * dims, block)
    } else {
        base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fused_shared_bytes_add_the_sobol_tables_when_they_fit() {
        // Paper problem f32, block 128: 7.5 KiB of stack and strategy, then 64 rows of 32 low
        // words and 4 warps × 64 pairs.
        assert!(fused_sobol_warp(64, 1, 7, 128, 1_439_744, 4));
        assert_eq!(fused_shared_bytes(64, 1, 7, 128, 1_439_744, 4, true), 3584 + 64 * 64 + 64 * 128 + 4 * 64 * 8);
        assert_eq!(fused_shared_bytes(64, 1, 7, 128, 1_439_744, 4, false), 3584 + 64 * 64);
        // f64, 128 steps at 256 threads: 16 KiB stack + 12 KiB strategy + 24 KiB tables > 48 KiB.
        // The high parts alone (128 rows × 8 warps × 8 B = 8 KiB) fit: low tables from global.
        assert!(!fused_sobol_warp(128, 1, 8, 256, 1000, 8));
        assert!(fused_sobol_pairs(128, 1, 8, 256, 1000, 8));
        let base = fused_base_bytes(128, 1, 8, 256, 1000, 8);
        assert_eq!(fused_shared_bytes(128, 1, 8, 256, 1000, 8, true), base + 128 * 8 * 8);
        // d = 3, 65 steps, f64 at 128 threads (the bench's d = 3 shape): 21 KiB of stack + 31 KiB
        // of tables do not fit, the stack + 6 KiB of high parts do.
        assert!(!fused_sobol_warp(65, 3, 7, 128, 1_439_744, 8));
        assert!(fused_sobol_pairs(65, 3, 7, 128, 1_439_744, 8));
        // Nothing fits: a stack of 40 slots at 1024 threads in scratch, 2000 rows of pairs.
        assert!(!fused_sobol_pairs(2000, 1, 40, 1024, 1000, 4));
        assert_eq!(fused_shared_bytes(2000, 1, 40, 1024, 1000, 4, true), 0);
        // d = 3 (general path): the stack, then the tables of 3·steps rows.
        assert!(fused_sobol_warp(65, 3, 7, 128, 1000, 4));
        // Every layout this admits stays within the limit.
        for (steps, dims, slots, block) in [(128, 1, 4, 1024), (100, 4, 9, 32), (1, 1, 1, 32), (2000, 8, 20, 512)] {
            for elem in [4, 8] {
                let b = fused_shared_bytes(steps, dims, slots, block, 1000, elem, true);
                assert!(b <= FUSED_SHARED_LIMIT.max(fused_base_bytes(steps, dims, slots, block, 1000, elem)));
            }
        }
    }

    #[test]
    fn philox_cache_fits_the_paper_shape_at_128_threads_only_with_few_slots() {
        // f32, 64 steps, 7 stack slots: 7.5 KiB + 256 B of schedule + 16 slots × 512 B.
        assert_eq!(philox_cache_bytes(64, 16, 128), 256 + 16 * 512);
        assert!(fused_philox_cached(64, 1, 7, 128, 1_439_744, 4, 16));
        assert!(!fused_philox_cached(64, 1, 7, 128, 1_439_744, 4, 0));
        assert!(!fused_philox_cached(64, 1, 7, 128, 1_439_744, 4, philox::MAX_CACHE_SLOTS + 1));
        // Not d = 1, or the cache does not fit 48 KiB.
        assert!(!fused_philox_cached(64, 3, 7, 128, 1000, 4, 16));
        assert!(!fused_philox_cached(64, 1, 7, 1024, 1000, 8, 16));
    }

    #[test]
    fn buffer_shared_bytes_hold_the_stack_and_table_within_the_default_limit() {
        // Paper problem in f32 at 128 threads: the path count is a multiple of 4, so each
        // thread takes four paths and a stack element holds them (7 slots × 128 × 16 B), then 64
        // rows of 32 B coefficients and 32 B indices.
        assert!(buffer_fast(64, 1, 7, 128, 1_439_744));
        // Alignment caps the lanes: a sub-slice 4 or 8 bytes into an allocation.
        assert_eq!(buffer_lanes_at(64, 1, 7, 128, 1_439_744, 4, 0x7000_0000), 4);
        assert_eq!(buffer_lanes_at(64, 1, 7, 128, 1_439_744, 4, 0x7000_0008), 2);
        assert_eq!(buffer_lanes_at(64, 1, 7, 128, 1_439_744, 4, 0x7000_0004), 1);
        assert_eq!(buffer_lanes_at(64, 1, 7, 128, 1_439_745, 4, 0x7000_0008), 1);
        assert_eq!(buffer_lanes_at(64, 3, 7, 128, 1000, 4, 0x7000_0008), 2);
        assert_eq!(buffer_lanes_at(64, 3, 7, 128, 1000, 4, 0x7000_000c), 1);
        assert_eq!(buffer_lanes(64, 1, 7, 128, 1_439_744, 4), 4);
        assert_eq!(buffer_shared_bytes(64, 1, 7, 128, 1_439_744, 4), 14336 + 64 * 64);
        // An odd path count at d = 1: quads too (the last thread's quad is partial).
        for paths in [1_439_745, 1_439_747, 1, 3, 5, 7, 33, 131] {
            assert_eq!(buffer_lanes(64, 1, 7, 128, paths, 4), 4, "{paths}");
            assert_eq!(buffer_shared_bytes(64, 1, 7, 128, paths, 4), 14336 + 64 * 64, "{paths}");
        }
        // 2 mod 4: pairs, 8 B elements.
        for paths in [1_439_746, 2, 6, 130] {
            assert_eq!(buffer_lanes(64, 1, 7, 128, paths, 4), 2, "{paths}");
            assert_eq!(buffer_shared_bytes(64, 1, 7, 128, paths, 4), 7168 + 64 * 64, "{paths}");
        }
        // Quads only while the 16-byte stack stays within 32 KiB (slots·2·block ≤ SHARED_STACK),
        // else pairs; quads only at d = 1 (d = 2..=4 take pairs).
        assert_eq!(buffer_lanes(64, 1, SHARED_STACK / 256, 128, 1000, 4), 4);
        assert_eq!(buffer_lanes(64, 1, SHARED_STACK / 256 + 1, 128, 1000, 4), 2);
        assert_eq!(buffer_lanes(64, 1, SHARED_STACK / 256, 128, 1001, 4), 4);
        assert_eq!(buffer_lanes(64, 2, 7, 128, 1000, 4), 2);
        // Where the 16-byte stack does not fit, an odd path count: one path per thread, 4 B
        // elements (as at d = 2..=4).
        assert_eq!(buffer_lanes(64, 1, SHARED_STACK / 256 + 1, 128, 1001, 4), 1);
        assert_eq!(
            buffer_shared_bytes(64, 1, SHARED_STACK / 256 + 1, 128, 1001, 4),
            (SHARED_STACK / 256 + 1) * 128 * 4 + 64 * 64
        );
        assert_eq!(buffer_lanes(64, 2, 7, 128, 1001, 4), 1);
        // f64: one path per thread, 64 B coefficient rows.
        assert_eq!(buffer_lanes(64, 1, 7, 128, 1_439_744, 8), 1);
        assert_eq!(buffer_shared_bytes(64, 1, 7, 128, 1_439_744, 8), 7168 + 64 * 96);
        // d = 3: stack of 7 × 3 slots, pairs in f32 when the count is even.
        assert!(buffer_fast(64, 3, 7, 128, 1000));
        assert_eq!(buffer_lanes(64, 3, 7, 128, 1000, 4), 2);
        assert_eq!(buffer_shared_bytes(64, 3, 7, 128, 1000, 4), 7 * 3 * 128 * 8 + 64 * 64);
        assert_eq!(buffer_shared_bytes(64, 3, 7, 128, 1001, 4), 7 * 3 * 128 * 4 + 64 * 64);
        assert_eq!(buffer_shared_bytes(64, 3, 7, 128, 1000, 8), 7 * 3 * 128 * 8 + 64 * 96);
        // Unaligned stack sizes round up to 16 so the table rows stay 16-byte aligned.
        assert_eq!(buffer_stack_bytes(3, 1, 1, 4), 16);
        // Not the specialised path: the stack only (d = 5), or nothing (stack in scratch).
        assert!(!buffer_fast(64, FAST_DIMS + 1, 7, 32, 1000));
        assert_eq!(buffer_shared_bytes(64, 5, 7, 32, 1000, 4), 7 * 5 * 32 * 4);
        assert_eq!(buffer_shared_bytes(64, 8, 7, 128, 1000, 4), 0);
        assert!(!buffer_fast(64, 4, 7, 256, 1000));
        // Too many steps for the table, or rows·paths beyond 2^32: the general path.
        assert!(!buffer_fast(TABLE_STEPS + 1, 1, 7, 128, 1000));
        assert!(!buffer_fast(64, 1, 7, 128, (1 << 26) + 1));
        assert!(buffer_fast(64, 1, 7, 128, 1 << 26));
        assert!(!buffer_fast(64, 2, 7, 128, 1 << 26));
        assert!(buffer_fast(64, 2, 7, 128, 1 << 25));
        assert_eq!(buffer_lanes(64, 2, 7, 128, 1 << 26, 4), 1);
        // The largest launches stay under the 48 KiB a kernel may use without opting in.
        let worst = buffer_shared_bytes(TABLE_STEPS, 1, SHARED_STACK / 32, 32, 1, 8);
        assert!(worst <= 48 * 1024, "{worst}");
        let pairs = buffer_shared_bytes(TABLE_STEPS, 1, SHARED_STACK / 32, 32, 2, 4);
        assert!(pairs <= 48 * 1024, "{pairs}");
        let quads = buffer_shared_bytes(TABLE_STEPS, 1, SHARED_STACK / 64, 32, 4, 4);
        assert_eq!(buffer_lanes(TABLE_STEPS, 1, SHARED_STACK / 64, 32, 4, 4), 4);
        assert!(quads <= 48 * 1024, "{quads}");
        let d4 = buffer_shared_bytes(TABLE_STEPS, 4, SHARED_STACK / 128, 32, 2, 4);
        assert!(d4 <= 48 * 1024, "{d4}");
    }

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
