//! The bridge kernels of `crates/kernels/src/bridge/` on the host: their typed handles, a plan's
//! tables on the device, and generation on host data. The launches themselves are in
//! `launch.rs`.
//!
//! Upload a [`Plan`] once ([`Bridge::upload`]), then generate as often as needed on device
//! buffers (`*_on_device`, for pipelines and benchmarks) or on host data ([`Bridge::generate`],
//! [`Bridge::generate_unfused`], [`Bridge::normals`]). Layout `[row][path]` as on the CPU
//! (`cpu.rs`).

use super::plan::{BridgeKernels, Plan, Precision};
use super::problem::{Output, SOBOL_MAX_DIMS, Source, check_generation, check_range, sobol_directions};
use crate::error::{Result, cuda};
use crate::gpu::Gpu;
use crate::gpu::upload;
use crate::kernel::Kernel;
use crate::launch::len_u32;
use cust::function::Function;
use cust::memory::DeviceCopy;
use cust::memory::{DeviceBuffer, DevicePointer, DeviceSlice};
use lockstep_shared::bridge::LaunchShape;
use lockstep_shared::bridge::sobol::{BITS, low_table};
use std::sync::{Mutex, PoisonError};

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
    rows: u32,
}

impl<T: Precision> DevicePlan<T> {
    /// Rows per path, (N+1)·d.
    pub fn rows(&self) -> usize {
        self.rows as usize
    }

    /// Rows per path as the normals kernels take them (`u32`: converted, and checked, once at
    /// upload).
    pub(super) fn kernel_rows(&self) -> u32 {
        self.rows
    }

    /// Word-cache slots of the plan's Philox schedule ([`Plan::philox_schedule`]); 0 when it has
    /// none.
    pub fn cache_slots(&self) -> u32 {
        self.cache_slots
    }

    /// Scratch elements a generation of `paths` at `block` threads per block needs (0 when
    /// the stack fits in shared memory).
    pub fn scratch_len(&self, paths: usize, block: u32) -> usize {
        self.shape(paths, block).scratch_len()
    }

    /// The [`LaunchShape`] of a generation of `paths` at `block` threads per block.
    pub(super) fn shape(&self, paths: usize, block: u32) -> LaunchShape {
        let (steps, dims, slots) = (self.steps as usize, self.dims as usize, self.slots as usize);
        LaunchShape { steps, dims, slots, block: block as usize, paths, elem: core::mem::size_of::<T>() }
    }

    /// The strategy as every `bridge_*` kernel takes it first, writing `output`.
    pub(super) fn strategy(&self, output: Output) -> Strategy<T> {
        Strategy {
            coef: self.coef.as_device_ptr(),
            idx: self.idx.as_device_ptr(),
            steps: self.steps,
            dims: self.dims,
            slots: self.slots,
            chol: self.chol.as_device_ptr(),
            start: self.start.as_device_ptr(),
            increments: (output == Output::Increments) as u32,
        }
    }

    /// The Sobol direction numbers and low tables, when (N+1)·d ≤ `SOBOL_MAX_DIMS`.
    pub(super) fn sobol_tables(&self) -> Option<(DevPtr<u32>, DevPtr<u32>)> {
        let both = self.dirs.as_ref().zip(self.low.as_ref());
        both.map(|(d, l)| (d.as_device_ptr(), l.as_device_ptr()))
    }

    /// The uploaded Philox schedule and its word-cache slots, when the plan has one.
    pub(super) fn philox_schedule(&self) -> Option<(DevPtr<u32>, u32)> {
        self.philox.as_ref().map(|ops| (ops.as_device_ptr(), self.cache_slots))
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
    /// Philox with Box–Muller normals in registers (fused; also alone,
    /// [`Bridge::normals_on_device`]).
    PhiloxBoxMuller {
        /// The key.
        seed: u64,
    },
}

/// The device source of a generator, or the host buffer of a [`Source::Buffer`] (to upload).
fn generated<T: cust::memory::DeviceCopy>(
    source: Source<'_, T>,
) -> std::result::Result<DeviceSource<'static, T>, &[T]> {
    match source {
        Source::Buffer(z) => Err(z),
        Source::Philox { seed } => Ok(DeviceSource::Philox { seed }),
        Source::Sobol { offset } => Ok(DeviceSource::Sobol { offset }),
        Source::PhiloxBoxMuller { seed } => Ok(DeviceSource::PhiloxBoxMuller { seed }),
    }
}

