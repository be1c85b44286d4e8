//! Launchers for `crates/kernels/src/atomics.rs`: probes of the aggregated atomics, histograms
//! by every method, and the Himeno Jacobi sweep with its three gosa reductions.

use crate::gpu::{download, upload, zeroed};
use crate::error::{Error, Result, cuda};
use crate::gpu::Gpu;
use crate::kernel::{Kernel, Param};
use crate::launch::{Dims as LaunchDims, Grid1d, block_size, expect_len, len_u32};
use crate::atomics::cpu::{HimenoProblem, Histogram, check_fixed_range, check_weights, fixed_to_f64};
use cust::device::DeviceAttribute;
use cust::memory::{DeviceBuffer, DeviceCopy, DevicePointer, DeviceSlice};
use lockstep_shared::himeno::{self, OMEGA, gosa_via};
use lockstep_shared::histogram::{Bins, DROP_SLOTS, HIST_BLOCK, PRIVATE_BLOCK, PRIVATE_BYTES, via};

/// Default i planes per block of the Himeno sweep (see [`Atomics::with_himeno_planes`]).
pub const HIMENO_PLANES: u32 = 2;
/// Privatised count kernels: above this many bins, one block of `2 · PRIVATE_BLOCK` threads per
/// SM instead of two of `PRIVATE_BLOCK` (half the blocks, so half the k-counter flush atomics).
pub const PRIVATE_WIDE_BINS: u32 = 2048;

/// How a histogram (or a probe) adds into its counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// One native atomic per value.
    Plain,
    /// Warp aggregation through shared memory (paper Fig. 3).
    Shared,
    /// Warp aggregation through shuffles (paper Fig. 5).
    Shfl,
    /// Warp aggregation through `match.any.sync` (the recommended one).
    Match,
    /// Block aggregation with barriers (paper Fig. 4).
    Block,
    /// Match aggregation of unit increments (counts and unit weights only).
    Count,
    /// f64 only: a 64-bit CAS loop per value.
    Cas,
    /// f64 only: the CAS loop behind match aggregation.
    CasAggregated,
    /// Per-block counters in shared memory (match-aggregated), then one global add per bin
    /// (histograms only; `k` ≤ 12 288 for counts, 6 144 for f64 and fixed point).
    Private,
}

impl Method {
    /// Every method, in the order of the benchmark tables.
    pub const ALL: [Method; 9] = [
        Method::Plain,
        Method::Shared,
        Method::Shfl,
        Method::Match,
        Method::Block,
        Method::Count,
        Method::Cas,
        Method::CasAggregated,
        Method::Private,
    ];

    /// A short name (`plain`, `shared`, `shfl`, `match`, `block`, `count`, `cas`, `cas-agg`,
    /// `private`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Plain => "plain",
            Method::Shared => "shared",
            Method::Shfl => "shfl",
            Method::Match => "match",
            Method::Block => "block",
            Method::Count => "count",
            Method::Cas => "cas",
            Method::CasAggregated => "cas-agg",
            Method::Private => "private",
        }
    }

    /// The method of a name, or `None`.
    pub fn from_name(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == name)
    }

    fn code(self) -> u32 {
        match self {
            Method::Plain => via::PLAIN,
            Method::Shared => via::SHARED,
            Method::Shfl => via::SHFL,
            Method::Match => via::MATCH,
            Method::Block => via::BLOCK,
            Method::Count => via::COUNT,
            Method::Cas => via::CAS,
            Method::CasAggregated => via::CAS_AGGREGATED,
            Method::Private => u32::MAX,
        }
    }
}

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

// SAFETY: `Bins` and `himeno::Dims` are plain `#[repr(C)]` structs of numbers, copied bit for
// bit to the kernels' parameter space, where the kernels read the same layout.
unsafe impl DeviceCopy for Param<Bins> {}
// SAFETY: as above.
unsafe impl DeviceCopy for Param<himeno::Dims> {}

/// `(bins, method, n, x, counts, dropped)` of the global-memory count histograms.
type CountGlobal<'g, T> =
    Kernel<'g, (Param<Bins>, u32, u64, DevicePointer<f64>, DevicePointer<T>, DevicePointer<u64>)>;
