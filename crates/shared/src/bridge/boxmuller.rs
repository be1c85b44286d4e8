//! Box–Muller normals from Philox words, bit-identical on the GPU and the CPU: a pair of 32-bit
//! words `(w0, w1)` gives the pair `(r·cos θ, r·sin θ)` with `r = √(−2 ln u)` and `θ = 2π·w1/2^32`.
//!
//! Only correctly rounded operations (`+ − ×`, `mul_add`, `sqrt`) and exact bit manipulations,
//! so both targets produce the same bits:
//!
//! - **u** from `w0`: `u = (w0 + 1/2)·2^−32` in f64 (exact); in f32 `u = fma(f32(w0), 2^−32,
//!   2^−33)` below `√½`, and above it `1 − v` with `v` formed the same way from `!w0` and never
//!   rounded into `u` (so the smallest radii keep their relative accuracy). The radius reaches
//!   `√(66 ln 2) ≈ 6.77` in both precisions (one 32-bit word per uniform, as the Φ⁻¹
//!   generators).
//! - **ln u** by [`super::normal::ln_f64`] and, in f32, `−2 ln u` at once by
//!   [`super::normal::neg2_ln_f32_parts`] (the bits of `−2·ln_f32_parts`; branch- and
//!   division-free, about 4e−17 and 2e−8 absolute), `r` by the correctly rounded `sqrt`.
//! - **θ, exactly reduced** (f64): the quadrant is the top two bits of `w1`; inside it the fraction
//!   `g = (w1 mod 2^30)·2^−30` of a right angle is folded to `[0, 1/2]` with its complement
//!   `2^30 − (w1 mod 2^30)` taken on the integer (exact), so `sin(g·π/2)` and `cos(g·π/2)` are
//!   polynomials on `g ∈ [0, 1/2]` (angles up to π/4): `g·S(g²)` and `C(g²)` with the Taylor
//!   coefficients of `sin`/`cos` at `π/2·g`, rounded from 50 digits (mpmath), truncated where the
//!   next term is below 1e−19 (9 and 10 terms). The quadrant then swaps and negates exactly.
//! - **θ from a table** (f32, stream version 3): `w1 = 2^23·i + b` exactly, `i` its top 9 bits
//!   and `b` the low 23 (exact in f32). The pair is the addition formula on
//!   [`super::sincos::SINCOS_F32`]`[i]` = (cos, sin) of `2π·i/512`, each correctly rounded, and
//!   `β = b·2π/2^32 ∈ [0, π/256)`: `cos β = 1 − h` with `h ≈ β²/2`, `sin β ≈ β − β³/6` (the next
//!   terms are below 1e−9 of the result). No quadrant selects, no long polynomials: the table
//!   costs one 8-byte load, from shared memory in the normals kernel (see [`SinCosTable`]).
//!
//! Accuracy against a 50-digit evaluation of the same map (`tests/boxmuller_reference.rs`,
//! `tests/data/boxmuller_mp.txt`) is stated there in ulps of the result.

use super::normal::{self, horner_with};
use crate::fmath;

/// `sin(g·π/2)/g` as a polynomial in `g²` (f64).
const S64: [f64; 9] = [
    core::f64::consts::FRAC_PI_2,
    -0.6459640975062463,
    0.07969262624616705,
    -0.004681754135318688,
    0.00016044118478735983,
    -3.598843235212085e-06,
    5.692172921967927e-08,
    -6.688035109811468e-10,
    6.0669357311061955e-12,
];
/// `cos(g·π/2)` as a polynomial in `g²` (f64).
const C64: [f64; 10] = [
    1.0,
    -1.2337005501361697,
    0.25366950790104803,
    -0.02086348076335296,
    0.0009192602748394266,
    -2.5202042373060607e-05,
    4.710874778818172e-07,
    -6.386603083791852e-09,
    6.565963114979473e-11,
    -5.294400200734623e-13,
];
/// The angle word split exactly: quadrant (0..4), the folded fraction's integer numerator
/// `n ≤ 2^29` (`g = n·2^−30`), and whether the fraction was folded (`sin` and `cos` swap).
#[inline(always)]
pub fn reduce_angle(w1: u32) -> (u32, u32, bool) {
    let q = w1 >> 30;
    let n = w1 & ((1 << 30) - 1);
    if n > 1 << 29 { (q, (1 << 30) - n, true) } else { (q, n, false) }
}