/// Waves (in tenths) of `bridge_quads_f32`'s blocks from which the launcher takes it whatever
/// the tails ([`quads_wins`]): 2.3 full GPUs. On an H200 (132 SMs, 8 blocks of 128 resident
/// against `bridge_f32`'s 6) it was faster than `bridge_f32`'s path for the same quads at every
/// count measured from 2.41 of its waves up (1,300,003 to 10,000,001 paths: +2.4 to +7.6
/// points of copy); below, slower at 2.22, 2.04 and at 1.48 and fewer (1.6 to 4.5 points), faster
/// at 1.66 and 1.85 (+7.6, +8.2), as the two grids' rounds of resident blocks say
/// (`bench/results/bridge-quads-kernel-2026-11-28.md`).
const QUADS_MIN_WAVES_TENTHS: u64 = 23;

/// The function of a kernel only the f32 set has, or why there is none (`variant` asked of f64).
fn f32_only<'a, 'g>(variant: Variant, f: Option<&'a Function<'g>>) -> Result<&'a Function<'g>> {
    f.ok_or_else(|| crate::error::Error::InvalidInput {
        what: "variant",
        why: format!("{variant:?} exists in f32 only"),
    })
}

/// Whether `blocks` blocks of odd-count quads run faster on `bridge_quads_f32` (`quads` blocks
/// resident at once) than on `bridge_f32`'s path (`general` resident): from
/// [`QUADS_MIN_WAVES_TENTHS`] / 10 of its waves up, and below where it needs fewer rounds of
/// resident blocks (`ceil(blocks / quads) < ceil(blocks / general)`: the other grid's last,
/// partial wave costs it a round). Every one of 18 counts measured on an H200 from 100,003 to
/// 10,000,001 paths took the faster kernel by this rule
/// (`bench/results/bridge-quads-kernel-2026-11-28.md`).
fn quads_wins(blocks: u64, quads: u64, general: u64) -> bool {
    blocks * 10 >= QUADS_MIN_WAVES_TENTHS * quads || blocks.div_ceil(quads) < blocks.div_ceil(general)
}

/// Which kernel takes the f32 d = 1 buffer generations at path counts not a multiple of 4 (four
/// paths per thread; [`Bridge::with_quads_kernel`]). The same bits whichever it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QuadsKernel {
    /// `bridge_quads_f32` where its grid fills the GPU 2.3 times or more (its blocks against
    /// those resident at once), or where it needs fewer rounds of resident blocks than
    /// `bridge_f32`; `bridge_f32`'s own path otherwise (the default).
    #[default]
    Auto,
    /// `bridge_quads_f32` (that path in a kernel of its own: 3 rows in flight, 60 registers on
    /// sm_90) at every such count.
    Always,
    /// `bridge_f32`'s own path at every such count (one kernel for every d = 1 f32 path, whose
    /// registers its widest path sets: 80 on sm_90; 4 rows in flight).
    Never,
}

/// The kernels of one precision, for [`Bridge::attributes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// `bridge_*`: normals from a buffer.
    Buffer,
    /// `bridge_dims_*`: normals from a buffer, `2 ≤ d ≤ 4` on the specialised path (see
    /// [`Bridge::buffer_variant`]).
    BufferDims,
    /// `bridge_staged_dims_*`: normals from a buffer, d = 2 or 3, results written through
    /// shared memory in whole sectors at path counts that split sectors
    /// (`LaunchShape::buffer_staged`; see [`Bridge::buffer_variant`]).
    BufferStagedDims,
    /// `bridge_quads_f32`: normals from a buffer, f32, d = 1, four paths per thread at a path
    /// count not a multiple of 4 (`LaunchShape::buffer_odd_quads_at`; see
    /// [`Bridge::buffer_variant`]). f32 only.
    BufferQuads,
    /// `bridge_philox_*` (fused).
    Philox,
    /// `bridge_sobol_*` (fused).
    Sobol,
    /// `normals_philox_*`.
    NormalsPhilox,
    /// `normals_sobol_*`.
    NormalsSobol,
    /// `normals_bm_philox_*`.
    NormalsBoxMuller,
    /// `bridge_philox_d1_*` (fused, the d = 1 fast path; [`Bridge::launched`]).
    PhiloxD1,
    /// `bridge_sobol_d1_*` (fused, the d = 1 fast path).
    SobolD1,
    /// `bridge_philox_bm_*` (fused, Box–Muller normals).
    PhiloxBoxMuller,
    /// `bridge_philox_bm_d1_*` (fused, Box–Muller normals, the d = 1 fast path).
    PhiloxBoxMullerD1,
    /// `bridge_philox_bm_d1_pairs_f32` (fused, Box–Muller normals, d = 1, two f32 paths per
    /// thread; `LaunchShape::box_muller_pairs`, and an 8-byte aligned output). f32 only.
    PhiloxBoxMullerD1Pairs,
}

