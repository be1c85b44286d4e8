//! Contention-free atomic reductions (issue #4): probes of the aggregated atomics, histograms
//! (global counters by every method, and shared-memory privatised counters), and the Himeno
//! Jacobi sweep with its gosa reductions.

use lockstep_cuda_std::aggregate::Aggregate;
use lockstep_cuda_std::atomic::AtomicAdd;
use lockstep_cuda_std::prelude::*;
use lockstep_cuda_std::thread::{block_dim_y, block_idx_y, block_idx_z, grid_size_1d, thread_idx_y};
use lockstep_shared::himeno::{self, Coefs, Dims, gosa_via, jacobi_point};
use lockstep_shared::histogram::{Bins, HIST_BLOCK, PRIVATE_BYTES, classify, to_fixed, via};
use lockstep_shared::reduce::WARP_TREE_OFFSETS;

/// Largest block of the probe kernels (their shared scratch is sized for it).
const PROBE_MAX_BLOCK: usize = 1024;

/// One aggregated add by `method` (any [`via`] code but `BLOCK`, `CAS`, `CAS_AGGREGATED`).
///
/// # Safety
/// `p` is valid and aligned; `warp_scratch` is this warp's 64 shared `u64`.
#[inline(always)]
unsafe fn add_via<T: Aggregate + AtomicAdd>(method: u32, p: *mut T, v: T, warp_scratch: *mut u64) -> T {
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

/// Grid-stride histogram into global counters. The loop is block-uniform (every thread of a
/// block makes the same number of trips) so the block method's barriers are safe.
///
/// # Safety
/// `x` holds `n` values; `counts` `bins.k`, `dropped` 3; blocks of `HIST_BLOCK` threads.
#[inline(always)]
unsafe fn hist_global<T: Aggregate + AtomicAdd>(
    bins: &Bins,
    method: u32,
    n: u64,
    x: *const f64,
    weight: impl Fn(u64) -> T,
    counts: *mut T,
    dropped: *mut u64,
    special: impl Fn(*mut T, T) -> bool,
) {
    let scratch = shared_array![ATOMICS_HIST_SCRATCH: [u64; 2 * HIST_BLOCK as usize]];
    let t = thread_idx_x();
    let warp_scratch = scratch.wrapping_add(64 * (t / 32) as usize);
    let stride = grid_size_1d();
    let mut base = block_idx_x() as u64 * block_dim_x() as u64;
    while base < n {
        let i = base + t as u64;
        let mut p: *mut T = core::ptr::null_mut();
        let mut w = T::ZERO;
        if i < n {
            // SAFETY: i < n.
            let c = classify(unsafe { *x.add(i as usize) }, bins);
            if c < bins.k {
                p = counts.wrapping_add(c as usize);
                w = weight(i);
            } else {
                // SAFETY: c - k < 3 = dropped's length.
                unsafe { atomic_count_aggregated(dropped.add((c - bins.k) as usize)) };
            }
        }
        if method == via::BLOCK {
            // SAFETY: every thread of the block calls it each trip; null when nothing to add.
            unsafe { atomic_add_aggregated_block(p, w, scratch) };
        } else if !p.is_null() && !special(p, w) {
            // SAFETY: p is one of the k counters; warp_scratch is this warp's.
            unsafe { add_via(method, p, w, warp_scratch) };
        }
        base += stride;
    }
}

/// Histogram of `x` into `u32` counters, one of the `via` methods (not the CAS ones).
///
/// # Safety
/// `x` holds `n` values, `counts` `bins.k` (zeroed by the caller), `dropped` 3; 1-D blocks of
/// `HIST_BLOCK` threads.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_u32(
    bins: Bins,
    method: u32,
    n: u64,
    x: *const f64,
    counts: *mut u32,
    dropped: *mut u64,
) {
    // SAFETY: forwarded launch contract.
    unsafe { hist_global(&bins, method, n, x, |_| 1u32, counts, dropped, |_, _| false) }
}

