//! The bridge launches on device buffers. [`Bridge::generate_range_on_device`] checks the request
//! once (`check_request`: the output's length, `paths ≤ u32::MAX`, `rows·paths`, the range's
//! indices; then the scratch) and builds one `Launch` value; one short launcher per normal source
//! picks its kernel and dynamic shared memory by the plan's [`LaunchShape`], the value the
//! kernels decide with too, and takes the kernel's parameter list from the `Launch` (one method
//! per kernel shape). [`Bridge::normals_range_on_device`] does the same with a `NormalsLaunch`.

use super::gpu::{
    Bridge, BufferArgs, DevPtr, DevicePlan, DeviceSource, DimsArgs, NormalsPhiloxArgs, NormalsSobolArgs, PhiloxArgs,
    PhiloxD1Args, SobolArgs, SobolD1Args, Strategy, Variant,
};
use super::plan::Precision;
use super::problem::{Output, SOBOL_MAX_DIMS, check_indices};
use crate::error::{Error, Result};
use crate::kernel::Kernel;
use crate::launch::{Grid1d, expect_len, len_u32};
use cust::memory::DeviceSlice;
use lockstep_shared::bridge::sobol::normals_shared_bytes;
use lockstep_shared::bridge::{LaunchShape, box_muller_normals_lanes};

/// A bridge generation, checked and ready to launch: what every kernel of it shares. Built once,
/// by [`Bridge::generate_range_on_device`]; each kernel's parameter list comes from it.
struct Launch<T: Precision> {
    /// The plan's strategy, the parameters every `bridge_*` kernel takes first.
    strategy: Strategy<T>,
    /// The stack's scratch buffer (its length checked), or `out` when the stack lives in shared
    /// memory (then never dereferenced).
    scratch: DevPtr<T>,
    /// `(N+1)·d·paths` elements (checked).
    out: DevPtr<T>,
    /// The path count (`≤ u32::MAX`, checked).
    paths: u32,
    /// The range's first path of the run (`first + paths ≤ u32::MAX`, checked): the Philox
    /// kernels' counter of path 0.
    first: u32,
    /// The plan's shape for this path count and block size, the value the kernels decide with.
    shape: LaunchShape,
    /// One thread per path.
    grid: Grid1d,
}

/// The Sobol points of a range: the plan's tables and the range's first point.
#[derive(Clone, Copy)]
struct SobolPoints {
    /// Direction numbers, `(N+1)·d·32` words.
    dirs: DevPtr<u32>,
    /// The warp method's low tables, `(N+1)·d·32` words.
    low: DevPtr<u32>,
    /// The point of the range's first path (`offset + paths ≤ 2^32`, checked).
    offset: u32,
}

/// The fused Philox d = 1 kernels' schedule and cache.
#[derive(Clone, Copy)]
struct PhiloxCache {
    /// The plan's schedule (`steps` entries), or any table when `slots` is 0 (then not read).
    sched: DevPtr<u32>,
    /// Cache slots of the schedule; 0 for none (the kernel keeps one block).
    slots: u32,
    /// Their shared memory bytes after the fused stack and strategy.
    bytes: u32,
}

/// The strategy's eight values, then `rest`: a `bridge_*` kernel's parameter list. The one
/// place that spells the strategy out.
macro_rules! after_strategy {
    ($strategy:expr; $($rest:expr),+ $(,)?) => {{
        let Strategy { coef, idx, steps, dims, slots, chol, start, increments } = $strategy;
        (coef, idx, steps, dims, slots, chol, start, increments, $($rest),+)
    }};
}

impl<T: Precision> Launch<T> {
    /// `bridge_*(…, scratch, z, out, paths)`.
    fn buffer_args(&self, z: DevPtr<T>) -> BufferArgs<T> {
        after_strategy!(self.strategy; self.scratch, z, self.out, self.paths)
    }

