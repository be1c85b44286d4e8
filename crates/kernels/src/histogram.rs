//! Histograms by warp-aggregated atomics (issue #4): global counters by every method, and
//! shared-memory privatised counters; NaN and out-of-range values dropped and counted. Many
//! bins: the two-pass partition method ([`partition`]).

use crate::probe::add_via;
use lockstep_cuda_std::aggregate::{Aggregate, global_red_aggregated, global_red_count_aggregated};
use lockstep_cuda_std::atomic::{AtomicAdd, AtomicRed, global_red_add, shared_red_add_u32};
use lockstep_cuda_std::prelude::*;
use lockstep_cuda_std::thread::grid_size_1d;
use lockstep_shared::histogram::{
    Bins, HIST_BLOCK, HIST_PAIRS, PRIVATE_AGG_MAX_BINS, PRIVATE_BYTES, WIDE_VALUES_PER_THREAD, classify, to_fixed, via,
    wide_segments_per_flush, wide_words,
};

mod partition;

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

/// The weights `w[i]` as a closure (1 for every `i` when `w` is null: unit weights).
///
/// # Safety
/// `w` is null or holds `n` weights, and the closure is called with `i < n` only.
#[inline(always)]
unsafe fn weights(w: *const f64) -> impl Fn(u64) -> f64 {
    // SAFETY: i < n (the caller's contract).
    move |i| if w.is_null() { 1.0 } else { unsafe { *w.add(i as usize) } }
}

/// [`weights`] in fixed point: `to_fixed(w[i], frac_bits)` as `u64` bits.
///
/// # Safety
/// As [`weights`].
#[inline(always)]
unsafe fn fixed_weights(w: *const f64, frac_bits: u32) -> impl Fn(u64) -> u64 {
    // SAFETY: forwarded.
    let weight = unsafe { weights(w) };
    move |i| to_fixed(weight(i), frac_bits) as u64
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
    // SAFETY: `w` is null or holds n weights (launch contract); the bodies read i < n only.
    let weight = unsafe { weights(w) };
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
    // SAFETY: forwarded launch contract (`w` null or n weights; the bodies read i < n only).
    unsafe { hist_global(&bins, method, n, x, fixed_weights(w, bins.frac_bits), counts, dropped, |_, _| false) }
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
    // SAFETY: as in histogram_fixed.
    unsafe { hist_private::<f64, f64>(&bins, n, x, false, weights(w), counts, dropped) }
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
    // SAFETY: as in histogram_fixed.
    unsafe { hist_private::<u64, u64>(&bins, n, x, false, fixed_weights(w, bins.frac_bits), counts, dropped) }
}

