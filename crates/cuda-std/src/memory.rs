//! Global-memory loads and stores at a 32-bit element offset from a base pointer
//! (`ld.global` / `st.global`, not generic addressing).
//!
//! The offset is widened to 64 bits inside the instruction sequence, so the compiler cannot
//! hoist one 64-bit address per offset out of a loop and keep it live (which costs two
//! registers per address); ptxas forms each address next to its load or store
//! (`IMAD.WIDE.U32`). Used where registers decide occupancy.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// A load of one 32-bit register `{v}` from element `i` (`$size` bytes each) of `base`: the
/// address formed in the asm block (as the module says), then `$ld {v}, [la]`.
macro_rules! load_global {
    ($(#[$doc:meta])* $name:ident($elem:ty) -> $v:ty, $size:literal, $ld:literal, options($($opt:ident),*)) => {
        $(#[$doc])*
        #[cfg(target_arch = "nvptx64")]
        #[inline(always)]
        pub unsafe fn $name(base: *const $elem, i: u32) -> $v {
            let v: $v;
            // SAFETY: the caller guarantees a valid, aligned global address.
            unsafe {
                asm!(concat!("{{ .reg .u64 la; mul.wide.u32 la, {i}, ", $size, "; add.s64 la, la, {b}; cvta.to.global.u64 la, la; ", $ld, " {v}, [la]; }}"),
                    v = out(reg32) v, i = in(reg32) i, b = in(reg64) base, options($($opt),*))
            };
            v
        }
    };
}

/// A store of one 32-bit register `v` to element `i` (`$size` bytes each) of `base`: the
/// address formed in the asm block, then `$st [sa], {v}`.
macro_rules! store_global {
    ($(#[$doc:meta])* $name:ident($elem:ty, $v:ty), $size:literal, $st:literal) => {
        $(#[$doc])*
        #[cfg(target_arch = "nvptx64")]
        #[inline(always)]
        pub unsafe fn $name(base: *mut $elem, i: u32, v: $v) {
            // SAFETY: the caller guarantees a valid, aligned global address.
            unsafe {
                asm!(concat!("{{ .reg .u64 sa; mul.wide.u32 sa, {i}, ", $size, "; add.s64 sa, sa, {b}; cvta.to.global.u64 sa, sa; ", $st, " [sa], {v}; }}"),
                    v = in(reg32) v, i = in(reg32) i, b = in(reg64) base, options(nostack, preserves_flags))
            };
        }
    };
}

load_global! {
    /// `*base.add(i)` from global memory, sign-extended to `i32` (`ld.global.s16`).
    ///
    /// # Safety
    /// `base` is a generic pointer into a device allocation (global memory) and `base + i` is in
    /// bounds and aligned for `i16`; nothing writes it concurrently.
    load_global_i16(i16) -> i32, 2, "ld.global.s16", options(nostack, readonly, preserves_flags)
}

load_global! {
    /// `*base.add(i)` from global memory (`ld.global.u32`).
    ///
    /// # Safety
    /// As [`load_global_i16`], aligned for `u32`.
    load_global_u32(u32) -> u32, 4, "ld.global.u32", options(nostack, readonly, preserves_flags)
}

store_global! {
    /// `*base.add(i) = v as i16` in global memory (`st.global.u16`: the low 16 bits of `v`).
    ///
    /// # Safety
    /// `base` is a generic pointer into a device allocation (global memory) and `base + i` is in
    /// bounds and aligned for `i16`; no other thread accesses it concurrently.
    store_global_i16(i16, i32), 2, "st.global.u16"
}

load_global! {
    /// `*base.add(i)` from global memory (`ld.global.f32`).
    ///
    /// # Safety
    /// As [`load_global_i16`], aligned for `f32`.
    load_global_f32(f32) -> f32, 4, "ld.global.f32", options(pure, nostack, readonly, preserves_flags)
}

/// `[*base.add(i), *base.add(i + 1)]` from global memory as one 8-byte access
/// (`ld.global.v2.f32`, SASS `LDG.E.64`).
///
/// # Safety
/// As [`load_global_i16`], for two elements, `base + i` 8-byte aligned.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn load_global_v2_f32(base: *const f32, i: u32) -> [f32; 2] {
    let (x, y): (f32, f32);
    // SAFETY: the caller guarantees a valid, aligned global address.
    unsafe {
        asm!("{{ .reg .u64 la; mul.wide.u32 la, {i}, 4; add.s64 la, la, {b}; cvta.to.global.u64 la, la; ld.global.v2.f32 {{{x}, {y}}}, [la]; }}",
            x = out(reg32) x, y = out(reg32) y, i = in(reg32) i, b = in(reg64) base, options(pure, nostack, readonly, preserves_flags))
    };
    [x, y]
}

/// `base[i..i + 4]` from global memory as one 16-byte access (`ld.global.v4.f32`, SASS
/// `LDG.E.128`).
///
/// # Safety
/// As [`load_global_i16`], for four elements, `base + i` 16-byte aligned.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn load_global_v4_f32(base: *const f32, i: u32) -> [f32; 4] {
    let (x, y, z, w): (f32, f32, f32, f32);
    // SAFETY: the caller guarantees a valid, aligned global address.
    unsafe {
        asm!("{{ .reg .u64 la; mul.wide.u32 la, {i}, 4; add.s64 la, la, {b}; cvta.to.global.u64 la, la; ld.global.v4.f32 {{{x}, {y}, {z}, {w}}}, [la]; }}",
            x = out(reg32) x, y = out(reg32) y, z = out(reg32) z, w = out(reg32) w, i = in(reg32) i, b = in(reg64) base,
            options(pure, nostack, readonly, preserves_flags))
    };
    [x, y, z, w]
}

store_global! {
    /// `*base.add(i) = v` in global memory (`st.global.f32`).
    ///
    /// # Safety
    /// As [`store_global_i16`], aligned for `f32`.
    store_global_f32(f32, f32), 4, "st.global.f32"
}

/// A store of two elements `v` at element `i` of `base` as one `$bytes`-byte access: the address
/// formed in the asm block, then `$st [sa], {x, y}` (`$reg`: the elements' register class).
macro_rules! store_global_v2 {
    ($(#[$doc:meta])* $name:ident($elem:ty), $size:literal, $st:literal, $reg:ident) => {
        $(#[$doc])*
        #[cfg(target_arch = "nvptx64")]
        #[inline(always)]
        pub unsafe fn $name(base: *mut $elem, i: u32, v: [$elem; 2]) {
            // SAFETY: the caller guarantees a valid, aligned global address.
            unsafe {
                asm!(concat!("{{ .reg .u64 sa; mul.wide.u32 sa, {i}, ", $size, "; add.s64 sa, sa, {b}; cvta.to.global.u64 sa, sa; ", $st, " [sa], {{{x}, {y}}}; }}"),
                    x = in($reg) v[0], y = in($reg) v[1], i = in(reg32) i, b = in(reg64) base, options(nostack, preserves_flags))
            };
        }
    };
}

store_global_v2! {
    /// `base[i..i + 2] = v` in global memory as one 8-byte access (`st.global.v2.f32`).
    ///
    /// # Safety
    /// As [`store_global_i16`], for two elements, `base + i` 8-byte aligned.
    store_global_v2_f32(f32), 4, "st.global.v2.f32", reg32
}

store_global_v2! {
    /// `base[i..i + 2] = v` in global memory as one 16-byte access (`st.global.v2.f64`, SASS
    /// `STG.E.128`).
    ///
    /// # Safety
    /// As [`store_global_i16`], for two `f64`, `base + i` 16-byte aligned.
    store_global_v2_f64(f64), 8, "st.global.v2.f64", reg64
}

/// `base[i..i + 4] = v` in global memory as one 16-byte access (`st.global.v4.f32`).
///
/// # Safety
/// As [`store_global_i16`], for four elements, `base + i` 16-byte aligned.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn store_global_v4_f32(base: *mut f32, i: u32, v: [f32; 4]) {
    // SAFETY: the caller guarantees a valid, aligned global address.
    unsafe {
        asm!("{{ .reg .u64 sa; mul.wide.u32 sa, {i}, 4; add.s64 sa, sa, {b}; cvta.to.global.u64 sa, sa; st.global.v4.f32 [sa], {{{x}, {y}, {z}, {w}}}; }}",
            x = in(reg32) v[0], y = in(reg32) v[1], z = in(reg32) v[2], w = in(reg32) v[3], i = in(reg32) i, b = in(reg64) base,
            options(nostack, preserves_flags))
    };
}

/// `base[n·m], base[n·m + 1] = v` in global memory as one 8-byte `st.global.v2.f32`, the offset
/// `n·m·4` formed 64 bits wide as in [`store_global_wide_f32`].
///
/// # Safety
/// As [`store_global_i16`], for two elements, `base + n·m` 8-byte aligned; `m·4` fits in 32 bits.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn store_global_wide_v2_f32(base: *mut f32, n: u32, m: u32, v: [f32; 2]) {
    // SAFETY: the caller guarantees a valid, aligned global address.
    unsafe {
        asm!("{{ .reg .u64 sa; mul.wide.u32 sa, {n}, {m}; add.s64 sa, sa, {b}; cvta.to.global.u64 sa, sa; st.global.v2.f32 [sa], {{{x}, {y}}}; }}",
            x = in(reg32) v[0], y = in(reg32) v[1], n = in(reg32) n, m = in(reg32) m * 4, b = in(reg64) base, options(nostack, preserves_flags))
    };
}

/// `*base.add(n·m) = v` in global memory (`st.global.f32`), the product `n·m·4` taken 64 bits
/// wide in the asm block (`mul.wide.u32`: one `IMAD.WIDE.U32` with the store on sm_90). The
/// block keeps LLVM from rewriting several offsets of one base as a chain of 64-bit additions
/// (two instructions each).
///
/// # Safety
/// As [`store_global_i16`], aligned for `f32`; `m·4` fits in 32 bits.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn store_global_wide_f32(base: *mut f32, n: u32, m: u32, v: f32) {
    // SAFETY: the caller guarantees a valid, aligned global address.
    unsafe {
        asm!("{{ .reg .u64 sa; mul.wide.u32 sa, {n}, {m}; add.s64 sa, sa, {b}; cvta.to.global.u64 sa, sa; st.global.f32 [sa], {v}; }}",
            v = in(reg32) v, n = in(reg32) n, m = in(reg32) m * 4, b = in(reg64) base, options(nostack, preserves_flags))
    };
}