/// `DevicePointer`: every address parameter of the bridge kernels.
pub(super) type DevPtr<T> = DevicePointer<T>;

/// The eight parameters every `bridge_*` kernel takes first, `(coef, idx, steps, dims, slots,
/// chol, start, increments)`: a plan's tables on the device, its scalars, and whether the
/// kernel writes increments (1) or paths (0).
#[derive(Clone, Copy)]
pub(super) struct Strategy<T: DeviceCopy> {
    /// The coefficient rows.
    pub(super) coef: DevPtr<T>,
    /// The index rows.
    pub(super) idx: DevPtr<u32>,
    /// Strategy steps, N + 1.
    pub(super) steps: u32,
    /// Dimension d.
    pub(super) dims: u32,
    /// Stack slots (d-vectors).
    pub(super) slots: u32,
    /// The noise's Cholesky factor.
    pub(super) chol: DevPtr<T>,
    /// The start point.
    pub(super) start: DevPtr<T>,
    /// 1 for increments, 0 for paths.
    pub(super) increments: u32,
}

// The bridge kernels' parameter lists, one per kernel shape; those of the `bridge_*` kernels
// begin with the strategy's eight (`Strategy`), written `…` below. `launch.rs` builds each list
// in one place.

/// `bridge_*`: `(…, scratch, z, out, paths)`.
pub(super) type BufferArgs<T> =
    (DevPtr<T>, DevPtr<u32>, u32, u32, u32, DevPtr<T>, DevPtr<T>, u32, DevPtr<T>, DevPtr<T>, DevPtr<T>, u32);
/// `bridge_dims_*`: `(…, z, out, paths)`.
pub(super) type DimsArgs<T> =
    (DevPtr<T>, DevPtr<u32>, u32, u32, u32, DevPtr<T>, DevPtr<T>, u32, DevPtr<T>, DevPtr<T>, u32);
/// `bridge_philox[_bm]_*`: `(…, scratch, seed, first, out, paths)`.
pub(super) type PhiloxArgs<T> =
    (DevPtr<T>, DevPtr<u32>, u32, u32, u32, DevPtr<T>, DevPtr<T>, u32, DevPtr<T>, u64, u32, DevPtr<T>, u32);
/// `bridge_philox[_bm]_d1_*`: `(…, seed, first, sched, cache_slots, out, paths)`.
pub(super) type PhiloxD1Args<T> =
    (DevPtr<T>, DevPtr<u32>, u32, u32, u32, DevPtr<T>, DevPtr<T>, u32, u64, u32, DevPtr<u32>, u32, DevPtr<T>, u32);
/// `bridge_sobol_*`: `(…, scratch, dirs, low, offset, out, paths)`.
pub(super) type SobolArgs<T> = (
    DevPtr<T>,
    DevPtr<u32>,
    u32,
    u32,
    u32,
    DevPtr<T>,
    DevPtr<T>,
    u32,
    DevPtr<T>,
    DevPtr<u32>,
    DevPtr<u32>,
    u32,
    DevPtr<T>,
    u32,
);
/// `bridge_sobol_d1_*`: `(…, dirs, low, offset, out, paths)`.
pub(super) type SobolD1Args<T> =
    (DevPtr<T>, DevPtr<u32>, u32, u32, u32, DevPtr<T>, DevPtr<T>, u32, DevPtr<u32>, DevPtr<u32>, u32, DevPtr<T>, u32);
/// `normals_philox_*`, `normals_bm_philox_*`: `(rows, seed, first, out, paths)`.
pub(super) type NormalsPhiloxArgs<T> = (u32, u64, u64, DevPtr<T>, u32);
/// `normals_sobol_*`: `(rows, dirs, low, offset, out, paths)`.
pub(super) type NormalsSobolArgs<T> = (u32, DevPtr<u32>, DevPtr<u32>, u32, DevPtr<T>, u32);

