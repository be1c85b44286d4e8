//! Launchers for `crates/kernels/src/bridge.rs`: the Brownian bridge (normals from a buffer, or
//! Philox/Sobol generated in registers) and the normal generators alone.
//!
//! Upload a [`Plan`] once ([`Bridge::upload`]), then generate as often as needed on device
//! buffers (`*_on_device`, for pipelines and benchmarks) or on host data ([`Bridge::generate`],
//! [`Bridge::generate_unfused`], [`Bridge::normals`]). Layout `[row][path]` as on the CPU
//! (`crate::bridge::cpu`).

use super::plan::{Plan, Precision};
use crate::bridge::cpu::{Output, SOBOL_MAX_DIMS, Source, check_generation, sobol_directions};
use crate::error::{Error, Result, cuda};
use crate::gpu::Gpu;
use crate::gpu::upload;
use crate::kernel::{Kernel, Param};
use crate::launch::{Grid1d, expect_len, len_u32};
use cust::memory::DeviceCopy;
use cust::memory::{DeviceBuffer, DevicePointer, DeviceSlice};
use lockstep_shared::bridge::sobol::{BITS, low_table, normals_shared_bytes};
use lockstep_shared::bridge::{BridgeArgs, LaunchShape};

/// Threads per block unless the caller chooses.
pub const DEFAULT_BLOCK: u32 = 128;

/// A plan's tables on the device, in precision `T`.
pub struct DevicePlan<T: Precision> {
    coef: DeviceBuffer<T>,
    idx: DeviceBuffer<u32>,
    chol: DeviceBuffer<T>,
    start: DeviceBuffer<T>,
    dirs: Option<DeviceBuffer<u32>>,
    low: Option<DeviceBuffer<u32>>,
    philox: Option<DeviceBuffer<u32>>,
    cache_slots: u32,
    steps: u32,
    dims: u32,
    slots: u32,
    rows: usize,
}

impl<T: Precision> DevicePlan<T> {
    /// Rows per path, (N+1)·d.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Word-cache slots of the Philox schedule ([`super::philox_schedule`]) of a d = 1 strategy of at
    /// most `TABLE_STEPS` steps; 0 when it has none.
    pub fn cache_slots(&self) -> u32 {
        self.cache_slots
    }

    /// The shape of a launch of `paths` paths at `block` threads per block: every launch
    /// decision (kernel, lanes, shared memory) is a method of it, as in the kernels.
    pub fn shape(&self, block: u32, paths: usize) -> LaunchShape {
        let (steps, dims, slots) = (self.steps as usize, self.dims as usize, self.slots as usize);
        LaunchShape::new(steps, dims, slots, block as usize, paths, core::mem::size_of::<T>())
    }

    /// Scratch elements a generation of `paths` at `block` threads per block needs (0 when
    /// the stack fits in shared memory).
    pub fn scratch_len(&self, paths: usize, block: u32) -> usize {
        if self.shape(block, paths).stack_fits_shared() { 0 } else { self.slots as usize * self.dims as usize * paths }
    }
}

/// Normals for a generation on the device.
pub enum DeviceSource<'a, T: cust::memory::DeviceCopy> {
    /// A `[row][path]` buffer of `(N+1)·d·paths` normals.
    Buffer(&'a DeviceSlice<T>),
    /// Philox4x32-10 in registers (fused).
    Philox {
        /// The key.
        seed: u64,
    },
    /// Sobol in registers (fused); path p takes point `offset + p`.
    Sobol {
        /// Index of path 0's point.
        offset: u32,
    },
}

/// The kernels of one precision, for [`Bridge::attributes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// `bridge_*`: normals from a buffer.
    Buffer,
    /// `bridge_dims_*`: normals from a buffer, `2 ≤ d ≤ 4` on the specialised path (see
    /// [`Bridge::buffer_variant`]).
    BufferDims,
    /// `bridge_philox_*` (fused).
    Philox,
    /// `bridge_sobol_*` (fused).
    Sobol,
    /// `normals_philox_*`.
    NormalsPhilox,
    /// `normals_sobol_*`.
    NormalsSobol,
    /// `bridge_philox_d1_*` (fused, the d = 1 fast path; [`Bridge::launched`]).
    PhiloxD1,
    /// `bridge_sobol_d1_*` (fused, the d = 1 fast path).
    SobolD1,
}