/// `(bins, n, x, counts, dropped)` of the privatised count histograms.
type CountPrivate<'g, T> = Kernel<'g, (Param<Bins>, u64, DevicePointer<f64>, DevicePointer<T>, DevicePointer<u64>)>;
/// `(bins, method, n, x, w, sums, dropped)` of the weighted histograms (f64 or fixed point).
type WeightedGlobal<'g, T> = Kernel<
    'g,
    (Param<Bins>, u32, u64, DevicePointer<f64>, DevicePointer<f64>, DevicePointer<T>, DevicePointer<u64>),
>;
/// `(bins, n, x, w, sums, dropped)` of the privatised weighted histograms.
type WeightedPrivate<'g, T> =
    Kernel<'g, (Param<Bins>, u64, DevicePointer<f64>, DevicePointer<f64>, DevicePointer<T>, DevicePointer<u64>)>;
/// `(method, n, targets, values, counters, olds)` of the aggregation probes.
type Probe<'g, T> =
    Kernel<'g, (u32, u32, DevicePointer<u32>, DevicePointer<T>, DevicePointer<T>, DevicePointer<T>)>;

/// The counter types' choice of their kernels (a supertrait of [`CountCounter`]).
pub(crate) trait CountSelect: Sized + DeviceCopy {
    /// `a`'s global and privatised count kernels of `Self`.
    fn pick<'a, 'g>(a: &'a Atomics<'g>) -> (&'a CountGlobal<'g, Self>, &'a CountPrivate<'g, Self>);
}

/// Counter types of the count histograms (`u32`, `u64`).
#[allow(private_bounds)] // sealed: `CountSelect` picks the kernels of each type
pub trait CountCounter:
    DeviceCopy + Default + Clone + cust::memory::bytemuck::Zeroable + Into<u64> + CountSelect
{
}

impl CountSelect for u32 {
    fn pick<'a, 'g>(a: &'a Atomics<'g>) -> (&'a CountGlobal<'g, u32>, &'a CountPrivate<'g, u32>) {
        (&a.histogram_u32, &a.histogram_private_u32)
    }
}
impl CountCounter for u32 {}

impl CountSelect for u64 {
    fn pick<'a, 'g>(a: &'a Atomics<'g>) -> (&'a CountGlobal<'g, u64>, &'a CountPrivate<'g, u64>) {
        (&a.histogram_u64, &a.histogram_private_u64)
    }
}
impl CountCounter for u64 {}

/// The weighted sums' choice of their kernels: f64 sums, or fixed-point `i64` sums as `u64` bits.
trait WeightedSelect: Sized + DeviceCopy {
    /// `a`'s global-memory weighted kernel for `Self` sums.
    fn global<'a, 'g>(a: &'a Atomics<'g>) -> &'a WeightedGlobal<'g, Self>;
    /// `a`'s privatised weighted kernel for `Self` sums.
    fn private<'a, 'g>(a: &'a Atomics<'g>) -> &'a WeightedPrivate<'g, Self>;
}

impl WeightedSelect for f64 {
    fn global<'a, 'g>(a: &'a Atomics<'g>) -> &'a WeightedGlobal<'g, f64> {
        &a.histogram_f64
    }
    fn private<'a, 'g>(a: &'a Atomics<'g>) -> &'a WeightedPrivate<'g, f64> {
        &a.histogram_private_f64
    }
}

impl WeightedSelect for u64 {
    fn global<'a, 'g>(a: &'a Atomics<'g>) -> &'a WeightedGlobal<'g, u64> {
        &a.histogram_fixed
    }
    fn private<'a, 'g>(a: &'a Atomics<'g>) -> &'a WeightedPrivate<'g, u64> {
        &a.histogram_private_fixed
    }
}

/// The probe value types' choice of their kernel (a supertrait of [`ProbeValue`]).
pub(crate) trait ProbeSelect: Sized + DeviceCopy + cust::memory::bytemuck::Zeroable {
    /// `a`'s probe kernel of `Self`.
    fn pick<'a, 'g>(a: &'a Atomics<'g>) -> &'a Probe<'g, Self>;
}

