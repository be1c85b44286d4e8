//! Kernels that exist only in the sm_90 build of this crate (`target_feature = "sm_90"`): the
//! Hopper features the portable sm_70 module cannot reach (thread-block clusters, distributed
//! shared memory). They ship in the sm_90 cubin alone; the host launcher asks the loaded module
//! for them and returns a clear error where it lacks them (`lockstep::ptx`).
//!
//! Declared last in `lib.rs`, so the sm_90 build emits every portable kernel first and exactly
//! as the sm_70 build does (`lockstep_ptx_builder::images::same_kernels` checks it).

use crate::histogram::{flush_dropped, tally_dropped, visit_segment};
use lockstep_cuda_std::atomic::{AtomicRed, global_red_add};
use lockstep_cuda_std::cluster::{
    cluster_block_rank, cluster_blocks, cluster_id_x, cluster_increment_u16, cluster_sync, map_shared,
};
use lockstep_cuda_std::prelude::*;
use lockstep_shared::histogram::{Bins, WIDE_VALUES_PER_THREAD, classify, cluster_bins_per_block};

/// Where each block sits in its cluster: `out[3b..3b+3] = (blocks in its cluster, its rank in
/// it, its cluster's x index)` for block `b < blocks`, written by the block's thread 0. Launched
/// without a cluster dimension every block is a cluster of one: `(1, 0, b)`, the CPU twin's
/// values (`lockstep::foundation::cluster_probe_cpu`).
///
/// # Safety
/// `out` holds `3·blocks` elements; a 1-D grid of at most `blocks` blocks.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn cluster_probe(blocks: u32, out: *mut u32) {
    let b = block_idx_x();
    if thread_idx_x() == 0 && b < blocks {
        let i = 3 * b as usize;
        // SAFETY: b < blocks and `out` holds 3·blocks elements.
        unsafe {
            *out.add(i) = cluster_blocks();
            *out.add(i + 1) = cluster_block_rank();
            *out.add(i + 2) = cluster_id_x();
        }
    }
}

/// Cluster count histogram: the `k` bins spread over the shared memory of the cluster's blocks
/// as 16-bit counters (block `r` holds bins `r·per ..`, [`cluster_bins_per_block`]), so one
/// cluster holds up to 16 × the bins one block can. Every value is counted in its bin's block
/// through distributed shared memory ([`cluster_increment_u16`]); the increment that wraps a
/// counter to 0 adds 65 536 to the global counter itself, so nothing is lost and no flush is
/// needed before the end. Blocks take segments of values as the wide kernel does
/// (`visit_segment`). After a cluster barrier each block adds its non-zero counters to the
/// global ones with one `red.add` each (a warp's adds go to 64 consecutive bins). Counts are
/// integer sums: the same in every order.
///
/// # Safety
/// `x` holds `n` values, `counts` `bins.k` (zeroed by the caller), `dropped` 3; launched with a
/// cluster dimension along x (the grid a multiple of it) and `4·ceil(per/2)` bytes of dynamic
/// shared memory for `per = cluster_bins_per_block(k, cluster size)`; 1-D blocks.
#[inline(always)]
unsafe fn hist_cluster_count<T: AtomicRed>(
    bins: &Bins,
    n: u64,
    x: *const f64,
    counts: *mut T,
    dropped: *mut u64,
    widen: impl Fn(u32) -> T,
) {
    let smem = dynamic_shared!(HIST_CLUSTER_COUNTERS) as *mut u32;
    let base = shared_addr(smem);
    let t = thread_idx_x();
    let bd = block_dim_x();
    let k = bins.k;
    let rank = cluster_block_rank();
    // At least 1 (k ≥ 1 by the launch contract): no division by zero below.
    let per = cluster_bins_per_block(k, cluster_blocks()).max(1);
    let words = per.div_ceil(2);
    let mut w = t;
    while w < words {
        // SAFETY: w < words, which the dynamic shared memory holds.
        unsafe { *smem.add(w as usize) = 0 };
        w += bd;
    }
    // No block counts into another before that one has zeroed its counters.
    cluster_sync();
    let mut d = [0u64; 3];
    let mut visit = |v: f64| {
        let b = classify(v, bins);
        if b < k {
            let owner = b / per;
            let remote = map_shared(base + 2 * (b - owner * per), owner);
            // SAFETY: owner < cluster size (b < k ≤ per · size) and slot b − owner·per < per,
            // inside the owner's counters; every access to them until the barrier is atomic.
            if unsafe { cluster_increment_u16(remote) } == u16::MAX {
                // SAFETY: b < k.
                unsafe { global_red_add(counts.add(b as usize), widen(1 << 16)) };
            }
        } else {
            tally_dropped(&mut d, b - k);
        }
    };
    let seg = WIDE_VALUES_PER_THREAD as u64 * bd as u64;
    let segments = n.div_ceil(seg);
    let aligned = (x as usize) % 16 == 0;
    let mut s = block_idx_x() as u64;
    while s < segments {
        // SAFETY: x holds n values.
        unsafe { visit_segment(n, x, aligned, s * seg, &mut visit) };
        s += grid_dim_x() as u64;
    }
    // Every increment of the cluster has landed; after this no block touches another's memory.
    cluster_sync();
    let first = rank * per;
    let mut w = t;
    while w < words {
        // SAFETY: w < words; no other thread touches word w now.
        let v = unsafe { *smem.add(w as usize) };
        let (lo, hi) = (v & 0xffff, v >> 16);
        if lo != 0 {
            // SAFETY: only bins below k were counted, so bin first + 2w < k.
            unsafe { global_red_add(counts.add((first + 2 * w) as usize), widen(lo)) };
        }
        if hi != 0 {
            // SAFETY: as above, for bin first + 2w + 1.
            unsafe { global_red_add(counts.add((first + 2 * w + 1) as usize), widen(hi)) };
        }
        w += bd;
    }
    // SAFETY: dropped holds 3.
    unsafe { flush_dropped(d, dropped) };
}

/// Cluster count histogram (16-bit distributed shared counters, `u32` global).
///
/// # Safety
/// As [`hist_cluster_count`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_cluster_u32(
    bins: Bins,
    n: u64,
    x: *const f64,
    counts: *mut u32,
    dropped: *mut u64,
) {
    // SAFETY: forwarded launch contract.
    unsafe { hist_cluster_count::<u32>(&bins, n, x, counts, dropped, |c| c) }
}

/// Cluster count histogram (16-bit distributed shared counters, `u64` global).
///
/// # Safety
/// As [`hist_cluster_count`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram_cluster_u64(
    bins: Bins,
    n: u64,
    x: *const f64,
    counts: *mut u64,
    dropped: *mut u64,
) {
    // SAFETY: forwarded launch contract.
    unsafe { hist_cluster_count::<u64>(&bins, n, x, counts, dropped, |c| c as u64) }
}
