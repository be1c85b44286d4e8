//! Approximate math instructions, for kernels whose name says they are fast (`*_fast`): never
//! bit-reproducible across GPUs or against a CPU. Exact kernels must not call these (the PTX
//! census and `tests/tidy.rs` check for `.approx`) — except through the written-out inline paths
//! of ptxas's correctly rounded `sqrt.rn` and `div.rn` below (`sqrt_rn_f32_inline`,
//! `div_rn_f32_inline`, `sqrt_rn_f64_inline`, `div_rn_f64_inline`), which give those
//! instructions' results where their range tests hold.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// `rsqrt.approx.ftz.f32`: `1/sqrt(x)`, maximum relative error about 2^-22.9 (PTX ISA), with
/// subnormal inputs read as zero of the same sign (`1/sqrt(±subnormal) = ±∞`); `rsqrt(0) = +∞`,
/// negative input gives NaN. One `MUFU.RSQ`: the unflushed `rsqrt.approx.f32` adds three
/// instructions that scale a subnormal input up and the result back (a test, two predicated
/// multiplies; SASS of sm_90), and for a normal input, zero, ∞ or NaN it is the same `MUFU.RSQ`
/// on the same operand, so the same result. Use it only where a subnormal input gives the same
/// final result either way: the n-body fast term cubes the result (see
/// `lockstep_shared::nbody::accumulate_fast`), and for `0 < x < 2^−126` the unflushed
/// `r > 2^62.9` gives `r·r·r > 2^188 → +∞`, as `+∞` does.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn rsqrt_approx_ftz_f32(x: f32) -> f32 {
    let r: f32;
    // SAFETY: a register-to-register instruction with no preconditions.
    unsafe { asm!("rsqrt.approx.ftz.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack)) };
    r
}

/// `rsqrt.approx.f64`: `1/sqrt(x)`. ptxas expands it (sm_90 SASS) to `MUFU.RSQ64H` on the upper
/// word (the seed `y₀`, lower word zero), a cubic refinement `e = fma(x, −y₀², 1)`,
/// `y = fma(fma(e, 0.375, 0.5), y₀·e, y₀)`, and a call to a slow path for `x` outside the
/// positive normals (zero, subnormal, negative, ∞, NaN), which it wraps in a region it does not
/// interleave with other work; [`rsqrt_approx_f64_normal`] is the inline part alone.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn rsqrt_approx_f64(x: f64) -> f64 {
    let r: f64;
    // SAFETY: a register-to-register instruction with no preconditions.
    unsafe { asm!("rsqrt.approx.f64 {r}, {x};", r = out(reg64) r, x = in(reg64) x, options(pure, nomem, nostack)) };
    r
}

/// Whether `x` is a positive normal f64 — ptxas's own test before the slow path of
/// `rsqrt.approx.f64` (upper word minus `0x0010_0000` below `0x7fe0_0000`, unsigned).
#[inline(always)]
pub fn positive_normal_f64(x: f64) -> bool {
    ((x.to_bits() >> 32) as u32).wrapping_sub(0x0010_0000) < 0x7fe0_0000
}

/// [`rsqrt_approx_f64`] for a positive normal `x` ([`positive_normal_f64`]), as straight-line
/// code: the seed `rsqrt.approx.ftz.f64` (`MUFU.RSQ64H` alone, lower word zero — the same
/// instruction on the same operand as the unflushed form's seed) and the same cubic refinement,
/// operation for operation, so the same result there; outside that range the result is not
/// `rsqrt_approx_f64`'s (e.g. NaN for `x = 0`). Without the slow path's call region ptxas may
/// interleave several of these.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn rsqrt_approx_f64_normal(x: f64) -> f64 {
    let y0 = rsqrt_approx_ftz_f64(x);
    use core::f64::math::mul_add;
    let e = mul_add(x, -(y0 * y0), 1.0);
    mul_add(mul_add(e, 0.375, 0.5), y0 * e, y0)
}

/// Whether ptxas's `sqrt.rn.f32` takes its inline path for `x` — its own test (SASS of sm_90:
/// `bits(x) − 0x0d00_0000 ≤ 0x727f_ffff`, unsigned), true for the finite `x ≥ 2^−101` — where
/// `sqrt_rn_f32_inline` (device only) equals `sqrt.rn.f32`.
#[inline(always)]
pub fn sqrt_rn_f32_inline_range(x: f32) -> bool {
    x.to_bits().wrapping_sub(0x0d00_0000) <= 0x727f_ffff
}

