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

/// `__threadfence()`: orders this thread's memory accesses before and after it as seen by every
/// thread of the GPU (`fence.acq_rel.gpu`, which `membar.gl` is on sm_70+). The building block
/// of grid-wide barriers.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn threadfence() {
    // SAFETY: a fence has no memory-safety preconditions.
    unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) };
}

/// A volatile 32-bit load from global memory that bypasses the incoherent L1 cache
/// (`ld.volatile.global`): what a thread spinning on a flag that other blocks write must use.
///
/// # Safety
/// `ptr` is a valid, aligned global-memory address.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn load_volatile_u32(ptr: *const u32) -> u32 {
    let v: u32;
    // SAFETY: the caller guarantees `ptr` is valid and aligned.
    unsafe { asm!("ld.volatile.global.u32 {v}, [{p}];", v = out(reg32) v, p = in(reg64) ptr, options(nostack)) };
    v
}

/// Types with a native `red.add` (an atomic add whose old value is not returned).
pub trait AtomicRed: Copy {
    /// `*ptr += value`, atomically, no old value (`red.add`, generic addressing).
    ///
    /// # Safety
    /// As [`atomic_red_add`].
    #[cfg(target_arch = "nvptx64")]
    unsafe fn atomic_red_add_at(ptr: *mut Self, value: Self);
    /// As `atomic_red_add_at` for a pointer into global memory (`red.global.add`).
    ///
    /// # Safety
    /// As [`global_red_add`].
    #[cfg(target_arch = "nvptx64")]
    unsafe fn global_red_add_at(ptr: *mut Self, value: Self);
}

macro_rules! atomic_red_impl {
    ($t:ty, $ptx:literal, $class:ident) => {
        impl AtomicRed for $t {
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn atomic_red_add_at(ptr: *mut Self, value: Self) {
                // SAFETY: the caller guarantees `ptr` is valid and aligned.
                unsafe { asm!(concat!("red.add.", $ptx, " [{p}], {v};"), p = in(reg64) ptr, v = in($class) value, options(nostack)) };
            }
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn global_red_add_at(ptr: *mut Self, value: Self) {
                // SAFETY: the caller guarantees a valid, aligned global-memory address.
                unsafe {
                    asm!(concat!("{{ .reg .u64 g; cvta.to.global.u64 g, {p}; red.global.add.", $ptx, " [g], {v}; }}"),
                         p = in(reg64) ptr, v = in($class) value, options(nostack))
                };
            }
        }
    };
}
atomic_red_impl!(u32, "u32", reg32);
atomic_red_impl!(u64, "u64", reg64);
atomic_red_impl!(f32, "f32", reg32);
atomic_red_impl!(f64, "f64", reg64);

/// `atomicAdd` with the result discarded: `red.add`, which needs no round trip for the old
/// value (global or shared memory, generic addressing).
///
/// # Safety
/// `ptr` is valid for reads and writes, aligned for `T`, and every concurrent access to it is
/// atomic.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn atomic_red_add<T: AtomicRed>(ptr: *mut T, value: T) {
    // SAFETY: forwarded from the caller.
    unsafe { T::atomic_red_add_at(ptr, value) }
}

/// [`atomic_red_add`] on global memory with the global-state-space instruction
/// (`red.global.add`: no generic-address resolution).
///
/// # Safety
/// `ptr` is a generic pointer to global memory (a device allocation), aligned for `T`, and
/// every concurrent access to it is atomic.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn global_red_add<T: AtomicRed>(ptr: *mut T, value: T) {
    // SAFETY: forwarded from the caller.
    unsafe { T::global_red_add_at(ptr, value) }
}

/// `*ptr += value` on a `u32` in this block's shared memory with the shared-state-space
/// instruction (`red.shared.add.u32`, the `ATOMS` path, no generic-address check).
///
/// # Safety
/// `ptr` is a generic pointer into this block's shared memory (e.g. from `shared_array!`),
/// 4-byte aligned, and every concurrent access to it is atomic.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn shared_red_add_u32(ptr: *mut u32, value: u32) {
    // SAFETY: the caller guarantees a valid, aligned shared-memory address.
    unsafe {
        asm!("{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; red.shared.add.u32 [s], {v}; }}",
             p = in(reg64) ptr, v = in(reg32) value, options(nostack))
    };
}

/// `old = *ptr; *ptr += value; old` on a `u32` in this block's shared memory
/// (`atom.shared.add.u32`, SASS `ATOMS.ADD`): [`shared_red_add_u32`] when the old value is
/// wanted.
///
/// # Safety
/// As [`shared_red_add_u32`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn shared_atomic_add_u32(ptr: *mut u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees a valid, aligned shared-memory address.
    unsafe {
        asm!("{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; atom.shared.add.u32 {o}, [s], {v}; }}",
             o = out(reg32) old, p = in(reg64) ptr, v = in(reg32) value, options(nostack))
    };
    old
}

/// Grid-wide barrier from an arrival counter and a generation word (`bar[0]`, `bar[1]`; the
/// counter zero at launch, the generation any value): every block's threads wait until every
/// block of the grid arrived, and each block's writes before it are visible to every thread
/// after it (thread 0 of each block fences on both sides of the arrival; the block barriers
/// carry that to the other threads). The counter is back at zero after each barrier, so the
/// next launch may reuse `bar` as it is. Correct only when every block of the grid is resident
/// at once, which the launcher must check against the occupancy (a block that never runs
/// never arrives, and the others spin forever).
///
/// # Safety
/// `bar` points to two `u32` in global memory that nothing else uses during the launch; every
/// thread of every block calls it the same number of times; all blocks are co-resident.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn grid_barrier(bar: *mut u32, blocks: u32) {
    crate::thread::sync_threads();
    if crate::thread::thread_idx_x() == 0 {
        // SAFETY: bar[0..2] are valid (contract); every access to them is atomic or volatile.
        unsafe {
            let generation = bar.add(1);
            let seen = load_volatile_u32(generation);
            threadfence();
            if atomic_add(bar, 1u32) == blocks - 1 {
                atomic_cas(bar, blocks, 0u32);
                threadfence();
                atomic_add(generation, 1u32);
            } else {
                while load_volatile_u32(generation) == seen {}
            }
            threadfence();
        }
    }
    crate::thread::sync_threads();
}