    /// `bridge_dims_*(…, z, out, paths)`.
    fn dims_args(&self, z: DevPtr<T>) -> DimsArgs<T> {
        after_strategy!(self.strategy; z, self.out, self.paths)
    }

    /// `bridge_philox[_bm]_*(…, scratch, seed, first, out, paths)`.
    fn philox_args(&self, seed: u64) -> PhiloxArgs<T> {
        after_strategy!(self.strategy; self.scratch, seed, self.first, self.out, self.paths)
    }

    /// `bridge_philox[_bm]_d1_*(…, seed, first, sched, cache_slots, out, paths)`.
    fn philox_d1_args(&self, seed: u64, cache: PhiloxCache) -> PhiloxD1Args<T> {
        after_strategy!(self.strategy; seed, self.first, cache.sched, cache.slots, self.out, self.paths)
    }

    /// `bridge_sobol_*(…, scratch, dirs, low, offset, out, paths)`.
    fn sobol_args(&self, points: SobolPoints) -> SobolArgs<T> {
        let SobolPoints { dirs, low, offset } = points;
        after_strategy!(self.strategy; self.scratch, dirs, low, offset, self.out, self.paths)
    }

    /// `bridge_sobol_d1_*(…, dirs, low, offset, out, paths)`.
    fn sobol_d1_args(&self, points: SobolPoints) -> SobolD1Args<T> {
        let SobolPoints { dirs, low, offset } = points;
        after_strategy!(self.strategy; dirs, low, offset, self.out, self.paths)
    }
}

/// A normals-alone generation, checked and ready to launch. Built once, by
/// [`Bridge::normals_range_on_device`].
struct NormalsLaunch<T: Precision> {
    /// Rows per path, (N+1)·d.
    rows: u32,
    /// `rows·paths` elements (checked).
    out: DevPtr<T>,
    /// The path count (`≤ u32::MAX`, checked).
    paths: u32,
    /// The range's first path of the run (`first + paths ≤ u32::MAX`, checked): the Philox
    /// kernels' counter of path 0.
    first: u64,
    /// One thread per path (the f32 Box–Muller kernel's two-path shape launches its own grid
    /// of half the threads: `launch_normals_philox`).
    grid: Grid1d,
}

impl<T: Precision> NormalsLaunch<T> {
    /// `normals_philox_*`, `normals_bm_philox_*(rows, seed, first, out, paths)`.
    fn philox_args(&self, seed: u64) -> NormalsPhiloxArgs<T> {
        (self.rows, seed, self.first, self.out, self.paths)
    }

    /// `normals_sobol_*(rows, dirs, low, offset, out, paths)`.
    fn sobol_args(&self, points: SobolPoints) -> NormalsSobolArgs<T> {
        (self.rows, points.dirs, points.low, points.offset, self.out, self.paths)
    }
}

/// Dynamic shared memory bytes as the driver takes them.
fn shared_u32(bytes: usize) -> Result<u32> {
    u32::try_from(bytes).map_err(|_| Error::TooLarge {
        what: "shared memory bytes",
        value: bytes as u64,
        max: u32::MAX as u64,
    })
}

/// The checks of a request for paths `first..first + paths` into `out`, made once for every
/// launch of it: the path count as the kernels take it (`≤ u32::MAX`), `out` holding the
/// `(N+1)·d·paths` elements of the range (the product checked), and the range's indices
/// (`first + paths ≤ u32::MAX`; for Sobol `offset + first + paths ≤ 2^32`). Returns the count
/// and that length.
fn check_request<T: Precision>(
    plan: &DevicePlan<T>,
    source: &DeviceSource<'_, T>,
    first: u64,
    paths: usize,
    out: &DeviceSlice<T>,
) -> Result<(u32, usize)> {
    let n = len_u32("paths", paths)?;
    let len = plan.rows().checked_mul(paths).ok_or_else(|| Error::Overflow {
        what: "(N+1)·d·paths output elements",
        expr: format!("{} · {paths}", plan.rows()),
    })?;
    expect_len("out", out.len(), len)?;
    let sobol = if let DeviceSource::Sobol { offset } = source { Some(*offset) } else { None };
    check_indices(first, n as u64, sobol)?;
    Ok((n, len))
}

