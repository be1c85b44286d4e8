//! Launcher for `crates/kernels/src/histogram.rs`: count histograms by every method (global
//! counters, privatised in shared memory, or partitioned by bin range: `partition.rs`), f64
//! and fixed-point weighted histograms.

use super::partition::{self, Partition};
use super::problem::{Histogram, bins_with_frac_bits, check_fixed_range, check_weights, fixed_to_f64};
use super::{CountKernels, Counter};
pub use crate::aggregation::Method;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, download, upload, zero_async, zeroed};
use crate::kernel::{Element, Kernel, Param};
use crate::launch::{Grid1d, expect_len};
use cust::device::DeviceAttribute;
use cust::memory::{DeviceBuffer, DeviceCopy, DevicePointer, DeviceSlice};
use lockstep_shared::histogram::{
    Bins, DROP_SLOTS, HIST_BLOCK, PARTITION_MAX_BINS, PRIVATE_BLOCK, PRIVATE_BYTES, WIDE_BLOCK, WIDE_VALUES_PER_THREAD,
    wide_words,
};

/// Privatised count kernels: above this many bins, one block of `2 · PRIVATE_BLOCK` threads per
/// SM instead of two of `PRIVATE_BLOCK` (half the blocks, so half the k-counter flush atomics).
pub const PRIVATE_WIDE_BINS: u32 = 2048;

/// Counts with more bins than this take the partition method under `auto` rather than the
/// wide counters (H100, 10^7 values: wide 0.074 ms against partition 0.078 ms at 60 000 bins,
/// 0.084 against 0.080 at 10^5).
pub const PARTITION_AUTO_BINS: u32 = 65_536;

/// Which counters a histogram has (decides which methods apply).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterKind {
    /// `u32` or `u64` counts.
    Count,
    /// f64 sums of weights (`unit`: no weights given).
    F64 {
        /// Whether every weight is 1.
        unit: bool,
    },
    /// Fixed-point sums of weights (`unit`: no weights given).
    Fixed {
        /// Whether every weight is 1.
        unit: bool,
    },
}

/// Whether `method` applies to counters of `kind` with `k` bins; an [`Error::InvalidInput`]
/// saying why not otherwise.
pub fn check_method(method: Method, kind: CounterKind, k: u32) -> Result<()> {
    let refuse = |why: String| Err(Error::InvalidInput { what: "histogram method", why });
    let cas = matches!(method, Method::Cas | Method::CasAggregated);
    match kind {
        CounterKind::Count if cas => return refuse(format!("`{}` exists for f64 counters only", method.name())),
        CounterKind::Fixed { .. } if cas => return refuse(format!("`{}` exists for f64 counters only", method.name())),
        CounterKind::F64 { unit: false } | CounterKind::Fixed { unit: false } if method == Method::Count => {
            return refuse("`count` adds 1 per value; it cannot add weights".into());
        }
        _ => {}
    }
    if method == Method::Wide && kind != CounterKind::Count {
        return refuse("`wide` keeps 16-bit counts: it exists for u32 and u64 counts only".into());
    }
    if method == Method::Partition {
        if kind != CounterKind::Count {
            return refuse("`partition` counts values: it exists for u32 and u64 counts only".into());
        }
        if k > PARTITION_MAX_BINS {
            return refuse(format!("`partition` takes at most {PARTITION_MAX_BINS} bins (2^25), {k} asked"));
        }
    }
    if method == Method::Private {
        let cap = private_capacity(kind);
        if k as usize > cap {
            return refuse(format!(
                "`private` keeps the bins in 48 KiB of shared memory: at most {cap} bins, {k} asked"
            ));
        }
    }
    Ok(())
}

/// Most bins the `private` method can hold for counters of `kind`.
pub fn private_capacity(kind: CounterKind) -> usize {
    match kind {
        CounterKind::Count => PRIVATE_BYTES / 4,
        _ => PRIVATE_BYTES / 8,
    }
}

