//! Approximate math instructions, for kernels whose name says they are fast (`*_fast`): never
//! bit-reproducible across GPUs or against a CPU. Exact kernels must not call these (the PTX
//! census and `tests/tidy.rs` check for `.approx`).

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// `rsqrt.approx.f32`: `1/sqrt(x)`, maximum relative error about 2^-22.9 (PTX ISA), subnormals
/// kept (no `.ftz`). `rsqrt(0) = +∞`, negative input gives NaN.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn rsqrt_approx_f32(x: f32) -> f32 {
    let r: f32;
    // SAFETY: a register-to-register instruction with no preconditions.
    unsafe { asm!("rsqrt.approx.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack)) };
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