/// As [`histogram_u32`] with `u64` counters.
///
/// # Safety
/// As [`histogram_u32`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_u64(
    bins: Bins,
    method: u32,
    n: u64,
    x: *const f64,
    counts: *mut u64,
    dropped: *mut u64,
) {
    // SAFETY: forwarded launch contract.
    unsafe { hist_global(&bins, method, n, x, |_| 1u64, counts, dropped, |_, _| false) }
}

/// f64 counters: weights `w[i]` (or 1 when `w` is null), by any `via` method (the CAS ones
/// included). Native f64 atomics are order-dependent for arbitrary weights.
///
/// # Safety
/// As [`histogram_u32`]; `w` is null or holds `n` weights.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_f64(
    bins: Bins,
    method: u32,
    n: u64,
    x: *const f64,
    w: *const f64,
    counts: *mut f64,
    dropped: *mut u64,
) {
    // SAFETY: i < n when called.
    let weight = |i: u64| if w.is_null() { 1.0 } else { unsafe { *w.add(i as usize) } };
    let special = |p: *mut f64, v: f64| match method {
        via::CAS => {
            // SAFETY: p is a counter.
            unsafe { atomic_add_cas_f64(p, v) };
            true
        }
        via::CAS_AGGREGATED => {
            // SAFETY: p is a counter.
            unsafe { atomic_add_aggregated_cas_f64(p, v) };
            true
        }
        _ => false,
    };
    // SAFETY: forwarded launch contract.
    unsafe { hist_global(&bins, method, n, x, weight, counts, dropped, special) }
}

/// Deterministic weighted histogram: `counts` hold `i64` fixed-point sums (as `u64` bits) of
/// `to_fixed(w[i], bins.frac_bits)` (weight 1 when `w` is null).
///
/// # Safety
/// As [`histogram_f64`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_fixed(
    bins: Bins,
    method: u32,
    n: u64,
    x: *const f64,
    w: *const f64,
    counts: *mut u64,
    dropped: *mut u64,
) {
    let f = bins.frac_bits;
    // SAFETY: i < n when called.
    let weight = |i: u64| to_fixed(if w.is_null() { 1.0 } else { unsafe { *w.add(i as usize) } }, f) as u64;
    // SAFETY: forwarded launch contract.
    unsafe { hist_global(&bins, method, n, x, weight, counts, dropped, |_, _| false) }
}

/// Privatised histogram: per-block counters `S` in shared memory filled with warp-aggregated
/// shared atomics (`count` true: popcount increments), then added to the global counters `T`.
///
/// # Safety
/// As [`histogram_u32`]; `bins.k · size_of::<S>() ≤ PRIVATE_BYTES`.
#[inline(always)]
unsafe fn hist_private<S: Aggregate + AtomicAdd, T: Aggregate + AtomicAdd>(
    bins: &Bins,
    n: u64,
    x: *const f64,
    count: bool,
    weight: impl Fn(u64) -> S,
    counts: *mut T,
    dropped: *mut u64,
) {
    let smem = shared_array![ATOMICS_HIST_PRIVATE: [u64; PRIVATE_BYTES / 8]] as *mut S;
    let t = thread_idx_x();
    let bd = block_dim_x();
    let k = bins.k;
    let mut b = t;
    while b < k {
        // SAFETY: b < k fits the shared array (launch contract).
        unsafe { *smem.add(b as usize) = S::ZERO };
        b += bd;
    }
    sync_threads();
    let stride = grid_size_1d();
    let mut i = block_idx_x() as u64 * bd as u64 + t as u64;
    while i < n {
        // SAFETY: i < n.
        let c = classify(unsafe { *x.add(i as usize) }, bins);
        if c < k {
            // SAFETY: c < k: a shared counter.
            unsafe {
                if count {
                    atomic_count_aggregated(smem.add(c as usize));
                } else {
                    atomic_add_aggregated(smem.add(c as usize), weight(i));
                }
            }
        } else {
            // SAFETY: c - k < 3.
            unsafe { atomic_count_aggregated(dropped.add((c - k) as usize)) };
        }
        i += stride;
    }
    sync_threads();
    let mut b = t;
    while b < k {
        // SAFETY: b < k, for both arrays.
        unsafe {
            let v = *smem.add(b as usize);
            if v.to_bits64() != 0 {
                atomic_add(counts.add(b as usize), T::from_bits64(v.to_bits64()));
            }
        }
        b += bd;
    }
}

