//! Approximate math instructions, for kernels whose name says they are fast (`*_fast`): never
//! bit-reproducible across GPUs or against a CPU. Exact kernels must not call these (the PTX
//! census and `tests/tidy.rs` check for `.approx`).

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
    let y0: f64;
    // SAFETY: a register-to-register instruction with no preconditions.
    unsafe {
        asm!("rsqrt.approx.ftz.f64 {r}, {x};", r = out(reg64) y0, x = in(reg64) x, options(pure, nomem, nostack))
    };
    use core::f64::math::mul_add;
    let e = mul_add(x, -(y0 * y0), 1.0);
    mul_add(mul_add(e, 0.375, 0.5), y0 * e, y0)
}

#[cfg(test)]
mod tests {
    use super::positive_normal_f64;

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
}