/// `sqrt.rn.f32` (the correctly rounded `√x`) for `x` in [`sqrt_rn_f32_inline_range`], written
/// out as ptxas's inline path is (SASS of sm_90): `y = MUFU.RSQ(x)` (`rsqrt.approx.ftz.f32`),
/// `s = x·y`, `h = y·0.5`, `fma(fma(−s, s, x), h, s)` — the same operations on the same values
/// (ptxas multiplies with `.ftz`; in this range no operand or product is subnormal), so the
/// same result, without the region ptxas wraps around its slow-path call, which it never
/// interleaves with other work.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn sqrt_rn_f32_inline(x: f32) -> f32 {
    use core::f32::math::mul_add;
    let y = rsqrt_approx_ftz_f32(x);
    let s = x * y;
    let h = y * 0.5;
    mul_add(mul_add(-s, s, x), h, s)
}

/// Whether `div_rn_f32_inline(a, b)` (device only) is `div.rn.f32`'s `a / b`: both finite with
/// `|a|, |b| ∈ [2^−60, 2^60)` (exponent fields 67..=186).
#[inline(always)]
pub fn div_rn_f32_inline_range(a: f32, b: f32) -> bool {
    div_f32_exponent(a).max(div_f32_exponent(b)) < 120 << 24
}

/// The exponent field of `x` in the top byte (the sign shifted out), less 67: below `120 << 24`
/// iff `|x| ∈ [2^−60, 2^60)`.
#[inline(always)]
fn div_f32_exponent(x: f32) -> u32 {
    (x.to_bits() << 1).wrapping_sub(67 << 24)
}

/// Whether every `r²` of four exact n-body terms is in `[2^−40, 2^40)`: then each `√r²` is in
/// [`sqrt_rn_f32_inline_range`], and with `r = √r²` (correctly rounded, so in `[2^−20, 2^20]`)
/// the denominator `r²·r` lies in `[2^−60, 2^60 − 2^36]` (rounding is monotone and both ends are
/// f32s), so for a mass in [`div_rn_f32_inline_operand`] `m / (r²·r)` is in
/// [`div_rn_f32_inline_range`]: one test for both operations of four terms (the host tests below
/// check the implication). Written as one maximum, which ptxas folds into its add-and-max
/// instructions.
#[inline(always)]
pub fn nbody_r2_inline_range_f32(r2: [f32; 4]) -> bool {
    // r² − 2^−40 below 2^40 − 2^−40 on the bit patterns (a negative or NaN r² wraps high).
    let r = |k: usize| r2[k].to_bits().wrapping_sub(87 << 23);
    r(0).max(r(1)).max(r(2)).max(r(3)) < 80 << 23
}

/// Whether `a` is in [`div_rn_f32_inline_range`]'s range for either operand: finite with
/// `|a| ∈ [2^−60, 2^60)`.
#[inline(always)]
pub fn div_rn_f32_inline_operand(a: f32) -> bool {
    div_f32_exponent(a) < 120 << 24
}

