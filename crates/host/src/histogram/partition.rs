//! Launcher of the partition count method (`crates/kernels/src/histogram/partition.rs`): the
//! scratch it needs (kept between calls, grown on demand), and the two launches per piece of
//! at most [`PARTITION_PIECE`] values.

use crate::error::{Error, Result};
use crate::gpu::{Gpu, zeroed};
use crate::kernel::{Kernel, Param};
use crate::launch::Grid1d;
use cust::memory::{DeviceBuffer, DevicePointer, DeviceSlice};
use lockstep_shared::histogram::{
    Bins, PARTITION_BLOCK, PARTITION_CHUNK, PARTITION_MAX_BUCKETS, PARTITION_MAX_SHIFT, PARTITION_PIECE,
    PARTITION_SPLIT_BYTES, partition_buckets, partition_shift,
};
use std::sync::Mutex;

/// `(bins, shift, n, x, binned, table, dropped)` of `histogram_partition_split`.
pub(super) type Split<'g> =
    Kernel<'g, (Param<Bins>, u32, u64, DevicePointer<f64>, DevicePointer<u32>, DevicePointer<u32>, DevicePointer<u64>)>;
/// `(k, shift, chunks, fresh, binned, table, counts)` of `histogram_partition_count_u32`/`_u64`.
pub(super) type Count<'g, T> =
    Kernel<'g, (u32, u32, u32, u32, DevicePointer<u32>, DevicePointer<u32>, DevicePointer<T>)>;

/// The first pass's kernel and the scratch both passes share: the sorted 16-bit offsets of one
/// piece (two to a word), then its bucket table.
pub(super) struct Partition<'g> {
    gpu: &'g Gpu,
    split: Split<'g>,
    /// Values per piece (a multiple of `PARTITION_CHUNK`).
    piece: u64,
    /// The bucket width (`2^shift` bins) fixed by `set_shift`, else `partition_shift(k)`.
    shift: Option<u32>,
    /// Grown on demand, never shrunk; the launches of one call use it in stream order.
    scratch: Mutex<Option<DeviceBuffer<u32>>>,
}

impl<'g> Partition<'g> {
    /// Holds the first pass (`split`) and lets the second passes (`counts`) use up to `optin`
    /// bytes of shared memory (as many as the widest bucket needs).
    pub(super) fn new(
        gpu: &'g Gpu,
        split: Split<'g>,
        optin: u32,
        counts: (&Count<'g, u32>, &Count<'g, u64>),
    ) -> Result<Self> {
        let bytes = optin.min(4 << PARTITION_MAX_SHIFT);
        counts.0.allow_dynamic_shared(bytes)?;
        counts.1.allow_dynamic_shared(bytes)?;
        split.allow_dynamic_shared(PARTITION_SPLIT_BYTES)?;
        Ok(Partition { gpu, split, piece: PARTITION_PIECE, shift: None, scratch: Mutex::new(None) })
    }

    /// Runs inputs longer than `values` (a positive multiple of `PARTITION_CHUNK`) in pieces of
    /// that many values.
    pub(super) fn set_piece(&mut self, values: u64) -> Result<()> {
        if values == 0 || !values.is_multiple_of(PARTITION_CHUNK as u64) || values > PARTITION_PIECE {
            return Err(Error::InvalidInput {
                what: "partition piece",
                why: format!("{values} values: use a positive multiple of {PARTITION_CHUNK} up to {PARTITION_PIECE}"),
            });
        }
        self.piece = values;
        Ok(())
    }

    /// Fixes the bucket width at `2^shift` bins (`shift ≤ PARTITION_MAX_SHIFT`) for every `k`.
    pub(super) fn set_shift(&mut self, shift: u32) -> Result<()> {
        if shift > PARTITION_MAX_SHIFT {
            return Err(Error::InvalidInput {
                what: "partition bucket width",
                why: format!("2^{shift} bins: use a shift of 0 to {PARTITION_MAX_SHIFT}"),
            });
        }
        self.shift = Some(shift);
        Ok(())
    }

    /// The bucket width (as a shift) for `k` bins.
    pub(super) fn shift_for(&self, k: u32) -> u32 {
        self.shift.unwrap_or_else(|| partition_shift(k))
    }

    /// Shared memory the second pass's block needs for `k` bins: one 32-bit counter per bin of a
    /// bucket.
    pub(super) fn shared_bytes(&self, k: u32) -> u32 {
        4 << self.shift_for(k)
    }