/// The scratch a launch of `shape` passes: `scratch` (its length checked) when the stack does
/// not fit in shared memory, else `unused` (never dereferenced); refused when the stack needs
/// scratch and there is none.
fn scratch_ptr<T: Precision>(
    shape: &LaunchShape,
    scratch: Option<&mut DeviceSlice<T>>,
    unused: DevPtr<T>,
) -> Result<DevPtr<T>> {
    let need = shape.scratch_len();
    match scratch {
        Some(s) if need > 0 => {
            expect_len("scratch", s.len(), need)?;
            Ok(s.as_device_ptr())
        }
        None if need > 0 => Err(Error::InvalidInput {
            what: "scratch",
            why: format!(
                "this strategy's stack ({} slots × d = {}) does not fit in shared memory at this block size; pass a scratch buffer of {need} elements",
                shape.slots, shape.dims
            ),
        }),
        _ => Ok(unused),
    }
}

/// The plan's Sobol tables and the point of path `first` of a run from point `offset`, or why
/// there are no tables. `check_request` has checked `offset + first + paths ≤ 2^32`.
fn sobol_points<T: Precision>(plan: &DevicePlan<T>, offset: u32, first: u64) -> Result<SobolPoints> {
    let (dirs, low) = plan.sobol_tables().ok_or(Error::TooLarge {
        what: "Sobol dimensions ((N+1)·d)",
        value: plan.rows() as u64,
        max: SOBOL_MAX_DIMS as u64,
    })?;
    // offset + first + paths ≤ 2^32, so the shifted offset fits (an empty range launches nothing)
    Ok(SobolPoints { dirs, low, offset: (offset as u64 + first) as u32 })
}

/// The schedule and cache a fused Philox d = 1 launch takes: the plan's schedule with its cache
/// after the fused stack and strategy when they fit (≤ 48 KiB in all: `philox_cached`, for
/// Box–Muller's cache of normals `box_muller_cached`), else none (the kernel then keeps one
/// block and does not read `sched`).
fn philox_cache<T: Precision>(plan: &DevicePlan<T>, l: &Launch<T>, box_muller: bool) -> Result<PhiloxCache> {
    let none = PhiloxCache { sched: l.strategy.idx, slots: 0, bytes: 0 };
    let Some((sched, slots)) = plan.philox_schedule() else { return Ok(none) };
    let c = slots as usize;
    let bytes = match box_muller {
        true if l.shape.box_muller_cached(c) => l.shape.box_muller_cache_bytes(c),
        false if l.shape.philox_cached(c) => l.shape.philox_cache_bytes(c),
        _ => return Ok(none),
    };
    Ok(PhiloxCache { sched, slots, bytes: shared_u32(bytes)? })
}

