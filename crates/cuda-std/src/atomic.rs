//! Device atomics on global or shared memory (generic addressing, relaxed, GPU scope).
//!
//! `atomic_add` uses the hardware `atom.add` for every type (f64 needs sm_60+, which every
//! target lockstep builds for has). `atomic_cas` is the building block for operations the
//! hardware lacks.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// Types with a native `atom.add`.
pub trait AtomicAdd: Copy {
    /// `old = *ptr; *ptr = old + value; old`, atomically.
    ///
    /// # Safety
    /// `ptr` is valid, aligned, and only accessed atomically by other threads meanwhile.
    #[cfg(target_arch = "nvptx64")]
    unsafe fn atomic_add_at(ptr: *mut Self, value: Self) -> Self;
}

macro_rules! atomic_add_impl {
    ($t:ty, $ptx:literal, $class:ident) => {
        impl AtomicAdd for $t {
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn atomic_add_at(ptr: *mut Self, value: Self) -> Self {
                let old: $t;
                // SAFETY: the caller guarantees `ptr` is valid and aligned.
                unsafe { asm!(concat!("atom.add.", $ptx, " {o}, [{p}], {v};"), o = out($class) old, p = in(reg64) ptr, v = in($class) value, options(nostack)) };
                old
            }
        }
    };
}
atomic_add_impl!(u32, "u32", reg32);
atomic_add_impl!(i32, "s32", reg32);
atomic_add_impl!(u64, "u64", reg64);
atomic_add_impl!(f32, "f32", reg32);
atomic_add_impl!(f64, "f64", reg64);

/// `atomicAdd`: adds `value` to `*ptr` and returns the previous value.
///
/// # Safety
/// `ptr` is valid for reads and writes, aligned for `T`, and every concurrent access to it is
/// atomic.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn atomic_add<T: AtomicAdd>(ptr: *mut T, value: T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { T::atomic_add_at(ptr, value) }
}

/// Types with a native `atom.cas`.
pub trait AtomicCas: Copy {
    /// If `*ptr == compare` store `new`; return the previous value, atomically.
    ///
    /// # Safety
    /// As [`atomic_cas`].
    #[cfg(target_arch = "nvptx64")]
    unsafe fn atomic_cas_at(ptr: *mut Self, compare: Self, new: Self) -> Self;
}

macro_rules! atomic_cas_impl {
    ($t:ty, $ptx:literal, $class:ident) => {
        impl AtomicCas for $t {
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn atomic_cas_at(ptr: *mut Self, compare: Self, new: Self) -> Self {
                let old: $t;
                // SAFETY: the caller guarantees `ptr` is valid and aligned.
                unsafe { asm!(concat!("atom.cas.", $ptx, " {o}, [{p}], {c}, {n};"), o = out($class) old, p = in(reg64) ptr, c = in($class) compare, n = in($class) new, options(nostack)) };
                old
            }
        }
    };
}
atomic_cas_impl!(u32, "b32", reg32);
atomic_cas_impl!(u64, "b64", reg64);

/// `atomicCAS`: if `*ptr == compare`, stores `new`; returns the previous value.
///
/// # Safety
/// `ptr` is valid for reads and writes, aligned for `T`, and every concurrent access to it is
/// atomic.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn atomic_cas<T: AtomicCas>(ptr: *mut T, compare: T, new: T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { T::atomic_cas_at(ptr, compare, new) }
}

/// Types with a native `atom.shared.add`.
pub trait AtomicAddShared: Copy {
    /// As [`AtomicAdd::atomic_add_at`] for a generic pointer into shared memory, with the
    /// shared-state-space instruction (`atom.shared.add`, the fast `ATOMS` path).
    ///
    /// # Safety
    /// As [`atomic_add_shared`].
    #[cfg(target_arch = "nvptx64")]
    unsafe fn atomic_add_shared_at(ptr: *mut Self, value: Self) -> Self;
}

macro_rules! atomic_add_shared_impl {
    ($t:ty, $ptx:literal, $class:ident) => {
        impl AtomicAddShared for $t {
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn atomic_add_shared_at(ptr: *mut Self, value: Self) -> Self {
                let old: $t;
                // SAFETY: the caller guarantees `ptr` is a valid, aligned shared-memory address.
                unsafe {
                    asm!(concat!("{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; atom.shared.add.", $ptx, " {o}, [s], {v}; }}"),
                         o = out($class) old, p = in(reg64) ptr, v = in($class) value, options(nostack))
                };
                old
            }
        }
    };
}
atomic_add_shared_impl!(u32, "u32", reg32);
atomic_add_shared_impl!(i32, "s32", reg32);
atomic_add_shared_impl!(u64, "u64", reg64);
atomic_add_shared_impl!(f32, "f32", reg32);
atomic_add_shared_impl!(f64, "f64", reg64);

/// `atomicAdd` on a counter in shared memory (e.g. from `shared_array!`), through the
/// shared-state-space instruction rather than generic addressing.
///
/// # Safety
/// `ptr` is a generic pointer into this block's shared memory, aligned for `T`, and every
/// concurrent access to it is atomic.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn atomic_add_shared<T: AtomicAddShared>(ptr: *mut T, value: T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { T::atomic_add_shared_at(ptr, value) }
}

/// Types with a non-coherent global load (`ld.global.nc`, the read-only data cache).
pub trait LoadNc: Copy {
    /// `*ptr` through the read-only cache.
    ///
    /// # Safety
    /// As [`load_nc`].
    #[cfg(target_arch = "nvptx64")]
    unsafe fn load_nc_at(ptr: *const Self) -> Self;
}

macro_rules! load_nc_impl {
    ($t:ty, $ptx:literal, $class:ident) => {
        impl LoadNc for $t {
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn load_nc_at(ptr: *const Self) -> Self {
                let v: $t;
                // SAFETY: the caller guarantees a valid global address that nothing writes
                // during the kernel.
                unsafe {
                    asm!(concat!("{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.nc.", $ptx, " {v}, [g]; }}"),
                         v = out($class) v, p = in(reg64) ptr, options(pure, readonly, nostack))
                };
                v
            }
        }
    };
}
load_nc_impl!(u32, "u32", reg32);
load_nc_impl!(f32, "f32", reg32);
load_nc_impl!(u64, "u64", reg64);
load_nc_impl!(f64, "f64", reg64);

/// `__ldg`: loads `*ptr` through the read-only (non-coherent) data cache.
///
/// # Safety
/// `ptr` is a valid, aligned pointer to global memory that no thread writes while the kernel
/// runs (the cache is not coherent with writes of the same launch).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn load_nc<T: LoadNc>(ptr: *const T) -> T {
    // SAFETY: forwarded from the caller.
    unsafe { T::load_nc_at(ptr) }
}
