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

/// `%nclusterid.x`: the number of clusters along x in the grid.
#[inline(always)]
pub fn cluster_count_x() -> u32 {
    let r: u32;
    // SAFETY: reads a special register; no memory, no side effects.
    unsafe { asm!("mov.u32 {r}, %nclusterid.x;", r = out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// Every thread of every block of the cluster arrives, then waits for all the others
/// (`barrier.cluster.arrive` + `wait`, release and acquire by default): shared-memory writes before it, local
/// or remote, are seen by every block of the cluster after it. Must be reached by every thread
/// of the cluster (it is `.aligned`: by all threads of a warp together).
#[inline(always)]
pub fn cluster_sync() {
    // SAFETY: a barrier; the caller's contract is that every thread reaches it.
    unsafe {
        asm!(
            "barrier.cluster.arrive.aligned;",
            "barrier.cluster.wait.aligned;",
            options(nostack)
        )
    };
}

/// The address in the cluster's shared window of the byte at 32-bit shared address `addr` of
/// the block of cluster rank `rank` (`mapa.shared::cluster.u32`).
#[inline(always)]
pub fn map_shared(addr: u32, rank: u32) -> u32 {
    let r: u32;
    // SAFETY: address arithmetic only; no memory is touched.
    unsafe {
        asm!("mapa.shared::cluster.u32 {r}, {a}, {k};", r = out(reg32) r, a = in(reg32) addr, k = in(reg32) rank,
             options(pure, nomem, nostack))
    };
    r
}

/// Adds 1 to the 16-bit counter at cluster shared address `addr` (one `atom.cas.b16` at a time
/// until it lands; PTX has no 16-bit integer add) and returns the value it held: `u16::MAX`
/// means this increment wrapped it to 0, so the caller owes 65 536 elsewhere.
///
/// # Safety
/// `addr` is a 2-byte aligned address from [`map_shared`] of a live block of this cluster,
/// inside its shared memory; every concurrent access to it is atomic.
#[inline(always)]
pub unsafe fn cluster_increment_u16(addr: u32) -> u16 {
    let mut old: u16;
    // SAFETY: the caller's contract.
    unsafe { asm!("ld.relaxed.cluster.shared::cluster.u16 {v}, [{a}];", v = out(reg16) old, a = in(reg32) addr, options(nostack)) };
    loop {
        let new = old.wrapping_add(1);
        let seen: u16;
        // SAFETY: as above.
        unsafe {
            asm!("atom.relaxed.cluster.shared::cluster.cas.b16 {s}, [{a}], {o}, {n};",
                 s = out(reg16) seen, a = in(reg32) addr, o = in(reg16) old, n = in(reg16) new, options(nostack))
        };
        if seen == old {
            return old;
        }
        old = seen;
    }
}