/// Privatised count histogram (`u32` shared counters, `u32` global).
///
/// # Safety
/// As [`histogram_u32`]; `bins.k ≤ PRIVATE_BYTES / 4`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_private_u32(
    bins: Bins,
    n: u64,
    x: *const f64,
    counts: *mut u32,
    dropped: *mut u64,
) {
    // SAFETY: forwarded launch contract.
    unsafe { hist_private::<u32, u32>(&bins, n, x, true, |_| 1, counts, dropped) }
}

/// Privatised count histogram (`u32` shared counters, `u64` global).
///
/// # Safety
/// As [`histogram_private_u32`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_private_u64(
    bins: Bins,
    n: u64,
    x: *const f64,
    counts: *mut u64,
    dropped: *mut u64,
) {
    // SAFETY: forwarded launch contract.
    unsafe { hist_private::<u32, u64>(&bins, n, x, true, |_| 1, counts, dropped) }
}

/// Privatised f64 weighted histogram (order-dependent for arbitrary weights).
///
/// # Safety
/// As [`histogram_f64`]; `bins.k ≤ PRIVATE_BYTES / 8`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_private_f64(
    bins: Bins,
    n: u64,
    x: *const f64,
    w: *const f64,
    counts: *mut f64,
    dropped: *mut u64,
) {
    // SAFETY: i < n when called.
    let weight = |i: u64| if w.is_null() { 1.0 } else { unsafe { *w.add(i as usize) } };
    // SAFETY: forwarded launch contract.
    unsafe { hist_private::<f64, f64>(&bins, n, x, false, weight, counts, dropped) }
}

/// Privatised deterministic (fixed-point) weighted histogram.
///
/// # Safety
/// As [`histogram_private_f64`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_private_fixed(
    bins: Bins,
    n: u64,
    x: *const f64,
    w: *const f64,
    counts: *mut u64,
    dropped: *mut u64,
) {
    let f = bins.frac_bits;
    // SAFETY: i < n when called.
    let weight = |i: u64| to_fixed(if w.is_null() { 1.0 } else { unsafe { *w.add(i as usize) } }, f) as u64;
    // SAFETY: forwarded launch contract.
    unsafe { hist_private::<u64, u64>(&bins, n, x, false, weight, counts, dropped) }
}

