//! The partition count method (#21 target 4): counts for many bins without one scattered
//! global atomic per value, in two passes over a piece of at most `PARTITION_PIECE` values.
//!
//! 1. [`histogram_partition_split`]: block `c` takes chunk `c` (`PARTITION_CHUNK` values),
//!    classifies them, counts them per bucket of `2^shift` bins in shared memory, sorts them
//!    by bucket in shared memory and writes the sorted chunk — each value as its bin's 16-bit
//!    offset in its bucket (`shift ≤ 15`) — to `binned[c·CHUNK..]`, and bucket `b`'s segment
//!    of it to `table[b·chunks + c]` ([`partition_entry`]).
//! 2. [`histogram_partition_count_u32`] (`_u64`): block `b` owns the bins of bucket `b`; its
//!    lanes walk the chunks' segments of that bucket (a lane per chunk, eight offsets per
//!    load), count each bin in a 32-bit shared counter, and the block adds its counters to the
//!    global ones with plain loads and stores (no other block touches those bins; pieces run
//!    one after another on the stream) — the first piece stores them instead, zeros included,
//!    so the launcher does not zero the counters first.
//!
//! Counts are integer sums: the same in every order. The order of a sorted chunk's values
//! inside a bucket is whatever the shared atomics hand out; nothing reads it but pass 2.

use super::{F64x2, flush_dropped, tally_dropped};
use lockstep_cuda_std::atomic::{shared_atomic_add_u32, shared_red_add_u32};
use lockstep_cuda_std::prelude::*;
use lockstep_cuda_std::shared::{ld_shared_u32, shared_addr, st_shared_u16, st_shared_u32};
use lockstep_cuda_std::unroll::unrolled;
use lockstep_cuda_std::warp::{lane_id, warp_shuffle_up};
use lockstep_shared::histogram::{
    Bins, PARTITION_BLOCK, PARTITION_CHUNK, PARTITION_MAX_BUCKETS, PARTITION_VALUES_PER_THREAD, classify,
    partition_buckets, partition_entry, partition_segment,
};

/// Every lane of a warp.
const FULL: u32 = 0xffff_ffff;
/// Eight 16-bit offsets of pass 1's output in one 16-byte load.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct U32x4([u32; 4]);
/// No bin (a value that was dropped, or no value).
const NONE: u32 = u32::MAX;
/// Warps of a partition block.
const WARPS: u32 = PARTITION_BLOCK / 32;
/// Values per thread of pass 1.
const V: usize = PARTITION_VALUES_PER_THREAD as usize;

