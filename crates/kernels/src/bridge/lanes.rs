//! Lane types of the d = 1 fast path: `SharedIo` (explicit `ld.shared`/`st.shared`), `F32x2`/`F32x4`
//! (two or four f32 paths per thread, the scalar f32 operations per lane).

use super::*;

/// A floating-point type the d = 1 kernels read and write in shared memory with explicit
/// `ld.shared`/`st.shared` on 32-bit addresses (SASS `LDS`/`STS`; a generic pointer from
/// `cvta.shared` left ptxas emitting generic `LD.E`/`ST.E`).
pub(super) trait SharedIo: Real {
    /// The precision of the strategy's coefficients, `C` and `x` (the lane type for f32 and
    /// f64; f32 for [`F32x2`]).
    type Coef: Real;
    /// A coefficient in every lane.
    fn splat(c: Self::Coef) -> Self;
    /// Reads the value at the shared address `addr`.
    ///
    /// # Safety
    /// `addr` is an aligned shared address of this block inside an array it owns.
    unsafe fn ld(addr: u32) -> Self;
    /// Writes `v` at `addr`.
    ///
    /// # Safety
    /// As [`SharedIo::ld`].
    unsafe fn st(addr: u32, v: Self);
    /// The seven coefficients `wl, wr, sd, dt_left, dt_right, recip_left, recip_right` of the
    /// [`CoefRow`] at `addr`, as separate vector/scalar loads (those whose values are unused
    /// disappear).
    ///
    /// # Safety
    /// `addr` is the 16-byte aligned shared address of a whole row.
    unsafe fn ld_coefs(addr: u32) -> [Self; 7];
}

/// `SharedIo` for a scalar float `$t`: its own coefficient type, one `$ld`/`$st` per value,
/// and a row's coefficients by `$coefs`.
macro_rules! scalar_shared_io {
    ($t:ident, $ld:ident, $st:ident, $coefs:ident) => {
        impl SharedIo for $t {
            type Coef = $t;
            #[inline(always)]
            fn splat(c: $t) -> $t {
                c
            }
            #[inline(always)]
            unsafe fn ld(addr: u32) -> $t {
                // SAFETY: the caller's contract.
                unsafe { $ld(addr) }
            }
            #[inline(always)]
            unsafe fn st(addr: u32, v: $t) {
                // SAFETY: the caller's contract.
                unsafe { $st(addr, v) }
            }
            #[inline(always)]
            unsafe fn ld_coefs(addr: u32) -> [$t; 7] {
                // SAFETY: the caller's contract.
                unsafe { $coefs(addr) }
            }
        }
    };
}
scalar_shared_io!(f32, ld_shared_f32, st_shared_f32, coefs_f32);
scalar_shared_io!(f64, ld_shared_f64, st_shared_f64, coefs_f64);

/// [`SharedIo::ld_coefs`] for f32: a row is 32 bytes, two vector loads.
///
/// # Safety
/// As [`SharedIo::ld_coefs`].
#[inline(always)]
unsafe fn coefs_f32(addr: u32) -> [f32; 7] {
    // SAFETY: a row is 32 bytes, 16-byte aligned (caller's contract).
    let ([a, b, c, d], [e, f, g, _]) = unsafe { (ld_shared_v4_f32(addr), ld_shared_v4_f32(addr + 16)) };
    [a, b, c, d, e, f, g]
}

/// [`SharedIo::ld_coefs`] for f64: a row is 64 bytes, three pair loads and one scalar.
///
/// # Safety
/// As [`SharedIo::ld_coefs`].
#[inline(always)]
unsafe fn coefs_f64(addr: u32) -> [f64; 7] {
    // SAFETY: a row is 64 bytes, 16-byte aligned (caller's contract).
    let ([a, b], [c, d], [e, f], g) = unsafe {
        (ld_shared_v2_f64(addr), ld_shared_v2_f64(addr + 16), ld_shared_v2_f64(addr + 32), ld_shared_f64(addr + 48))
    };
    [a, b, c, d, e, f, g]
}

/// `f32` in type position, for each lane index of [`f32_lanes!`].
macro_rules! f32_lane {
    ($i:tt) => {
        f32
    };
}