/// `(cos, sin)` of the full angle from `(cos, sin)` of the folded fraction, by selects and sign
/// flips only (a `match` on the quadrant became an indirect branch, `BRX`, on the GPU): the two
/// swap when exactly one of "folded" and "odd quadrant" holds; quadrants 1 and 2 negate the
/// cosine, 2 and 3 the sine (exact).
#[inline(always)]
fn place<T: Copy + core::ops::Neg<Output = T>>(q: u32, folded: bool, c: T, s: T) -> (T, T) {
    let (c, s) = if folded ^ (q & 1 != 0) { (s, c) } else { (c, s) };
    let c = if (q ^ (q >> 1)) & 1 != 0 { -c } else { c };
    let s = if q & 2 != 0 { -s } else { s };
    (c, s)
}

/// The Box–Muller pair of `(w0, w1)` in f64: `(r·cos θ, r·sin θ)` for the angle
/// [`reduce_angle`] splits into `q`, `folded` and the folded fraction `g = n·2^−30` of a quarter
/// turn: `sin` as `g·S(g²)`, `cos` as `C(g²)` (Horner), then `place`d in the quadrant.
#[inline(always)]
pub fn pair_f64(w0: u32, w1: u32) -> (f64, f64) {
    pair_f64_in(w0, w1, &PAIR_F64_COEFS)
}

/// Where the `sin` polynomial's coefficients (`S64`) start in [`PAIR_F64_COEFS`].
pub const SIN_F64_AT: usize = normal::LN_F64_AT + normal::LN_F64_LEN;
/// Where the `cos` polynomial's coefficients (`C64`) start in [`PAIR_F64_COEFS`].
pub const COS_F64_AT: usize = SIN_F64_AT + S64.len();
/// Entries of [`PAIR_F64_COEFS`].
pub const PAIR_F64_LEN: usize = COS_F64_AT + C64.len();

/// Every f64 constant of [`pair_f64`] that is not a power of two, as one [`normal::CoefsF64`]
/// table: [`normal::ln_f64`]'s (from [`normal::LN_F64_AT`]), then `S64` (from
/// [`SIN_F64_AT`]) and `C64` (from [`COS_F64_AT`]). The GPU kernels keep a copy in their
/// constant bank.
pub const PAIR_F64_COEFS: [f64; PAIR_F64_LEN] = {
    let mut t = [0.0; PAIR_F64_LEN];
    let mut i = 0;
    while i < normal::LN_F64_LEN {
        t[normal::LN_F64_AT + i] = normal::LN_F64_COEFS[i];
        i += 1;
    }
    let mut i = 0;
    while i < S64.len() {
        t[SIN_F64_AT + i] = S64[i];
        i += 1;
    }
    let mut i = 0;
    while i < C64.len() {
        t[COS_F64_AT + i] = C64[i];
        i += 1;
    }
    t
};

/// [`pair_f64`] with its coefficients read from `k` (laid out as [`PAIR_F64_COEFS`]): the same
/// operations on the same values, so the same bits from any [`normal::CoefsF64`] holding them.
#[inline(always)]
pub fn pair_f64_in(w0: u32, w1: u32, k: &impl normal::CoefsF64) -> (f64, f64) {
    use fmath::f64::sqrt;
    let u = (w0 as f64 + 0.5) * (1.0 / 4_294_967_296.0);
    let r = sqrt(-2.0 * normal::ln_f64_in(u, k));
    let (q, n, folded) = reduce_angle(w1);
    let g = n as f64 * (1.0 / 1_073_741_824.0);
    let g2 = g * g;
    let s = horner_with(S64.len(), |i| k.coef(SIN_F64_AT + i), g2);
    let c = horner_with(C64.len(), |i| k.coef(COS_F64_AT + i), g2);
    let (c, s) = place(q, folded, c, s * g);
    (r * c, r * s)
}

/// First word of the upper uniforms, `u = (w0 + 1/2)·2^−32 ≥ √½`: from here `ln u` is taken as
/// `ln(1 − v)` with `v = 1 − u` formed from `!w0` (rounding `u` itself to f32 would lose `v`).
const UPPER_W0: u32 = 0xb504_f334;