/// `DevicePointer`, short: the address parameters besides [`BridgeArgs`].
type Dp<T> = DevicePointer<T>;

/// The bridge kernels' common parameters, passed by value.
type Args = Param<BridgeArgs>;

// SAFETY: `BridgeArgs` is `#[repr(C)]` plain data (u64 addresses and u32 scalars, no padding
// the kernels read: `pad` is an explicit field); the kernels take it by value with this layout.
unsafe impl DeviceCopy for Param<BridgeArgs> {}

// The layout the kernels read (asserted in lockstep-shared and the device crate too).
const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    assert!(size_of::<Param<BridgeArgs>>() == 72 && align_of::<Param<BridgeArgs>>() == 8);
    assert!(offset_of!(BridgeArgs, coef) == 0 && offset_of!(BridgeArgs, out) == 40);
    assert!(offset_of!(BridgeArgs, steps) == 48 && offset_of!(BridgeArgs, paths) == 64);
};

/// The bridge kernels of one precision, with their parameter lists (each bridge kernel starts
/// with the [`BridgeArgs`] of the launch).
#[allow(clippy::type_complexity)]
pub(crate) struct Kernels<'g, T: DeviceCopy> {
    /// `(args, z)`.
    buffer: Kernel<'g, (Args, Dp<T>)>,
    /// `(args, z)`.
    dims: Kernel<'g, (Args, Dp<T>)>,
    /// `(args, seed)`.
    philox: Kernel<'g, (Args, u64)>,
    /// `(args, dirs, low, offset)`.
    sobol: Kernel<'g, (Args, Dp<u32>, Dp<u32>, u32)>,
    /// `(rows, seed, out, paths)`.
    normals_philox: Kernel<'g, (u32, u64, Dp<T>, u32)>,
    /// `(rows, dirs, low, offset, out, paths)`.
    normals_sobol: Kernel<'g, (u32, Dp<u32>, Dp<u32>, u32, Dp<T>, u32)>,
    /// `(args, seed, sched, cache_slots)`.
    philox_d1: Kernel<'g, (Args, u64, Dp<u32>, u32)>,
    /// `(args, dirs, low, offset)`.
    sobol_d1: Kernel<'g, (Args, Dp<u32>, Dp<u32>, u32)>,
}

impl<'g, T: DeviceCopy> Kernels<'g, T> {
    /// Looks up the eight kernels named, in the order of the fields.
    fn new(gpu: &'g Gpu, names: [&'static str; 8]) -> Result<Self> {
        let [buffer, dims, philox, sobol, normals_philox, normals_sobol, philox_d1, sobol_d1] = names;
        Ok(Kernels {
            buffer: gpu.kernel(buffer)?,
            dims: gpu.kernel(dims)?,
            philox: gpu.kernel(philox)?,
            sobol: gpu.kernel(sobol)?,
            normals_philox: gpu.kernel(normals_philox)?,
            normals_sobol: gpu.kernel(normals_sobol)?,
            philox_d1: gpu.kernel(philox_d1)?,
            sobol_d1: gpu.kernel(sobol_d1)?,
        })
    }
}

/// The precisions' choice of their kernels (a supertrait of [`super::Precision`]).
pub(crate) trait Select: Sized + DeviceCopy {
    /// `b`'s kernels of `Self`.
    fn pick<'a, 'g>(b: &'a Bridge<'g>) -> &'a Kernels<'g, Self>;
}

impl Select for f32 {
    fn pick<'a, 'g>(b: &'a Bridge<'g>) -> &'a Kernels<'g, f32> {
        &b.k32
    }
}

impl Select for f64 {
    fn pick<'a, 'g>(b: &'a Bridge<'g>) -> &'a Kernels<'g, f64> {
        &b.k64
    }
}

/// The bridge kernels, loaded and ready.
pub struct Bridge<'g> {
    gpu: &'g Gpu,
    block: u32,
    k32: Kernels<'g, f32>,
    k64: Kernels<'g, f64>,
}