/// `div.rn.f32` (the correctly rounded `a / b`) for operands in [`div_rn_f32_inline_range`],
/// written out as ptxas's inline path is (SASS of sm_90): `r = MUFU.RCP(b)`
/// (`rcp.approx.ftz.f32`), `r₁ = fma(r, fma(−b, r, 1), r)`, `q₀ = fma(a, r₁, +0)`, `fma(r₁,
/// fma(−b, q₀, a), q₀)`. ptxas takes that path when its `FCHK` range check passes and calls a
/// slow path otherwise; `FCHK` is undocumented, so the range here rests on this instead: with
/// both operands in `[2^−60, 2^60)` no value of the sequence is subnormal, infinite or lost
/// (`r`, `r₁ ∈ (2^−60, 2^60]`, `1 − b·r` free of scale, `q₀` and the result in `(2^−121,
/// 2^121)`, the remainder `a − b·q₀` a multiple of `ulp(b)·ulp(q₀) ≥ 2^−107`, so zero or normal,
/// and the last product fused), so
/// scaling `a` or `b` by a power of two scales every value by it (`MUFU.RCP` included: it
/// approximates from the significand) and the result depends on the two significands alone;
/// for every pair of significands ptxas takes this very path with both exponents zero, where
/// `div.rn` is its correctly rounded quotient. Checked exhaustively on the GPU
/// (`scripts/check_inline_sqrt_div.py`: every pair of significands in `[1, 2)`, 2^46, plus 2^32
/// random in-range pairs and the range's corners give `div.rn.f32`'s bits; every f32 in
/// [`sqrt_rn_f32_inline_range`] gives `sqrt.rn.f32`'s), and by the exact n-body suites (GPU =
/// CPU bit for bit).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn div_rn_f32_inline(a: f32, b: f32) -> f32 {
    use core::f32::math::mul_add;
    let r: f32;
    // SAFETY: a register-to-register instruction with no preconditions.
    unsafe { asm!("rcp.approx.ftz.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) b, options(pure, nomem, nostack)) };
    let r1 = mul_add(r, mul_add(-b, r, 1.0), r);
    let q0 = mul_add(a, r1, 0.0);
    mul_add(r1, mul_add(-b, q0, a), q0)
}

/// Whether ptxas's `sqrt.rn.f64` takes its inline path for `x` — its own test (SASS of sm_90:
/// upper word minus `0x0350_0000` below `0x7ca0_0000`, unsigned), true for the finite
/// `x ≥ 2^−970` — where `sqrt_rn_f64_inline` (device only) equals `sqrt.rn.f64`.
#[inline(always)]
pub fn sqrt_rn_f64_inline_range(x: f64) -> bool {
    ((x.to_bits() >> 32) as u32).wrapping_sub(0x0350_0000) < 0x7ca0_0000
}

/// `sqrt.rn.f64` (the correctly rounded `√x`) for `x` in [`sqrt_rn_f64_inline_range`], written
/// out as ptxas's inline path is (SASS of sm_90): the seed `y` has `MUFU.RSQ64H(x)`
/// (`rsqrt.approx.ftz.f64`, upper word) above and `hi(x) + 0xfcb0_0000` below (ptxas reuses its
/// range test's register as the lower word), `e = fma(x, −y², 1)`, `y₁ = fma(fma(e, 0.375, 0.5),
/// y·e, y)`, `s = x·y₁`, `h = y₁` with its upper word less `0x0010_0000`, `fma(fma(s, −s, x), h,
/// s)` — the same operations on the same values, so the same result (`sqrt.rn.f64`'s: ptxas
/// returns this path's value whenever its test holds), without the region ptxas wraps around
/// its slow-path call, which it never interleaves with other work.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn sqrt_rn_f64_inline(x: f64) -> f64 {
    use core::f64::math::mul_add;
    let hi_x = (x.to_bits() >> 32) as u32;
    let y = with_lower_word(rsqrt_approx_ftz_f64(x), hi_x.wrapping_add(0xfcb0_0000));
    let e = mul_add(x, -(y * y), 1.0);
    let y1 = mul_add(mul_add(e, 0.375, 0.5), y * e, y);
    let s = x * y1;
    // The upper word less 0x0010_0000 (the lower word unchanged).
    let h = f64::from_bits(y1.to_bits().wrapping_sub(1 << 52));
    mul_add(mul_add(s, -s, x), h, s)
}

/// Whether `div_rn_f64_inline(a, b)` (device only) is `div.rn.f64`'s `a / b`: both finite with
/// `|a|, |b| ∈ [2^−500, 2^500)` (exponent fields 523..=1522).
#[inline(always)]
pub fn div_rn_f64_inline_range(a: f64, b: f64) -> bool {
    div_f64_exponent(a).max(div_f64_exponent(b)) < 1000 << 21
}

/// The exponent field of `x` in the top 11 bits of the upper word (the sign shifted out), less
/// 523: below `1000 << 21` iff `|x| ∈ [2^−500, 2^500)`.
#[inline(always)]
fn div_f64_exponent(x: f64) -> u32 {
    (((x.to_bits() >> 32) as u32) << 1).wrapping_sub(523 << 21)
}