impl<'g> Bridge<'g> {
    /// Enqueues a generation of `paths` paths (or increments) into `out` (`(N+1)·d·paths`).
    /// `scratch` must hold [`Bridge::scratch_len`] elements when that is non-zero.
    pub fn generate_on_device<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        source: DeviceSource<'_, T>,
        paths: usize,
        output: Output,
        scratch: Option<&mut DeviceSlice<T>>,
        out: &mut DeviceSlice<T>,
    ) -> Result<()> {
        self.generate_range_on_device(plan, source, 0, paths, output, scratch, out)
    }

    /// As [`Bridge::generate_on_device`] for paths `first..first + paths` of a larger run, with
    /// the bits those paths have there: the fused kernels take Philox counters of paths
    /// `first + p` and Sobol points `offset + first + p`; a buffer holds the range's normals
    /// alone. Errors: a path index past `u32::MAX`, a Sobol point past `2^32`.
    #[allow(clippy::too_many_arguments)] // generate_on_device's values and the range's start
    pub fn generate_range_on_device<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        source: DeviceSource<'_, T>,
        first: u64,
        paths: usize,
        output: Output,
        scratch: Option<&mut DeviceSlice<T>>,
        out: &mut DeviceSlice<T>,
    ) -> Result<()> {
        let (n, len) = check_request(plan, &source, first, paths, out)?;
        let shape = plan.shape(paths, self.block_size());
        let l = Launch {
            strategy: plan.strategy(output),
            scratch: scratch_ptr(&shape, scratch, out.as_device_ptr())?,
            out: out.as_device_ptr(),
            paths: n,
            first: first as u32, // check_request: first + paths ≤ u32::MAX, so first fits
            shape,
            grid: Grid1d::for_len(n as u64, self.block_size())?,
        };
        match source {
            DeviceSource::Buffer(z) => {
                expect_len("z", z.len(), len)?;
                self.launch_buffer(&l, z.as_device_ptr())
            }
            DeviceSource::Philox { seed } => self.launch_philox(plan, &l, seed, false),
            DeviceSource::PhiloxBoxMuller { seed } => self.launch_philox(plan, &l, seed, true),
            DeviceSource::Sobol { offset } => self.launch_sobol(&l, sobol_points(plan, offset, first)?),
        }
    }

    /// Normals from the buffer `z`: `bridge_staged_dims_*` (d = 2 or 3) where staging is on and
    /// `LaunchShape::buffer_staged_at` holds (a path count that splits sectors, 32-byte aligned
    /// buffers), `bridge_quads_f32` where `LaunchShape::buffer_odd_quads_at` holds (f32, d = 1,
    /// four paths per thread at a count not a multiple of 4) and its grid is large enough
    /// (`QuadsKernel`, [`Bridge::buffer_variant`]), `bridge_dims_*` for `2 ≤ d ≤ 4` on
    /// the specialised path, else `bridge_*`, with one, two or four paths per thread as the shape
    /// and the buffers' alignment allow.
    fn launch_buffer<T: Precision>(&self, l: &Launch<T>, z: DevPtr<T>) -> Result<()> {
        let k = T::pick(self);
        let addrs = z.as_raw() | l.out.as_raw();
        let variant = self.buffer_kernel_for(&l.shape, addrs);
        if variant == Variant::BufferStagedDims && l.shape.buffer_staged_at(addrs) {
            let blocks = l.shape.staged_blocks() as u64;
            let grid = Grid1d::for_len(blocks * self.block_size() as u64, self.block_size())?;
            // Stack, strategy and staging rows: ≤ 48 KiB (`buffer_staged` checked what they use;
            // f64 at d = 3 asks for exactly 48 KiB, `staged_shared_bytes`).
            let shared_bytes = shared_u32(l.shape.staged_shared_bytes())?;
            // The kernels: `bridge_staged_dims_f32/f64(coef, idx, steps, dims, slots, chol,
            // start, increments, z, out, paths)` (the list of `bridge_dims_*`, from `dims_args`),
            // d = 2 or 3; one validated Plan, z and out (N+1)·d·paths.
            // SAFETY: as above; buffer_staged_at holds (checked: 32-byte aligned buffers), the
            // grid has staged_blocks blocks and the shared memory staged_shared_bytes.
            return unsafe { k.staged_dims.launch(self.gpu(), grid, shared_bytes, l.dims_args(z)) };
        }
        let lanes = l.shape.buffer_lanes_at(addrs);
        let grid = Grid1d::for_len((l.paths as u64).div_ceil(lanes as u64), self.block_size())?;
        // The stack (and on the specialised path the strategy): ≤ 44 KiB, under the 48 KiB default.
        let shared_bytes = shared_u32(l.shape.buffer_shared_bytes())?;
        if let (Variant::BufferQuads, Some(quads)) = (variant, &k.quads) {
            // The kernel: `bridge_quads_f32(coef, idx, steps, dims, slots, chol, start,
            // increments, z, out, paths)` (the list of `bridge_dims_*`, from `dims_args`): only f32
            // has it, and `buffer_kernel_for` names it where buffer_odd_quads_at(addrs) holds.
            // SAFETY: the arguments are that list; the tables come from one validated Plan, z and
            // out hold (N+1)·d·paths (checked), buffer_odd_quads_at holds for these addresses,
            // the grid has ceil(paths / 4) threads (lanes = 4) and the shared memory
            // buffer_shared_bytes, as the kernel decides from the same shape.
            return unsafe { quads.launch(self.gpu(), grid, shared_bytes, l.dims_args(z)) };
        }
        let dims = Self::kernel_for(&l.shape, Variant::Buffer) == Variant::BufferDims;
        // The kernels: `bridge_dims_f32/f64(coef, idx, steps, dims, slots, chol, start,
        // increments, z, out, paths)` only where buffer_fast holds with 2 ≤ d ≤ 4 (`kernel_for`),
        // else `bridge_f32/f64(…, scratch, z, out, paths)`.
        // SAFETY: the arguments are those lists (the handles' types, from `dims_args`/`buffer_args`);
        // the tables come from one validated Plan, z and out hold (N+1)·d·paths and scratch its
        // length when the stack needs it (checked), shared_bytes and the grid (paths / lanes
        // threads or more) as the kernel decides from the same shape.
        unsafe {
            if dims {
                k.dims.launch(self.gpu(), grid, shared_bytes, l.dims_args(z))
            } else {
                k.buffer.launch(self.gpu(), grid, shared_bytes, l.buffer_args(z))
            }
        }
    }

    /// Philox normals in registers (fused), Φ⁻¹ or with `box_muller` Box–Muller's:
    /// `bridge_philox[_bm]_d1_*` on the d = 1 fast path, with the plan's schedule and its cache
    /// (of words, or of normals) when they fit; `bridge_philox[_bm]_*` otherwise. Path `p` takes
    /// the counter of path `first + p`.
    fn launch_philox<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        l: &Launch<T>,
        seed: u64,
        box_muller: bool,
    ) -> Result<()> {
        let k = T::pick(self);
        // Pairs store 8 bytes per row: `out` must be 8-byte aligned (a sub-slice may not be).
        let aligned = l.out.as_raw().is_multiple_of(8);
        if let (true, Some((pairs, sched, slots))) = (box_muller && aligned, Self::box_muller_pairs(&l.shape, plan, k))
        {
            return self.launch_box_muller_pairs(l, seed, pairs, sched, slots);
        }
        let (general, d1) = if box_muller { (&k.philox_bm, &k.philox_bm_d1) } else { (&k.philox, &k.philox_d1) };
        let shared_bytes = shared_u32(l.shape.fused_shared_bytes(false))?;
        let cache = if l.shape.fused_fast_d1() { Some(philox_cache(plan, l, box_muller)?) } else { None };
        // The kernels: `bridge_philox[_bm]_*(coef, idx, steps, dims, slots, chol, start,
        // increments, scratch, seed, first, out, paths)`, or where fused_fast_d1 holds (checked)
        // `bridge_philox[_bm]_d1_*(…, seed, first, sched, cache_slots, out, paths)`, whose shared
        // memory adds philox_cache_bytes (box_muller_cache_bytes) when cache_slots > 0: then sched
        // holds the plan's `steps` entries using cache_slots slots and philox_cached
        // (box_muller_cached) holds, as the kernel decides from the same shape.
        // SAFETY: the arguments are those lists (the handles' types, from `philox_args`/
        // `philox_d1_args`); the tables come from one validated Plan, out holds (N+1)·d·paths and
        // scratch its length when the stack needs it (checked), first + paths ≤ u32::MAX
        // (checked), the shared memory fused_shared_bytes(false) and the cache's as above.
        unsafe {
            match cache {
                None => general.launch(self.gpu(), l.grid, shared_bytes, l.philox_args(seed)),
                Some(c) => d1.launch(self.gpu(), l.grid, shared_bytes + c.bytes, l.philox_d1_args(seed, c)),
            }
        }
    }

    /// Box–Muller normals, d = 1, two f32 paths per thread: `bridge_philox_bm_d1_pairs_f32`, with
    /// the plan's schedule `sched` (`slots` cache slots) and its cache of normal pairs, one thread
    /// per pair of paths. The caller took `pairs`, `sched` and `slots` from `box_muller_pairs`
    /// (the kernel exists for `T`, the path count is even, the pairs' shape fits) and checked
    /// that `out` is 8-byte aligned.
    fn launch_box_muller_pairs<T: Precision>(
        &self,
        l: &Launch<T>,
        seed: u64,
        pairs: &Kernel<'_, PhiloxD1Args<T>>,
        sched: DevPtr<u32>,
        slots: u32,
    ) -> Result<()> {
        let shape = l.shape.box_muller_pairs_shape();
        let cache = PhiloxCache { sched, slots, bytes: shared_u32(shape.box_muller_cache_bytes(slots as usize))? };
        let grid = Grid1d::for_len(shape.paths as u64, self.block_size())?;
        let shared_bytes = shared_u32(shape.fused_shared_bytes(false))?.saturating_add(cache.bytes);
        // The kernel: `bridge_philox_bm_d1_pairs_f32(coef, idx, steps, dims, slots, chol, start,
        // increments, seed, first, sched, cache_slots, out, paths)`, the parameter list of
        // `bridge_philox_bm_d1_*`: thread q takes paths first + 2q and first + 2q + 1.
        // The arguments are that list (the handle's type, from `philox_d1_args`); the tables come
        // from one validated Plan, out holds (N+1)·d·paths (checked) with paths even and is
        // 8-byte aligned (the caller's check), first + paths ≤ u32::MAX (checked); box_muller_pairs
        // holds for this shape and the plan's schedule (sched: `steps` entries using `slots`
        // slots), as the kernel decides from the same values; the grid has paths / 2 threads.
        // SAFETY: as just said; the shared memory is the pairs' shape's fused_base_bytes +
        // box_muller_cache_bytes(slots).
        unsafe { pairs.launch(self.gpu(), grid, shared_bytes, l.philox_d1_args(seed, cache)) }
    }

    /// Sobol normals in registers (fused): `bridge_sobol_d1_*` on the d = 1 fast path,
    /// `bridge_sobol_*` otherwise; the warp method's tables in shared memory when they fit.
    fn launch_sobol<T: Precision>(&self, l: &Launch<T>, points: SobolPoints) -> Result<()> {
        let k = T::pick(self);
        let shared_bytes = shared_u32(l.shape.fused_shared_bytes(true))?;
        let d1 = Self::kernel_for(&l.shape, Variant::Sobol) == Variant::SobolD1;
        // The kernels: `bridge_sobol_d1_*(coef, idx, steps, dims, slots, chol, start, increments,
        // dirs, low, offset, out, paths)` only where fused_fast_d1 holds (`kernel_for`), else
        // `bridge_sobol_*(…, scratch, dirs, low, offset, out, paths)`; the tables come from one
        // validated Plan, dirs and low hold (N+1)·d·32 words.
        // SAFETY: the arguments are those lists (the handles' types, from `sobol_d1_args`/
        // `sobol_args`); out holds (N+1)·d·paths and scratch its length when the stack needs it
        // (checked), offset + paths ≤ 2^32 (checked by `check_request`), the block is whole warps
        // (`block_size`), shared_bytes = fused_shared_bytes(true).
        unsafe {
            if d1 {
                k.sobol_d1.launch(self.gpu(), l.grid, shared_bytes, l.sobol_d1_args(points))
            } else {
                k.sobol.launch(self.gpu(), l.grid, shared_bytes, l.sobol_args(points))
            }
        }
    }

    /// Enqueues the normals alone (Philox Φ⁻¹, Philox Box–Muller or Sobol; a buffer source is
    /// refused) into `out` (`(N+1)·d·paths`, `[row][path]`).
    pub fn normals_on_device<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        source: DeviceSource<'_, T>,
        paths: usize,
        out: &mut DeviceSlice<T>,
    ) -> Result<()> {
        self.normals_range_on_device(plan, source, 0, paths, out)
    }

    /// As [`Bridge::normals_on_device`] for paths `first..first + paths` of a larger run (the
    /// normals those paths have there): Philox counters of paths `first + p`, Sobol points
    /// `offset + first + p`. Errors: a path index past `u32::MAX`, a Sobol point past `2^32`.
    pub fn normals_range_on_device<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        source: DeviceSource<'_, T>,
        first: u64,
        paths: usize,
        out: &mut DeviceSlice<T>,
    ) -> Result<()> {
        let (n, _) = check_request(plan, &source, first, paths, out)?;
        let l = NormalsLaunch {
            rows: plan.kernel_rows(),
            out: out.as_device_ptr(),
            paths: n,
            first,
            grid: Grid1d::for_len(n as u64, self.block_size())?,
        };
        match source {
            DeviceSource::Buffer(_) => Err(Error::InvalidInput {
                what: "normal source",
                why: "normals are generated from Philox or Sobol; a buffer already holds them".into(),
            }),
            DeviceSource::Philox { seed } => self.launch_normals_philox(&l, seed, false),
            DeviceSource::PhiloxBoxMuller { seed } => self.launch_normals_philox(&l, seed, true),
            DeviceSource::Sobol { offset } => self.launch_normals_sobol(&l, sobol_points(plan, offset, first)?),
        }
    }

    /// Philox normals alone, Φ⁻¹ (`normals_philox_*`) or with `box_muller` Box–Muller's
    /// (`normals_bm_philox_*`). Path `p` takes the counter of path `first + p`.
    fn launch_normals_philox<T: Precision>(&self, l: &NormalsLaunch<T>, seed: u64, box_muller: bool) -> Result<()> {
        let k = T::pick(self);
        let kernel = if box_muller { &k.normals_bm } else { &k.normals_philox };
        // Box–Muller in f32 takes two paths per thread where the kernel's own test says so.
        let lanes = if box_muller { box_muller_normals_lanes(l.paths, size_of::<T>(), l.out.as_raw()) } else { 1 };
        let grid = if lanes == 1 { l.grid } else { Grid1d::for_len(u64::from(l.paths / lanes), self.block_size())? };
        // The kernels: `normals_philox_*`/`normals_bm_philox_*(rows, seed, first, out, paths)`.
        // SAFETY: the arguments are that list (the handles' type, from `philox_args`); out holds
        // rows·paths (checked), first + paths ≤ u32::MAX (checked), the grid has at least
        // `paths / lanes` threads (`lanes` the kernel's choice, `box_muller_normals_lanes`).
        unsafe { kernel.launch(self.gpu(), grid, 0, l.philox_args(seed)) }
    }

    /// Sobol normals alone (`normals_sobol_*`), the warp method's tables in shared memory.
    fn launch_normals_sobol<T: Precision>(&self, l: &NormalsLaunch<T>, points: SobolPoints) -> Result<()> {
        let k = T::pick(self);
        // ≤ 24 KiB (64 rows at 1024 threads).
        let shared_bytes = shared_u32(normals_shared_bytes(l.rows as usize, self.block_size() as usize))?;
        // The kernel: `normals_sobol_*(rows, dirs, low, offset, out, paths)`.
        // SAFETY: the arguments are that list (the handle's type, from `sobol_args`); dirs and low
        // hold rows·32 words, out rows·paths (checked), offset + paths ≤ 2^32 (checked by
        // `check_request`), the block is whole warps, shared_bytes = normals_shared_bytes(rows, block).
        unsafe { k.normals_sobol.launch(self.gpu(), l.grid, shared_bytes, l.sobol_args(points)) }
    }
}