impl<'g> Bridge<'g> {
    /// Looks up every bridge kernel; 128 threads per block.
    pub fn new(gpu: &'g Gpu) -> Result<Self> {
        Self::with_block_size(gpu, DEFAULT_BLOCK)
    }

    /// As [`Bridge::new`] with `threads` per block (a multiple of 32 up to 1024).
    pub fn with_block_size(gpu: &'g Gpu, threads: u32) -> Result<Self> {
        let block = crate::launch::block_size(threads)?;
        Ok(Bridge {
            gpu,
            block,
            k32: Kernels::new(
                gpu,
                [
                    "bridge_f32",
                    "bridge_dims_f32",
                    "bridge_philox_f32",
                    "bridge_sobol_f32",
                    "normals_philox_f32",
                    "normals_sobol_f32",
                    "bridge_philox_d1_f32",
                    "bridge_sobol_d1_f32",
                ],
            )?,
            k64: Kernels::new(
                gpu,
                [
                    "bridge_f64",
                    "bridge_dims_f64",
                    "bridge_philox_f64",
                    "bridge_sobol_f64",
                    "normals_philox_f64",
                    "normals_sobol_f64",
                    "bridge_philox_d1_f64",
                    "bridge_sobol_d1_f64",
                ],
            )?,
        })
    }

    /// Threads per block.
    pub fn block_size(&self) -> u32 {
        self.block
    }

    /// Scratch elements a generation of `paths` with `plan` needs at this block size (0 when
    /// the stack fits in shared memory).
    pub fn scratch_len<T: Precision>(&self, plan: &DevicePlan<T>, paths: usize) -> usize {
        plan.scratch_len(paths, self.block)
    }

    /// Registers per thread and local memory bytes per thread of one kernel, as the driver
    /// compiled it for this GPU (`cuFuncGetAttribute`).
    pub fn attributes<T: Precision>(&self, variant: Variant) -> Result<(i32, i32)> {
        use cust::function::FunctionAttribute::{LocalSizeBytes, NumRegisters};
        let k = T::pick(self);
        let f = match variant {
            Variant::Buffer => k.buffer.function(),
            Variant::BufferDims => k.dims.function(),
            Variant::Philox => k.philox.function(),
            Variant::Sobol => k.sobol.function(),
            Variant::NormalsPhilox => k.normals_philox.function(),
            Variant::NormalsSobol => k.normals_sobol.function(),
            Variant::PhiloxD1 => k.philox_d1.function(),
            Variant::SobolD1 => k.sobol_d1.function(),
        };
        let regs = f.get_attribute(NumRegisters).map_err(cuda("cuFuncGetAttribute"))?;
        let local = f.get_attribute(LocalSizeBytes).map_err(cuda("cuFuncGetAttribute"))?;
        Ok((regs, local))
    }

    /// The kernel a buffer-source generation of `paths` with `plan` launches at this block size:
    /// [`Variant::BufferDims`] for `2 ≤ d ≤ 4` on the specialised path
    /// (`LaunchShape::buffer_fast`), [`Variant::Buffer`] otherwise.
    pub fn buffer_variant<T: Precision>(&self, plan: &DevicePlan<T>, paths: usize) -> Variant {
        let shape = plan.shape(self.block, paths);
        if shape.dims >= 2 && shape.buffer_fast() { Variant::BufferDims } else { Variant::Buffer }
    }

    /// The kernel a generation of `paths` with `plan` from `variant` launches: the buffer source
    /// as [`Bridge::buffer_variant`] says; the fused sources take their d = 1 kernels when
    /// `LaunchShape::fused_fast_d1` holds (d = 1, stack and strategy in shared memory, 32-bit
    /// indices); every other variant is itself.
    pub fn launched<T: Precision>(&self, plan: &DevicePlan<T>, paths: usize, variant: Variant) -> Variant {
        let fast = plan.shape(self.block, paths).fused_fast_d1();
        match variant {
            Variant::Buffer => self.buffer_variant(plan, paths),
            Variant::Philox if fast => Variant::PhiloxD1,
            Variant::Sobol if fast => Variant::SobolD1,
            v => v,
        }
    }

