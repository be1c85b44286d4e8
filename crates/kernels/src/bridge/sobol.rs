//! Sobol normals by the warp method: a warp's common high part XOR a 32-entry low table in shared
//! memory (`WarpSobol`), or with the low tables in global memory (`WarpSobolGlobal`).

use super::*;

/// Sobol normals by the warp method (`lockstep_shared::bridge::sobol`, [`stage_sobol`]): the
/// word of row `j` is this warp's high part of row `j` (one of its pair, chosen once per thread)
/// XOR the low-table entry of this lane's low Gray-code bits. Two `ld.shared` and one XOR per
/// normal; the same integers as `sobol_u32`.
#[derive(Clone, Copy)]
pub(super) struct WarpSobol {
    /// Shared address of this thread's high part of row 0 (rows 8 bytes apart).
    pub(super) high: u32,
    /// Shared address of this thread's low-table entry of row 0 (rows 128 bytes apart).
    pub(super) low: u32,
}

impl<T: Real> Normals<T> for WarpSobol {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        // SAFETY: row < the rows `stage_sobol` staged (the strategy's z rows are < steps·d, the
        // tables hold steps·d rows), and its barrier has passed.
        let x = unsafe { ld_shared_u32(self.high + row * 8) ^ ld_shared_u32(self.low + row * 128) };
        T::normal_from_bits(x)
    }
}

/// Stages the warp method's tables for `rows` Sobol dimensions at the shared address `base`
/// (`warp_shared_bytes(rows, blockDim)` bytes): the block copies the low tables (`rows·32`
/// words), and each warp computes its pair of high parts per row (lane `l` rows `l, l + 32, …`:
/// the Gray-code walk over the warp's common high point, then one XOR for the next). Thread
/// `p` (global index) takes point `offset + p`. No barrier: the caller's `sync_threads()` must
/// come before any [`WarpSobol::normal`].
///
/// # Safety
/// Every thread of the block calls it; blockDim is a multiple of 32; `dirs` holds `rows·32`
/// direction numbers and `low` `rows·32` low-table words; `base` is a 16-byte aligned shared
/// address with `warp_shared_bytes(rows, blockDim)` bytes this block owns; `offset + p` does
/// not pass 2^32 for the threads that will read (`p < paths`).
#[inline(always)]
pub(super) unsafe fn stage_sobol(dirs: *const u32, low: *const u32, rows: u32, offset: u32, base: u32) -> WarpSobol {
    let (t, b) = (thread_idx_x(), block_dim_x());
    let mut i = t;
    while i < rows * 32 {
        // SAFETY: i < rows·32, inside `low` and the table at `base` (contract).
        unsafe { st_shared_u32(base + i * 4, *low.add(i as usize)) };
        i += b;
    }
    // SAFETY: the pairs follow the low tables inside the array (contract); dirs as above.
    let (high, q) = unsafe { stage_sobol_high(dirs, rows, offset, base + rows * 128) };
    WarpSobol { high, low: base + low_index(q) * 4 }
}

/// Sobol normals by the warp method with the low tables read from global memory (one 128-byte
/// line per row, the same for every warp of the grid: L1 hits) and the high parts in shared
/// memory ([`stage_sobol_high`]): for shapes whose low tables do not fit shared memory
/// (`LaunchShape::fused_sobol_pairs`). Same integers as [`WarpSobol`].
#[derive(Clone, Copy)]
pub(super) struct WarpSobolGlobal {
    /// Shared address of this thread's high part of row 0 (rows 8 bytes apart).
    pub(super) high: u32,
    /// This thread's low-table entry of row 0 (rows 32 words apart).
    pub(super) low: *const u32,
}

impl<T: Real> Normals<T> for WarpSobolGlobal {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        // SAFETY: row < the rows `stage_sobol_high` staged and `low` holds (the strategy's z rows
        // are < steps·d), and the caller's barrier has passed.
        let x = unsafe { ld_shared_u32(self.high + row * 8) ^ *self.low.add(row as usize * 32) };
        T::normal_from_bits(x)
    }
}

/// Computes each warp's pair of high parts per row for `rows` Sobol dimensions at the shared
/// address `pairs` (`sobol::pairs_shared_bytes(rows, blockDim)` bytes; lane `l` rows `l, l + 32,
/// …`: the Gray-code walk over the warp's common high point, then one XOR for the next) and
/// returns the shared address of this thread's high part of row 0 and its point `offset + p`.
/// No barrier (as [`stage_sobol`]).
///
/// # Safety
/// As [`stage_sobol`], for the pairs alone at `pairs` (8-byte aligned).
#[inline(always)]
pub(super) unsafe fn stage_sobol_high(dirs: *const u32, rows: u32, offset: u32, pairs: u32) -> (u32, u32) {
    let t = thread_idx_x();
    let p = index_1d();
    // The point of the warp's lane 0 (blocks are whole warps, so p & !31 is that lane's p).
    let q0 = offset.wrapping_add(p & !31);
    let h = q0 >> 5;
    let pairs = pairs + (t >> 5) * rows * 8;
    let mut j = t & 31;
    while j < rows {
        // SAFETY: j < rows, so the 32 words at j·32 exist (contract).
        let v = unsafe { from_raw_parts(dirs.add(j as usize * BITS), BITS) };
        let hi = sobol_high(v, h);
        // SAFETY: the warp's pair of row j lies inside the array (contract).
        unsafe {
            st_shared_u32(pairs + j * 8, hi);
            st_shared_u32(pairs + j * 8 + 4, sobol_high_next(v, h, hi));
        }
        j += 32;
    }
    let q = offset.wrapping_add(p);
    (pairs + high_select(q0, q) * 4, q)
}

/// [`WarpSobolGlobal`] for `rows` dimensions: the high parts at the shared address `base`
/// ([`stage_sobol_high`]), the low tables `low` (`rows·32` words) in global memory. No barrier.
///
/// # Safety
/// As [`stage_sobol`] with `sobol::pairs_shared_bytes(rows, blockDim)` bytes at `base`.
#[inline(always)]
pub(super) unsafe fn stage_sobol_global(
    dirs: *const u32,
    low: *const u32,
    rows: u32,
    offset: u32,
    base: u32,
) -> WarpSobolGlobal {
    // SAFETY: forwarded from the contract.
    let (high, q) = unsafe { stage_sobol_high(dirs, rows, offset, base) };
    // low_index(q) < 32, inside row 0 of `low` (contract: rows ≥ 1 whenever a thread reads).
    WarpSobolGlobal { high, low: low.wrapping_add(low_index(q) as usize) }
}