/// `−2 ln u` (the squared radius) for `u = (w0 + 1/2)·2^−32` in f32, branch-free: below
/// [`UPPER_W0`], `u` rounded once (`fma(f32(w0), 2^−32, 2^−33)`) and split as
/// [`super::normal::ln_f32`] does; from there, `ln(1 − v)` with `v = fma(f32(!w0), 2^−32,
/// 2^−33)`, so the radius keeps its relative accuracy as `u → 1` (the smallest radii). The word
/// is complemented before the one conversion, so both cases share it; everything is formed at
/// twice its size (`2u`, `2v`, `m = −2t`: exact) for [`super::normal::neg2_ln_f32_parts`], so the
/// result is `−2·ln` bit for bit without the product (the tests check it against
/// `ln_u_f32`, the plain form).
#[inline(always)]
fn neg2_ln_u_f32(w0: u32) -> f32 {
    use fmath::f32::mul_add;
    // a select on the bits (a plain `if` became a divergent branch on the GPU)
    let mask = 0u32.wrapping_sub((w0 >= UPPER_W0) as u32);
    // 2u below UPPER_W0, 2v from there
    let y2 = mul_add((w0 ^ mask) as f32, 1.0 / 2_147_483_648.0, 1.0 / 4_294_967_296.0);
    let bits = y2.to_bits();
    // u = 2^k·f with f in [√½, √2): the exponent of 2u is one more
    let k = (bits.wrapping_sub(0x3fb5_04f3) as i32) >> 23;
    let f = f32::from_bits(bits.wrapping_sub((k as u32) << 23).wrapping_sub(1 << 23));
    let m_low = mul_add(f, -2.0, 2.0); // −2(f − 1), exact
    let k = f32::from_bits((k as f32).to_bits() & !mask);
    // m = −2t with t = −v above: 2v
    let m = f32::from_bits((y2.to_bits() & mask) | (m_low.to_bits() & !mask));
    super::normal::neg2_ln_f32_parts(k, m)
}

/// Where the f32 pair reads [`super::sincos::SINCOS_F32`]: the constant itself ([`SinCos`]: the
/// CPU, and GPU kernels that read it from global memory) or a copy of it (a kernel's copy in
/// shared memory). Every implementation returns entry `i` bit for bit.
pub trait SinCosTable {
    /// Entry `i < 512`: `(cos, sin)` of `2π·i/512`.
    fn entry(&self, i: u32) -> [f32; 2];
}

/// [`super::sincos::SINCOS_F32`] itself.
pub struct SinCos;

impl SinCosTable for SinCos {
    #[inline(always)]
    fn entry(&self, i: u32) -> [f32; 2] {
        super::sincos::SINCOS_F32.0[(i & 511) as usize]
    }
}

/// `2π/2^32` rounded to f32: the angle of one unit of `w1`.
const ANGLE_UNIT_F32: f32 = (2.0 * core::f64::consts::PI / 4_294_967_296.0) as f32;

/// `(cos θ, sin θ)` for `θ = 2π·w1/2^32` in f32 by the table (module doc): `w1 = 2^23·i + b`,
/// `(cos, sin)(2π·i/512 + β)` by the addition formula with `β = b·2π/2^32 ∈ [0, π/256)`,
/// `cos β = 1 − h`, `h = β²/2`: `cos = ca − sa·sin β − ca·h`, `sin = sa + ca·sin β − sa·h`.
#[inline(always)]
pub fn angle_f32(w1: u32, table: &impl SinCosTable) -> (f32, f32) {
    use fmath::f32::mul_add;
    let i = w1 >> 23;
    let beta = (w1 & ((1 << 23) - 1)) as f32 * ANGLE_UNIT_F32; // 23 bits: exact before the product
    let b2 = beta * beta;
    let h = b2 * 0.5;
    let sb = mul_add(b2 * beta, -1.0 / 6.0, beta);
    let [ca, sa] = table.entry(i);
    (mul_add(-ca, h, mul_add(-sa, sb, ca)), mul_add(-sa, h, mul_add(ca, sb, sa)))
}