/// Pass 1 of the partition method: chunk `blockIdx.x` of `x` sorted by bucket into `binned`
/// (16-bit offsets in the bucket, two to a word), its bucket segments into `table`
/// (bucket-major: `table[b·gridDim.x + c]`), dropped values counted. Each value's key
/// (`bucket << 16 | offset`, or `NONE`) goes to shared memory at its place in the chunk, so no
/// per-value state stays in registers across the barriers (three blocks fit an SM).
///
/// # Safety
/// `x` holds `n` values, `binned` `gridDim.x · PARTITION_CHUNK / 2` words, `table`
/// `partition_buckets(k, shift)·gridDim.x` entries, `dropped` 3; `gridDim.x = ⌈n /
/// PARTITION_CHUNK⌉`, 1-D blocks of `PARTITION_BLOCK` threads; `shift ≤ 15` and
/// `partition_buckets(bins.k, shift) ≤ PARTITION_MAX_BUCKETS`; the launch's dynamic shared
/// memory holds `PARTITION_SPLIT_BYTES`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_partition_split(
    bins: Bins,
    shift: u32,
    n: u64,
    x: *const f64,
    binned: *mut u32,
    table: *mut u32,
    dropped: *mut u64,
) {
    let counter = shared_array![HIST_PARTITION_BUCKETS: [u32; PARTITION_MAX_BUCKETS as usize]];
    let counters = shared_addr(counter);
    // keys: [u32; CHUNK], then the sorted stage: [u16; CHUNK].
    let keys = shared_addr(dynamic_shared!(HIST_PARTITION_KEYS) as *mut u32);
    let stage = keys + 4 * PARTITION_CHUNK;
    let sums = shared_addr(shared_array![HIST_PARTITION_SUMS: [u32; WARPS as usize + 1]]);
    let t = thread_idx_x();
    let c = block_idx_x();
    let chunks = grid_dim_x();
    let k = bins.k;
    let buckets = partition_buckets(k, shift);
    let mut b = t;
    while b < buckets {
        // SAFETY: b < buckets ≤ the counters' length.
        unsafe { st_shared_u32(counters + 4 * b, 0) };
        b += PARTITION_BLOCK;
    }
    sync_threads();

    let mask = (1u32 << shift) - 1;
    let mut d = [0u64; 3];
    // The value at place p of the chunk: its key to keys[p], its bucket counted.
    let mut visit = |p: u32, v: f64| {
        let cl = classify(v, &bins);
        let key = if cl < k {
            // SAFETY: cl >> shift < buckets, a counter of this block.
            unsafe { shared_red_add_u32(counter.add((cl >> shift) as usize), 1) };
            (cl >> shift) << 16 | (cl & mask)
        } else {
            tally_dropped(&mut d, cl - k);
            NONE
        };
        // SAFETY: p < CHUNK: inside the keys.
        unsafe { st_shared_u32(keys + 4 * p, key) };
    };
    let first = c as u64 * PARTITION_CHUNK as u64;
    let m = if n - first < PARTITION_CHUNK as u64 { (n - first) as u32 } else { PARTITION_CHUNK };
    if (x as usize) % 16 == 0 && m == PARTITION_CHUNK {
        let xv = x as *const F64x2;
        let base = first / 2 + t as u64;
        let bd = PARTITION_BLOCK as u64;
        // Pairs base + u·bd (u < V/2) lie inside the whole chunk: below n/2.
        // SAFETY: that bound; x is 16-byte aligned and `first` even.
        let at = |u: u64| unsafe { *xv.add((base + u * bd) as usize) };
        const { assert!(V == 16) };
        // Two trips of four loads in flight (fewer registers: three blocks fit an SM); the
        // trip count is opaque to the compiler (`shift < 32`), so it does not merge them.
        let mut u0 = 0u64;
        while u0 < 8 + (shift >> 5) as u64 {
            let pairs = [at(u0), at(u0 + 1), at(u0 + 2), at(u0 + 3)];
            unrolled::<4>(|u| {
                let p = 2 * ((u0 as u32 + u as u32) * PARTITION_BLOCK + t);
                visit(p, pairs[u].0[0]);
                visit(p + 1, pairs[u].0[1]);
            });
            u0 += 4;
        }
    } else {
        let mut p = t;
        while p < m {
            // SAFETY: first + p < n.
            visit(p, unsafe { *x.add((first + p as u64) as usize) });
            p += PARTITION_BLOCK;
        }
    }
    sync_threads();

    // Exclusive scan of the bucket counts: thread t owns buckets 2t and 2t + 1.
    let (b0, b1) = (2 * t, 2 * t + 1);
    // SAFETY: below `buckets`, counters of this block (written before the barrier).
    let n0 = if b0 < buckets { unsafe { ld_shared_u32(counters + 4 * b0) } } else { 0 };
    // SAFETY: as above.
    let n1 = if b1 < buckets { unsafe { ld_shared_u32(counters + 4 * b1) } } else { 0 };
    let lane = lane_id();
    let w = t / 32;
    let inclusive = warp_inclusive_sum(n0 + n1, lane);
    if lane == 31 {
        // SAFETY: w < WARPS, inside `sums`.
        unsafe { st_shared_u32(sums + 4 * w, inclusive) };
    }
    sync_threads();
    if w == 0 {
        // SAFETY: lane < WARPS, inside `sums` (written before the barrier).
        let mine = if lane < WARPS { unsafe { ld_shared_u32(sums + 4 * lane) } } else { 0 };
        let total = warp_inclusive_sum(mine, lane);
        if lane < WARPS {
            // SAFETY: lane < WARPS; sums[WARPS] (lane WARPS − 1's inclusive sum) is the total.
            unsafe {
                st_shared_u32(sums + 4 * lane, total - mine);
                if lane == WARPS - 1 {
                    st_shared_u32(sums + 4 * WARPS, total);
                }
            }
        }
    }
    sync_threads();
    // SAFETY: w ≤ WARPS, written before the barrier.
    let start0 = unsafe { ld_shared_u32(sums + 4 * w) } + inclusive - (n0 + n1);
    // SAFETY: as above.
    let total = unsafe { ld_shared_u32(sums + 4 * WARPS) };
    let publish = |bk: u32, start: u32, len: u32| {
        if bk < buckets {
            // SAFETY: bk < buckets: this thread's own counter (nobody else reads it before the
            // barrier below); the table holds buckets·chunks entries.
            unsafe {
                st_shared_u32(counters + 4 * bk, start);
                *table.add(bk as usize * chunks as usize + c as usize) = partition_entry(start, len);
            }
        }
    };
    publish(b0, start0, n0);
    publish(b1, start0 + n0, n1);
    sync_threads();

    // Sort: each bucket's counter is now its cursor; every key's offset to the place the
    // cursor hands out, then the sorted chunk out, two offsets to a word (a chunk starts at an
    // even index).
    let mut p = t;
    while p < m {
        // SAFETY: p < m ≤ CHUNK, a key written before the barriers.
        let key = unsafe { ld_shared_u32(keys + 4 * p) };
        if key != NONE {
            // SAFETY: key >> 16 < buckets; the cursor stays below start + len ≤ total ≤ CHUNK.
            unsafe {
                let at = shared_atomic_add_u32(counter.add((key >> 16) as usize), 1);
                st_shared_u16(stage + 2 * at, (key & 0xffff) as u16);
            }
        }
        p += PARTITION_BLOCK;
    }
    sync_threads();
    let out = binned.wrapping_add(c as usize * (PARTITION_CHUNK / 2) as usize);
    let mut w = t;
    while 2 * w < total {
        // SAFETY: word w of the stage and of this chunk's part of `binned` (2w < total ≤ CHUNK);
        // its second half past `total` is a stale offset nobody counts.
        unsafe { *out.add(w as usize) = ld_shared_u32(stage + 4 * w) };
        w += PARTITION_BLOCK;
    }
    // SAFETY: dropped holds 3.
    unsafe { flush_dropped(d, dropped) };
}

