//! Contention-free atomic reductions (issue #4): probes of the aggregated atomics, histograms
//! (global counters by every method, and shared-memory privatised counters), and the Himeno
//! Jacobi sweep with its gosa reductions.

use lockstep_cuda_std::aggregate::{Aggregate, global_red_aggregated, global_red_count_aggregated};
use lockstep_cuda_std::atomic::{AtomicAdd, AtomicRed, global_red_add, shared_red_add_u32};
use lockstep_cuda_std::prelude::*;
use lockstep_cuda_std::thread::{block_dim_y, block_idx_y, block_idx_z, grid_dim_z, grid_size_1d, thread_idx_y};
use lockstep_shared::himeno::{self, Coefs, Dims, gosa_via, jacobi_point};
use lockstep_shared::histogram::{
    Bins, HIST_BLOCK, HIST_PAIRS, PRIVATE_AGG_MAX_BINS, PRIVATE_BYTES, classify, to_fixed, via,
};
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

/// Two f64 in one 16-byte load (`ld.global.v2.f64`).
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct F64x2([f64; 2]);

/// Calls `f(i, x[i])` once for every `i < n`, spread over the grid. With `x` 16-byte aligned,
/// each thread first issues `HIST_PAIRS` 16-byte loads (pairs `base + u·blockDim`, coalesced per
/// `u`) and only then visits their `2·HIST_PAIRS` values, so many loads are in flight per thread;
/// the rest (and an unaligned `x`) goes one value per thread per grid-stride trip. Not
/// block-uniform: no barriers in `f`.
///
/// # Safety
/// `x` holds `n` values; 1-D grid.
#[inline(always)]
unsafe fn for_each_value(n: u64, x: *const f64, mut f: impl FnMut(u64, f64)) {
    let t = thread_idx_x() as u64;
    let bd = block_dim_x() as u64;
    let threads = grid_size_1d() as u64;
    let mut done = 0u64;
    if (x as usize) % 16 == 0 {
        let xv = x as *const F64x2;
        let chunk = threads * HIST_PAIRS as u64; // pairs per grid trip
        let trips = (n / 2) / chunk;
        let mut base = block_idx_x() as u64 * bd * HIST_PAIRS as u64 + t;
        let mut r = 0u64;
        while r < trips {
            // Pair base + u·bd < trips·chunk ≤ n/2 for u < 4, so both values are below n.
            // SAFETY: that bound; x is 16-byte aligned, so every pair starts a whole F64x2.
            let at = |u: u64| unsafe { *xv.add((base + u * bd) as usize) };
            let (v0, v1, v2, v3) = (at(0), at(1), at(2), at(3));
            // Visited one by one (no array: a loop over one would go to local memory).
            let i = 2 * base;
            f(i, v0.0[0]);
            f(i + 1, v0.0[1]);
            f(i + 2 * bd, v1.0[0]);
            f(i + 2 * bd + 1, v1.0[1]);
            f(i + 4 * bd, v2.0[0]);
            f(i + 4 * bd + 1, v2.0[1]);
            f(i + 6 * bd, v3.0[0]);
            f(i + 6 * bd + 1, v3.0[1]);
            base += chunk;
            r += 1;
        }
        done = 2 * trips * chunk;
    }
    let mut i = done + block_idx_x() as u64 * bd + t;
    while i < n {
        // SAFETY: i < n.
        f(i, unsafe { *x.add(i as usize) });
        i += threads;
    }
}

/// Adds this thread's dropped-value tallies into the global `dropped` counters (non-zero only).
///
/// # Safety
/// `dropped` holds 3 `u64`.
#[inline(always)]
unsafe fn flush_dropped(d: [u64; 3], dropped: *mut u64) {
    for (j, &c) in d.iter().enumerate() {
        if c != 0 {
            // SAFETY: j < 3.
            unsafe { global_red_add(dropped.add(j), c) };
        }
    }
}

/// Counts `c − k` (0, 1 or 2: a `classify` drop code) in three registers.
#[inline(always)]
fn tally_dropped(d: &mut [u64; 3], code: u32) {
    match code {
        0 => d[0] += 1,
        1 => d[1] += 1,
        _ => d[2] += 1,
    }
}