    /// Whether a fused Philox generation of `paths` with `plan` takes the d = 1 kernel with the
    /// host's schedule (each Philox block computed once per path;
    /// `LaunchShape::fused_philox_cached`), rather than the one-block cache.
    pub fn philox_cached<T: Precision>(&self, plan: &DevicePlan<T>, paths: usize) -> bool {
        plan.shape(self.block, paths).fused_philox_cached(plan.cache_slots as usize)
    }

    /// Copies `plan`'s tables (and, when (N+1)·d ≤ 21,201, its Sobol direction numbers) to the
    /// device.
    pub fn upload<T: Precision>(&self, plan: &Plan) -> Result<DevicePlan<T>> {
        self.gpu.bind()?;
        let t = plan.tables::<T>();
        let (dirs, low) = if plan.rows() <= SOBOL_MAX_DIMS {
            let v = sobol_directions(plan.rows())?;
            let low: Vec<u32> = v.chunks_exact(BITS).flat_map(low_table).collect();
            (Some(upload(&v)?), Some(upload(&low)?))
        } else {
            (None, None)
        };
        // The Philox schedule of a d = 1 strategy short enough for the fast path.
        let (philox, cache_slots) = match plan.philox_schedule() {
            Some((ops, slots)) => (Some(upload(&ops)?), slots),
            None => (None, 0),
        };
        Ok(DevicePlan {
            philox,
            cache_slots,
            coef: upload(&t.coef)?,
            idx: upload(&t.idx)?,
            chol: upload(&t.chol)?,
            start: upload(&t.start)?,
            dirs,
            low,
            steps: len_u32("steps", plan.steps())?,
            dims: len_u32("dimension", plan.dims())?,
            slots: len_u32("stack slots", plan.stack_slots())?,
            rows: plan.rows(),
        })
    }

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
        let (args, len) = self.prologue(plan, paths, output, scratch, out)?;
        match source {
            DeviceSource::Buffer(z) => self.launch_buffer(plan, args, len, z),
            DeviceSource::Philox { seed } => self.launch_philox(plan, args, seed),
            DeviceSource::Sobol { offset } => self.launch_sobol(plan, args, offset),
        }
    }

    /// The checks and parameters every generation shares: `out` holds `(N+1)·d·paths`
    /// elements (returned as the length), the scratch buffer is there when the stack needs it
    /// (else `out` stands in, never dereferenced), and the kernels' [`BridgeArgs`].
    fn prologue<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        paths: usize,
        output: Output,
        scratch: Option<&mut DeviceSlice<T>>,
        out: &mut DeviceSlice<T>,
    ) -> Result<(BridgeArgs, usize)> {
        let n = len_u32("paths", paths)?;
        let len = plan.rows.checked_mul(paths).ok_or(Error::TooLarge {
            what: "(N+1)·d·paths output elements",
            value: u64::MAX,
            max: usize::MAX as u64,
        })?;
        expect_len("out", out.len(), len)?;
        let need = plan.scratch_len(paths, self.block);
        let scratch = match scratch {
            Some(s) if need > 0 => {
                expect_len("scratch", s.len(), need)?;
                s.as_device_ptr().as_raw()
            }
            None if need > 0 => {
                return Err(Error::InvalidInput {
                    what: "scratch",
                    why: format!(
                        "this strategy's stack ({} slots × d = {}) does not fit in shared memory at this block size; pass a scratch buffer of {need} elements",
                        plan.slots, plan.dims
                    ),
                });
            }
            _ => out.as_device_ptr().as_raw(), // never dereferenced: the stack lives in shared memory
        };
        let args = BridgeArgs {
            coef: plan.coef.as_device_ptr().as_raw(),
            idx: plan.idx.as_device_ptr().as_raw(),
            chol: plan.chol.as_device_ptr().as_raw(),
            start: plan.start.as_device_ptr().as_raw(),
            scratch,
            out: out.as_device_ptr().as_raw(),
            steps: plan.steps,
            dims: plan.dims,
            slots: plan.slots,
            increments: (output == Output::Increments) as u32,
            paths: n,
            pad: 0,
        };
        Ok((args, len))
    }

    /// The grid of one thread per path.
    fn path_grid(&self, args: &BridgeArgs) -> Result<Grid1d> {
        Grid1d::for_len(args.paths as u64, self.block)
    }

    /// The buffer source: `bridge_*`, or `bridge_dims_*` for 2 ≤ d ≤ 4 on the specialised path,
    /// with one, two or four paths per thread (f32: by the shape and the buffers' alignment) as
    /// the kernel decides.
    fn launch_buffer<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        args: BridgeArgs,
        len: usize,
        z: &DeviceSlice<T>,
    ) -> Result<()> {
        expect_len("z", z.len(), len)?;
        let zp = z.as_device_ptr();
        let shape = plan.shape(self.block, args.paths as usize);
        let lanes = shape.buffer_lanes_at(zp.as_raw() | args.out);
        let grid = Grid1d::for_len((args.paths as u64).div_ceil(lanes as u64), self.block)?;
        // The stack (and on the specialised path the strategy) in dynamic shared memory, sized
        // for this launch: ≤ 44 KiB, under the 48 KiB default limit.
        let shared_bytes = shared_u32(shape.buffer_shared_bytes())?;
        let k = T::pick(self);
        if self.buffer_variant(plan, args.paths as usize) == Variant::BufferDims {
            // SAFETY: mirrors `bridge_dims_f32/f64(args, z)`; the tables come from one validated
            // Plan, z/out hold (N+1)·d·paths (checked), buffer_fast holds with 2 ≤ d ≤ 4,
            // shared_bytes and the grid as the kernel expects (buffer_shared_bytes, buffer_lanes_at).
            return unsafe { k.dims.launch(self.gpu, grid, shared_bytes, (Param(args), zp)) };
        }
        // SAFETY: mirrors `bridge_f32/f64(args, z)`; the tables come from one validated Plan,
        // z/out hold (N+1)·d·paths (checked), scratch as the prologue checked, shared_bytes and
        // the grid (paths / lanes threads or more) as the kernel expects (buffer_shared_bytes,
        // buffer_lanes_at).
        unsafe { k.buffer.launch(self.gpu, grid, shared_bytes, (Param(args), zp)) }
    }

    /// Philox in registers: `bridge_philox_d1_*` on the d = 1 fast path (with the plan's
    /// schedule and word cache when they fit), else `bridge_philox_*`.
    fn launch_philox<T: Precision>(&self, plan: &DevicePlan<T>, args: BridgeArgs, seed: u64) -> Result<()> {
        let (paths, k, grid) = (args.paths as usize, T::pick(self), self.path_grid(&args)?);
        let shape = plan.shape(self.block, paths);
        // The fused kernels' dynamic shared memory (stack, strategy on the d = 1 path): ≤ 48 KiB.
        let base = shared_u32(shape.fused_shared_bytes(false))?;
        if self.launched(plan, paths, Variant::Philox) != Variant::PhiloxD1 {
            // SAFETY: mirrors `bridge_philox_f32/f64(args, seed)`; the tables come from one
            // validated Plan, out holds (N+1)·d·paths, scratch as the prologue checked,
            // shared_bytes = fused_shared_bytes(false) as the kernel expects.
            return unsafe { k.philox.launch(self.gpu, grid, base, (Param(args), seed)) };
        }
        // The schedule and its word cache after the fused stack and strategy, when they fit
        // (≤ 48 KiB in all), else none (the kernel then keeps one block).
        let idx = plan.idx.as_device_ptr();
        let (sched, cache_slots, extra) = match &plan.philox {
            Some(ops) if self.philox_cached(plan, paths) => {
                (ops.as_device_ptr(), plan.cache_slots, shape.philox_cache_bytes(plan.cache_slots as usize) as u32)
            }
            _ => (idx, 0, 0),
        };
        // With cache_slots > 0, sched holds this plan's `steps` entries using cache_slots slots
        // (`Plan::philox_schedule`) and `fused_philox_cached` holds, so the shared bytes add
        // philox_cache_bytes(cache_slots).
        // SAFETY: mirrors `bridge_philox_d1_*(args, seed, sched, cache_slots)`; fused_fast_d1
        // holds (launched), the tables come from one validated Plan, out holds (N+1)·d·paths.
        unsafe { k.philox_d1.launch(self.gpu, grid, base + extra, (Param(args), seed, sched, cache_slots)) }
    }

    /// Sobol in registers: `bridge_sobol_d1_*` on the d = 1 fast path, else `bridge_sobol_*`
    /// (the warp method's tables in shared memory where they fit).
    fn launch_sobol<T: Precision>(&self, plan: &DevicePlan<T>, args: BridgeArgs, offset: u32) -> Result<()> {
        let (paths, k, grid) = (args.paths as usize, T::pick(self), self.path_grid(&args)?);
        let (dirs, low) = self.sobol_dirs(plan, offset, paths)?;
        let shared_bytes = shared_u32(plan.shape(self.block, paths).fused_shared_bytes(true))?;
        let call = (Param(args), dirs, low, offset);
        if self.launched(plan, paths, Variant::Sobol) == Variant::SobolD1 {
            // SAFETY: mirrors `bridge_sobol_d1_*(args, dirs, low, offset)`; fused_fast_d1 holds
            // (launched), dirs and low hold (N+1)·d·32 words, offset + paths ≤ 2^32 (checked),
            // the block is whole warps, shared_bytes = fused_shared_bytes(true).
            return unsafe { k.sobol_d1.launch(self.gpu, grid, shared_bytes, call) };
        }
        // SAFETY: mirrors `bridge_sobol_*(args, dirs, low, offset)`; as the buffer kernel with
        // (dirs, low, offset) in place of z: dirs and low hold (N+1)·d·32 words, offset + paths
        // ≤ 2^32 (checked), the block is whole warps (`block_size`), shared_bytes =
        // fused_shared_bytes(true).
        unsafe { k.sobol.launch(self.gpu, grid, shared_bytes, call) }
    }

    fn sobol_dirs<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        offset: u32,
        paths: usize,
    ) -> Result<(DevicePointer<u32>, DevicePointer<u32>)> {
        if offset as u64 + paths as u64 > 1 << 32 {
            return Err(Error::TooLarge {
                what: "Sobol point index offset + paths",
                value: offset as u64 + paths as u64,
                max: 1 << 32,
            });
        }
        let both = plan.dirs.as_ref().zip(plan.low.as_ref());
        both.map(|(d, l)| (d.as_device_ptr(), l.as_device_ptr())).ok_or(Error::TooLarge {
            what: "Sobol dimensions ((N+1)·d)",
            value: plan.rows as u64,
            max: SOBOL_MAX_DIMS as u64,
        })
    }

    /// Enqueues the normals alone (Philox or Sobol; a buffer source is refused) into `out`
    /// (`(N+1)·d·paths`, `[row][path]`).
    pub fn normals_on_device<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        source: DeviceSource<'_, T>,
        paths: usize,
        out: &mut DeviceSlice<T>,
    ) -> Result<()> {
        let n = len_u32("paths", paths)?;
        let len = plan.rows.checked_mul(paths).ok_or(Error::TooLarge {
            what: "(N+1)·d·paths output elements",
            value: u64::MAX,
            max: usize::MAX as u64,
        })?;
        expect_len("out", out.len(), len)?;
        let rows = len_u32("rows", plan.rows)?;
        let grid = Grid1d::for_len(n as u64, self.block)?;
        let k = T::pick(self);
        let op = out.as_device_ptr();
        match source {
            DeviceSource::Buffer(_) => Err(Error::InvalidInput {
                what: "normal source",
                why: "normals are generated from Philox or Sobol; a buffer already holds them".into(),
            }),
            DeviceSource::Philox { seed } => {
                // SAFETY: mirrors `normals_philox_*(rows, seed, out, paths)`; out holds rows·paths.
                unsafe { k.normals_philox.launch(self.gpu, grid, 0, (rows, seed, op, n)) }
            }
            DeviceSource::Sobol { offset } => {
                let (dirs, low) = self.sobol_dirs(plan, offset, paths)?;
                // ≤ 24 KiB (64 rows at 1024 threads).
                let shared_bytes = normals_shared_bytes(plan.rows, self.block as usize) as u32;
                // SAFETY: mirrors `normals_sobol_*(rows, dirs, low, offset, out, paths)`; dirs and
                // low hold rows·32 words, out rows·paths, offset + paths ≤ 2^32 (checked), the
                // block is whole warps, shared_bytes = normals_shared_bytes(rows, block).
                unsafe { k.normals_sobol.launch(self.gpu, grid, shared_bytes, (rows, dirs, low, offset, op, n)) }
            }
        }
    }

    fn alloc<T: Precision>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        upload(&vec![T::default(); len.max(1)])
    }

    /// Generates on the GPU and copies back: a buffer source is uploaded, Philox and Sobol run
    /// fused (normals in registers). Same bits as `reference::bridge::generate_seq`.
    pub fn generate<T: Precision>(
        &self,
        plan: &Plan,
        source: Source<'_, T>,
        paths: usize,
        output: Output,
    ) -> Result<Vec<T>> {
        let len = check_generation(plan, &source, paths)?;
        len_u32("paths", paths)?;
        if len == 0 {
            return Ok(Vec::new());
        }
        let dp = self.upload::<T>(plan)?;
        let mut out = self.alloc::<T>(len)?;
        let mut scratch = self.alloc::<T>(self.scratch_len(&dp, paths))?;
        let sc = (self.scratch_len(&dp, paths) > 0).then_some(&mut *scratch);
        let zbuf;
        let src = match source {
            Source::Buffer(z) => {
                zbuf = upload(z)?;
                DeviceSource::Buffer(&*zbuf)
            }
            Source::Philox { seed } => DeviceSource::Philox { seed },
            Source::Sobol { offset } => DeviceSource::Sobol { offset },
        };
        self.generate_on_device(&dp, src, paths, output, sc, &mut out)?;
        self.gpu.synchronize()?;
        let mut host = vec![T::default(); len];
        crate::gpu::download_into(&out, &mut host)?;
        Ok(host)
    }

    /// The unfused pipeline: the normals kernel writes Z, then the bridge reads it. Same bits
    /// as [`Bridge::generate`] for Philox and Sobol.
    pub fn generate_unfused<T: Precision>(
        &self,
        plan: &Plan,
        source: Source<'_, T>,
        paths: usize,
        output: Output,
    ) -> Result<Vec<T>> {
        let len = check_generation(plan, &source, paths)?;
        if len == 0 {
            return Ok(Vec::new());
        }
        let dp = self.upload::<T>(plan)?;
        let gen_src = match source {
            Source::Buffer(_) => return self.generate(plan, source, paths, output),
            Source::Philox { seed } => DeviceSource::Philox { seed },
            Source::Sobol { offset } => DeviceSource::Sobol { offset },
        };
        let mut z = self.alloc::<T>(len)?;
        self.normals_on_device(&dp, gen_src, paths, &mut z)?;
        let mut out = self.alloc::<T>(len)?;
        let mut scratch = self.alloc::<T>(self.scratch_len(&dp, paths))?;
        let sc = (self.scratch_len(&dp, paths) > 0).then_some(&mut *scratch);
        self.generate_on_device(&dp, DeviceSource::Buffer(&z), paths, output, sc, &mut out)?;
        self.gpu.synchronize()?;
        let mut host = vec![T::default(); len];
        crate::gpu::download_into(&out, &mut host)?;
        Ok(host)
    }

    /// Normals alone on the GPU (Philox or Sobol), copied back: `(N+1)·d·paths`, `[row][path]`.
    pub fn normals<T: Precision>(&self, plan: &Plan, source: Source<'_, T>, paths: usize) -> Result<Vec<T>> {
        let len = check_generation(plan, &source, paths)?;
        let src = match source {
            Source::Buffer(z) => return Ok(z.to_vec()),
            Source::Philox { seed } => DeviceSource::Philox { seed },
            Source::Sobol { offset } => DeviceSource::Sobol { offset },
        };
        if len == 0 {
            return Ok(Vec::new());
        }
        let dp = self.upload::<T>(plan)?;
        let mut z = self.alloc::<T>(len)?;
        self.normals_on_device(&dp, src, paths, &mut z)?;
        self.gpu.synchronize()?;
        let mut host = vec![T::default(); len];
        crate::gpu::download_into(&z, &mut host)?;
        Ok(host)
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
