//! Global-memory loads and stores at a 32-bit element offset from a base pointer
//! (`ld.global` / `st.global`, not generic addressing).
//!
//! The offset is widened to 64 bits inside the instruction sequence, so the compiler cannot
//! hoist one 64-bit address per offset out of a loop and keep it live (which costs two
//! registers per address); ptxas forms each address next to its load or store
//! (`IMAD.WIDE.U32`). Used where registers decide occupancy.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// `*base.add(i)` from global memory, sign-extended to `i32` (`ld.global.s16`).
///
/// # Safety
/// `base` is a generic pointer into a device allocation (global memory) and `base + i` is in
/// bounds and aligned for `i16`; nothing writes it concurrently.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn load_global_i16(base: *const i16, i: u32) -> i32 {
    let v: i32;
    // SAFETY: the caller guarantees a valid, aligned global address.
    unsafe {
        asm!("{{ .reg .u64 la; mul.wide.u32 la, {i}, 2; add.s64 la, la, {b}; cvta.to.global.u64 la, la; ld.global.s16 {v}, [la]; }}",
            v = out(reg32) v, i = in(reg32) i, b = in(reg64) base, options(nostack, readonly, preserves_flags))
    };
    v
}

/// `*base.add(i)` from global memory (`ld.global.u32`).
///
/// # Safety
/// As [`load_global_i16`], aligned for `u32`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn load_global_u32(base: *const u32, i: u32) -> u32 {
    let v: u32;
    // SAFETY: the caller guarantees a valid, aligned global address.
    unsafe {
        asm!("{{ .reg .u64 la; mul.wide.u32 la, {i}, 4; add.s64 la, la, {b}; cvta.to.global.u64 la, la; ld.global.u32 {v}, [la]; }}",
            v = out(reg32) v, i = in(reg32) i, b = in(reg64) base, options(nostack, readonly, preserves_flags))
    };
    v
}

/// `*base.add(i) = v as i16` in global memory (`st.global.u16`: the low 16 bits of `v`).
///
/// # Safety
/// `base` is a generic pointer into a device allocation (global memory) and `base + i` is in
/// bounds and aligned for `i16`; no other thread accesses it concurrently.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn store_global_i16(base: *mut i16, i: u32, v: i32) {
    // SAFETY: the caller guarantees a valid, aligned global address.
    unsafe {
        asm!("{{ .reg .u64 sa; mul.wide.u32 sa, {i}, 2; add.s64 sa, sa, {b}; cvta.to.global.u64 sa, sa; st.global.u16 [sa], {v}; }}",
            v = in(reg32) v, i = in(reg32) i, b = in(reg64) base, options(nostack, preserves_flags))
    };
}
