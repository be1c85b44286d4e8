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

/// `rsqrt.approx.f64`: `1/sqrt(x)` to roughly single precision (the hardware approximates on
/// the upper bits); refine with a Newton step for double-precision accuracy.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn rsqrt_approx_f64(x: f64) -> f64 {
    let r: f64;
    // SAFETY: a register-to-register instruction with no preconditions.
    unsafe { asm!("rsqrt.approx.f64 {r}, {x};", r = out(reg64) r, x = in(reg64) x, options(pure, nomem, nostack)) };
    r
}