/// Wide count histogram: every bin of the block as a 16-bit counter in dynamic shared memory
/// (word `w` of [`wide_words`]`(k)` holds bin `w` low and bin `w + words` high), so twice the
/// bins of 32-bit counters fit. Block `g` takes the segments `g, g + grid, …` of
/// `WIDE_VALUES_PER_THREAD · blockDim` consecutive values (four 16-byte loads per thread in
/// flight where `x` is 16-byte aligned and the segment whole; one value per load otherwise),
/// and after at most [`wide_segments_per_flush`] segments — never more than 65 535 values, so
/// no half carries into the other — adds every non-zero counter to the global one with one
/// `red.add` and zeroes it (blocks start their flush at staggered words; a warp's adds go to
/// consecutive bins). Counts are integer sums: the same in every order.
///
/// # Safety
/// `x` holds `n` values, `counts` `bins.k` (zeroed by the caller), `dropped` 3; the launch's
/// dynamic shared memory holds `4·wide_words(k)` bytes; 1-D blocks of at most 1024 threads.
#[inline(always)]
unsafe fn hist_wide_count<T: AtomicRed>(
    bins: &Bins,
    n: u64,
    x: *const f64,
    counts: *mut T,
    dropped: *mut u64,
    widen: impl Fn(u32) -> T,
) {
    let smem = dynamic_shared!(HIST_WIDE_COUNTERS) as *mut u32;
    let t = thread_idx_x();
    let bd = block_dim_x();
    let k = bins.k;
    let words = wide_words(k);
    let mut w = t;
    while w < words {
        // SAFETY: w < words, which the dynamic shared memory holds.
        unsafe { *smem.add(w as usize) = 0 };
        w += bd;
    }
    sync_threads();
    let mut d = [0u64; 3];
    let mut visit = |v: f64| {
        let c = classify(v, bins);
        if c < k {
            let (word, one) = if c < words { (c, 1) } else { (c - words, 1 << 16) };
            // SAFETY: word < words; the other threads' accesses are atomic too.
            unsafe { shared_red_add_u32(smem.add(word as usize), one) };
        } else {
            tally_dropped(&mut d, c - k);
        }
    };
    let seg = WIDE_VALUES_PER_THREAD as u64 * bd as u64;
    let per_flush = wide_segments_per_flush(seg as u32);
    let segments = n.div_ceil(seg);
    let aligned = (x as usize) % 16 == 0;
    let g = grid_dim_x() as u64;
    // Stagger the flush: block b starts at word (b·words / grid).
    let start = ((block_idx_x() as u64 * words as u64) / g) as u32;
    let mut s = block_idx_x() as u64;
    let mut since = 0;
    // `s`, `since` and `segments` are the same in every thread of the block: the barriers below
    // are reached by all of them.
    while s < segments {
        let first = s * seg;
        if aligned && first + seg <= n {
            let xv = x as *const F64x2;
            let base = first / 2 + t as u64;
            let b = bd as u64;
            // Pairs base + u·bd (u < 4) lie inside the whole segment: below n/2.
            // SAFETY: that bound; x is 16-byte aligned and `first` even.
            let at = |u: u64| unsafe { *xv.add((base + u * b) as usize) };
            let (v0, v1, v2, v3) = (at(0), at(1), at(2), at(3));
            visit(v0.0[0]);
            visit(v0.0[1]);
            visit(v1.0[0]);
            visit(v1.0[1]);
            visit(v2.0[0]);
            visit(v2.0[1]);
            visit(v3.0[0]);
            visit(v3.0[1]);
        } else {
            let mut i = first + t as u64;
            while i < n && i < first + seg {
                // SAFETY: i < n.
                visit(unsafe { *x.add(i as usize) });
                i += bd as u64;
            }
        }
        since += 1;
        s += g;
        if since == per_flush || s >= segments {
            since = 0;
            sync_threads();
            let mut j = t;
            while j < words {
                let mut w = start + j;
                if w >= words {
                    w -= words;
                }
                // SAFETY: w < words; between the barriers no other thread touches word w.
                let v = unsafe { *smem.add(w as usize) };
                if v != 0 {
                    // SAFETY: as above.
                    unsafe { *smem.add(w as usize) = 0 };
                    let (lo, hi) = (v & 0xffff, v >> 16);
                    if lo != 0 {
                        // SAFETY: bin w < words ≤ k.
                        unsafe { global_red_add(counts.add(w as usize), widen(lo)) };
                    }
                    if hi != 0 {
                        // SAFETY: only bins below k were counted, so bin w + words < k.
                        unsafe { global_red_add(counts.add((w + words) as usize), widen(hi)) };
                    }
                }
                j += bd;
            }
            sync_threads();
        }
    }
    // SAFETY: dropped holds 3.
    unsafe { flush_dropped(d, dropped) };
}

/// Wide count histogram (16-bit shared counters, `u32` global).
///
/// # Safety
/// As [`histogram_u32`] but 1-D blocks of at most 1024 threads and `4·wide_words(k)` bytes of
/// dynamic shared memory.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_wide_u32(
    bins: Bins,
    n: u64,
    x: *const f64,
    counts: *mut u32,
    dropped: *mut u64,
) {
    // SAFETY: forwarded launch contract.
    unsafe { hist_wide_count::<u32>(&bins, n, x, counts, dropped, |c| c) }
}

/// Wide count histogram (16-bit shared counters, `u64` global).
///
/// # Safety
/// As [`histogram_wide_u32`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_wide_u64(
    bins: Bins,
    n: u64,
    x: *const f64,
    counts: *mut u64,
    dropped: *mut u64,
) {
    // SAFETY: forwarded launch contract.
    unsafe { hist_wide_count::<u64>(&bins, n, x, counts, dropped, |c| c as u64) }
}