    /// Whether `k` bins make at most `PARTITION_MAX_BUCKETS` buckets at this width.
    pub(super) fn check_buckets(&self, k: u32) -> Result<()> {
        let shift = self.shift_for(k);
        let buckets = partition_buckets(k, shift);
        if buckets > PARTITION_MAX_BUCKETS {
            return Err(Error::InvalidInput {
                what: "partition bucket width",
                why: format!(
                    "{k} bins in buckets of 2^{shift} make {buckets} buckets, more than {PARTITION_MAX_BUCKETS}: use a wider bucket"
                ),
            });
        }
        Ok(())
    }

    /// Enqueues the count histogram of `x` (non-empty) into `counts` (`bins.k` long, any
    /// contents: the first piece's count pass stores every bin) and `dropped` (zeroed, 3): for
    /// each piece, the split and then `count`. The caller checked the lengths and that `bins.k`
    /// fits the method (`Histograms::check`).
    pub(super) fn enqueue<T: cust::memory::DeviceCopy>(
        &self,
        bins: &Bins,
        x: &DeviceSlice<f64>,
        count: &Count<'g, T>,
        counts: DevicePointer<T>,
        dropped: DevicePointer<u64>,
    ) -> Result<()> {
        let gpu = self.gpu;
        let n = x.len() as u64;
        let k = bins.k;
        let shift = self.shift_for(k);
        let buckets = partition_buckets(k, shift);
        let chunk = PARTITION_CHUNK as u64;
        let most_chunks = n.min(self.piece).div_ceil(chunk);
        let sorted = (most_chunks * chunk / 2) as usize;
        let need = sorted + (buckets as u64 * most_chunks) as usize;
        let mut scratch = self.scratch.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if scratch.as_ref().is_none_or(|s| s.len() < need) {
            if scratch.is_some() {
                // Launches enqueued before may still read the old buffer.
                gpu.synchronize()?;
            }
            *scratch = None;
            *scratch = Some(zeroed::<u32>(need)?);
        }
        let buffer = scratch.as_ref().expect("allocated above");
        let binned = buffer.index(..sorted).as_device_ptr();
        let table = buffer.index(sorted..need).as_device_ptr();
        let mut first = 0u64;
        while first < n {
            let len = (n - first).min(self.piece);
            let chunks = len.div_ceil(chunk) as u32;
            let xp = x.index(first as usize..(first + len) as usize).as_device_ptr();
            let b = *bins;
            // Parameters mirror `(bins: Bins, shift: u32, n: u64, x: *const f64, binned: *mut
            // u32, table: *mut u32, dropped: *mut u64)`; x holds len values, binned
            // chunks·CHUNK/2 words, table buckets·chunks entries, dropped 3.
            // SAFETY: that, and ⌈len / CHUNK⌉ blocks of PARTITION_BLOCK threads with the
            // PARTITION_SPLIT_BYTES `new` allowed; shift ≤ 15, buckets ≤ 1024 (check_method).
            unsafe {
                self.split.launch(
                    gpu,
                    Grid1d { blocks: chunks, threads: PARTITION_BLOCK },
                    PARTITION_SPLIT_BYTES,
                    (Param(b), shift, len, xp, binned, table, dropped),
                )?
            };
            // The first piece stores every bin; later ones add to them.
            let fresh = (first == 0) as u32;
            // Parameters mirror `(k, shift, chunks, fresh, binned, table, counts)`; binned and
            // table as the split above wrote them (stream order), counts k long.
            // SAFETY: that; a block of PARTITION_BLOCK threads per bucket with 4·2^shift bytes
            // of dynamic shared memory, which `new` allowed (check).
            unsafe {
                count.launch(
                    gpu,
                    Grid1d { blocks: buckets, threads: PARTITION_BLOCK },
                    4 << shift,
                    (k, shift, chunks, fresh, binned, table, counts),
                )?
            };
            first += len;
        }
        Ok(())
    }
}

impl Drop for Partition<'_> {
    /// The scratch is freed only after the launches that use it: a stream synchronisation
    /// (its error is of no use here and is ignored) before the buffer goes.
    fn drop(&mut self) {
        let scratch = self.scratch.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        if scratch.is_some() {
            let _ = self.gpu.synchronize();
        }
    }
}