/// Defines a type of `f32` lanes, one path per lane, for the buffer kernels: every operation is
/// the scalar f32 operation in each lane (no contraction: separate `mul`/`add` per lane,
/// `div.rn`), so each lane's bits are those of the one-path-per-thread kernel and of the CPU
/// reference. Table coefficients (`Coef = f32`) are splatted into every lane; stack elements are
/// the whole vector (`$ld`/`$st`, one shared access).
macro_rules! f32_lanes {
    ($(#[$doc:meta])* $name:ident, align $align:literal, [$($i:tt: $v:ident),+], $ld:ident, $st:ident) => {
        $(#[$doc])*
        #[repr(C, align($align))]
        #[derive(Clone, Copy, PartialEq)]
        pub(super) struct $name($(pub(super) f32_lane!($i)),+);

        impl Add for $name {
            type Output = $name;
            #[inline(always)]
            fn add(self, o: $name) -> $name {
                $name($(self.$i + o.$i),+)
            }
        }

        impl Sub for $name {
            type Output = $name;
            #[inline(always)]
            fn sub(self, o: $name) -> $name {
                $name($(self.$i - o.$i),+)
            }
        }

        impl Mul for $name {
            type Output = $name;
            #[inline(always)]
            fn mul(self, o: $name) -> $name {
                $name($(self.$i * o.$i),+)
            }
        }

        impl Div for $name {
            type Output = $name;
            #[inline(always)]
            fn div(self, o: $name) -> $name {
                $name($(self.$i / o.$i),+)
            }
        }

        impl Real for $name {
            const ZERO: $name = $name($(f32_zero!($i)),+);
            const NAN: $name = $name($(f32_nan!($i)),+);
            #[inline(always)]
            fn from_f64(x: f64) -> $name {
                $name::splat(x as f32)
            }
            #[inline(always)]
            fn normal_from_bits(w: u32) -> $name {
                $name::splat(<f32 as Real>::normal_from_bits(w))
            }
            #[inline(always)]
            fn box_muller(w0: u32, w1: u32) -> ($name, $name) {
                let (c, s) = <f32 as Real>::box_muller(w0, w1);
                ($name::splat(c), $name::splat(s))
            }
            #[inline(always)]
            fn fma(self, b: $name, c: $name) -> $name {
                $name($(self.$i.fma(b.$i, c.$i)),+)
            }
            #[inline(always)]
            fn neg(self) -> $name {
                $name($(-self.$i),+)
            }
            /// Every lane in range: then `quotient` takes its fast path in every lane (each
            /// lane's operations are the scalar ones), otherwise `/` in every lane (the same
            /// bits either way).
            #[inline(always)]
            fn quotient_in_range(self) -> bool {
                $(self.$i.quotient_in_range())&+
            }
            #[inline(always)]
            fn divisor_in_range(self) -> bool {
                $(self.$i.divisor_in_range())&+
            }
        }

        impl SharedIo for $name {
            type Coef = f32;
            #[inline(always)]
            fn splat(c: f32) -> $name {
                $name($(f32_splat!($i, c)),+)
            }
            #[inline(always)]
            unsafe fn ld(addr: u32) -> $name {
                // SAFETY: the caller's contract (aligned: the stack's elements are this type).
                let [$($v),+] = unsafe { $ld(addr) };
                $name($($v),+)
            }
            #[inline(always)]
            unsafe fn st(addr: u32, v: $name) {
                // SAFETY: as `ld`.
                unsafe { $st(addr, [$(v.$i),+]) }
            }
            #[inline(always)]
            unsafe fn ld_coefs(addr: u32) -> [$name; 7] {
                // SAFETY: an f32 row (caller's contract); every lane uses the same strategy.
                unsafe { <f32 as SharedIo>::ld_coefs(addr) }.map($name::splat)
            }
        }
    };
}

/// `0.0` for each lane index of [`f32_lanes!`].
macro_rules! f32_zero {
    ($i:tt) => {
        0.0
    };
}

/// `f32::NAN` for each lane index of [`f32_lanes!`].
macro_rules! f32_nan {
    ($i:tt) => {
        f32::NAN
    };
}

/// The value `$c` for each lane index of [`f32_lanes!`].
macro_rules! f32_splat {
    ($i:tt, $c:ident) => {
        $c
    };
}

f32_lanes!(
    /// Two f32 lanes, paths `2q` and `2q + 1` of one thread of the d = 1 buffer kernel when the
    /// path count is even (`LaunchShape::buffer_lanes`): one 8-byte
    /// `ld.global.v2.f32` / `st.global.v2.f32` per row (256 bytes per warp request, as f64).
    F32x2,
    align 8,
    [0: a, 1: b],
    ld_shared_v2_f32,
    st_shared_v2_f32
);

f32_lanes!(
    /// Four f32 lanes, paths `4q..4q + 4` of one thread of the d = 1 buffer kernel when the path
    /// count is a multiple of 4 (`LaunchShape::buffer_lanes`): one 16-byte
    /// `ld.global.v4.f32` / `st.global.v4.f32` per row (512 bytes per warp request) and 16-byte
    /// stack elements in shared memory.
    F32x4,
    align 16,
    [0: a, 1: b, 2: c, 3: d],
    ld_shared_v4_f32,
    st_shared_v4_f32
);