/// The bridge kernels of one precision, each with its parameter list.
pub(crate) struct Kernels<'g, T: DeviceCopy> {
    /// `bridge_*`.
    pub(super) buffer: Kernel<'g, BufferArgs<T>>,
    /// `bridge_dims_*`.
    pub(super) dims: Kernel<'g, DimsArgs<T>>,
    /// `bridge_staged_dims_*` (the same parameters as `bridge_dims_*`).
    pub(super) staged_dims: Kernel<'g, DimsArgs<T>>,
    /// `bridge_philox_*`.
    pub(super) philox: Kernel<'g, PhiloxArgs<T>>,
    /// `bridge_sobol_*`.
    pub(super) sobol: Kernel<'g, SobolArgs<T>>,
    /// `normals_philox_*`.
    pub(super) normals_philox: Kernel<'g, NormalsPhiloxArgs<T>>,
    /// `normals_sobol_*`.
    pub(super) normals_sobol: Kernel<'g, NormalsSobolArgs<T>>,
    /// `normals_bm_philox_*`.
    pub(super) normals_bm: Kernel<'g, NormalsPhiloxArgs<T>>,
    /// `bridge_philox_d1_*`.
    pub(super) philox_d1: Kernel<'g, PhiloxD1Args<T>>,
    /// `bridge_sobol_d1_*`.
    pub(super) sobol_d1: Kernel<'g, SobolD1Args<T>>,
    /// `bridge_philox_bm_*`: Box–Muller normals.
    pub(super) philox_bm: Kernel<'g, PhiloxArgs<T>>,
    /// `bridge_philox_bm_d1_*`: Box–Muller normals.
    pub(super) philox_bm_d1: Kernel<'g, PhiloxD1Args<T>>,
    /// `bridge_philox_bm_d1_pairs_f32` (two paths per thread; the f32 set only).
    pub(super) philox_bm_d1_pairs: Option<Kernel<'g, PhiloxD1Args<T>>>,
    /// `bridge_quads_f32` (four paths per thread at counts not a multiple of 4; the f32 set
    /// only; the parameters of `bridge_dims_*`).
    pub(super) quads: Option<Kernel<'g, DimsArgs<T>>>,
}

/// The kernels only the f32 set has: `bridge_philox_bm_d1_pairs_f32`, `bridge_quads_f32`.
struct F32Only {
    /// The fused Box–Muller pairs kernel's name.
    pairs: &'static str,
    /// The odd-count quads kernel's name.
    quads: &'static str,
}

impl<'g, T: DeviceCopy> Kernels<'g, T> {
    /// Looks up the twelve kernels named, in the order of the fields, and the f32 set's own
    /// kernels where the precision has them.
    fn new(gpu: &'g Gpu, names: [&'static str; 12], f32_only: Option<F32Only>) -> Result<Self> {
        let [
            buffer,
            dims,
            staged_dims,
            philox,
            sobol,
            normals_philox,
            normals_sobol,
            normals_bm,
            philox_d1,
            sobol_d1,
            philox_bm,
            philox_bm_d1,
        ] = names;
        Ok(Kernels {
            buffer: gpu.kernel(buffer)?,
            dims: gpu.kernel(dims)?,
            staged_dims: gpu.kernel(staged_dims)?,
            philox: gpu.kernel(philox)?,
            sobol: gpu.kernel(sobol)?,
            normals_philox: gpu.kernel(normals_philox)?,
            normals_sobol: gpu.kernel(normals_sobol)?,
            normals_bm: gpu.kernel(normals_bm)?,
            philox_d1: gpu.kernel(philox_d1)?,
            sobol_d1: gpu.kernel(sobol_d1)?,
            philox_bm: gpu.kernel(philox_bm)?,
            philox_bm_d1: gpu.kernel(philox_bm_d1)?,
            philox_bm_d1_pairs: f32_only.as_ref().map(|k| gpu.kernel(k.pairs)).transpose()?,
            quads: f32_only.as_ref().map(|k| gpu.kernel(k.quads)).transpose()?,
        })
    }
}

crate::kernel::family!(BridgeKernels: Bridge holds Kernels { f32: k32, f64: k64 });

/// The bridge kernels, loaded and ready.
pub struct Bridge<'g> {
    gpu: &'g Gpu,
    block: u32,
    /// Whether buffer generations take `bridge_staged_dims_*` where `LaunchShape::buffer_staged`
    /// holds ([`Bridge::with_staging`]; on by default).
    staging: bool,
    /// Which kernel takes f32 buffer generations where `LaunchShape::buffer_odd_quads_at` holds
    /// ([`Bridge::with_quads_kernel`]; [`QuadsKernel::Auto`] by default).
    quads_kernel: QuadsKernel,
    /// The last answer of the driver's occupancy for `takes_quads_kernel`: `(shared bytes,
    /// bridge_quads_f32's resident blocks, bridge_f32's)`. A plan's launches repeat one shared
    /// size, so repeated generations ask the driver once (six driver calls per launch before).
    residency: Mutex<Option<(u32, u32, u32)>>,
    k32: Kernels<'g, f32>,
    k64: Kernels<'g, f64>,
}

impl<'g> Bridge<'g> {
    /// Looks up every bridge kernel; 128 threads per block.
    pub fn new(gpu: &'g Gpu) -> Result<Self> {
        Self::with_block_size(gpu, DEFAULT_BLOCK)
    }