/// The Box–Muller pair of `(w0, w1)` in f32 with the angle table read from `table`:
/// `(r·cos θ, r·sin θ)` (its own arithmetic, not the f64 pair rounded).
#[inline(always)]
pub fn pair_f32_in(w0: u32, w1: u32, table: &impl SinCosTable) -> (f32, f32) {
    use fmath::f32::sqrt;
    let r = sqrt(neg2_ln_u_f32(w0));
    let (c, s) = angle_f32(w1, table);
    (r * c, r * s)
}

/// The Box–Muller pair of `(w0, w1)` in f32: [`pair_f32_in`] on [`SinCos`].
#[inline(always)]
pub fn pair_f32(w0: u32, w1: u32) -> (f32, f32) {
    pair_f32_in(w0, w1, &SinCos)
}

/// The `mul_add`s in one inlined [`pair_f64`] (its two polynomials and its `ln`'s), for the
/// census rule in `tests/tidy.rs`.
pub const FMA_PER_PAIR_F64: usize = S64.len() - 1 + C64.len() - 1 + super::normal::FMA_PER_LN_F64;

/// The `mul_add`s in one inlined [`pair_f32`] (the uniform's, `−2(f − 1)`'s, the angle's five,
/// its `ln`'s).
pub const FMA_PER_PAIR_F32: usize = 2 + 5 + super::normal::FMA_PER_LN_F32;

/// Row `row`'s normal of the Box–Muller stream of one path: word block `row / 4` of the path's
/// Philox stream (the same blocks as the Φ⁻¹ stream) gives rows `4b, 4b + 1` from the pair of its
/// words 0 and 1, rows `4b + 2, 4b + 3` from words 2 and 3 (cos first, then sin).
#[inline(always)]
pub fn normal_of_block<T: super::Real>(block: [u32; 4], row: u32) -> T {
    let (a, b) = if row & 2 == 0 { (block[0], block[1]) } else { (block[2], block[3]) };
    let (c, s) = T::box_muller(a, b);
    if row & 1 == 0 { c } else { s }
}

/// Box–Muller normals of one path from the Philox blocks of
/// [`super::philox::PhiloxNormals`] (the same one-block cache).
pub struct PhiloxBoxMuller(super::philox::PhiloxNormals);

impl PhiloxBoxMuller {
    /// The stream of path `path` under `seed`.
    #[inline(always)]
    pub fn new(seed: u64, path: u64) -> Self {
        PhiloxBoxMuller(super::philox::PhiloxNormals::new(seed, path))
    }

    /// The four words of row `row`'s block.
    #[inline(always)]
    pub fn block(&mut self, row: u32) -> [u32; 4] {
        self.0.block(row)
    }
}

