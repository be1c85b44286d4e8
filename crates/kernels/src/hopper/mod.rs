//! Kernels that exist only in the sm_90 build of this crate (`target_feature = "sm_90"`): the
//! Hopper features the portable sm_70 module cannot reach (thread-block clusters, distributed
//! shared memory, programmatic dependent launch: [`nbody`], [`himeno`]). They ship in the sm_90
//! cubin alone; the host launcher asks the loaded module for them and returns a clear error
//! where it lacks them (`lockstep::ptx`), or, for the `_pdl` kernels, launches the portable
//! kernel instead.
//!
//! Declared last in `lib.rs`, so the sm_90 build emits every portable kernel first and exactly
//! as the sm_70 build does (`lockstep_ptx_builder::images::same_kernels` checks it).

pub mod himeno;
pub mod nbody;

use lockstep_cuda_std::cluster::{cluster_block_rank, cluster_blocks, cluster_id_x};
use lockstep_cuda_std::prelude::*;

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