// SAFETY: `Bins` is a plain `#[repr(C)]` struct of numbers, copied bit for bit to the kernels'
// parameter space, where the kernels read the same layout.
unsafe impl DeviceCopy for Param<Bins> {}

/// `(bins, method, n, x, counts, dropped)` of the global-memory count histograms.
type CountGlobal<'g, T> = Kernel<'g, (Param<Bins>, u32, u64, DevicePointer<f64>, DevicePointer<T>, DevicePointer<u64>)>;
/// `(bins, n, x, counts, dropped)` of the privatised count histograms.
type CountPrivate<'g, T> = Kernel<'g, (Param<Bins>, u64, DevicePointer<f64>, DevicePointer<T>, DevicePointer<u64>)>;
/// `(bins, method, n, x, w, sums, dropped)` of the weighted histograms (f64 or fixed point).
type WeightedGlobal<'g, T> =
    Kernel<'g, (Param<Bins>, u32, u64, DevicePointer<f64>, DevicePointer<f64>, DevicePointer<T>, DevicePointer<u64>)>;
/// `(bins, n, x, w, sums, dropped)` of the privatised weighted histograms.
type WeightedPrivate<'g, T> =
    Kernel<'g, (Param<Bins>, u64, DevicePointer<f64>, DevicePointer<f64>, DevicePointer<T>, DevicePointer<u64>)>;
/// Global, private, wide and partition (second pass) kernels of one counter type.
type CountSet<'g, T> = (CountGlobal<'g, T>, CountPrivate<'g, T>, CountPrivate<'g, T>, partition::Count<'g, T>);
/// Both weighted kernels of one sum type: global sums and privatised.
type WeightedSet<'g, T> = (WeightedGlobal<'g, T>, WeightedPrivate<'g, T>);

crate::kernel::family!(CountKernels: Histograms holds CountSet { u32: counts_u32, u64: counts_u64 });

/// The weighted histograms' kernels, as a family: f64 sums, or fixed-point `i64` sums as `u64`
/// bits.
enum WeightedKernels {}
crate::kernel::family!(WeightedKernels: Histograms holds WeightedSet { f64: weighted_f64, u64: weighted_fixed });

/// The histogram kernels, loaded and ready.
pub struct Histograms<'g> {
    gpu: &'g Gpu,
    grid_blocks: Option<u32>,
    sms: u32,
    /// Shared memory a wide block may use (the GPU's opt-in limit, allowed to both wide kernels).
    wide_bytes: u32,
    /// Shared memory of one SM.
    sm_shared: u32,
    counts_u32: CountSet<'g, u32>,
    counts_u64: CountSet<'g, u64>,
    partition: Partition<'g>,
    weighted_f64: WeightedSet<'g, f64>,
    weighted_fixed: WeightedSet<'g, u64>,
}

