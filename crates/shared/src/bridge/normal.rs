//! The inverse of the standard normal CDF, Φ⁻¹, on `libm`, so the GPU and the CPU produce the
//! same bits for the same uniform.
//!
//! Method: P. J. Acklam's rational approximation (relative error < 1.15e-9 on (0, 1)) followed
//! by one step of Halley's method on `Φ(x) − p = 0` with `Φ(x) = erfc(−x/√2)/2` from
//! `libm::erfc`, which brings the result to about full double precision. The approximation is
//! evaluated for `p ≤ 1/2` only and mirrored (`Φ⁻¹(p) = −Φ⁻¹(1 − p)`, where `1 − p` is exact by
//! Sterbenz's lemma), so the Halley residual never suffers cancellation near 1.
//!
//! **f32 generation** uses [`normal_f32_from_bits`]: the same approximation evaluated in f32
//! arithmetic (libm `logf`, correctly rounded `sqrt` and `/`), without the Halley step — about
//! 15× cheaper on the GPU, accurate to a few f32 ulps (tested against the f64 quantile), and
//! monotone in the 32-bit word. The f32 and f64 generators therefore give different normals
//! for the same word (the f32 ones are not the f64 ones rounded); each is bit-identical on the
//! GPU and the CPU.

const A: [f64; 6] = [
    -3.969683028665376e+01,
    2.209460984245205e+02,
    -2.759285104469687e+02,
    1.38357751867269e+02,
    -3.066479806614716e+01,
    2.506628277459239e+00,
];
const B: [f64; 5] = [
    -5.447609879822406e+01,
    1.615858368580409e+02,
    -1.556989798598866e+02,
    6.680131188771972e+01,
    -1.328068155288572e+01,
];
const C: [f64; 6] = [
    -7.784894002430293e-03,
    -3.223964580411365e-01,
    -2.400758277161838e+00,
    -2.549732539343734e+00,
    4.374664141464968e+00,
    2.938163982698783e+00,
];
const D: [f64; 4] = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00];

/// Below this, the tail formula of the approximation is used.
const P_LOW: f64 = 0.02425;

/// √(2π).
const SQRT_2PI: f64 = 2.506_628_274_631_000_7;

/// Acklam's approximation alone, for `0 < p ≤ 1/2` (relative error < 1.15e-9).
#[inline(always)]
pub fn acklam_lower(p: f64) -> f64 {
    if p < P_LOW {
        let q = libm::sqrt(-2.0 * libm::log(p));
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Φ⁻¹(p) for `0 < p ≤ 1/2`: Acklam + one Halley step.
#[inline(always)]
fn lower(p: f64) -> f64 {
    let x = acklam_lower(p);
    let e = 0.5 * libm::erfc(-x * core::f64::consts::FRAC_1_SQRT_2) - p;
    let u = e * SQRT_2PI * libm::exp(0.5 * x * x);
    x - u / (1.0 + 0.5 * x * u)
}

/// Φ⁻¹(p), the standard normal quantile, for `0 < p < 1` (±∞ at 0 and 1, NaN outside).
#[inline(always)]
pub fn inverse_normal_cdf(p: f64) -> f64 {
    if p <= 0.0 {
        return if p == 0.0 { f64::NEG_INFINITY } else { f64::NAN };
    }
    if p >= 1.0 {
        return if p == 1.0 { f64::INFINITY } else { f64::NAN };
    }
    if p > 0.5 { -lower(1.0 - p) } else { lower(p) }
}

/// The uniform of a 32-bit word: `(w + 1/2) / 2^32`, strictly inside (0, 1), exact in f64.
#[inline(always)]
pub fn uniform(w: u32) -> f64 {
    (w as f64 + 0.5) * (1.0 / 4_294_967_296.0)
}

/// A standard normal from a 32-bit word: `Φ⁻¹(uniform(w))`.
#[inline(always)]
pub fn normal_from_bits(w: u32) -> f64 {
    inverse_normal_cdf(uniform(w))
}

const C32: [f32; 6] = [C[0] as f32, C[1] as f32, C[2] as f32, C[3] as f32, C[4] as f32, C[5] as f32];
const D32: [f32; 4] = [D[0] as f32, D[1] as f32, D[2] as f32, D[3] as f32];

/// Acklam's tail formula in f32 arithmetic, for `0 < p < 0.02425` (relative error a few
/// f32 ulps: its rational in `q = sqrt(−2 log p)` has no cancellation).
#[inline(always)]
pub fn acklam_tail_f32(p: f32) -> f32 {
    let q = libm::sqrtf(-2.0 * libm::logf(p));
    (((((C32[0] * q + C32[1]) * q + C32[2]) * q + C32[3]) * q + C32[4]) * q + C32[5])
        / ((((D32[0] * q + D32[1]) * q + D32[2]) * q + D32[3]) * q + 1.0)
}

/// A standard normal in f32 from a 32-bit word, ≈ `Φ⁻¹((w + 1/2)/2^32)`: Acklam's
/// approximation without refinement, on the nearer half (`w < 2^31` directly, otherwise `−` the
/// value of the mirrored word `!w`, so both tails keep full relative precision). The central
/// region (p ≥ 0.02425) is evaluated in f64 (its rational cancels too much in f32) and rounded;
/// the tail in f32 with `logf`/`sqrtf`. Accuracy: a few f32 ulps; monotone up to one or two
/// ulps where the formulas meet.
#[inline(always)]
pub fn normal_f32_from_bits(w: u32) -> f32 {
    const SCALE: f32 = 1.0 / 4_294_967_296.0;
    let m = if w < 0x8000_0000 { w } else { !w };
    let p = uniform(m);
    let z = if p < P_LOW { acklam_tail_f32((m as f32 + 0.5) * SCALE) } else { acklam_lower(p) as f32 };
    if w < 0x8000_0000 { z } else { -z }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_and_centred() {
        assert_eq!(inverse_normal_cdf(0.5), 0.0);
        assert_eq!(inverse_normal_cdf(0.25), -inverse_normal_cdf(0.75));
        assert_eq!(inverse_normal_cdf(0.0), f64::NEG_INFINITY);
        assert!(inverse_normal_cdf(1.5).is_nan());
        assert!(uniform(0) > 0.0 && uniform(u32::MAX) < 1.0);
    }
}
