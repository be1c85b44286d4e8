//! Thread-block clusters (sm_90 and newer): where this block sits in its cluster.
//!
//! Exists only when the device crate is built for sm_90 (`target_feature = "sm_90"`): the
//! special registers below are PTX ISA 7.8 and are refused by ptxas for older targets. A launch
//! without a cluster dimension runs every block as a cluster of one.

use core::arch::asm;

/// `%cluster_nctarank`: the number of blocks in this block's cluster.
#[inline(always)]
pub fn cluster_blocks() -> u32 {
    let r: u32;
    // SAFETY: reads a special register; no memory, no side effects.
    unsafe { asm!("mov.u32 {r}, %cluster_nctarank;", r = out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// `%cluster_ctarank`: this block's rank in its cluster (0 .. [`cluster_blocks`]).
#[inline(always)]
pub fn cluster_block_rank() -> u32 {
    let r: u32;
    // SAFETY: as above.
    unsafe { asm!("mov.u32 {r}, %cluster_ctarank;", r = out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// `%clusterid.x`: the x index of this block's cluster in the grid.
#[inline(always)]
pub fn cluster_id_x() -> u32 {
    let r: u32;
    // SAFETY: as above.
    unsafe { asm!("mov.u32 {r}, %clusterid.x;", r = out(reg32) r, options(pure, nomem, nostack)) };
    r
}