impl<'g> Histograms<'g> {
    /// Looks up the thirteen histogram kernels and lets the two wide ones and the two
    /// partition counters use the GPU's opt-in shared memory.
    pub fn new(gpu: &'g Gpu) -> Result<Self> {
        let sms = gpu.attribute(DeviceAttribute::MultiprocessorCount)?.max(1) as u32;
        let sm_shared = gpu.attribute(DeviceAttribute::MaxSharedMemoryPerMultiprocessor)?.max(0) as u32;
        let wide_bytes = gpu.shared_memory_per_block_optin()?;
        let counts_u32: CountSet<'g, u32> = (
            gpu.kernel("histogram_u32")?,
            gpu.kernel("histogram_private_u32")?,
            gpu.kernel("histogram_wide_u32")?,
            gpu.kernel("histogram_partition_count_u32")?,
        );
        let counts_u64: CountSet<'g, u64> = (
            gpu.kernel("histogram_u64")?,
            gpu.kernel("histogram_private_u64")?,
            gpu.kernel("histogram_wide_u64")?,
            gpu.kernel("histogram_partition_count_u64")?,
        );
        counts_u32.2.allow_dynamic_shared(wide_bytes)?;
        counts_u64.2.allow_dynamic_shared(wide_bytes)?;
        let split = gpu.kernel("histogram_partition_split")?;
        let partition = Partition::new(gpu, split, wide_bytes, (&counts_u32.3, &counts_u64.3))?;
        Ok(Histograms {
            gpu,
            grid_blocks: None,
            sms,
            wide_bytes,
            sm_shared,
            counts_u32,
            counts_u64,
            partition,
            weighted_f64: (gpu.kernel("histogram_f64")?, gpu.kernel("histogram_private_f64")?),
            weighted_fixed: (gpu.kernel("histogram_fixed")?, gpu.kernel("histogram_private_fixed")?),
        })
    }

    /// Fixes the histogram grid at `blocks` blocks (grid-stride loops; default: enough to fill
    /// the GPU). Results of exact methods do not depend on it.
    pub fn with_grid_blocks(mut self, blocks: u32) -> Result<Self> {
        if blocks == 0 || blocks as u64 > crate::launch::MAX_GRID_X {
            return Err(Error::InvalidInput { what: "grid blocks", why: format!("{blocks}: use 1 to 2^31 - 1") });
        }
        self.grid_blocks = Some(blocks);
        Ok(self)
    }

    /// Runs the partition method on inputs of more than `values` values piece by piece, `values`
    /// at a time (default and most: `PARTITION_PIECE` = 2^27; a positive multiple of
    /// `PARTITION_CHUNK` = 8 192). Results do not depend on it; the scratch the method keeps on
    /// the GPU is 4 bytes per value of a piece.
    pub fn with_partition_piece(mut self, values: u64) -> Result<Self> {
        self.partition.set_piece(values)?;
        Ok(self)
    }

    /// Fixes the partition method's bucket width at `2^shift` bins for every `k` (default:
    /// `lockstep_shared::histogram::partition_shift`, the narrowest with at most 256 buckets up
    /// to 2^14 bins, then 2^14 while it makes at most 1,024);
    /// `shift ≤ 15`, and a `k` that would make more than 1,024 buckets is refused for
    /// `partition`. Results do not depend on it. For benchmarks of the width.
    pub fn with_partition_shift(mut self, shift: u32) -> Result<Self> {
        self.partition.set_shift(shift)?;
        Ok(self)
    }

    /// Four blocks of `HIST_BLOCK` per SM (all resident at ≤ 64 registers: the streaming loop
    /// keeps 8 values in flight per thread).
    fn hist_grid(&self, n: u64) -> Result<Grid1d> {
        self.grid_of(n, HIST_BLOCK, 4)
    }

    /// `per_sm` blocks of `threads` per SM (or the fixed grid), no more than `n` needs.
    fn grid_of(&self, n: u64, threads: u32, per_sm: u32) -> Result<Grid1d> {
        let need = Grid1d::for_len(n, threads).map(|g| g.blocks).unwrap_or(u32::MAX);
        let blocks = self.grid_blocks.unwrap_or(self.sms * per_sm).min(need.max(1));
        Ok(Grid1d { blocks, threads })
    }

    /// The exact method this launcher picks for `kind` counters and `k` bins (measured on an
    /// H100, `bench/results/histogram-partition-2026-11-26.md`): the private per-block counters
    /// while they fit; then, for counts, the wide 16-bit ones up to [`PARTITION_AUTO_BINS`] and
    /// the partition past it while they fit this GPU; then one plain global atomic per value
    /// (past 10^5 bins aggregation finds too few equal bins in a warp to pay: `plain` 0.135 ms
    /// against `match` 0.184 ms at 10^6).
    pub fn auto_method(&self, kind: CounterKind, k: u32) -> Method {
        if check_method(Method::Private, kind, k).is_ok() {
            Method::Private
        } else if k <= PARTITION_AUTO_BINS && self.check(Method::Wide, kind, k).is_ok() {
            Method::Wide
        } else if self.check(Method::Partition, kind, k).is_ok() {
            Method::Partition
        } else {
            Method::Plain
        }
    }

    /// Bins the wide method holds on this GPU: two 16-bit counters per 4 bytes of the shared
    /// memory a block may use (116 224 on an H100).
    pub fn wide_capacity(&self) -> u32 {
        2 * (self.wide_bytes / 4)
    }

    /// [`check_method`], and for [`Method::Wide`] this GPU's [`Histograms::wide_capacity`]:
    /// whether this launcher runs `method` for `kind` counters and `k` bins.
    pub fn check(&self, method: Method, kind: CounterKind, k: u32) -> Result<()> {
        check_method(method, kind, k)?;
        if method == Method::Partition {
            self.partition.check_buckets(k)?;
            if self.partition.shared_bytes(k) > self.wide_bytes {
                return Err(Error::InvalidInput {
                    what: "histogram method",
                    why: format!(
                        "`partition` counts a bucket of {k} bins in {} B of shared memory, more than this GPU's {} B per block",
                        self.partition.shared_bytes(k),
                        self.wide_bytes
                    ),
                });
            }
        }
        if method == Method::Wide && k > self.wide_capacity() {
            return Err(Error::InvalidInput {
                what: "histogram method",
                why: format!(
                    "`wide` keeps the bins in this GPU's {} B of shared memory per block: at most {} bins, {k} asked",
                    self.wide_bytes,
                    self.wide_capacity()
                ),
            });
        }
        Ok(())
    }

    fn hist_checks(&self, n: usize, counts: usize, dropped: usize, bins: &Bins) -> Result<u64> {
        expect_len("counts", counts, bins.k as usize)?;
        expect_len("dropped", dropped, DROP_SLOTS)?;
        // Revalidate: `Bins` has public fields.
        bins_with_frac_bits(bins.lo, bins.hi, bins.k as u64, bins.frac_bits)?;
        Ok(n as u64)
    }

    /// Zeroes `counts` and `dropped`, then enqueues the count histogram of `x` by `method`
    /// (`partition` stores every bin's count itself, so it zeroes only `dropped`).
    pub fn histogram_counts_on_device<T: Counter>(
        &self,
        method: Method,
        bins: &Bins,
        x: &DeviceSlice<f64>,
        counts: &mut DeviceSlice<T>,
        dropped: &mut DeviceSlice<u64>,
    ) -> Result<()> {
        let n = self.hist_checks(x.len(), counts.len(), dropped.len(), bins)?;
        self.check(method, CounterKind::Count, bins.k)?;
        if method != Method::Partition || n == 0 {
            zero_async(self.gpu, counts)?;
        }
        zero_async(self.gpu, dropped)?;
        if n == 0 {
            return Ok(());
        }
        let (global, private, wide, split_count) = T::pick(self);
        let (xp, cp, dp) = (x.as_device_ptr(), counts.as_device_ptr(), dropped.as_device_ptr());
        let b = *bins;
        if method == Method::Partition {
            self.partition.enqueue(bins, x, split_count, cp, dp)
        } else if method == Method::Wide {
            let bytes = 4 * wide_words(b.k);
            // Blocks of WIDE_BLOCK threads, as many per SM as their counters and the threads
            // allow (2 at most), no more than the segments need.
            let per_sm = (self.sm_shared / (bytes + 1024)).clamp(1, 2048 / WIDE_BLOCK);
            let segments = n.div_ceil(WIDE_VALUES_PER_THREAD as u64 * WIDE_BLOCK as u64);
            let blocks = self.grid_blocks.unwrap_or(self.sms * per_sm).min(segments.min(u32::MAX as u64) as u32);
            let grid = Grid1d { blocks, threads: WIDE_BLOCK };
            // SAFETY: parameters mirror `(bins: Bins, n: u64, x: *const f64, counts: *mut T,
            // dropped: *mut u64)`; x holds n, counts k, dropped 3; `bytes` = 4·wide_words(k) of
            // dynamic shared memory, at most the opt-in size `new` allowed (Histograms::check);
            // WIDE_BLOCK = 1024 threads.
            unsafe { wide.launch(self.gpu, grid, bytes, (Param(b), n, xp, cp, dp)) }
        } else if method == Method::Private {
            // 32 warps per SM, each thread with 8 values in flight: two blocks of 512 threads,
            // or one of 1024 for many bins (fewer flushes).
            let grid = if b.k > PRIVATE_WIDE_BINS {
                self.grid_of(n, 2 * PRIVATE_BLOCK, 1)?
            } else {
                self.grid_of(n, PRIVATE_BLOCK, 2)?
            };
            // SAFETY: parameters mirror `(bins: Bins, n: u64, x: *const f64, counts: *mut T,
            // dropped: *mut u64)`; x holds n, counts k ≤ 12 288 (check_method), dropped 3;
            // blocks of PRIVATE_BLOCK or twice that threads (multiples of 32).
            unsafe { private.launch(self.gpu, grid, 0, (Param(b), n, xp, cp, dp)) }
        } else {
            let grid = self.hist_grid(n)?;
            let code = method.code();
            // SAFETY: parameters mirror `(bins: Bins, method: u32, n: u64, x: *const f64,
            // counts: *mut T, dropped: *mut u64)`; lengths checked; HIST_BLOCK threads.
            unsafe { global.launch(self.gpu, grid, 0, (Param(b), code, n, xp, cp, dp)) }
        }
    }

    #[allow(clippy::too_many_arguments)] // the public wrappers take 6; this private one adds `fixed`
    fn weighted_on_device<T: Element<WeightedKernels>>(
        &self,
        fixed: bool,
        method: Method,
        bins: &Bins,
        x: &DeviceSlice<f64>,
        w: Option<&DeviceSlice<f64>>,
        counts: &mut DeviceSlice<T>,
        dropped: &mut DeviceSlice<u64>,
    ) -> Result<()> {
        let n = self.hist_checks(x.len(), counts.len(), dropped.len(), bins)?;
        if let Some(w) = w {
            expect_len("weights", w.len(), x.len())?;
        }
        let unit = w.is_none();
        let kind = if fixed { CounterKind::Fixed { unit } } else { CounterKind::F64 { unit } };
        check_method(method, kind, bins.k)?;
        zero_async(self.gpu, counts)?;
        zero_async(self.gpu, dropped)?;
        if n == 0 {
            return Ok(());
        }
        let wp: DevicePointer<f64> = w.map_or(DevicePointer::null(), |w| w.as_device_ptr());
        let (xp, cp, dp) = (x.as_device_ptr(), counts.as_device_ptr(), dropped.as_device_ptr());
        let b = *bins;
        let (global, private) = T::pick(self);
        if method == Method::Private {
            let grid = self.hist_grid(n)?;
            // SAFETY: parameters mirror `(bins: Bins, n: u64, x: *const f64, w: *const f64,
            // counts: *mut T, dropped: *mut u64)`; w null or n long, counts k ≤ 6 144
            // (check_method), dropped 3; HIST_BLOCK threads.
            unsafe { private.launch(self.gpu, grid, 0, (Param(b), n, xp, wp, cp, dp)) }
        } else {
            let grid = self.hist_grid(n)?;
            let code = method.code();
            // SAFETY: parameters mirror `(bins: Bins, method: u32, n: u64, x: *const f64,
            // w: *const f64, counts: *mut T, dropped: *mut u64)`; lengths checked above.
            unsafe { global.launch(self.gpu, grid, 0, (Param(b), code, n, xp, wp, cp, dp)) }
        }
    }

    /// Zeroes and enqueues an f64 weighted histogram (`w` None: unit weights). Native f64
    /// atomics add in an order that depends on scheduling: for arbitrary weights the sums agree
    /// with the CPU only within rounding; unit weights are exact.
    pub fn histogram_f64_on_device(
        &self,
        method: Method,
        bins: &Bins,
        x: &DeviceSlice<f64>,
        w: Option<&DeviceSlice<f64>>,
        counts: &mut DeviceSlice<f64>,
        dropped: &mut DeviceSlice<u64>,
    ) -> Result<()> {
        self.weighted_on_device(false, method, bins, x, w, counts, dropped)
    }

    /// Zeroes and enqueues the deterministic weighted histogram: `i64` fixed-point sums (as
    /// `u64` bits) of `round(w · 2^bins.frac_bits)`. The caller guarantees no wrap
    /// (`lockstep_shared::histogram::fixed_fits`); the host-slice method checks it.
    pub fn histogram_fixed_on_device(
        &self,
        method: Method,
        bins: &Bins,
        x: &DeviceSlice<f64>,
        w: Option<&DeviceSlice<f64>>,
        counts: &mut DeviceSlice<u64>,
        dropped: &mut DeviceSlice<u64>,
    ) -> Result<()> {
        self.weighted_on_device(true, method, bins, x, w, counts, dropped)
    }

    fn dropped3(buf: &DeviceBuffer<u64>) -> Result<[u64; 3]> {
        let v = download(buf)?;
        Ok([v[0], v[1], v[2]])
    }

    /// Count histogram of `x` with `T` (`u32`/`u64`) counters.
    pub fn histogram_counts<T: Counter>(&self, method: Method, bins: &Bins, x: &[f64]) -> Result<Histogram<T>> {
        self.check(method, CounterKind::Count, bins.k)?;
        let dx = upload(x)?;
        let mut counts = zeroed::<T>(bins.k as usize)?;
        let mut dropped = zeroed::<u64>(DROP_SLOTS)?;
        self.histogram_counts_on_device(method, bins, &dx, &mut counts, &mut dropped)?;
        self.gpu.synchronize()?;
        Ok(Histogram::from_parts(download(&counts)?, Self::dropped3(&dropped)?))
    }

    /// f64 weighted histogram (`w` None: unit weights); weights must be finite.
    pub fn histogram_f64(&self, method: Method, bins: &Bins, x: &[f64], w: Option<&[f64]>) -> Result<Histogram<f64>> {
        check_weights(x, w)?;
        check_method(method, CounterKind::F64 { unit: w.is_none() }, bins.k)?;
        let dx = upload(x)?;
        let dw = w.map(upload).transpose()?;
        let mut counts = zeroed::<f64>(bins.k as usize)?;
        let mut dropped = zeroed::<u64>(DROP_SLOTS)?;
        self.histogram_f64_on_device(method, bins, &dx, dw.as_deref(), &mut counts, &mut dropped)?;
        self.gpu.synchronize()?;
        Ok(Histogram::from_parts(download(&counts)?, Self::dropped3(&dropped)?))
    }

    /// Deterministic weighted histogram: the raw `i64` fixed-point accumulators (bit-identical
    /// to [`super::histogram_fixed_raw_seq`]). Refuses weights whose sums could wrap.
    pub fn histogram_fixed_raw(
        &self,
        method: Method,
        bins: &Bins,
        x: &[f64],
        w: Option<&[f64]>,
    ) -> Result<Histogram<i64>> {
        check_fixed_range(bins, x, w)?;
        check_method(method, CounterKind::Fixed { unit: w.is_none() }, bins.k)?;
        let dx = upload(x)?;
        let dw = w.map(upload).transpose()?;
        let mut counts = zeroed::<u64>(bins.k as usize)?;
        let mut dropped = zeroed::<u64>(DROP_SLOTS)?;
        self.histogram_fixed_on_device(method, bins, &dx, dw.as_deref(), &mut counts, &mut dropped)?;
        self.gpu.synchronize()?;
        let raw = download(&counts)?.into_iter().map(|c| c as i64).collect();
        Ok(Histogram::from_parts(raw, Self::dropped3(&dropped)?))
    }

    /// Deterministic weighted histogram as f64 bin values (bit-identical on CPU and GPU).
    pub fn histogram_fixed(&self, method: Method, bins: &Bins, x: &[f64], w: Option<&[f64]>) -> Result<Histogram<f64>> {
        Ok(fixed_to_f64(bins, &self.histogram_fixed_raw(method, bins, x, w)?))
    }
}
