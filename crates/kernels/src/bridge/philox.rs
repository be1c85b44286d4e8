//! Philox normals by the host's schedule: each Philox block computed once per path, its other words
//! waiting in a per-thread word cache in shared memory (`ScheduledPhilox`).

use super::*;

/// Words in the block's shared memory: slot `i` of this thread at `base + i·stride`
/// (`[slot][thread]`, conflict-free).
pub(super) struct SharedWords {
    pub(super) base: u32,
    pub(super) stride: u32,
}

impl Stack<u32> for SharedWords {
    #[inline(always)]
    fn get(&self, i: u32) -> u32 {
        // SAFETY: i < the cache's slots (the schedule's fields, `philox_schedule`), inside the
        // array the kernel sized with `LaunchShape::philox_cache_bytes`.
        unsafe { ld_shared_u32(self.base + i * self.stride) }
    }
    #[inline(always)]
    fn set(&mut self, i: u32, v: u32) {
        // SAFETY: as `get`.
        unsafe { st_shared_u32(self.base + i * self.stride, v) }
    }
}

/// Normals by the host's Philox schedule: the entry of step `s` at the shared address
/// `op + 4·s`, read in step order (one normal per step on the d = 1 path), what a computed block
/// leaves for later steps waiting in `cache` ([`ScheduledPhilox`]: words, `ScheduledBoxMuller`:
/// normals).
pub(super) struct Scheduled<C> {
    pub(super) key: [u32; 2],
    /// The (first) path.
    pub(super) path: u64,
    /// Shared address of the next step's schedule entry.
    pub(super) op: u32,
    pub(super) cache: C,
}

impl<C> Scheduled<C> {
    /// This step's schedule entry (`op` moves on to the next step's).
    ///
    /// # Safety
    /// One call per step in step order (`run_d1` with d = 1), so `op` is the entry of a step
    /// < steps, staged before the barrier.
    #[inline(always)]
    pub(super) unsafe fn next_entry(&mut self) -> u32 {
        // SAFETY: the caller's contract.
        let op = unsafe { ld_shared_u32(self.op) };
        self.op += 4;
        op
    }
}

/// Philox normals by the host's schedule (`philox::scheduled_word`), words waiting for their
/// step in the cache. Each Philox block is computed once per path, where `PhiloxNormals`'
/// one-block cache recomputes it whenever the depth-first order comes back to it (46 blocks
/// instead of 16 per path of the paper's bisection).
pub(super) type ScheduledPhilox = Scheduled<SharedWords>;

impl<T: Real> Normals<T> for ScheduledPhilox {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        // SAFETY: one call per step in step order (`run_d1` with d = 1).
        let op = unsafe { self.next_entry() };
        T::normal_from_bits(scheduled_word(self.key, self.path, row, op, &mut self.cache))
    }
}