    /// As [`Bridge::new`] with `threads` per block (a multiple of 32 up to 1024).
    ///
    /// Larger blocks are not faster here and can be much slower: the path stack stays in shared
    /// memory only while `slots·d·threads ≤ 4096` elements ([`Plan::stack_in_shared`]);
    /// beyond, it lives in a global scratch buffer. At d = 3 with 7 slots that is every block
    /// over 128 threads: on an H200 the staged kernels at an odd path count then ran 19–36% of
    /// copy against 73–85% at 128 (bench/results/himeno-bounds-2026-11-28.md, last section).
    pub fn with_block_size(gpu: &'g Gpu, threads: u32) -> Result<Self> {
        let block = crate::launch::block_size(threads)?;
        Ok(Bridge {
            gpu,
            block,
            staging: true,
            quads_kernel: QuadsKernel::Auto,
            residency: Mutex::new(None),
            k32: Kernels::new(
                gpu,
                [
                    "bridge_f32",
                    "bridge_dims_f32",
                    "bridge_staged_dims_f32",
                    "bridge_philox_f32",
                    "bridge_sobol_f32",
                    "normals_philox_f32",
                    "normals_sobol_f32",
                    "normals_bm_philox_f32",
                    "bridge_philox_d1_f32",
                    "bridge_sobol_d1_f32",
                    "bridge_philox_bm_f32",
                    "bridge_philox_bm_d1_f32",
                ],
                Some(F32Only { pairs: "bridge_philox_bm_d1_pairs_f32", quads: "bridge_quads_f32" }),
            )?,
            k64: Kernels::new(
                gpu,
                [
                    "bridge_f64",
                    "bridge_dims_f64",
                    "bridge_staged_dims_f64",
                    "bridge_philox_f64",
                    "bridge_sobol_f64",
                    "normals_philox_f64",
                    "normals_sobol_f64",
                    "normals_bm_philox_f64",
                    "bridge_philox_d1_f64",
                    "bridge_sobol_d1_f64",
                    "bridge_philox_bm_f64",
                    "bridge_philox_bm_d1_f64",
                ],
                None,
            )?,
        })
    }

    /// As this bridge, with the staged buffer kernels (`bridge_staged_dims_*`, on by default) taken
    /// where `LaunchShape::buffer_staged` holds (`on`) or never (`!on`: the unstaged kernels at
    /// every path count, for comparison). The same bits either way.
    pub fn with_staging(mut self, on: bool) -> Self {
        self.staging = on;
        self
    }

    /// As this bridge, with f32 d = 1 buffer generations at path counts not a multiple of 4
    /// (four paths per thread: `LaunchShape::buffer_odd_quads_at`) taken by the kernel `choice`
    /// says ([`QuadsKernel`]; `Auto` by default). The same bits either way.
    pub fn with_quads_kernel(mut self, choice: QuadsKernel) -> Self {
        self.quads_kernel = choice;
        self
    }

    /// Threads per block.
    pub fn block_size(&self) -> u32 {
        self.block
    }