impl<T: super::Real> super::Normals<T> for PhiloxBoxMuller {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        normal_of_block(self.block(row), row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn angle_reduction_is_exact_and_folds_to_an_eighth() {
        for w in [0u32, 1, (1 << 29) - 1, 1 << 29, (1 << 29) + 1, (1 << 30) - 1, 1 << 30, u32::MAX] {
            let (q, n, folded) = reduce_angle(w);
            assert_eq!(q, w >> 30);
            assert!(n <= 1 << 29, "{w:#x}");
            let m = w & ((1 << 30) - 1);
            assert_eq!(if folded { (1 << 30) - n } else { n }, m);
        }
    }

    #[test]
    fn pairs_match_libm_closely() {
        let mut w = 0x1234_5678u32;
        for _ in 0..20_000 {
            w = w.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let v = w.rotate_left(13) ^ 0x9e37_79b9;
            let u = (w as f64 + 0.5) / 4_294_967_296.0;
            let theta = v as f64 / 4_294_967_296.0 * 2.0 * core::f64::consts::PI;
            let r = (-2.0 * u.ln()).sqrt();
            let (c, s) = pair_f64(w, v);
            assert!((c - r * theta.cos()).abs() <= 1e-14 * (1.0 + r), "{w} {v}: {c} vs {}", r * theta.cos());
            assert!((s - r * theta.sin()).abs() <= 1e-14 * (1.0 + r), "{w} {v}");
            let (c32, s32) = pair_f32(w, v);
            assert!((c32 as f64 - r * theta.cos()).abs() <= 3e-6 * (1.0 + r), "{w} {v}: {c32}");
            assert!((s32 as f64 - r * theta.sin()).abs() <= 3e-6 * (1.0 + r), "{w} {v}: {s32}");
        }
    }

    /// A coefficient source that hands out copies of the table's values (as the GPU's constant
    /// bank does): the pair must not depend on where its coefficients come from.
    struct Copied([f64; PAIR_F64_LEN]);

    impl normal::CoefsF64 for Copied {
        fn coef(&self, i: usize) -> f64 {
            f64::from_bits(core::hint::black_box(self.0[i].to_bits()))
        }
    }

    #[test]
    fn pair_from_a_coefficient_source_is_the_pair_bit_for_bit() {
        let copied = Copied(PAIR_F64_COEFS);
        let edges = [0u32, 1, (1 << 29) - 1, 1 << 29, (1 << 29) + 1, (1 << 30) - 1, 1 << 30, 0x8000_0000, u32::MAX];
        let mut w = 0x0bad_cafeu32;
        for i in 0..20_000usize {
            w = w.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let (w0, w1) = if i < edges.len() * edges.len() {
                (edges[i % edges.len()], edges[i / edges.len()])
            } else {
                (w, w.rotate_left(7))
            };
            let (a, b) = (pair_f64(w0, w1), pair_f64_in(w0, w1, &copied));
            assert_eq!((a.0.to_bits(), a.1.to_bits()), (b.0.to_bits(), b.1.to_bits()), "{w0:#x} {w1:#x}");
        }
    }

    #[test]
    fn the_pair_table_holds_the_polynomials_in_order() {
        assert_eq!(&PAIR_F64_COEFS[SIN_F64_AT..COS_F64_AT], &S64[..]);
        assert_eq!(&PAIR_F64_COEFS[COS_F64_AT..], &C64[..]);
        assert_eq!(PAIR_F64_COEFS[normal::LN_F64_AT + normal::LN_F64_LEN - 2], core::f64::consts::LN_2);
    }

    /// The plain form of [`neg2_ln_u_f32`] (stream version 2's radius): `ln u` by
    /// `ln_f32_parts` on `u` or `1 − v`, then `−2·`.
    fn ln_u_f32(w0: u32) -> f32 {
        let upper = w0 >= UPPER_W0;
        let y = fmath::f32::mul_add(w0 as f32, 1.0 / 4_294_967_296.0, 1.0 / 8_589_934_592.0);
        let v = fmath::f32::mul_add(!w0 as f32, 1.0 / 4_294_967_296.0, 1.0 / 8_589_934_592.0);
        if upper {
            super::super::normal::ln_f32_parts(0.0, -v)
        } else {
            let bits = y.to_bits();
            let k = (bits.wrapping_sub(0x3f35_04f3) as i32) >> 23;
            let t = f32::from_bits(bits.wrapping_sub((k as u32) << 23)) - 1.0;
            super::super::normal::ln_f32_parts(k as f32, t)
        }
    }

    #[test]
    fn the_squared_radius_is_minus_twice_the_plain_log_bit_for_bit() {
        let around = |c: u32| c.saturating_sub(4096)..=c.saturating_add(4096);
        let words = (0..=u32::MAX).step_by(997).chain(around(0)).chain(around(UPPER_W0)).chain(around(u32::MAX));
        for w in words.chain([1 << 31, (1 << 31) - 1, 0x3f35_04f3, 0x3fb5_04f3]) {
            assert_eq!(neg2_ln_u_f32(w).to_bits(), (-2.0 * ln_u_f32(w)).to_bits(), "{w:#x}");
        }
    }

    #[test]
    fn extremes_are_finite() {
        for w0 in [0u32, 1, u32::MAX - 1, u32::MAX] {
            for w1 in [0u32, 1 << 29, 1 << 30, u32::MAX] {
                let (a, b) = pair_f64(w0, w1);
                let (c, d) = pair_f32(w0, w1);
                assert!(a.is_finite() && b.is_finite() && c.is_finite() && d.is_finite());
                assert!(a.hypot(b) < 6.8 && (c as f64).hypot(d as f64) < 6.8);
            }
        }
    }
}
