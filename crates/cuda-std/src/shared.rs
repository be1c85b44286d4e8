//! Shared memory: statically sized (`shared_array!`) and sized per launch (`dynamic_shared!`).
//!
//! rustc's NVPTX backend has no way to place a Rust `static` in the `.shared` state space, so
//! `shared_array!` declares the array in module-scope PTX (`global_asm!`) and converts its
//! address to a generic pointer. As with CUDA's file-scope `__shared__`, each block that runs a
//! kernel using it gets its own copy.
//!
//! `shared_addr` and the typed `ld_shared_*`/`st_shared_*` accessors read and write it with
//! explicit `ld.shared`/`st.shared` on 32-bit shared addresses (SASS `LDS`/`STS`).

/// `shared_array![NAME: [T; N]]` → `*mut T` to `N` elements of block-shared memory.
///
/// `NAME` becomes the PTX symbol and must be unique across the kernel crate (the PTX builder
/// refuses a module that declares one twice). The memory is uninitialised at kernel start;
/// write before reading, and put a `sync_threads()` between one thread's write and another's
/// read. Alignment is 16 bytes.
#[macro_export]
macro_rules! shared_array {
    ($name:ident : [$ty:ty; $len:expr]) => {{
        const BYTES: usize = ::core::mem::size_of::<$ty>() * $len;
        ::core::arch::global_asm!(
            concat!(".shared .align 16 .b8 ", stringify!($name), "[{bytes}];"),
            bytes = const BYTES
        );
        $crate::shared_generic!($name) as *mut $ty
    }};
}

/// `dynamic_shared!(NAME)` → `*mut u8` to the launch's dynamic shared memory (the bytes the
/// launcher passes as `sharedMemBytes`), declared as the PTX `.extern .shared` array `NAME`
/// (16-byte aligned). Unlike `shared_array!`, whose size is fixed at compile time and reserved
/// by every launch, it costs only what the launch asks for, so the rest of the SM's 256 KiB
/// stays L1 cache for the streamed loads. `NAME` must be unique across the kernel crate, like
/// `shared_array!`'s; every `dynamic_shared!` of one kernel sees the same bytes.
#[macro_export]
macro_rules! dynamic_shared {
    ($name:ident) => {{
        ::core::arch::global_asm!(concat!(".extern .shared .align 16 .b8 ", stringify!($name), "[];"));
        $crate::shared_generic!($name) as *mut u8
    }};
}

/// The generic address (`cvta.shared.u64`) of the shared array `NAME` that [`shared_array!`]
/// or [`dynamic_shared!`] declared.
#[doc(hidden)]
#[macro_export]
macro_rules! shared_generic {
    ($name:ident) => {{
        let generic: u64;
        // SAFETY: converts the address of the array the caller declared; no memory is touched.
        unsafe {
            ::core::arch::asm!(
                concat!("cvta.shared.u64 {p}, ", stringify!($name), ";"),
                p = out(reg64) generic,
                options(pure, nomem, nostack)
            )
        };
        generic
    }};
}

/// The 32-bit shared-window address of a shared array (from [`shared_array!`]'s generic
/// pointer, or any generic pointer into shared memory), for the explicit `ld.shared` /
/// `st.shared` accessors below.
///
/// ptxas does not always recognise a generic pointer from `cvta.shared` as shared memory: loads
/// through it stay generic (SASS `LD.E`/`ST.E` with 64-bit address arithmetic). The accessors
/// here take this 32-bit address and emit `ld.shared`/`st.shared` (SASS `LDS`/`STS`); address
/// arithmetic on it is 32-bit.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn shared_addr<T>(generic: *const T) -> u32 {
    let a: u32;
    // SAFETY: address conversion only; no memory is touched.
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 t; cvta.to.shared.u64 t, {g}; cvt.u32.u64 {a}, t; }}",
            g = in(reg64) generic as u64,
            a = out(reg32) a,
            options(pure, nomem, nostack)
        )
    };
    a
}

