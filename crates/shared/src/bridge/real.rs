//! The bridge's arithmetic, the same on both targets: the [`Real`] precisions, eq. 5's weights
//! and interpolation, exact scaled increments by reciprocal ([`quotient`]), the noise `C·Z`, and
//! register-array selects ([`pick`], [`place`]).

use super::normal;
pub use crate::select::{pick, place, place2};
use core::ops::{Add, Div, Mul, Sub};

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
    /// The Box–Muller pair `(r·cos θ, r·sin θ)` of two generator words in this precision (see
    /// [`super::boxmuller`]).
    fn box_muller(w0: u32, w1: u32) -> (Self, Self);
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

/// `Real` for one float type: `$normal` and `$pair` its normals, `$within` its range test
/// with the exponent bounds of [`quotient`] and [`reciprocal`].
macro_rules! real {
    ($t:ident: $normal:path, $pair:path, $within:ident($quotient_exp:ident, $divisor_exp:ident)) => {
        impl Real for $t {
            const ZERO: $t = 0.0;
            const NAN: $t = $t::NAN;
            #[inline(always)]
            fn from_f64(x: f64) -> $t {
                x as $t
            }
            #[inline(always)]
            fn normal_from_bits(w: u32) -> $t {
                $normal(w)
            }
            #[inline(always)]
            fn box_muller(w0: u32, w1: u32) -> ($t, $t) {
                $pair(w0, w1)
            }
            #[inline(always)]
            fn fma(self, b: $t, c: $t) -> $t {
                crate::fmath::$t::mul_add(self, b, c)
            }
            #[inline(always)]
            fn neg(self) -> $t {
                -self
            }
            #[inline(always)]
            fn quotient_in_range(self) -> bool {
                $within(self.to_bits(), $quotient_exp)
            }
            #[inline(always)]
            fn divisor_in_range(self) -> bool {
                $within(self.to_bits(), $divisor_exp)
            }
        }
    };
}
real!(f32: normal::normal_f32_from_bits, super::boxmuller::pair_f32, f32_in(F32_QUOTIENT_EXP, F32_DIVISOR_EXP));
real!(f64: normal::normal_from_bits, super::boxmuller::pair_f64, f64_in(F64_QUOTIENT_EXP, F64_DIVISOR_EXP));

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