/// Grid-stride histogram into global counters. The loop is block-uniform (every thread of a
/// block makes the same number of trips) so the block method's barriers are safe.
///
/// # Safety
/// `x` holds `n` values; `counts` `bins.k`, `dropped` 3; blocks of `HIST_BLOCK` threads.
#[inline(always)]
unsafe fn hist_global<T: Aggregate + AtomicAdd + AtomicRed>(
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
    if method != via::BLOCK {
        // Streaming loop with 16-byte loads; plain adds are `red.add` (no returned value); the
        // warp-aggregated methods work on the lanes active together, so the loop need not be
        // warp-uniform; dropped values are tallied in registers. Integer sums do not depend on
        // the order; f64 ones never did for these methods.
        let mut d = [0u64; 3];
        // SAFETY: x holds n values; every c < k indexes counts; warp_scratch is this warp's.
        unsafe {
            for_each_value(n, x, |i, v| {
                let c = classify(v, bins);
                if c < bins.k {
                    let p = counts.wrapping_add(c as usize);
                    let w = weight(i);
                    // Nobody reads a bin's old value: plain adds, match and count methods
                    // issue `red.global.add` (as nvcc does for an unused atomicAdd result).
                    if method == via::PLAIN {
                        global_red_add(p, w);
                    } else if !special(p, w) {
                        match method {
                            via::MATCH => global_red_aggregated(p, w),
                            via::COUNT => global_red_count_aggregated(p),
                            _ => {
                                add_via(method, p, w, warp_scratch);
                            }
                        }
                    }
                } else {
                    tally_dropped(&mut d, c - bins.k);
                }
            });
            flush_dropped(d, dropped);
        }
        return;
    }
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

/// Privatised count histogram: `copies` copies of the `k` counters in shared memory (`u32`,
/// warp `w` increments copy `w mod copies`; `copies = min(warps, capacity / k)`), filled by the
/// streaming loop of [`for_each_value`] with `red.shared.add` (match-aggregated increments for
/// `k ≤ PRIVATE_AGG_MAX_BINS`), then each bin's copies summed and added to the global counter
/// with one `red.add` (blocks start their flush at staggered bins). Counts are integer sums:
/// the same in every order.
///
/// # Safety
/// `x` holds `n` values, `counts` `bins.k` (zeroed by the caller), `dropped` 3;
/// `bins.k ≤ PRIVATE_BYTES / 4`; 1-D blocks of a multiple of 32 threads.
#[inline(always)]
unsafe fn hist_private_count<T: AtomicRed>(
    bins: &Bins,
    n: u64,
    x: *const f64,
    counts: *mut T,
    dropped: *mut u64,
    widen: impl Fn(u64) -> T,
) {
    let smem = shared_array![ATOMICS_HIST_PRIVATE_COUNT: [u32; PRIVATE_BYTES / 4]];
    let t = thread_idx_x();
    let bd = block_dim_x();
    let k = bins.k;
    let cap = (PRIVATE_BYTES / 4) as u32;
    let copies = (cap / k).clamp(1, bd / 32);
    let slots = copies * k;
    let mut b = t;
    while b < slots {
        // SAFETY: b < copies·k ≤ capacity.
        unsafe { *smem.add(b as usize) = 0 };
        b += bd;
    }
    sync_threads();
    let mine = smem.wrapping_add(((t / 32) % copies * k) as usize);
    let aggregate = k <= PRIVATE_AGG_MAX_BINS;
    let mut d = [0u64; 3];
    // SAFETY: x holds n values; c < k indexes this warp's copy.
    unsafe {
        for_each_value(n, x, |_, v| {
            let c = classify(v, bins);
            if c < k {
                if aggregate {
                    atomic_count_aggregated(mine.add(c as usize));
                } else {
                    shared_red_add_u32(mine.add(c as usize), 1);
                }
            } else {
                tally_dropped(&mut d, c - k);
            }
        });
        flush_dropped(d, dropped);
    }
    sync_threads();
    // Stagger the flush: block g starts at bin (g·k / grid) so blocks hit different addresses.
    let start = ((block_idx_x() as u64 * k as u64) / grid_dim_x() as u64) as u32;
    let mut j = t;
    while j < k {
        let mut bin = start + j;
        if bin >= k {
            bin -= k;
        }
        let mut s = 0u64;
        let mut c = 0;
        while c < copies {
            // SAFETY: c·k + bin < copies·k.
            s += unsafe { *smem.add((c * k + bin) as usize) } as u64;
            c += 1;
        }
        if s != 0 {
            // SAFETY: bin < k.
            unsafe { global_red_add(counts.add(bin as usize), widen(s)) };
        }
        j += bd;
    }
}

/// Privatised count histogram (`u32` shared counters, `u32` global).
///
/// # Safety
/// As [`histogram_u32`] but 1-D blocks of `PRIVATE_BLOCK` threads; `bins.k ≤ PRIVATE_BYTES / 4`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_private_u32(
    bins: Bins,
    n: u64,
    x: *const f64,
    counts: *mut u32,
    dropped: *mut u64,
) {
    // SAFETY: forwarded launch contract. A block's per-bin sum wraps as the u32 counter does.
    unsafe { hist_private_count::<u32>(&bins, n, x, counts, dropped, |s| s as u32) }
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
    unsafe { hist_private_count::<u64>(&bins, n, x, counts, dropped, |s| s) }
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
/// sum per 32 consecutive k of a row, at `(row, chunk)`). Thread x ↦ k − 1, y ↦ j − 1; block z
/// covers `q = ceil((mi − 2) / gridDim.z)` consecutive planes from `i = 1 + q·z`. With exactly 2
/// or 4 planes a thread issues the loads of all its points (their shared `p` values loaded
/// once) in one basic block before storing any; otherwise it goes plane by plane.
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
    let q = (mi.saturating_sub(2)).div_ceil(grid_dim_z());
    let i0 = 1 + q * block_idx_z();
    if j + 1 >= mj || i0 + 1 >= mi {
        return; // a whole warp: blockDim.x is a multiple of 32
    }
    let planes = q.min(mi - 1 - i0); // interior planes of this block (uniform over the block)
    let k = 1 + tx;
    let inside = k + 1 < mk;
    let plane = mi as usize * mj as usize * mk as usize;
    let (sj, si) = (mk as isize, mj as isize * mk as isize);
    let idx0 = (i0 as usize * mj as usize + j as usize) * mk as usize + k as usize;
    let at_plane = |u: u32| idx0 + u as usize * si as usize;
    // Called for interior points only, so every neighbour index is inside the plane.
    // SAFETY: that; the coefficient planes are where the launch contract puts them.
    let point = |idx: usize| unsafe {
        let at = |di: isize, dj: isize, dk: isize| *p.offset(idx as isize + di * si + dj * sj + dk);
        let co = Coefs {
            a: [*a.add(idx), *a.add(plane + idx), *a.add(2 * plane + idx), *a.add(3 * plane + idx)],
            b: [*b.add(idx), *b.add(plane + idx), *b.add(2 * plane + idx)],
            c: [*c.add(idx), *c.add(plane + idx), *c.add(2 * plane + idx)],
            bnd: *bnd.add(idx),
            wrk1: *wrk1.add(idx),
        };
        jacobi_point(at, &co, omega)
    };
    // SAFETY: only called with interior points' indices, inside p_out.
    let store = |idx: usize, v: f32| unsafe { *p_out.add(idx) = v };
    let chunk = tx / 32;
    let cpr = himeno::chunks_per_row(mk);
    // gosa of one plane's point (every lane of the warp calls it: the tree shuffles).
    let reduce = |sq: f32, i: u32| match mode {
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
            if lane_id() == 0 && chunk < cpr {
                let row = (i as usize - 1) * (mj as usize - 2) + (j as usize - 1);
                // SAFETY: row < (mi−2)(mj−2) and chunk < cpr: inside partials.
                unsafe { *partials.add(row * cpr as usize + chunk as usize) = s };
            }
        }
    };
    if planes == 4 || planes == 2 {
        let (mut s0, mut s1, mut s2, mut s3) = (0.0f32, 0.0f32, 0.0f32, 0.0f32);
        if inside {
            if planes == 4 {
                let (r0, r1, r2, r3) = (point(at_plane(0)), point(at_plane(1)), point(at_plane(2)), point(at_plane(3)));
                store(at_plane(0), r0.1);
                store(at_plane(1), r1.1);
                store(at_plane(2), r2.1);
                store(at_plane(3), r3.1);
                (s0, s1, s2, s3) = (r0.0 * r0.0, r1.0 * r1.0, r2.0 * r2.0, r3.0 * r3.0);
            } else {
                let (r0, r1) = (point(at_plane(0)), point(at_plane(1)));
                store(at_plane(0), r0.1);
                store(at_plane(1), r1.1);
                (s0, s1) = (r0.0 * r0.0, r1.0 * r1.0);
            }
        }
        reduce(s0, i0);
        reduce(s1, i0 + 1);
        if planes == 4 {
            reduce(s2, i0 + 2);
            reduce(s3, i0 + 3);
        }
    } else {
        let mut u = 0;
        while u < planes {
            let mut sq = 0.0f32;
            if inside {
                let (ss, new) = point(at_plane(u));
                store(at_plane(u), new);
                sq = ss * ss;
            }
            reduce(sq, i0 + u);
            u += 1;
        }
    }
}