/// [`nbody_r2_inline_range_f32`] for f64: every `r² ∈ [2^−332, 2^332)`. Then `√r²` is in
/// [`sqrt_rn_f64_inline_range`] and, with `r = √r² ∈ [2^−166, 2^166]`, the denominator `r²·r`
/// in `[2^−498, 2^498)`, so for a mass in [`div_rn_f64_inline_operand`] `m / (r²·r)` is in
/// [`div_rn_f64_inline_range`].
#[inline(always)]
pub fn nbody_r2_inline_range_f64(r2: [f64; 4]) -> bool {
    // On the upper words (the range's ends are powers of two, lower words zero).
    let r = |k: usize| ((r2[k].to_bits() >> 32) as u32).wrapping_sub(691 << 20);
    r(0).max(r(1)).max(r(2)).max(r(3)) < 664 << 20
}

/// Whether `a` is in [`div_rn_f64_inline_range`]'s range for either operand: finite with
/// `|a| ∈ [2^−500, 2^500)`.
#[inline(always)]
pub fn div_rn_f64_inline_operand(a: f64) -> bool {
    div_f64_exponent(a) < 1000 << 21
}

/// `div.rn.f64` (the correctly rounded `a / b`) for operands in [`div_rn_f64_inline_range`],
/// written out as ptxas's inline path is (SASS of sm_90): the seed `y` has `MUFU.RCP64H(b)`
/// (`rcp.approx.ftz.f64`, upper word) above and `1` below, `t = fma(−b, y, 1)`, `y₁ = fma(y,
/// fma(t, t, t), y)`, `y₂ = fma(y₁, fma(−b, y₁, 1), y₁)`, `q₀ = a·y₂`, `fma(y₂, fma(−b, q₀, a),
/// q₀)`. ptxas returns that value when its two tests pass — the upper word of `a` read as an
/// f32 at least `0x0360_0000` in magnitude (`|a| ≥ 2^−969`), and `0·hi(b) + hi(q)` read as f32s
/// above `0x0010_0000` in magnitude and not NaN (`|b| < 2^1017`, `|q| > 2^−1022`, `|q| <
/// 2^1017`) — and calls a slow path otherwise; in this range both pass (`|q| ∈ (2^−1001,
/// 2^1001)`), so this sequence is `div.rn.f64`'s result. Checked on the GPU against
/// `div.rn.f64` (`scripts/check_inline_sqrt_div.py`) and by the exact n-body suites.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn div_rn_f64_inline(a: f64, b: f64) -> f64 {
    use core::f64::math::mul_add;
    let r0: f64;
    // SAFETY: a register-to-register instruction with no preconditions.
    unsafe { asm!("rcp.approx.ftz.f64 {r}, {x};", r = out(reg64) r0, x = in(reg64) b, options(pure, nomem, nostack)) };
    let y = with_lower_word(r0, 1);
    let t = mul_add(-b, y, 1.0);
    let y1 = mul_add(y, mul_add(t, t, t), y);
    let y2 = mul_add(y1, mul_add(-b, y1, 1.0), y1);
    let q0 = a * y2;
    mul_add(y2, mul_add(-b, q0, a), q0)
}

/// `rsqrt.approx.ftz.f64`: `MUFU.RSQ64H` on the upper word of `x` (SASS of sm_90), the lower
/// word of the result zero — the seed of ptxas's `rsqrt.approx.f64` and `sqrt.rn.f64`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn rsqrt_approx_ftz_f64(x: f64) -> f64 {
    let r: f64;
    // SAFETY: a register-to-register instruction with no preconditions.
    unsafe { asm!("rsqrt.approx.ftz.f64 {r}, {x};", r = out(reg64) r, x = in(reg64) x, options(pure, nomem, nostack)) };
    r
}