/// Value types of the probes.
#[allow(private_bounds)] // sealed: `ProbeSelect` picks the kernel of each type
pub trait ProbeValue: DeviceCopy + Default + Clone + ProbeSelect {
    #[doc(hidden)]
    const IS_F64: bool = false;
}

macro_rules! probe_value {
    ($t:ty, $field:ident $(, $f64:expr)?) => {
        impl ProbeSelect for $t {
            fn pick<'a, 'g>(a: &'a Atomics<'g>) -> &'a Probe<'g, $t> {
                &a.$field
            }
        }
        impl ProbeValue for $t {
            $(const IS_F64: bool = $f64;)?
        }
    };
}
probe_value!(u32, aggregate_probe_u32);
probe_value!(i32, aggregate_probe_i32);
probe_value!(u64, aggregate_probe_u64);
probe_value!(f32, aggregate_probe_f32);
probe_value!(f64, aggregate_probe_f64, true);

/// Himeno arrays on the device, with two pressure buffers (ping-pong).
pub struct HimenoDevice {
    mi: u32,
    mj: u32,
    mk: u32,
    a: DeviceBuffer<f32>,
    b: DeviceBuffer<f32>,
    c: DeviceBuffer<f32>,
    bnd: DeviceBuffer<f32>,
    wrk1: DeviceBuffer<f32>,
    p: [DeviceBuffer<f32>; 2],
    current: usize,
    gosa: DeviceBuffer<f32>,
    partials: DeviceBuffer<f32>,
}

impl HimenoDevice {
    /// Interior points per sweep.
    pub fn interior(&self) -> u64 {
        himeno::interior(self.mi, self.mj, self.mk)
    }

    /// The current pressure and the gosa of the last sweep.
    pub fn download(&self) -> Result<(Vec<f32>, f32)> {
        Ok((download(&self.p[self.current])?, download(&self.gosa)?[0]))
    }
}

/// The atomics family's kernels, loaded and ready.
pub struct Atomics<'g> {
    gpu: &'g Gpu,
    grid_blocks: Option<u32>,
    himeno_planes: u32,
    sms: u32,
    aggregate_probe_u32: Probe<'g, u32>,
    aggregate_probe_i32: Probe<'g, i32>,
    aggregate_probe_u64: Probe<'g, u64>,
    aggregate_probe_f32: Probe<'g, f32>,
    aggregate_probe_f64: Probe<'g, f64>,
    histogram_u32: CountGlobal<'g, u32>,
    histogram_u64: CountGlobal<'g, u64>,
    histogram_f64: WeightedGlobal<'g, f64>,
    histogram_fixed: WeightedGlobal<'g, u64>,
    histogram_private_u32: CountPrivate<'g, u32>,
    histogram_private_u64: CountPrivate<'g, u64>,
    histogram_private_f64: WeightedPrivate<'g, f64>,
    histogram_private_fixed: WeightedPrivate<'g, u64>,
    /// `(dims, omega, a, b, c, bnd, wrk1, p, p_out, gosa, partials)`.
    #[allow(clippy::type_complexity)]
    himeno_jacobi: Kernel<
        'g,
        (
            Param<himeno::Dims>,
            f32,
            DevicePointer<f32>,
            DevicePointer<f32>,
            DevicePointer<f32>,
            DevicePointer<f32>,
            DevicePointer<f32>,
            DevicePointer<f32>,
            DevicePointer<f32>,
            DevicePointer<f32>,
            DevicePointer<f32>,
        ),
    >,
    /// `(partials, len, out)`.
    himeno_gosa_reduce: Kernel<'g, (DevicePointer<f32>, u32, DevicePointer<f32>)>,
}

