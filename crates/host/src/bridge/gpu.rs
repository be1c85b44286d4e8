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
use crate::kernel::Kernel;
use crate::launch::{Grid1d, expect_len, len_u32};
use cust::memory::DeviceCopy;
use cust::memory::{DeviceBuffer, DevicePointer, DeviceSlice};
use lockstep_shared::bridge::INDICES;
use lockstep_shared::bridge::sobol::{BITS, low_table, normals_shared_bytes};

/// Threads per block unless the caller chooses.
pub const DEFAULT_BLOCK: u32 = 128;

/// The Philox schedule of a strategy whose step `s` reads the normal of row `reads[s]` (d = 1:
/// the steps' `z`): one entry per step for `lockstep_shared::bridge::philox::scheduled_word`,
/// and the number of word-cache slots it uses (slot 0, where unneeded words are discarded,
/// included). The first step that reads a row of a block computes the block and stores each of
/// its words that a later step reads in a free slot (greedy, first free slot: as few slots as
/// the most words ever waiting at once); the later steps read their slot. So each block is
/// computed once per path, whatever the order. `None` when more than `MAX_CACHE_SLOTS` slots
/// would be needed.
pub fn philox_schedule(reads: &[u32]) -> Option<(Vec<u32>, u32)> {
    use lockstep_shared::bridge::philox::{COMPUTE, MAX_CACHE_SLOTS, SLOT_BITS};
    let rows = reads.iter().map(|&r| r as usize + 1).max().unwrap_or(0).div_ceil(4) * 4;
    // The last step that reads each row.
    let mut last = vec![None; rows];
    for (s, &r) in reads.iter().enumerate() {
        last[r as usize] = Some(s);
    }
    let mut computed = vec![false; rows / 4];
    let mut slot_of = vec![0u32; rows];
    // busy[i]: the last step that reads slot i + 1.
    let mut busy: Vec<usize> = Vec::new();
    let mut ops = Vec::with_capacity(reads.len());
    for (s, &r) in reads.iter().enumerate() {
        let b = r as usize / 4;
        if computed[b] {
            ops.push(slot_of[r as usize]);
            continue;
        }
        computed[b] = true;
        let mut op = COMPUTE;
        for k in 0..4 {
            let row = 4 * b + k;
            let Some(l) = last[row].filter(|&l| l > s) else { continue };
            // A slot whose last read came before this step is free.
            let i = match busy.iter().position(|&u| u < s) {
                Some(i) => i,
                None => {
                    busy.push(0);
                    busy.len() - 1
                }
            };
            busy[i] = l;
            slot_of[row] = i as u32 + 1;
            op |= (i as u32 + 1) << (k as u32 * SLOT_BITS);
        }
        ops.push(op);
    }
    let slots = busy.len() + 1;
    (slots <= MAX_CACHE_SLOTS).then_some((ops, slots as u32))
}

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

    /// Word-cache slots of the Philox schedule ([`philox_schedule`]) of a d = 1 strategy of at
    /// most `TABLE_STEPS` steps; 0 when it has none.
    pub fn cache_slots(&self) -> u32 {
        self.cache_slots
    }

    /// Scratch elements a generation of `paths` at `block` threads per block needs (0 when
    /// the stack fits in shared memory).
    pub fn scratch_len(&self, paths: usize, block: u32) -> usize {
        if lockstep_shared::bridge::stack_fits_shared(self.slots as usize, self.dims as usize, block as usize) {
            0
        } else {
            self.slots as usize * self.dims as usize * paths
        }
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

/// `DevicePointer`, short: every address parameter of the bridge kernels.
type Dp<T> = DevicePointer<T>;

/// The bridge kernels of one precision, with their parameter lists (each starts with the
/// strategy `(coef, idx, steps, dims, slots, chol, start, increments)`).
#[allow(clippy::type_complexity)]
pub(crate) struct Kernels<'g, T: DeviceCopy> {
    /// `(…, scratch, z, out, paths)`.
    buffer: Kernel<'g, (Dp<T>, Dp<u32>, u32, u32, u32, Dp<T>, Dp<T>, u32, Dp<T>, Dp<T>, Dp<T>, u32)>,
    /// `(…, z, out, paths)`.
    dims: Kernel<'g, (Dp<T>, Dp<u32>, u32, u32, u32, Dp<T>, Dp<T>, u32, Dp<T>, Dp<T>, u32)>,
    /// `(…, scratch, seed, out, paths)`.
    philox: Kernel<'g, (Dp<T>, Dp<u32>, u32, u32, u32, Dp<T>, Dp<T>, u32, Dp<T>, u64, Dp<T>, u32)>,
    /// `(…, scratch, dirs, low, offset, out, paths)`.
    sobol: Kernel<'g, (Dp<T>, Dp<u32>, u32, u32, u32, Dp<T>, Dp<T>, u32, Dp<T>, Dp<u32>, Dp<u32>, u32, Dp<T>, u32)>,
    /// `(rows, seed, out, paths)`.
    normals_philox: Kernel<'g, (u32, u64, Dp<T>, u32)>,
    /// `(rows, dirs, low, offset, out, paths)`.
    normals_sobol: Kernel<'g, (u32, Dp<u32>, Dp<u32>, u32, Dp<T>, u32)>,
    /// `(…, seed, sched, cache_slots, out, paths)`.
    philox_d1: Kernel<'g, (Dp<T>, Dp<u32>, u32, u32, u32, Dp<T>, Dp<T>, u32, u64, Dp<u32>, u32, Dp<T>, u32)>,
    /// `(…, dirs, low, offset, out, paths)`.
    sobol_d1: Kernel<'g, (Dp<T>, Dp<u32>, u32, u32, u32, Dp<T>, Dp<T>, u32, Dp<u32>, Dp<u32>, u32, Dp<T>, u32)>,
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
    /// (`lockstep_shared::bridge::buffer_fast`), [`Variant::Buffer`] otherwise.
    pub fn buffer_variant<T: Precision>(&self, plan: &DevicePlan<T>, paths: usize) -> Variant {
        let (steps, dims, slots) = (plan.steps as usize, plan.dims as usize, plan.slots as usize);
        if dims >= 2 && lockstep_shared::bridge::buffer_fast(steps, dims, slots, self.block as usize, paths) {
            Variant::BufferDims
        } else {
            Variant::Buffer
        }
    }

    /// The kernel a generation of `paths` with `plan` from `variant` launches: the buffer source
    /// as [`Bridge::buffer_variant`] says; the fused sources take their d = 1 kernels when
    /// `lockstep_shared::bridge::fused_fast_d1` holds (d = 1, stack and strategy in shared
    /// memory, 32-bit indices); every other variant is itself.
    pub fn launched<T: Precision>(&self, plan: &DevicePlan<T>, paths: usize, variant: Variant) -> Variant {
        let fast = lockstep_shared::bridge::fused_fast_d1(
            plan.steps as usize,
            plan.dims as usize,
            plan.slots as usize,
            self.block as usize,
            paths,
        );
        match variant {
            Variant::Buffer => self.buffer_variant(plan, paths),
            Variant::Philox if fast => Variant::PhiloxD1,
            Variant::Sobol if fast => Variant::SobolD1,
            v => v,
        }
    }

    /// Whether a fused Philox generation of `paths` with `plan` takes the d = 1 kernel with the
    /// host's schedule (each Philox block computed once per path;
    /// `lockstep_shared::bridge::fused_philox_cached`), rather than the one-block cache.
    pub fn philox_cached<T: Precision>(&self, plan: &DevicePlan<T>, paths: usize) -> bool {
        lockstep_shared::bridge::fused_philox_cached(
            plan.steps as usize,
            plan.dims as usize,
            plan.slots as usize,
            self.block as usize,
            paths,
            core::mem::size_of::<T>(),
            plan.cache_slots as usize,
        )
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
        // The Philox schedule of a d = 1 strategy short enough for the fast path (row = z).
        let schedule = (plan.dims() == 1 && plan.steps() <= lockstep_shared::bridge::TABLE_STEPS)
            .then(|| {
                let reads: Vec<u32> = t.idx.chunks_exact(INDICES).map(|row| row[3]).collect();
                philox_schedule(&reads)
            })
            .flatten();
        let (philox, cache_slots) = match schedule {
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
        let n = len_u32("paths", paths)?;
        let len = plan.rows.checked_mul(paths).ok_or(Error::TooLarge {
            what: "(N+1)·d·paths output elements",
            value: u64::MAX,
            max: usize::MAX as u64,
        })?;
        expect_len("out", out.len(), len)?;
        let need = plan.scratch_len(paths, self.block);
        let sp: DevicePointer<T> = match scratch {
            Some(s) if need > 0 => {
                expect_len("scratch", s.len(), need)?;
                s.as_device_ptr()
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
            _ => out.as_device_ptr(), // never dereferenced: the stack lives in shared memory
        };
        let grid = Grid1d::for_len(n as u64, self.block)?;
        let k = T::pick(self);
        let (cp, ip, hp, xp, op) = (
            plan.coef.as_device_ptr(),
            plan.idx.as_device_ptr(),
            plan.chol.as_device_ptr(),
            plan.start.as_device_ptr(),
            out.as_device_ptr(),
        );
        let inc = (output == Output::Increments) as u32;
        // The fused kernels' dynamic shared memory (stack, strategy on the d = 1 path, Sobol
        // tables when they fit): ≤ 48 KiB, the default limit.
        let fused_bytes = |sobol: bool| {
            let bytes = lockstep_shared::bridge::fused_shared_bytes(
                plan.steps as usize,
                plan.dims as usize,
                plan.slots as usize,
                self.block as usize,
                paths,
                core::mem::size_of::<T>(),
                sobol,
            );
            u32::try_from(bytes).map_err(|_| Error::TooLarge {
                what: "shared memory bytes",
                value: bytes as u64,
                max: u32::MAX as u64,
            })
        };
        match source {
            DeviceSource::Buffer(z) => {
                expect_len("z", z.len(), len)?;
                let zp = z.as_device_ptr();
                // One, two or four paths per thread (f32: by the shape and the buffers' alignment),
                // as the kernel decides.
                let lanes = lockstep_shared::bridge::buffer_lanes_at(
                    plan.steps as usize,
                    plan.dims as usize,
                    plan.slots as usize,
                    self.block as usize,
                    paths,
                    core::mem::size_of::<T>(),
                    zp.as_raw() | op.as_raw(),
                );
                let grid = Grid1d::for_len((n as u64).div_ceil(lanes as u64), self.block)?;
                // The stack (and on the d = 1 path the strategy) in dynamic shared memory, sized
                // for this launch: ≤ 44 KiB, under the 48 KiB default limit.
                let bytes = lockstep_shared::bridge::buffer_shared_bytes(
                    plan.steps as usize,
                    plan.dims as usize,
                    plan.slots as usize,
                    self.block as usize,
                    paths,
                    core::mem::size_of::<T>(),
                );
                let shared_bytes = u32::try_from(bytes).map_err(|_| Error::TooLarge {
                    what: "shared memory bytes",
                    value: bytes as u64,
                    max: u32::MAX as u64,
                })?;
                if self.buffer_variant(plan, paths) == Variant::BufferDims {
                    // SAFETY: arguments mirror `bridge_dims_f32/f64(coef, idx, steps, dims, slots,
                    // chol, start, increments, z, out, paths)`; the tables come from one validated
                    // Plan, z/out hold (N+1)·d·paths, buffer_fast holds with 2 ≤ d ≤ 4, shared_bytes
                    // and the grid as the kernel expects (buffer_shared_bytes, buffer_lanes).
                    return unsafe {
                        k.dims.launch(
                            self.gpu,
                            grid,
                            shared_bytes,
                            (cp, ip, plan.steps, plan.dims, plan.slots, hp, xp, inc, zp, op, n),
                        )
                    };
                }
                // SAFETY: arguments mirror `bridge_f32/f64(coef, idx, steps, dims, slots, chol, start,
                // increments, scratch, z, out, paths)`; the tables come from one validated Plan,
                // z/out hold (N+1)·d·paths, scratch as checked, shared_bytes and the grid (paths /
                // lanes threads or more) as the kernel expects (buffer_shared_bytes, buffer_lanes).
                unsafe {
                    k.buffer.launch(
                        self.gpu,
                        grid,
                        shared_bytes,
                        (cp, ip, plan.steps, plan.dims, plan.slots, hp, xp, inc, sp, zp, op, n),
                    )
                }
            }
            DeviceSource::Philox { seed } if self.launched(plan, paths, Variant::Philox) == Variant::PhiloxD1 => {
                // The schedule and its word cache after the fused stack and strategy, when they
                // fit (≤ 48 KiB in all), else none (the kernel then keeps one block).
                let (sched, cache_slots, extra) = match &plan.philox {
                    Some(ops) if self.philox_cached(plan, paths) => (
                        ops.as_device_ptr(),
                        plan.cache_slots,
                        lockstep_shared::bridge::philox_cache_bytes(
                            plan.steps as usize,
                            plan.cache_slots as usize,
                            self.block as usize,
                        ) as u32,
                    ),
                    _ => (ip, 0, 0),
                };
                let shared_bytes = fused_bytes(false)? + extra;
                // The kernel: `bridge_philox_d1_*(coef, idx, steps, dims, slots, chol, start,
                // increments, seed, sched, cache_slots, out, paths)`. With cache_slots > 0, sched
                // holds this plan's `steps` entries using cache_slots slots (`philox_schedule`) and
                // `fused_philox_cached` holds, so shared_bytes adds philox_cache_bytes(..).
                // SAFETY: arguments mirror the kernel's; fused_fast_d1 holds (just checked), the
                // tables come from one validated Plan, out holds (N+1)·d·paths, sched as above.
                unsafe {
                    k.philox_d1.launch(
                        self.gpu,
                        grid,
                        shared_bytes,
                        (cp, ip, plan.steps, plan.dims, plan.slots, hp, xp, inc, seed, sched, cache_slots, op, n),
                    )
                }
            }
            DeviceSource::Philox { seed } => {
                let shared_bytes = fused_bytes(false)?;
                // SAFETY: as the buffer kernel with `seed: u64` in place of z; shared_bytes =
                // fused_shared_bytes(.., false) as the kernel expects.
                unsafe {
                    k.philox.launch(
                        self.gpu,
                        grid,
                        shared_bytes,
                        (cp, ip, plan.steps, plan.dims, plan.slots, hp, xp, inc, sp, seed, op, n),
                    )
                }
            }
            DeviceSource::Sobol { offset } if self.launched(plan, paths, Variant::Sobol) == Variant::SobolD1 => {
                let (dirs, low) = self.sobol_dirs(plan, offset, paths)?;
                let shared_bytes = fused_bytes(true)?;
                // SAFETY: mirrors `bridge_sobol_d1_*(coef, idx, steps, dims, slots, chol, start,
                // increments, dirs, low, offset, out, paths)`; fused_fast_d1 holds (just
                // checked), dirs and low hold (N+1)·d·32 words, offset + paths ≤ 2^32 (checked),
                // the block is whole warps, shared_bytes = fused_shared_bytes(.., true).
                unsafe {
                    k.sobol_d1.launch(
                        self.gpu,
                        grid,
                        shared_bytes,
                        (cp, ip, plan.steps, plan.dims, plan.slots, hp, xp, inc, dirs, low, offset, op, n),
                    )
                }
            }
            DeviceSource::Sobol { offset } => {
                let (dirs, low) = self.sobol_dirs(plan, offset, paths)?;
                let shared_bytes = fused_bytes(true)?;
                // SAFETY: as the buffer kernel with (dirs, low, offset) in place of z; dirs and
                // low hold (N+1)·d·32 words, offset + paths ≤ 2^32 (checked), the block is whole
                // warps (`block_size`), shared_bytes = fused_shared_bytes(.., true).
                unsafe {
                    k.sobol.launch(
                        self.gpu,
                        grid,
                        shared_bytes,
                        (cp, ip, plan.steps, plan.dims, plan.slots, hp, xp, inc, sp, dirs, low, offset, op, n),
                    )
                }
            }
        }
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