/// `x`'s upper word above `lo`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn with_lower_word(x: f64, lo: u32) -> f64 {
    f64::from_bits((x.to_bits() & 0xffff_ffff_0000_0000) | lo as u64)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::{
        div_rn_f32_inline_operand, div_rn_f32_inline_range, div_rn_f64_inline_operand, div_rn_f64_inline_range,
        nbody_r2_inline_range_f32, nbody_r2_inline_range_f64, positive_normal_f64, sqrt_rn_f32_inline_range,
        sqrt_rn_f64_inline_range,
    };
    use std::vec::Vec;

    #[test]
    fn positive_normal_is_ptxas_range_test() {
        for x in [f64::MIN_POSITIVE, 1.0, 0.375, 1e-300, 1e300, f64::MAX] {
            assert!(positive_normal_f64(x), "{x:e}");
        }
        let below = f64::from_bits(f64::MIN_POSITIVE.to_bits() - 1); // the largest subnormal
        for x in
            [0.0, -0.0, below, f64::from_bits(1), -1.0, -f64::MIN_POSITIVE, f64::INFINITY, f64::NEG_INFINITY, f64::NAN]
        {
            assert!(!positive_normal_f64(x), "{x:e}");
        }
    }

    #[test]
    fn sqrt_inline_range_is_ptxas_test() {
        let lo = f32::from_bits(0x0d00_0000); // 2^−101
        for x in [lo, 1.0, 1e-30, 3e38, f32::MAX] {
            assert!(sqrt_rn_f32_inline_range(x), "{x:e}");
        }
        let below = f32::from_bits(0x0cff_ffff);
        for x in [below, 0.0, -0.0, f32::from_bits(1), -1.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
            assert!(!sqrt_rn_f32_inline_range(x), "{x:e}");
        }
    }

    #[test]
    fn div_inline_range_is_both_magnitudes_in_2_pow_minus_60_to_60() {
        let (lo, hi) = (2f32.powi(-60), 2f32.powi(60));
        let below = f32::from_bits(lo.to_bits() - 1);
        let top = f32::from_bits(hi.to_bits() - 1);
        for (a, b) in [(lo, lo), (-lo, top), (top, -top), (1.0, 1.0), (-3.5, 1e-12), (1e17, 2e-17)] {
            assert!(div_rn_f32_inline_range(a, b), "{a:e} / {b:e}");
        }
        for bad in [below, -below, hi, -hi, 0.0, -0.0, f32::from_bits(1), f32::INFINITY, f32::NAN, f32::MAX] {
            assert!(!div_rn_f32_inline_range(bad, 1.0), "{bad:e} / 1");
            assert!(!div_rn_f32_inline_range(1.0, bad), "1 / {bad:e}");
        }
    }

    #[test]
    fn sqrt_f64_inline_range_is_ptxas_test() {
        let lo = f64::from_bits(0x0350_0000 << 32); // 2^−970
        for x in [lo, 1.0, 1e-290, 1e300, f64::MAX] {
            assert!(sqrt_rn_f64_inline_range(x), "{x:e}");
        }
        let below = f64::from_bits(lo.to_bits() - 1);
        for x in
            [below, 0.0, -0.0, f64::MIN_POSITIVE, f64::from_bits(1), -1.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN]
        {
            assert!(!sqrt_rn_f64_inline_range(x), "{x:e}");
        }
    }

    #[test]
    fn div_f64_inline_range_is_both_magnitudes_in_2_pow_minus_500_to_500() {
        let (lo, hi) = (2f64.powi(-500), 2f64.powi(500));
        let below = f64::from_bits(lo.to_bits() - 1);
        let top = f64::from_bits(hi.to_bits() - 1);
        for (a, b) in [(lo, lo), (-lo, top), (top, -top), (1.0, 1.0), (-3.5, 1e-120), (1e150, 2e-150)] {
            assert!(div_rn_f64_inline_range(a, b), "{a:e} / {b:e}");
        }
        for bad in [below, -below, hi, -hi, 0.0, -0.0, f64::from_bits(1), f64::INFINITY, f64::NAN, f64::MAX] {
            assert!(!div_rn_f64_inline_range(bad, 1.0), "{bad:e} / 1");
            assert!(!div_rn_f64_inline_range(1.0, bad), "1 / {bad:e}");
        }
    }

    /// A few million bit patterns per precision: the range's ends and their neighbours, then
    /// random patterns weighted towards the ends (xorshift; `std`'s `sqrt` is correctly rounded
    /// like `sqrt.rn`, the product rounds like the kernel's).
    fn patterns(ends: &[u64], bits: u32, n: usize) -> Vec<u64> {
        let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let mut v = Vec::new();
        for &e in ends {
            for d in 0..64u64 {
                v.extend([e.wrapping_add(d) & mask, e.wrapping_sub(d) & mask]);
            }
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let end = ends[i % ends.len()];
            // Every other pattern within 2^20 units in the last place of an end, the rest anywhere.
            v.push(if i % 2 == 0 { end.wrapping_add(x & 0x1f_ffff).wrapping_sub(1 << 20) & mask } else { x & mask });
        }
        v
    }

    #[test]
    fn terms_inline_range_f32_implies_both_operations_in_range() {
        let (lo, hi) = (2f32.powi(-40), 2f32.powi(40));
        let ok = |r2: f32, m: f32| nbody_r2_inline_range_f32([r2; 4]) & div_rn_f32_inline_operand(m);
        let ends: Vec<u64> = [lo, hi, 2f32.powi(-60), 2f32.powi(60)].iter().map(|x| x.to_bits() as u64).collect();
        let xs = patterns(&ends, 32, 1 << 18);
        let (mut inside, mut r2s) = (0, 0);
        for &r in &xs {
            let r2 = f32::from_bits(r as u32);
            if ok(r2, 1.0) {
                r2s += 1;
                assert!((lo..hi).contains(&r2), "{r2:e}");
                assert!(sqrt_rn_f32_inline_range(r2), "{r2:e}");
            }
            for &mb in xs.iter().step_by(4099).take(64) {
                let m = f32::from_bits(mb as u32);
                if ok(r2, m) {
                    inside += 1;
                    assert!(div_rn_f32_inline_range(m, r2 * r2.sqrt()), "{m:e} / ({r2:e})^1.5");
                }
            }
        }
        assert!(inside > 1 << 17 && r2s > 1 << 15, "{inside} {r2s}"); // the implication was exercised
        // The ends, exactly; one term out of range fails the four; NaN, ∞, zero and negatives fail.
        let below = |x: f32| f32::from_bits(x.to_bits() - 1);
        assert!(ok(lo, 1.0) && ok(below(hi), 1.0) && !ok(below(lo), 1.0) && !ok(hi, 1.0));
        assert!(ok(1.0, 2f32.powi(-60)) && ok(1.0, -below(2f32.powi(60))) && !ok(1.0, 2f32.powi(60)));
        assert!(!ok(1.0, below(2f32.powi(-60))) && !ok(1.0, 0.0));
        for bad in [0.0, -0.0, -1.0, f32::INFINITY, f32::NAN, f32::MAX] {
            assert!(!ok(bad, 1.0), "{bad:e}");
        }
        assert!(!nbody_r2_inline_range_f32([1.0, 1.0, hi, 1.0]));
    }

    #[test]
    fn terms_inline_range_f64_implies_both_operations_in_range() {
        let (lo, hi) = (2f64.powi(-332), 2f64.powi(332));
        let ok = |r2: f64, m: f64| nbody_r2_inline_range_f64([r2; 4]) & div_rn_f64_inline_operand(m);
        let ends: Vec<u64> = [lo, hi, 2f64.powi(-500), 2f64.powi(500)].iter().map(|x| x.to_bits()).collect();
        let xs = patterns(&ends, 64, 1 << 18);
        let (mut inside, mut r2s) = (0, 0);
        for &r in &xs {
            let r2 = f64::from_bits(r);
            if ok(r2, 1.0) {
                r2s += 1;
                assert!((lo..hi).contains(&r2), "{r2:e}");
                assert!(sqrt_rn_f64_inline_range(r2), "{r2:e}");
            }
            for &mb in xs.iter().step_by(4099).take(64) {
                let m = f64::from_bits(mb);
                if ok(r2, m) {
                    inside += 1;
                    assert!(div_rn_f64_inline_range(m, r2 * r2.sqrt()), "{m:e} / ({r2:e})^1.5");
                }
            }
        }
        assert!(inside > 1 << 17 && r2s > 1 << 15, "{inside} {r2s}");
        let below = |x: f64| f64::from_bits(x.to_bits() - 1);
        assert!(ok(lo, 1.0) && ok(below(hi), 1.0) && !ok(below(lo), 1.0) && !ok(hi, 1.0));
        assert!(ok(1.0, 2f64.powi(-500)) && ok(1.0, -below(2f64.powi(500))) && !ok(1.0, 2f64.powi(500)));
        assert!(!ok(1.0, below(2f64.powi(-500))) && !ok(1.0, 0.0));
        for bad in [0.0, -0.0, -1.0, f64::INFINITY, f64::NAN, f64::MAX] {
            assert!(!ok(bad, 1.0), "{bad:e}");
        }
        assert!(!nbody_r2_inline_range_f64([1.0, 1.0, hi, 1.0]));
    }
}