/// One Jacobi sweep of the Himeno benchmark: `p_out = p + omega·ss` at interior points, gosa
/// by `dims.gosa_via` into `*gosa` (atomics) or into `partials` (tree level 1: one warp-tree
/// sum per 32 consecutive k of a row, at `(row, chunk)`). Thread x ↦ k − 1, y ↦ j − 1,
/// block z ↦ i − 1.
///
/// # Safety
/// Coefficient arrays as in the benchmark (`a`: 4 planes, `b`, `c`: 3 planes, `bnd`, `wrk1`,
/// `p`, `p_out`: 1 plane of `mi·mj·mk`); `p` and `p_out` do not overlap; `partials` holds
/// `(mi−2)(mj−2)·chunks_per_row(mk)` for the tree; blockDim.x is a multiple of 32, blockDim.z 1.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn himeno_jacobi(
    dims: Dims,
    omega: f32,
    a: *const f32,
    b: *const f32,
    c: *const f32,
    bnd: *const f32,
    wrk1: *const f32,
    p: *const f32,
    p_out: *mut f32,
    gosa: *mut f32,
    partials: *mut f32,
) {
    let Dims { mi, mj, mk, gosa_via: mode } = dims;
    let tx = block_idx_x() * block_dim_x() + thread_idx_x();
    let j = 1 + block_idx_y() * block_dim_y() + thread_idx_y();
    let i = 1 + block_idx_z();
    if j + 1 >= mj || i + 1 >= mi {
        return; // a whole warp: blockDim.x is a multiple of 32
    }
    let k = 1 + tx;
    let inside = k + 1 < mk;
    let plane = mi as usize * mj as usize * mk as usize;
    let (sj, si) = (mk as isize, mj as isize * mk as isize);
    let idx = (i as usize * mj as usize + j as usize) * mk as usize + k as usize;
    let mut sq = 0.0f32;
    if inside {
        // SAFETY: (i, j, k) is interior, so every neighbour index is inside the plane; the
        // coefficient planes are where the launch contract puts them.
        unsafe {
            let at = |di: isize, dj: isize, dk: isize| *p.offset(idx as isize + di * si + dj * sj + dk);
            let co = Coefs {
                a: [*a.add(idx), *a.add(plane + idx), *a.add(2 * plane + idx), *a.add(3 * plane + idx)],
                b: [*b.add(idx), *b.add(plane + idx), *b.add(2 * plane + idx)],
                c: [*c.add(idx), *c.add(plane + idx), *c.add(2 * plane + idx)],
                bnd: *bnd.add(idx),
                wrk1: *wrk1.add(idx),
            };
            let (ss, new) = jacobi_point(at, &co, omega);
            *p_out.add(idx) = new;
            sq = ss * ss;
        }
    }
    match mode {
        gosa_via::PLAIN => {
            if inside {
                // SAFETY: gosa is one f32 on the device.
                unsafe { atomic_add(gosa, sq) };
            }
        }
        gosa_via::AGGREGATED => {
            if inside {
                // SAFETY: as above.
                unsafe { atomic_add_aggregated(gosa, sq) };
            }
        }
        _ => {
            let mut s = sq;
            for d in WARP_TREE_OFFSETS {
                s += warp_shuffle_down(FULL_MASK, s, d);
            }
            let chunk = tx / 32;
            let cpr = himeno::chunks_per_row(mk);
            if lane_id() == 0 && chunk < cpr {
                let row = (i as usize - 1) * (mj as usize - 2) + (j as usize - 1);
                // SAFETY: row < (mi−2)(mj−2) and chunk < cpr: inside partials.
                unsafe { *partials.add(row * cpr as usize + chunk as usize) = s };
            }
        }
    }
}

/// Level 2 of the deterministic gosa: one block of `LEVEL2_THREADS` threads; thread t sums
/// partials t, t + 256, … in order, then a halving tree; `*out` = the total.
///
/// # Safety
/// `partials` holds `len` values, `out` one; launched as one block of 256 threads.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn himeno_gosa_reduce(partials: *const f32, len: u32, out: *mut f32) {
    const T: usize = himeno::LEVEL2_THREADS;
    let slots = shared_array![ATOMICS_HIMENO_LEVEL2: [f32; T]];
    let t = thread_idx_x() as usize;
    let mut s = 0.0f32;
    let mut i = t;
    while i < len as usize {
        // SAFETY: i < len.
        s += unsafe { *partials.add(i) };
        i += T;
    }
    // SAFETY: t < 256 (launch contract).
    unsafe { *slots.add(t) = s };
    sync_threads();
    let mut stride = T / 2;
    while stride > 0 {
        if t < stride {
            // SAFETY: t + stride < 256.
            unsafe { *slots.add(t) += *slots.add(t + stride) };
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        // SAFETY: out is one f32.
        unsafe { *out = *slots };
    }
}