/// The sum of `v` over lanes `0..=lane` of the warp (Kogge–Stone; every lane takes part).
#[inline(always)]
fn warp_inclusive_sum(mut v: u32, lane: u32) -> u32 {
    let mut o = 1;
    while o < 32 {
        let y = warp_shuffle_up(FULL, v, o);
        if lane >= o {
            v += y;
        }
        o *= 2;
    }
    v
}

/// Pass 2 of the partition method: block `b` counts bucket `b`'s bins over every chunk's
/// segment and adds them to `counts` with `add(counter, count)` — or, with `fresh ≠ 0` (the
/// first piece into counters nobody zeroed), stores every bin's count, zeros included, with
/// `store(counter, count)`.
///
/// # Safety
/// As the `_u32`/`_u64` kernels: `binned` and `table` written by pass 1 for `chunks` chunks
/// and `gridDim.x = partition_buckets(k, shift)` buckets; `counts` holds `k`; the launch's
/// dynamic shared memory holds `4·2^shift` bytes; 1-D blocks of `PARTITION_BLOCK` threads;
/// `fresh ≠ 0` only where `counts` holds no count to keep. The stage's odd tail word half
/// (past `total`) may be uninitialised shared memory: nothing counts it.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn partition_count<T>(
    k: u32,
    shift: u32,
    chunks: u32,
    fresh: u32,
    binned: *const u32,
    table: *const u32,
    counts: *mut T,
    add: impl Fn(*mut T, u32),
    store: impl Fn(*mut T, u32),
) {
    let counter = dynamic_shared!(HIST_PARTITION_COUNTERS) as *mut u32;
    let counters = shared_addr(counter);
    let t = thread_idx_x();
    let b = block_idx_x();
    let lo = b << shift;
    let width = if k - lo < 1 << shift { k - lo } else { 1 << shift };
    let mut i = t;
    while i < width {
        // SAFETY: i < width ≤ 2^shift, the dynamic shared memory's counters.
        unsafe { st_shared_u32(counters + 4 * i, 0) };
        i += PARTITION_BLOCK;
    }
    sync_threads();
    let lane = lane_id();
    // SAFETY: row b of the table (b < buckets), `chunks` entries.
    let row = unsafe { table.add(b as usize * chunks as usize) };
    // Lane l of warp w walks chunk c0 + l's segment `s..s + len` (chunk-relative offsets)
    // alone, for c0 = 32·(w + WARPS·r): 48 offsets per trip from up to six 16-byte loads of
    // the aligned groups of 8 that cover it, each offset inside the segment counted. A segment
    // of about 32 offsets (uniform data) takes one trip.
    let groups = binned as *const U32x4;
    // SAFETY: c < chunks: an entry of the row (0, an empty segment, past it).
    let entry = |c: u32| if c < chunks { unsafe { *row.add(c as usize) } } else { 0 };
    let mut c0 = (t / 32) * 32;
    let mut next = entry(c0 + lane);
    while c0 < chunks {
        let c = c0 + lane;
        let (s, len) = partition_segment(next);
        // The next batch's entry, loaded while this one is counted.
        next = entry(c0 + WARPS * 32 + lane);
        let end = s + len;
        let first = c * (PARTITION_CHUNK / 8);
        let mut e = s & !7;
        while e < end {
            // Offsets e..e + 48 of chunk c: the groups of 8 the segment reaches, all loaded
            // before the first is counted.
            let mut g = [U32x4([0; 4]); 6];
            unrolled::<6>(|r| {
                let ahead = 8 * r as u32;
                if e + ahead < end {
                    // SAFETY: e + 8r < end ≤ CHUNK: a group of chunk c (c < chunks, as len > 0)
                    // that pass 1 wrote where it holds offsets of the segment.
                    g[r] = unsafe { *groups.add((first + e / 8 + r as u32) as usize) };
                }
            });
            unrolled::<48>(|j| {
                let at = e + j as u32;
                let word = g[j / 8].0[j % 8 / 2];
                if at >= s && at < end {
                    // SAFETY: pass 1 put only offsets of bucket b's bins here: below width.
                    unsafe { shared_red_add_u32(counter.add((word >> (16 * (j % 2)) & 0xffff) as usize), 1) };
                }
            });
            e += 48;
        }
        c0 += WARPS * 32;
    }
    sync_threads();
    let mut i = t;
    while i < width {
        // SAFETY: i < width: a counter of this block, and bin lo + i < k of `counts`, which no
        // other block of this launch touches.
        unsafe {
            let v = ld_shared_u32(counters + 4 * i);
            if fresh != 0 {
                store(counts.add((lo + i) as usize), v);
            } else if v != 0 {
                add(counts.add((lo + i) as usize), v);
            }
        }
        i += PARTITION_BLOCK;
    }
}

/// Pass 2 of the partition method into `u32` counters (adding modulo 2^32, as every `u32`
/// method does).
///
/// # Safety
/// As [`partition_count`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_partition_count_u32(
    k: u32,
    shift: u32,
    chunks: u32,
    fresh: u32,
    binned: *const u32,
    table: *const u32,
    counts: *mut u32,
) {
    // SAFETY: forwarded launch contract; p is a counter only this block touches.
    unsafe {
        partition_count(k, shift, chunks, fresh, binned, table, counts, |p, v| *p = (*p).wrapping_add(v), |p, v| *p = v)
    }
}

/// Pass 2 of the partition method into `u64` counters.
///
/// # Safety
/// As [`partition_count`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_partition_count_u64(
    k: u32,
    shift: u32,
    chunks: u32,
    fresh: u32,
    binned: *const u32,
    table: *const u32,
    counts: *mut u64,
) {
    // SAFETY: forwarded launch contract; p is a counter only this block touches.
    unsafe {
        partition_count(
            k,
            shift,
            chunks,
            fresh,
            binned,
            table,
            counts,
            |p, v| *p = (*p).wrapping_add(v as u64),
            |p, v| *p = v as u64,
        )
    }
}
