//! Beyond one GPU: a run split over ranks (one process per GPU, or virtual ranks in one
//! process) that gives the bits of the one-rank run.
//!
//! Every distributed algorithm talks to its peers through a [`Communicator`]: a few host
//! collectives (wrapping `u64` sums, all-gathers of equal pieces, broadcast, barrier) and, where
//! the ranks are GPUs joined by NCCL, the same collectives on device memory in stream order
//! (`DeviceCollectives`, feature `gpu`). Three implementations:
//!
//! - [`CpuGroup`]: `k` virtual ranks as threads of one process (CI tests every family with
//!   `k = 1, 2, 3, 5` on a machine without GPUs; several ranks may share one GPU);
//! - [`store::StoreComm`]: one process per rank, host collectives through the run's
//!   rendezvous store (TCP; rank 0 serves it); ranks on the CPU;
//! - `nccl::NcclComm` (feature `gpu`): one process per GPU, NCCL for device collectives, the
//!   store for the rendezvous (NCCL's unique id) and small host collectives.
//!
//! **Invariants.** A collective is called by every rank in the same order with the same kind
//! and length; a rank that calls another gets [`crate::Error::Collective`] naming both calls, on every
//! rank (the CPU group and the store check; NCCL cannot, so the store's checks run before
//! each NCCL collective is enqueued only in debug runs — the families call collectives in a
//! fixed order that depends on the problem alone). A rank that leaves (returns, panics, dies)
//! makes every other rank's next collective fail within seconds. Sums are of integers, so no
//! result depends on the number of ranks or their order; gathers concatenate in rank order.

mod cpu;
pub mod join;
mod round;
pub mod env;
pub mod store;
#[cfg(feature = "gpu")]
pub mod nccl;
mod split;

pub use cpu::{CpuComm, CpuGroup};
pub use env::Launch;
pub use join::{Place, Rank, join};
pub use split::{Split, split_even, split_padded};
pub use store::StoreComm;

use crate::error::Result;

/// A rank's view of a distributed run: who it is, and the collectives every rank calls in the
/// same order. Implementations: [`CpuGroup`]'s ranks, the store's processes, NCCL's GPUs.
pub trait Communicator: Send + Sync {
    /// This rank, `0..size()`.
    fn rank(&self) -> usize;
    /// Ranks in the run.
    fn size(&self) -> usize;
    /// Element-wise wrapping sum of `values` over the ranks; every rank gets the sums. Every
    /// rank passes the same length.
    fn all_reduce_u64(&self, values: &mut [u64]) -> Result<()>;
    /// Every rank's `mine` (the same length on every rank) concatenated in rank order into
    /// `all` (`size()·mine.len()` bytes).
    fn all_gather_bytes(&self, mine: &[u8], all: &mut [u8]) -> Result<()>;
    /// `root`'s `buf` copied to every rank's `buf` (the same length on every rank).
    fn broadcast_bytes(&self, root: usize, buf: &mut [u8]) -> Result<()>;
    /// Returns when every rank has called it.
    fn barrier(&self) -> Result<()>;
    /// The last collective of a rank that completed its run: returns once every rank called
    /// it, after which no rank's exit is taken for a death (the store's goodbye). A barrier
    /// where ranks cannot die apart.
    fn finish(&self) -> Result<()> {
        self.barrier()
    }
    /// The device collectives of ranks joined by NCCL (`None`: device data goes through the
    /// host collectives above).
    #[cfg(feature = "gpu")]
    fn device(&self) -> Option<&dyn DeviceCollectives> {
        None
    }
}

/// Collectives on device memory, enqueued on the GPU's stream (NCCL).
#[cfg(feature = "gpu")]
pub trait DeviceCollectives: Send + Sync {
    /// In place, element-wise wrapping sum of the `count` `u64` at `buf` over the ranks,
    /// enqueued on `gpu`'s stream.
    ///
    /// # Safety
    /// `buf` is a device allocation of `gpu`'s context holding at least `count` `u64`, not
    /// freed before the stream passes this call.
    unsafe fn all_reduce_u64(&self, gpu: &crate::Gpu, buf: u64, count: usize) -> Result<()>;
    /// Each rank's `bytes` bytes at `send` land at `recv + rank·bytes` on every rank, enqueued
    /// on `gpu`'s stream (`send` may be that slot of `recv`: in place).
    ///
    /// # Safety
    /// `send` holds `bytes` bytes and `recv` `size·bytes` bytes of device memory of `gpu`'s
    /// context, alive until the stream passes this call; `recv` overlaps `send` only as its own slot.
    unsafe fn all_gather(&self, gpu: &crate::Gpu, send: u64, recv: u64, bytes: usize) -> Result<()>;
}

/// Plain values that travel through the host collectives as bytes (no padding, every bit
/// pattern valid).
pub trait Plain: Copy + Default + Send + Sync + 'static {}
impl Plain for u8 {}
impl Plain for u32 {}
impl Plain for u64 {}
impl Plain for i32 {}
impl Plain for f32 {}
impl Plain for f64 {}

/// A broadcast's root is one of the group's `size` ranks.
pub(crate) fn check_root(root: usize, size: usize) -> Result<()> {
    if root >= size {
        return Err(crate::Error::InvalidInput { what: "broadcast root", why: format!("rank {root} of {size}") });
    }
    Ok(())
}

fn bytes_of<T: Plain>(v: &[T]) -> &[u8] {
    // SAFETY: `Plain` types have no padding; any initialised T is valid bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

fn bytes_of_mut<T: Plain>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: as above, and every bit pattern is a valid `Plain` value.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Every rank's `mine` (the same length on every rank), concatenated in rank order.
pub fn all_gather<T: Plain>(comm: &dyn Communicator, mine: &[T]) -> Result<Vec<T>> {
    let mut all = vec![T::default(); mine.len() * comm.size()];
    comm.all_gather_bytes(bytes_of(mine), bytes_of_mut(&mut all))?;
    Ok(all)
}

/// [`all_gather`] into a caller's buffer of `size·mine.len()` values.
pub fn all_gather_into<T: Plain>(comm: &dyn Communicator, mine: &[T], all: &mut [T]) -> Result<()> {
    comm.all_gather_bytes(bytes_of(mine), bytes_of_mut(all))
}

/// `root`'s `values` on every rank.
pub fn broadcast<T: Plain>(comm: &dyn Communicator, root: usize, values: &mut [T]) -> Result<()> {
    comm.broadcast_bytes(root, bytes_of_mut(values))
}

/// The wrapping sum of one value over the ranks.
pub fn sum_u64(comm: &dyn Communicator, value: u64) -> Result<u64> {
    let mut v = [value];
    comm.all_reduce_u64(&mut v)?;
    Ok(v[0])
}

/// One rank alone (rank 0 of 1): every collective is a copy. What a plain run is, as a
/// communicator.
#[derive(Clone, Copy, Debug, Default)]
pub struct Alone;

impl Communicator for Alone {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn all_reduce_u64(&self, _: &mut [u64]) -> Result<()> {
        Ok(())
    }
    fn all_gather_bytes(&self, mine: &[u8], all: &mut [u8]) -> Result<()> {
        crate::launch::expect_len("all-gather output (bytes)", all.len(), mine.len())?;
        all.copy_from_slice(mine);
        Ok(())
    }
    fn broadcast_bytes(&self, root: usize, _: &mut [u8]) -> Result<()> {
        check_root(root, 1)
    }
    fn barrier(&self) -> Result<()> {
        Ok(())
    }
}