/// Level 2 of the deterministic gosa: one block of `LEVEL2_THREADS` threads; thread t sums
/// partials t, t + LEVEL2_THREADS, … in order, then a halving tree; `*out` = the total.
///
/// # Safety
/// `partials` holds `len` values, `out` one; launched as one block of `LEVEL2_THREADS` threads.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn himeno_gosa_reduce(partials: *const f32, len: u32, out: *mut f32) {
    const T: usize = himeno::LEVEL2_THREADS;
    let slots = shared_array![ATOMICS_HIMENO_LEVEL2: [f32; T]];
    let t = thread_idx_x() as usize;
    let len = len as usize;
    let mut s = 0.0f32;
    let mut i = t;
    // Sixteen loads in flight, then the same in-order additions as the plain loop.
    while i + 15 * T < len {
        // SAFETY: i + 15·T < len.
        let v = |u: usize| unsafe { *partials.add(i + u * T) };
        let (v0, v1, v2, v3, v4, v5, v6, v7) = (v(0), v(1), v(2), v(3), v(4), v(5), v(6), v(7));
        let (v8, v9, v10, v11, v12, v13, v14, v15) = (v(8), v(9), v(10), v(11), v(12), v(13), v(14), v(15));
        s += v0;
        s += v1;
        s += v2;
        s += v3;
        s += v4;
        s += v5;
        s += v6;
        s += v7;
        s += v8;
        s += v9;
        s += v10;
        s += v11;
        s += v12;
        s += v13;
        s += v14;
        s += v15;
        i += 16 * T;
    }
    while i < len {
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
