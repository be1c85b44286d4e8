//! Probes of the warp-aggregated atomics (issue #4): every thread adds its value to its target
//! counter by one method of `lockstep_cuda_std::aggregate` and records the returned old value.

use lockstep_cuda_std::aggregate::Aggregate;
use lockstep_cuda_std::atomic::AtomicAdd;
use lockstep_cuda_std::prelude::*;
use lockstep_shared::histogram::via;

/// Largest block of the probe kernels (their shared scratch is sized for it).
const PROBE_MAX_BLOCK: usize = 1024;

/// One aggregated add by `method` (any [`via`] code but `BLOCK`, `CAS`, `CAS_AGGREGATED`).
///
/// # Safety
/// `p` is valid and aligned; `warp_scratch` is this warp's 64 shared `u64`.
#[inline(always)]
pub(crate) unsafe fn add_via<T: Aggregate + AtomicAdd>(method: u32, p: *mut T, v: T, warp_scratch: *mut u64) -> T {
    // SAFETY: forwarded from the caller.
    unsafe {
        match method {
            via::PLAIN => atomic_add(p, v),
            via::SHARED => atomic_add_aggregated_shared(p, v, warp_scratch),
            via::SHFL => atomic_add_aggregated_shfl(p, v),
            via::COUNT => atomic_count_aggregated(p),
            _ => atomic_add_aggregated_match(p, v),
        }
    }
}

/// `olds[i] = add(&counters[targets[i]], values[i])` for `i < n` by method `method`.
///
/// # Safety
/// `targets`, `values`, `olds` hold `n` elements; every target indexes `counters`; 1-D blocks
/// of at most 1024 threads.
#[inline(always)]
unsafe fn probe<T: Aggregate + AtomicAdd>(
    method: u32,
    n: u32,
    targets: *const u32,
    values: *const T,
    counters: *mut T,
    olds: *mut T,
    special: impl Fn(*mut T, T) -> Option<T>,
) {
    let scratch = shared_array![ATOMICS_PROBE_SCRATCH: [u64; 2 * PROBE_MAX_BLOCK]];
    let i = index_1d();
    let warp_scratch = scratch.wrapping_add(64 * (thread_idx_x() / 32) as usize);
    // SAFETY: reads below n; targets index counters (launch contract).
    let (p, v) = if i < n {
        unsafe { (counters.add(*targets.add(i as usize) as usize), *values.add(i as usize)) }
    } else {
        (core::ptr::null_mut(), T::ZERO)
    };
    if method == via::BLOCK {
        // SAFETY: every thread of the block calls it; null for threads past n.
        let old = unsafe { atomic_add_aggregated_block(p, v, scratch) };
        if i < n {
            // SAFETY: i < n.
            unsafe { *olds.add(i as usize) = old };
        }
    } else if i < n {
        // SAFETY: p is a counter; warp_scratch is this warp's part of the scratch.
        let old = match special(p, v) {
            Some(o) => o,
            None => unsafe { add_via(method, p, v, warp_scratch) },
        };
        // SAFETY: i < n.
        unsafe { *olds.add(i as usize) = old };
    }
}

macro_rules! probe_kernel {
    ($name:ident, $t:ty) => {
        /// Probe of the aggregated atomics: `olds[i]` = the value returned by adding
        /// `values[i]` at `counters[targets[i]]` with method `method` (a `via` code).
        ///
        /// # Safety
        /// `targets`, `values`, `olds` hold `n` elements; every target indexes `counters`;
        /// 1-D blocks of at most 1024 threads.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(
            method: u32,
            n: u32,
            targets: *const u32,
            values: *const $t,
            counters: *mut $t,
            olds: *mut $t,
        ) {
            // SAFETY: forwarded launch contract.
            unsafe { probe(method, n, targets, values, counters, olds, |_, _| None) }
        }
    };
}
probe_kernel!(aggregate_probe_u32, u32);
probe_kernel!(aggregate_probe_i32, i32);
probe_kernel!(aggregate_probe_u64, u64);
probe_kernel!(aggregate_probe_f32, f32);

/// As the other probes, for f64, with the CAS methods too.
///
/// # Safety
/// As `aggregate_probe_u32`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn aggregate_probe_f64(
    method: u32,
    n: u32,
    targets: *const u32,
    values: *const f64,
    counters: *mut f64,
    olds: *mut f64,
) {
    let special = |p: *mut f64, v: f64| match method {
        // SAFETY: p is a valid counter (probe's contract).
        via::CAS => Some(unsafe { atomic_add_cas_f64(p, v) }),
        // SAFETY: as above.
        via::CAS_AGGREGATED => Some(unsafe { atomic_add_aggregated_cas_f64(p, v) }),
        _ => None,
    };
    // SAFETY: forwarded launch contract.
    unsafe { probe(method, n, targets, values, counters, olds, special) }
}