/// Scalar `ld.shared`/`st.shared` for one type: `$ld(addr) -> T`, `$st(addr, v)`.
#[cfg(target_arch = "nvptx64")]
macro_rules! scalar_shared_io {
    ($t:ty, $ptx:literal, $reg:ident, $ld:ident, $st:ident) => {
        #[doc = concat!("Reads one `", stringify!($t), "` at the shared address `addr` (`ld.shared", $ptx, "`).")]
        ///
        /// # Safety
        /// `addr` is a shared address (from [`shared_addr`]) of this block, aligned to the type's
        /// size, inside an array it owns; the usual data-race rules of shared memory apply
        /// (a `sync_threads()` between another thread's write and this read).
        #[inline(always)]
        pub unsafe fn $ld(addr: u32) -> $t {
            let v: $t;
            // SAFETY: the caller's contract; reads shared memory only.
            unsafe {
                core::arch::asm!(
                    concat!("ld.shared", $ptx, " {v}, [{a}];"),
                    a = in(reg32) addr, v = out($reg) v,
                    options(pure, readonly, nostack)
                )
            };
            v
        }

        #[doc = concat!("Writes one `", stringify!($t), "` at the shared address `addr` (`st.shared", $ptx, "`).")]
        ///
        /// # Safety
        #[doc = concat!("As [`", stringify!($ld), "`].")]
        #[inline(always)]
        pub unsafe fn $st(addr: u32, v: $t) {
            // SAFETY: the caller's contract.
            unsafe {
                core::arch::asm!(
                    concat!("st.shared", $ptx, " [{a}], {v};"),
                    a = in(reg32) addr, v = in($reg) v,
                    options(nostack)
                )
            };
        }
    };
}

#[cfg(target_arch = "nvptx64")]
scalar_shared_io!(u16, ".u16", reg16, ld_shared_u16, st_shared_u16);
#[cfg(target_arch = "nvptx64")]
scalar_shared_io!(u32, ".u32", reg32, ld_shared_u32, st_shared_u32);
#[cfg(target_arch = "nvptx64")]
scalar_shared_io!(f32, ".f32", reg32, ld_shared_f32, st_shared_f32);
#[cfg(target_arch = "nvptx64")]
scalar_shared_io!(u64, ".u64", reg64, ld_shared_u64, st_shared_u64);
#[cfg(target_arch = "nvptx64")]
scalar_shared_io!(f64, ".f64", reg64, ld_shared_f64, st_shared_f64);