impl<'g> Atomics<'g> {
    /// Looks up every kernel of the family.
    pub fn new(gpu: &'g Gpu) -> Result<Self> {
        let sms = gpu.attribute(DeviceAttribute::MultiprocessorCount)?.max(1) as u32;
        Ok(Atomics {
            gpu,
            grid_blocks: None,
            himeno_planes: HIMENO_PLANES,
            sms,
            aggregate_probe_u32: gpu.kernel("aggregate_probe_u32")?,
            aggregate_probe_i32: gpu.kernel("aggregate_probe_i32")?,
            aggregate_probe_u64: gpu.kernel("aggregate_probe_u64")?,
            aggregate_probe_f32: gpu.kernel("aggregate_probe_f32")?,
            aggregate_probe_f64: gpu.kernel("aggregate_probe_f64")?,
            histogram_u32: gpu.kernel("histogram_u32")?,
            histogram_u64: gpu.kernel("histogram_u64")?,
            histogram_f64: gpu.kernel("histogram_f64")?,
            histogram_fixed: gpu.kernel("histogram_fixed")?,
            histogram_private_u32: gpu.kernel("histogram_private_u32")?,
            histogram_private_u64: gpu.kernel("histogram_private_u64")?,
            histogram_private_f64: gpu.kernel("histogram_private_f64")?,
            histogram_private_fixed: gpu.kernel("histogram_private_fixed")?,
            himeno_jacobi: gpu.kernel("himeno_jacobi")?,
            himeno_gosa_reduce: gpu.kernel("himeno_gosa_reduce")?,
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

    /// Sets how many consecutive i planes each block of the Himeno sweep covers (default
    /// [`HIMENO_PLANES`]; 2 and 4 load all of a thread's points before storing any).
    pub fn with_himeno_planes(mut self, planes: u32) -> Result<Self> {
        if planes == 0 || planes > 16 {
            return Err(Error::InvalidInput { what: "Himeno planes per block", why: format!("{planes}: use 1 to 16") });
        }
        self.himeno_planes = planes;
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

    // ---------------------------------------------------------------- probes

    /// Adds `values[i]` at `counters[targets[i]]` on the GPU with `method` (one thread per i,
    /// `block` threads per block) and returns each call's returned old value; `counters` are
    /// updated in place.
    pub fn probe<T: ProbeValue>(
        &self,
        method: Method,
        block: u32,
        targets: &[u32],
        values: &[T],
        counters: &mut [T],
    ) -> Result<Vec<T>> {
        let n = len_u32("targets", targets.len())?;
        expect_len("values", values.len(), targets.len())?;
        let block = block_size(block)?;
        if method == Method::Private || (!T::IS_F64 && matches!(method, Method::Cas | Method::CasAggregated)) {
            return Err(Error::InvalidInput {
                what: "probe method",
                why: format!("`{}` is not an atomic of this type", method.name()),
            });
        }
        if let Some(i) = targets.iter().position(|&t| t as usize >= counters.len()) {
            return Err(Error::InvalidInput {
                what: "targets",
                why: format!("target {i} is {}, but there are {} counters", targets[i], counters.len()),
            });
        }
        let grid = Grid1d::for_len(n as u64, block)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let f = T::pick(self);
        let dt = upload(targets)?;
        let dv = upload(values)?;
        let dc = upload(counters)?;
        let olds = zeroed::<T>(targets.len())?;
        let code = method.code();
        let (tp, vp, cp, op) = (dt.as_device_ptr(), dv.as_device_ptr(), dc.as_device_ptr(), olds.as_device_ptr());
        // SAFETY: parameters mirror `(method: u32, n: u32, targets: *const u32, values: *const T,
        // counters: *mut T, olds: *mut T)`; targets/values/olds hold n, every target < counters'
        // length (checked); 1-D blocks of at most 1024 threads (block_size).
        unsafe { f.launch(self.gpu, grid, 0, (code, n, tp, vp, cp, op))? };
        self.gpu.synchronize()?;
        crate::gpu::download_into(&dc, counters)?;
        download(&olds)
    }

    // ---------------------------------------------------------------- histograms

    fn zero<T: DeviceCopy + cust::memory::bytemuck::Zeroable>(&self, buf: &mut DeviceSlice<T>) -> Result<()> {
        self.gpu.bind()?;
        // SAFETY: the slice is a live allocation borrowed mutably for the call; the memset is
        // ordered on the stream before the kernels that use it.
        unsafe { buf.set_zero_async(self.gpu.stream()) }.map_err(cuda("cuMemsetD8Async"))
    }

    fn hist_checks(&self, n: usize, counts: usize, dropped: usize, bins: &Bins) -> Result<u64> {
        expect_len("counts", counts, bins.k as usize)?;
        expect_len("dropped", dropped, DROP_SLOTS)?;
        // Revalidate: `Bins` has public fields.
        crate::atomics::cpu::bins_with_frac_bits(bins.lo, bins.hi, bins.k as u64, bins.frac_bits)?;
        Ok(n as u64)
    }

    /// Zeroes `counts` and `dropped`, then enqueues the count histogram of `x` by `method`.
    pub fn histogram_counts_on_device<T: CountCounter>(
        &self,
        method: Method,
        bins: &Bins,
        x: &DeviceSlice<f64>,
        counts: &mut DeviceSlice<T>,
        dropped: &mut DeviceSlice<u64>,
    ) -> Result<()> {
        let n = self.hist_checks(x.len(), counts.len(), dropped.len(), bins)?;
        check_method(method, CounterKind::Count, bins.k)?;
        self.zero(counts)?;
        self.zero(dropped)?;
        if n == 0 {
            return Ok(());
        }
        let (global, private) = T::pick(self);
        let (xp, cp, dp) = (x.as_device_ptr(), counts.as_device_ptr(), dropped.as_device_ptr());
        let b = *bins;
        if method == Method::Private {
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
            unsafe {
                global.launch(self.gpu, grid, 0, (Param(b), code, n, xp, cp, dp))
            }
        }
    }

    #[allow(clippy::too_many_arguments)] // the public wrappers take 6; this private one adds `fixed`
    fn weighted_on_device<T: WeightedSelect + cust::memory::bytemuck::Zeroable>(
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
        self.zero(counts)?;
        self.zero(dropped)?;
        if n == 0 {
            return Ok(());
        }
        let wp: DevicePointer<f64> = w.map_or(DevicePointer::null(), |w| w.as_device_ptr());
        let (xp, cp, dp) = (x.as_device_ptr(), counts.as_device_ptr(), dropped.as_device_ptr());
        let b = *bins;
        if method == Method::Private {
            let f = T::private(self);
            let grid = self.hist_grid(n)?;
            // SAFETY: parameters mirror `(bins: Bins, n: u64, x: *const f64, w: *const f64,
            // counts: *mut T, dropped: *mut u64)`; w null or n long, counts k ≤ 6 144
            // (check_method), dropped 3; HIST_BLOCK threads.
            unsafe { f.launch(self.gpu, grid, 0, (Param(b), n, xp, wp, cp, dp)) }
        } else {
            let f = T::global(self);
            let grid = self.hist_grid(n)?;
            let code = method.code();
            // SAFETY: parameters mirror `(bins: Bins, method: u32, n: u64, x: *const f64,
            // w: *const f64, counts: *mut T, dropped: *mut u64)`; lengths checked above.
            unsafe {
                f.launch(self.gpu, grid, 0, (Param(b), code, n, xp, wp, cp, dp))
            }
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
    pub fn histogram_counts<T: CountCounter>(&self, method: Method, bins: &Bins, x: &[f64]) -> Result<Histogram<T>> {
        check_method(method, CounterKind::Count, bins.k)?;
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
    /// to `reference::atomics::histogram_fixed_raw_seq`). Refuses weights whose sums could wrap.
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

    // ---------------------------------------------------------------- Himeno

    /// Uploads a Himeno problem (both pressure buffers start as `problem.p`).
    pub fn himeno_upload(&self, problem: &HimenoProblem) -> Result<HimenoDevice> {
        problem.check()?;
        let partial_len =
            (problem.mi as usize - 2) * (problem.mj as usize - 2) * himeno::chunks_per_row(problem.mk) as usize;
        len_u32("gosa partials", partial_len)?;
        Ok(HimenoDevice {
            mi: problem.mi,
            mj: problem.mj,
            mk: problem.mk,
            a: upload(&problem.a)?,
            b: upload(&problem.b)?,
            c: upload(&problem.c)?,
            bnd: upload(&problem.bnd)?,
            wrk1: upload(&problem.wrk1)?,
            p: [upload(&problem.p)?, upload(&problem.p)?],
            current: 0,
            gosa: zeroed::<f32>(1)?,
            partials: zeroed::<f32>(partial_len.max(1))?,
        })
    }

    /// Enqueues `iterations` Jacobi sweeps with gosa reduced by `gosa` (a
    /// `lockstep_shared::himeno::gosa_via` code) and `block = (x, y)` threads per block
    /// (`x` a multiple of 32).
    pub fn himeno_iterate_on_device(
        &self,
        state: &mut HimenoDevice,
        iterations: u32,
        gosa: u32,
        block: (u32, u32),
    ) -> Result<()> {
        if gosa > gosa_via::TREE {
            return Err(Error::InvalidInput { what: "gosa reduction", why: format!("code {gosa}: use 0, 1 or 2") });
        }
        let (bx, by) = block;
        if bx == 0 || bx % 32 != 0 {
            return Err(Error::InvalidInput {
                what: "Himeno block",
                why: format!("x extent {bx}: a multiple of 32 (whole warps along k)"),
            });
        }
        let (mi, mj, mk) = (state.mi, state.mj, state.mk);
        // Block z covers two i planes (see the kernel).
        let dims =
            LaunchDims::new([(mk - 2).div_ceil(bx), (mj - 2).div_ceil(by.max(1)), (mi - 2).div_ceil(2)], [bx, by, 1])?;
        let partial_len = len_u32("gosa partials", state.partials.len())?;
        let kdims = himeno::Dims { mi, mj, mk, gosa_via: gosa };
        let omega = OMEGA;
        for _ in 0..iterations {
            if gosa != gosa_via::TREE {
                // The atomics accumulate into gosa; the tree's level 2 overwrites it.
                self.zero(&mut state.gosa)?;
            }
            let (src, dst) = (state.current, 1 - state.current);
            let ptrs = [
                state.a.as_device_ptr(),
                state.b.as_device_ptr(),
                state.c.as_device_ptr(),
                state.bnd.as_device_ptr(),
                state.wrk1.as_device_ptr(),
                state.p[src].as_device_ptr(),
                state.p[dst].as_device_ptr(),
                state.gosa.as_device_ptr(),
                state.partials.as_device_ptr(),
            ];
            // SAFETY: parameters mirror `(dims: Dims, omega: f32, a, b, c, bnd, wrk1, p, p_out,
            // gosa, partials)`; every array was uploaded with the lengths `HimenoProblem::check`
            // verified for these extents; p and p_out are the two distinct buffers; partials has
            // (mi−2)(mj−2)·chunks_per_row(mk) slots; blockDim.x is a multiple of 32, z is 1.
            unsafe {
                self.himeno_jacobi.launch(self.gpu, dims, 0, (Param(kdims), omega, ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4], ptrs[5], ptrs[6], ptrs[7], ptrs[8]))?
            };
            if gosa == gosa_via::TREE {
                let (pp, gp) = (state.partials.as_device_ptr(), state.gosa.as_device_ptr());
                let one = Grid1d { blocks: 1, threads: himeno::LEVEL2_THREADS as u32 };
                // SAFETY: parameters mirror `(partials: *const f32, len: u32, out: *mut f32)`;
                // partials holds partial_len, out one f32; one block of LEVEL2_THREADS threads.
                unsafe {
                    self.himeno_gosa_reduce.launch(self.gpu, one, 0, (pp, partial_len, gp))?
                };
            }
            state.current = dst;
        }
        Ok(())
    }

    /// `iterations` sweeps of `problem` on the GPU: the pressure and the last sweep's gosa.
    pub fn himeno(
        &self,
        problem: &HimenoProblem,
        iterations: u32,
        gosa: u32,
        block: (u32, u32),
    ) -> Result<(Vec<f32>, f32)> {
        let mut state = self.himeno_upload(problem)?;
        self.himeno_iterate_on_device(&mut state, iterations, gosa, block)?;
        self.gpu.synchronize()?;
        state.download()
    }
}