    /// The GPU the kernels were loaded on.
    pub(super) fn gpu(&self) -> &'g Gpu {
        self.gpu
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
            Variant::BufferStagedDims => k.staged_dims.function(),
            Variant::Philox => k.philox.function(),
            Variant::Sobol => k.sobol.function(),
            Variant::NormalsPhilox => k.normals_philox.function(),
            Variant::NormalsBoxMuller => k.normals_bm.function(),
            Variant::NormalsSobol => k.normals_sobol.function(),
            Variant::PhiloxD1 => k.philox_d1.function(),
            Variant::SobolD1 => k.sobol_d1.function(),
            Variant::PhiloxBoxMuller => k.philox_bm.function(),
            Variant::PhiloxBoxMullerD1 => k.philox_bm_d1.function(),
            Variant::PhiloxBoxMullerD1Pairs => f32_only(variant, k.philox_bm_d1_pairs.as_ref().map(Kernel::function))?,
            Variant::BufferQuads => f32_only(variant, k.quads.as_ref().map(Kernel::function))?,
        };
        let regs = f.get_attribute(NumRegisters).map_err(cuda("cuFuncGetAttribute"))?;
        let local = f.get_attribute(LocalSizeBytes).map_err(cuda("cuFuncGetAttribute"))?;
        Ok((regs, local))
    }

    /// The kernel a buffer-source generation of `paths` with `plan` launches at this block size
    /// into whole allocations: where staging is on ([`Bridge::with_staging`]) and
    /// `LaunchShape::buffer_staged` holds (d = 2 or 3 on the specialised path, a path count that
    /// splits sectors: not a multiple of 4 in f64, of 8 in f32, odd in f32 at d = 2; the staging
    /// rows within 48 KiB; the block a whole number of warps;
    /// buffers not 32-byte aligned take the unstaged kernels) [`Variant::BufferStagedDims`]; else [`Variant::BufferDims`] for `2 ≤ d ≤ 4`
    /// on the specialised path (`LaunchShape::buffer_fast`); [`Variant::BufferQuads`] in f32 at
    /// d = 1 where four paths per thread meet a count not a multiple of 4
    /// (`LaunchShape::buffer_odd_quads_at`; buffers not 16-byte aligned take `bridge_f32`) and
    /// the two kernels' grids say so ([`QuadsKernel::Auto`]; or as
    /// [`Bridge::with_quads_kernel`] forces it); [`Variant::Buffer`] otherwise.
    pub fn buffer_variant<T: Precision>(&self, plan: &DevicePlan<T>, paths: usize) -> Variant {
        self.buffer_kernel_for(&plan.shape(paths, self.block), 0)
    }

    /// The buffer kernel a launch of `shape` takes into buffers at the addresses `addrs` (z's
    /// and out's, ORed; 0 for whole allocations, [`Bridge::buffer_variant`]).
    pub(super) fn buffer_kernel_for(&self, shape: &LaunchShape, addrs: u64) -> Variant {
        if self.staging && shape.buffer_staged() {
            Variant::BufferStagedDims
        } else if shape.buffer_odd_quads_at(addrs) && self.takes_quads_kernel(shape) {
            // f32 only: `buffer_lanes` is 4 only for 4-byte elements.
            Variant::BufferQuads
        } else {
            Self::kernel_for(shape, Variant::Buffer)
        }
    }

    /// Whether a launch of `shape` (odd-count quads) takes `bridge_quads_f32`: as
    /// [`QuadsKernel`] says; for `Auto`, as [`quads_wins`] says of the two kernels' resident
    /// blocks (the driver's occupancy at this block size and shared memory × SMs). False where
    /// a query fails or finds no block resident (`bridge_f32` takes every shape), and in f64 (no
    /// such kernel).
    fn takes_quads_kernel(&self, shape: &LaunchShape) -> bool {
        let Some(quads) = &self.k32.quads else { return false };
        if self.quads_kernel != QuadsKernel::Auto {
            return self.quads_kernel == QuadsKernel::Always;
        }
        let blocks = (shape.paths as u64).div_ceil(4).div_ceil(self.block as u64);
        let shared = u32::try_from(shape.buffer_shared_bytes()).unwrap_or(u32::MAX);
        match self.quads_residency(quads, shared) {
            Ok((q, f)) if q > 0 && f > 0 => quads_wins(blocks, u64::from(q), u64::from(f)),
            _ => false,
        }
    }

    /// Blocks of `bridge_quads_f32` and of `bridge_f32` resident at once at this block size and
    /// `shared` bytes of dynamic shared memory (`Kernel::resident_blocks`), from the last
    /// answer when the size repeats.
    fn quads_residency(&self, quads: &Kernel<'_, DimsArgs<f32>>, shared: u32) -> Result<(u32, u32)> {
        let mut last = self.residency.lock().unwrap_or_else(PoisonError::into_inner);
        match *last {
            Some((s, q, f)) if s == shared => Ok((q, f)),
            _ => {
                let q = quads.resident_blocks(self.gpu, self.block, shared)?;
                let f = self.k32.buffer.resident_blocks(self.gpu, self.block, shared)?;
                *last = Some((shared, q, f));
                Ok((q, f))
            }
        }
    }

    /// The kernel a generation of `paths` with `plan` from `variant` launches: the buffer source
    /// as [`Bridge::buffer_variant`] says; the fused sources take their d = 1 kernels when
    /// `LaunchShape::fused_fast_d1` holds (d = 1, stack and strategy in shared memory, 32-bit
    /// indices); every other variant is itself.
    pub fn launched<T: Precision>(&self, plan: &DevicePlan<T>, paths: usize, variant: Variant) -> Variant {
        let shape = plan.shape(paths, self.block);
        if variant == Variant::Buffer {
            return self.buffer_kernel_for(&shape, 0);
        }
        match Self::kernel_for(&shape, variant) {
            Variant::PhiloxBoxMullerD1 if Self::box_muller_pairs(&shape, plan, T::pick(self)).is_some() => {
                Variant::PhiloxBoxMullerD1Pairs
            }
            v => v,
        }
    }

    /// The pairs kernel and the plan's schedule `(sched, slots)` when a fused Box–Muller d = 1
    /// generation of `shape` takes two paths per thread: the precision has the pairs kernel
    /// (f32) and `LaunchShape::box_muller_pairs` holds for the plan's schedule.
    #[allow(clippy::type_complexity)]
    pub(super) fn box_muller_pairs<'a, 'k, T: Precision>(
        shape: &LaunchShape,
        plan: &DevicePlan<T>,
        k: &'a Kernels<'k, T>,
    ) -> Option<(&'a Kernel<'k, PhiloxD1Args<T>>, DevPtr<u32>, u32)> {
        let pairs = k.philox_bm_d1_pairs.as_ref()?;
        let (sched, slots) = plan.philox_schedule()?;
        shape.box_muller_pairs(slots as usize).then_some((pairs, sched, slots))
    }

    /// The kernel a launch of `shape` from `variant` takes: the one rule the launchers follow
    /// and [`Bridge::launched`] reports.
    pub(super) fn kernel_for(shape: &LaunchShape, variant: Variant) -> Variant {
        match variant {
            Variant::Buffer if shape.dims >= 2 && shape.buffer_fast() => Variant::BufferDims,
            Variant::Philox if shape.fused_fast_d1() => Variant::PhiloxD1,
            Variant::Sobol if shape.fused_fast_d1() => Variant::SobolD1,
            Variant::PhiloxBoxMuller if shape.fused_fast_d1() => Variant::PhiloxBoxMullerD1,
            v => v,
        }
    }

    /// Whether a fused Philox generation of `paths` with `plan` takes the d = 1 kernel with the
    /// plan's schedule (each Philox block computed once per path; `LaunchShape::philox_cached`),
    /// rather than the one-block cache.
    pub fn philox_cached<T: Precision>(&self, plan: &DevicePlan<T>, paths: usize) -> bool {
        plan.shape(paths, self.block).philox_cached(plan.cache_slots as usize)
    }

    /// As [`Bridge::philox_cached`] for the fused Box–Muller kernels, whose cache holds a
    /// block's normals (`LaunchShape::box_muller_cached`).
    pub fn box_muller_cached<T: Precision>(&self, plan: &DevicePlan<T>, paths: usize) -> bool {
        plan.shape(paths, self.block).box_muller_cached(plan.cache_slots as usize)
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
            rows: len_u32("rows", plan.rows())?,
        })
    }

    /// Waits for the queued work, then copies `buf` back into `host` (its first `host.len()`
    /// elements: a device buffer holds one element at least).
    fn finish<T: Precision>(&self, buf: &DeviceBuffer<T>, host: &mut [T]) -> Result<()> {
        self.gpu.synchronize()?;
        if host.is_empty() {
            return Ok(());
        }
        crate::gpu::download_into(buf, host)
    }

    /// A zeroed device buffer of `len` elements (one at least: cust refuses empty buffers).
    fn alloc<T: Precision>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        crate::gpu::zeroed(len.max(1))
    }

    /// The scratch a generation of `paths` with `plan` needs at this block size
    /// ([`Bridge::scratch_len`]), or none when its stack fits in shared memory.
    fn alloc_scratch<T: Precision>(&self, plan: &DevicePlan<T>, paths: usize) -> Result<Option<DeviceBuffer<T>>> {
        match self.scratch_len(plan, paths) {
            0 => Ok(None),
            need => self.alloc(need).map(Some),
        }
    }

    /// Generates on the GPU and copies back: a buffer source is uploaded, the generators (Philox
    /// Φ⁻¹ and Box–Muller, Sobol) run fused (normals in registers). Same bits as
    /// [`crate::bridge::generate_seq`].
    pub fn generate<T: Precision>(
        &self,
        plan: &Plan,
        source: Source<'_, T>,
        paths: usize,
        output: Output,
    ) -> Result<Vec<T>> {
        let mut host = vec![T::default(); check_generation(plan, &source, paths)?];
        self.generate_into(plan, source, paths, output, &mut host)?;
        Ok(host)
    }

    /// [`Bridge::generate`] into `host` (`(N+1)·d·paths` elements, else
    /// [`crate::Error::LengthMismatch`]): page-locked memory ([`crate::Pinned`]) takes the copy
    /// at the link's speed.
    pub fn generate_into<T: Precision>(
        &self,
        plan: &Plan,
        source: Source<'_, T>,
        paths: usize,
        output: Output,
        host: &mut [T],
    ) -> Result<()> {
        self.generate_range_into(plan, source, 0, paths, output, host)
    }

    /// Paths `first..first + count` of a larger run into `host` (`rows·count` elements, else
    /// [`crate::Error::LengthMismatch`]), with the bits a one-shot run gives them: the
    /// generators fused (the kernels take the range's start), a buffer (the range's normals
    /// alone, `[row][count]`) uploaded.
    pub fn generate_range_into<T: Precision>(
        &self,
        plan: &Plan,
        source: Source<'_, T>,
        first: u64,
        count: usize,
        output: Output,
        host: &mut [T],
    ) -> Result<()> {
        self.range_into(plan, source, first, count, output, host, true)
    }

    /// The unfused pipeline: the normals kernel writes Z, then the bridge reads it. Same bits
    /// as [`Bridge::generate`] for every generator.
    pub fn generate_unfused<T: Precision>(
        &self,
        plan: &Plan,
        source: Source<'_, T>,
        paths: usize,
        output: Output,
    ) -> Result<Vec<T>> {
        self.generate_range_unfused(plan, source, 0, paths, output)
    }

    /// Paths `first..first + count` of a larger run by the unfused pipeline: the normals
    /// kernel writes the range's normals (`Bridge::normals_range_on_device`), then the buffer
    /// bridge reads them — the bits those paths have in a one-shot run, for every generator.
    /// `rows·count` values, `[row][count]`.
    pub fn generate_range_unfused<T: Precision>(
        &self,
        plan: &Plan,
        source: Source<'_, T>,
        first: u64,
        count: usize,
        output: Output,
    ) -> Result<Vec<T>> {
        let mut host = vec![T::default(); check_range(plan, &source, first, count)?];
        self.range_into(plan, source, first, count, output, &mut host, false)?;
        Ok(host)
    }

    /// The one body of the host conveniences: checks the range and `host`'s length, uploads
    /// the plan, generates on the device — a generator fused, or with `fused` false through the
    /// normals kernel and the buffer bridge (a buffer source is uploaded either way) — and copies
    /// the result into `host`.
    #[allow(clippy::too_many_arguments)] // generate_range_into's values and the pipeline
    fn range_into<T: Precision>(
        &self,
        plan: &Plan,
        source: Source<'_, T>,
        first: u64,
        count: usize,
        output: Output,
        host: &mut [T],
        fused: bool,
    ) -> Result<()> {
        let len = check_range(plan, &source, first, count)?;
        crate::launch::expect_len("host", host.len(), len)?;
        if len == 0 {
            return Ok(());
        }
        let dp = self.upload::<T>(plan)?;
        let zbuf;
        let src = match generated(source) {
            Ok(generator) if fused => generator,
            Ok(generator) => {
                let mut z = self.alloc::<T>(len)?;
                self.normals_range_on_device(&dp, generator, first, count, &mut z)?;
                zbuf = z;
                DeviceSource::Buffer(&*zbuf)
            }
            Err(z) => {
                zbuf = upload(z)?;
                DeviceSource::Buffer(&*zbuf)
            }
        };
        let mut out = self.alloc::<T>(len)?;
        let mut scratch = self.alloc_scratch(&dp, count)?;
        self.generate_range_on_device(&dp, src, first, count, output, scratch.as_deref_mut(), &mut out)?;
        self.finish(&out, host)
    }

    /// Normals alone on the GPU (Philox or Sobol), copied back: `(N+1)·d·paths`, `[row][path]`.
    pub fn normals<T: Precision>(&self, plan: &Plan, source: Source<'_, T>, paths: usize) -> Result<Vec<T>> {
        let len = check_generation(plan, &source, paths)?;
        let src = match generated(source) {
            Ok(generator) => generator,
            Err(z) => return Ok(z.to_vec()),
        };
        if len == 0 {
            return Ok(Vec::new());
        }
        let dp = self.upload::<T>(plan)?;
        let mut z = self.alloc::<T>(len)?;
        self.normals_on_device(&dp, src, paths, &mut z)?;
        let mut host = vec![T::default(); len];
        self.finish(&z, &mut host)?;
        Ok(host)
    }
}

#[cfg(test)]
mod tests {
    use super::quads_wins;

    /// The H200 sweep (132 SMs: 1,056 quads blocks resident, 792 of `bridge_f32`): blocks of 128
    /// threads for each count measured, and which kernel was faster there.
    #[test]
    fn quads_wins_where_the_h200_measured_it_faster() {
        let (quads, general) = (1056, 792);
        let measured = [
            (196, false),  // 100,003 paths
            (391, false),  // 200,003
            (586, false),  // 300,003
            (782, false),  // 400,003
            (1172, false), // 600,003
            (1563, false), // 800,003
            (1758, true),  // 900,003
            (1954, true),  // 1,000,001
            (2149, false), // 1,100,003
            (2344, false), // 1,200,003
            (2540, true),  // 1,300,003
            (2812, true),  // 1,439,745
            (3321, true),  // 1,700,003
            (3907, true),  // 2,000,003
            (4883, true),  // 2,500,003
            (5860, true),  // 3,000,003
            (9766, true),  // 5,000,003
            (19532, true), // 10,000,001
        ];
        for (blocks, faster) in measured {
            assert_eq!(quads_wins(blocks, quads, general), faster, "{blocks} blocks");
        }
    }
}