/// One vector `ld.shared$ptx` (and with a second name, one `st.shared$ptx`) of the lanes
/// `[x, …]` (`$n` of them) of `$t` at a shared address aligned to the whole vector.
#[cfg(target_arch = "nvptx64")]
macro_rules! vector_shared_io {
    ($t:ty; $n:literal, $ptx:literal, $reg:ident, $lanes:tt, $(#[$ld_doc:meta])* $ld:ident $(, $(#[$st_doc:meta])* $st:ident)?) => {
        vector_shared_io!(@ld $t; $n, $ptx, $reg, $lanes, $(#[$ld_doc])* $ld);
        $(vector_shared_io!(@st $t; $n, $ptx, $reg, $lanes, $(#[$st_doc])* $st);)?
    };
    (@ld $t:ty; $n:literal, $ptx:literal, $reg:ident, [$x:ident $(, $v:ident)*], $(#[$doc:meta])* $ld:ident) => {
        $(#[$doc])*
        #[inline(always)]
        pub unsafe fn $ld(addr: u32) -> [$t; $n] {
            let $x: $t;
            $(let $v: $t;)*
            // SAFETY: the caller's contract; reads shared memory only.
            unsafe {
                core::arch::asm!(
                    concat!("ld.shared", $ptx, " {{{", stringify!($x), "}", $(", {", stringify!($v), "}",)* "}}, [{a}];"),
                    a = in(reg32) addr, $x = out($reg) $x, $($v = out($reg) $v,)*
                    options(pure, readonly, nostack)
                )
            };
            [$x $(, $v)*]
        }
    };
    (@st $t:ty; $n:literal, $ptx:literal, $reg:ident, [$x:ident $(, $v:ident)*], $(#[$doc:meta])* $st:ident) => {
        $(#[$doc])*
        #[inline(always)]
        pub unsafe fn $st(addr: u32, v: [$t; $n]) {
            let [$x $(, $v)*] = v;
            // SAFETY: the caller's contract.
            unsafe {
                core::arch::asm!(
                    concat!("st.shared", $ptx, " [{a}], {{{", stringify!($x), "}", $(", {", stringify!($v), "}",)* "}};"),
                    a = in(reg32) addr, $x = in($reg) $x, $($v = in($reg) $v,)*
                    options(nostack)
                )
            };
        }
    };
}

#[cfg(target_arch = "nvptx64")]
vector_shared_io!(
    f32; 4,
    ".v4.f32",
    reg32,
    [x, y, z, w],
    /// Reads four `f32` at the 16-byte aligned shared address `addr` (`ld.shared.v4.f32`, SASS
    /// `LDS.128`).
    ///
    /// # Safety
    /// As [`ld_shared_f32`], with 16-byte alignment and four elements in the array.
    ld_shared_v4_f32,
    /// Writes four `f32` at the 16-byte aligned shared address `addr` (`st.shared.v4.f32`).
    ///
    /// # Safety
    /// As [`ld_shared_v4_f32`].
    st_shared_v4_f32
);

#[cfg(target_arch = "nvptx64")]
vector_shared_io!(
    u32; 4,
    ".v4.u32",
    reg32,
    [x, y, z, w],
    /// Reads four `u32` at the 16-byte aligned shared address `addr` (`ld.shared.v4.u32`).
    ///
    /// # Safety
    /// As [`ld_shared_v4_f32`].
    ld_shared_v4_u32
);

#[cfg(target_arch = "nvptx64")]
vector_shared_io!(
    f64; 2,
    ".v2.f64",
    reg64,
    [x, y],
    /// Reads two `f64` at the 16-byte aligned shared address `addr` (`ld.shared.v2.f64`, SASS
    /// `LDS.128`).
    ///
    /// # Safety
    /// As [`ld_shared_f64`], with 16-byte alignment and two elements in the array.
    ld_shared_v2_f64
);

#[cfg(target_arch = "nvptx64")]
vector_shared_io!(
    f32; 2,
    ".v2.f32",
    reg32,
    [x, y],
    /// Reads two `f32` at the 8-byte aligned shared address `addr` (`ld.shared.v2.f32`, SASS
    /// `LDS.64`).
    ///
    /// # Safety
    /// As [`ld_shared_f32`], with 8-byte alignment and two elements in the array.
    ld_shared_v2_f32,
    /// Writes two `f32` at the 8-byte aligned shared address `addr` (`st.shared.v2.f32`).
    ///
    /// # Safety
    /// As [`ld_shared_v2_f32`].
    st_shared_v2_f32
);

/// Reads four `f64` (32 bytes) at the 16-byte aligned shared address `addr` as two
/// `ld.shared.v2.f64` (PTX has no 32-byte shared load), the second at `addr + 16`.
///
/// # Safety
/// As [`ld_shared_v2_f64`], with four elements in the array.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn ld_shared_v4_f64(addr: u32) -> [f64; 4] {
    let (x, y, z, w): (f64, f64, f64, f64);
    // SAFETY: the caller's contract; reads shared memory only.
    unsafe {
        core::arch::asm!(
            "ld.shared.v2.f64 {{{x}, {y}}}, [{a}];",
            "ld.shared.v2.f64 {{{z}, {w}}}, [{a}+16];",
            a = in(reg32) addr, x = out(reg64) x, y = out(reg64) y, z = out(reg64) z, w = out(reg64) w,
            options(pure, readonly, nostack)
        )
    };
    [x, y, z, w]
}

/// Writes four `f64` at the 16-byte aligned shared address `addr` as two `st.shared.v2.f64`.
///
/// # Safety
/// As [`ld_shared_v4_f64`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn st_shared_v4_f64(addr: u32, v: [f64; 4]) {
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!(
            "st.shared.v2.f64 [{a}], {{{x}, {y}}};",
            "st.shared.v2.f64 [{a}+16], {{{z}, {w}}};",
            a = in(reg32) addr, x = in(reg64) v[0], y = in(reg64) v[1], z = in(reg64) v[2], w = in(reg64) v[3],
            options(nostack)
        )
    };
}
