//! Launchers for `crates/kernels/src/nbody.rs`: RK4 N-body steps on the GPU, global-memory or
//! shared-memory tiled, exact (bit-identical to [`crate::nbody::cpu`]) or fast.
//!
//! State layout (host and device): `pos` holds `x, y, z, m` per body, `vel` holds
//! `vx, vy, vz, w` (`w` is carried along untouched; 0 by convention). One step is four stage
//! launches (see the kernel module); scratch on the device is three stage accelerations and two
//! stage-position buffers, `28·n·size_of::<T>()` bytes in all.
//!
//! **Split and block.** The pair sum of each body runs over `S = 2^shift` lanes, `shift =
//! lockstep_shared::nbody::split_shift(n)` (32 lanes up to N = 8192, halving as N doubles, 1
//! from N = 131073): an `S > 1` stage launches the split kernel (`nbody_split_*`, tiled) for
//! either [`Method`]; `S = 1` the method's own kernel. The CPU twin sums in the same order.
//! [`Nbody::new`] picks the block from `N·S` threads and the GPU's multiprocessor count
//! ([`auto_block`]); [`Nbody::with_block_size`] fixes it.
//!
//! **Graphs.** A run of two or more steps between observations records [`GRAPH_STEPS`] steps
//! (at most) into a CUDA graph once and replays it (`crate::graph`): the same launches with
//! the same parameters, so the same bits, with a fraction of the launch gaps. Where the loaded
//! module has the sm_90 split kernels that wait for the stage before them themselves
//! (`nbody_split_pdl_*`, `griddepcontrol.wait` first), split stages launch those and follow each
//! other by programmatic launches, on the stream and in graphs (`crate::pdl`), where the grid is
//! at most one block per multiprocessor ([`Nbody::overlaps`]): a stage's blocks are launched
//! while the one before drains ([`Nbody::with_programmatic_launch`] turns it off; same bits
//! either way).

use super::problem::{Method, Mode, NbodyFloat, NbodyKernels, Params, System, invalid, validate, validate_params};
use crate::error::{Result, cuda};
use crate::gpu::Gpu;
use crate::gpu::{upload, zeroed};
use crate::graph::{Graph, Target};
use crate::kernel::Kernel;
use crate::launch::{Grid1d, expect_len};
use crate::pdl::Edge;
use cust::device::DeviceAttribute;
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy, DevicePointer};
use lockstep_shared::nbody::{MAX_SPLIT_SHIFT, STAGES, split_shift};

/// Threads per block (and bodies per tile) of the multi-rank launcher; [`Nbody::new`] picks per
/// launch ([`auto_block`]).
pub const DEFAULT_BLOCK: u32 = 256;

/// Steps recorded in one CUDA graph at most (a run replays it, then launches the rest plainly).
pub const GRAPH_STEPS: u64 = 8;

/// The block the launcher picks for an `n`-body stage with split `shift` on a GPU of `sms`
/// multiprocessors, for a kernel that launches at most `max` threads per block. Candidates: 512,
/// 256, 128 and 64 threads, and 1024 for one lane per body (`shift = 0`) when `max` allows it.
/// Each puts `ceil(blocks / sms) · block` threads of the grid of `n·2^shift` on the busiest
/// multiprocessor (the tail of the last wave); the pick is the largest block within 1/32 of the
/// least such load (bigger tiles, fewer barriers per pair term: a smaller block costs more than
/// a tail shorter by 2%). H100 (`bench/results/nbody-exact-onetest-2026-11-27.md`): at N =
/// 393,216 and 524,288 the least load alone picked 64 threads (2% less tail), 2–11% slower
/// than 512 in every mode; 1024 where its tail ties (one block per SM instead of two), f32 +1.5
/// to +2% exact and +3% fast over 512 at N = 262,144 … 524,288, but −23% at 200,000, where its
/// tail is a third longer. N = 1024 with 32 lanes gets 256 (128 blocks: one per SM), N = 4,096
/// … 131,072 512. The caller clamps it to the kernel's limit.
pub fn auto_block(n: u32, shift: u32, sms: u32, max: u32) -> u32 {
    let threads = ((n as u64) << shift).max(1);
    let sms = sms.max(1) as u64;
    let load = |b: u64| threads.div_ceil(b).div_ceil(sms) * b;
    let first = if shift == 0 && max >= 1024 { 0 } else { 1 };
    let candidates = &[1024u64, 512, 256, 128, 64][first..];
    let least = candidates.iter().map(|&b| load(b)).min().unwrap_or(1);
    let pick = candidates.iter().find(|&&b| load(b) * 32 <= least * 33).copied().unwrap_or(512);
    pick as u32
}

/// Device bytes for `n` bodies in `T`: state, three stage accelerations, two stage buffers.
pub fn device_bytes<T>(n: usize) -> u64 {
    (n as u64).saturating_mul(28 * std::mem::size_of::<T>() as u64)
}

pub use crate::launch::ensure_fits;

/// A system on the device with its RK4 scratch.
pub struct DeviceSystem<T: DeviceCopy> {
    n: u32,
    x: DeviceBuffer<T>,
    v: DeviceBuffer<T>,
    k: DeviceBuffer<T>,
    a: DeviceBuffer<T>,
    b: DeviceBuffer<T>,
}

impl<T: NbodyFloat> DeviceSystem<T> {
    /// Validates `s` and `p`, checks device memory, and uploads.
    pub fn upload(gpu: &Gpu, p: &Params<T>, s: &System<T>) -> Result<Self> {
        validate(p, s)?;
        let n = s.len();
        let (free, _) = gpu.memory_info()?;
        ensure_fits("device memory needed for the bodies (bytes)", device_bytes::<T>(n), free as u64)?;
        let zeros = |len: usize| zeroed::<T>(len);
        Ok(DeviceSystem {
            n: n as u32,
            x: upload(&s.pos)?,
            v: upload(&s.vel)?,
            k: zeros(12 * n)?,
            a: zeros(4 * n)?,
            b: zeros(4 * n)?,
        })
    }

    /// Number of bodies.
    pub fn len(&self) -> usize {
        self.n as usize
    }

    /// Whether there are no bodies (never: upload refuses N = 0).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Copies the state back into `s` (which must have this many bodies).
    pub fn download(&self, gpu: &Gpu, s: &mut System<T>) -> Result<()> {
        gpu.synchronize()?;
        expect_len("positions", s.pos.len(), 4 * self.len())?;
        expect_len("velocities", s.vel.len(), 4 * self.len())?;
        self.x.copy_to(&mut s.pos[..]).map_err(cuda("cuMemcpyDtoH"))?;
        self.v.copy_to(&mut s.vel[..]).map_err(cuda("cuMemcpyDtoH"))
    }
}

/// Position of a kernel in `NbodySet::stages`.
fn kernel_index(method: Method, mode: Mode) -> usize {
    2 * (method == Method::Shared) as usize + (mode == Mode::Fast) as usize
}

/// `(n, stage, g, eps2, h, src, x, v, k, dst)`: one RK4 stage; the kernels of one float type
/// (global, global fast, shared, shared fast).
type Stages<'g, T> = [Kernel<
    'g,
    (u32, u32, T, T, T, DevicePointer<T>, DevicePointer<T>, DevicePointer<T>, DevicePointer<T>, DevicePointer<T>),
>; 4];

/// `(n, first, count, shift, stage, g, eps2, h, src, x, v, k, dst)`: one RK4 stage of bodies
/// `first..first + count` with the pair sum split over `2^shift` lanes (`nbody_split_*`).
pub(crate) type SplitStage<'g, T> = Kernel<
    'g,
    (
        u32,
        u32,
        u32,
        u32,
        u32,
        T,
        T,
        T,
        DevicePointer<T>,
        DevicePointer<T>,
        DevicePointer<T>,
        DevicePointer<T>,
        DevicePointer<T>,
    ),
>;

/// The split kernel of `T` and `mode` (the rank launcher uses the exact one).
pub(crate) fn split_kernel<T: NbodyFloat>(gpu: &Gpu, mode: Mode) -> Result<SplitStage<'_, T>> {
    gpu.kernel(match (T::NAME, mode) {
        ("f32", Mode::Exact) => "nbody_split_f32",
        ("f32", Mode::Fast) => "nbody_split_f32_fast",
        (_, Mode::Exact) => "nbody_split_f64",
        (_, Mode::Fast) => "nbody_split_f64_fast",
    })
}

/// The split kernels of `T` that wait for the grids before them (`nbody_split_pdl_*`, exact and
/// fast), or `None` where the loaded module lacks them (they exist in the sm_90 cubin alone).
fn waiting_split_kernels<T: NbodyFloat>(gpu: &Gpu) -> Result<Option<[SplitStage<'_, T>; 2]>> {
    let (exact, fast) = match T::NAME {
        "f32" => ("nbody_split_pdl_f32", "nbody_split_pdl_f32_fast"),
        _ => ("nbody_split_pdl_f64", "nbody_split_pdl_f64_fast"),
    };
    Ok(gpu.kernel_if_loaded(exact)?.zip(gpu.kernel_if_loaded(fast)?).map(|(e, f)| [e, f]))
}

/// The kernels of one float type: the four stage kernels and the split ones (exact, fast), the
/// latter also as kernels that wait for the stage before them where the module has them, with
/// each one's largest block (a multiple of 32) on this GPU.
pub(crate) struct NbodySet<'g, T: DeviceCopy> {
    stages: Stages<'g, T>,
    split: [SplitStage<'g, T>; 2],
    split_waiting: Option<[SplitStage<'g, T>; 2]>,
    stage_max: [u32; 4],
    split_max: [u32; 2],
    /// The largest block both waiting kernels take: they hold more registers (what their
    /// finish reads, loaded early), so a larger block keeps the portable kernels and full edges.
    waiting_max: u32,
}

crate::kernel::family!(NbodyKernels: Nbody holds NbodySet { f32: f32s, f64: f64s });

/// The largest block (a multiple of 32, ≤ 1024) `f` can be launched with on this GPU
/// ([`Kernel::max_threads`], rounded down to whole warps).
fn max_block<A: crate::kernel::KernelArgs>(gpu: &Gpu, f: &Kernel<'_, A>) -> Result<u32> {
    gpu.bind()?;
    Ok(f.max_threads()?.min(1024) / 32 * 32)
}

impl<'g, T: NbodyFloat> NbodySet<'g, T> {
    fn load(gpu: &'g Gpu, names: [&'static str; 4]) -> Result<Self> {
        let stages = [gpu.kernel(names[0])?, gpu.kernel(names[1])?, gpu.kernel(names[2])?, gpu.kernel(names[3])?];
        let split = [split_kernel::<T>(gpu, Mode::Exact)?, split_kernel::<T>(gpu, Mode::Fast)?];
        let mut stage_max = [0; 4];
        for (m, f) in stage_max.iter_mut().zip(&stages) {
            *m = max_block(gpu, f)?;
        }
        let split_waiting = waiting_split_kernels::<T>(gpu)?;
        let (mut split_max, mut waiting_max) = ([0; 2], 1024);
        for i in 0..2 {
            split_max[i] = max_block(gpu, &split[i])?;
            if let Some(w) = &split_waiting {
                waiting_max = waiting_max.min(max_block(gpu, &w[i])?);
            }
        }
        Ok(NbodySet { stages, split, split_waiting, stage_max, split_max, waiting_max })
    }
}

/// The N-body kernels, loaded and ready.
pub struct Nbody<'g> {
    gpu: &'g Gpu,
    block: Option<u32>,
    shift: Option<u32>,
    graphs: bool,
    programmatic: bool,
    sms: u32,
    f32s: NbodySet<'g, f32>,
    f64s: NbodySet<'g, f64>,
}

impl<'g> Nbody<'g> {
    /// Looks up the kernels; the block is picked per launch from N and the GPU ([`auto_block`]).
    pub fn new(gpu: &'g Gpu) -> Result<Self> {
        let sms = gpu.attribute(DeviceAttribute::MultiprocessorCount)?.max(1) as u32;
        Ok(Nbody {
            gpu,
            block: None,
            shift: None,
            graphs: true,
            programmatic: true,
            sms,
            f32s: NbodySet::load(
                gpu,
                ["nbody_global_f32", "nbody_global_f32_fast", "nbody_shared_f32", "nbody_shared_f32_fast"],
            )?,
            f64s: NbodySet::load(
                gpu,
                ["nbody_global_f64", "nbody_global_f64_fast", "nbody_shared_f64", "nbody_shared_f64_fast"],
            )?,
        })
    }

    /// As [`Nbody::new`] with `threads` per block (= bodies per tile) for every launch: a
    /// multiple of 32 up to 1024.
    pub fn with_block_size(gpu: &'g Gpu, threads: u32) -> Result<Self> {
        let block = crate::launch::block_size(threads)?;
        Ok(Nbody { block: Some(block), ..Self::new(gpu)? })
    }

    /// Sums every body's pairs over `2^shift` lanes (0 ≤ shift ≤ 5) whatever N is, instead of
    /// [`split_shift`]`(N)`: another summation order, so other bits — the CPU twin's
    /// [`crate::nbody::run_seq_split`] follows it. For tests and benchmarks of each split.
    pub fn with_split_shift(self, shift: u32) -> Result<Self> {
        if shift > MAX_SPLIT_SHIFT {
            return Err(invalid(
                "split shift",
                format!("{shift}: use 0 to {MAX_SPLIT_SHIFT} (1 to 32 lanes per body)"),
            ));
        }
        Ok(Nbody { shift: Some(shift), ..self })
    }

    /// Whether multi-step runs replay CUDA graphs (default `true`; same bits either way).
    pub fn with_graphs(self, graphs: bool) -> Self {
        Nbody { graphs, ..self }
    }

    /// Whether split stages launch the kernels that wait for the stage before them and overlap
    /// it (programmatic launches), where the module has them (default `true`; same bits either
    /// way). For benchmarks of the overlap's worth.
    pub fn with_programmatic_launch(self, programmatic: bool) -> Self {
        Nbody { programmatic, ..self }
    }

    /// Whether split stages launch the kernels that wait for the stage before them (the module
    /// has them and [`Nbody::with_programmatic_launch`] left it on).
    pub fn programmatic_launch<T: NbodyFloat>(&self) -> bool {
        self.programmatic && T::pick(self).split_waiting.is_some()
    }

    /// Whether a stage of `n` bodies launched with `block` threads overlaps the stage before it:
    /// [`Nbody::programmatic_launch`], the pair sum split (`S > 1`), a block the waiting kernels
    /// can launch (they hold more registers than the portable ones), and a grid of at most one
    /// block per multiprocessor. A larger grid keeps full edges: the blocks of a stage launched
    /// early land unevenly on the multiprocessors as the stage before retires (H100, N = 4,096
    /// f32 fast, three blocks fit a multiprocessor: 93.5 µs per step overlapped against 67.6
    /// with full edges; `bench/results/nbody-pdl-2026-11-26.md`).
    pub fn overlaps<T: NbodyFloat>(&self, n: usize, block: u32) -> bool {
        let shift = self.shift_for(n);
        let threads = (n as u64) << shift;
        self.programmatic_launch::<T>()
            && shift > 0
            && block <= T::pick(self).waiting_max
            && threads.div_ceil(block.max(1) as u64) <= self.sms as u64
    }

    /// The fixed threads per block, or `None` when the launcher picks per launch.
    pub fn block_size(&self) -> Option<u32> {
        self.block
    }

    /// The split shift used for `n` bodies: the fixed one, else [`split_shift`]`(n)`.
    pub fn shift_for(&self, n: usize) -> u32 {
        self.shift.unwrap_or_else(|| split_shift(n.min(u32::MAX as usize) as u32))
    }

    /// The largest block size (a multiple of 32) this GPU can launch the `T` kernels of
    /// `method`/`mode` with (the method's own kernel and the split kernel of `mode`): registers
    /// per thread can make it less than 1024 (the tiled f64 kernels need more than 64).
    pub fn max_block_size<T: NbodyFloat>(&self, method: Method, mode: Mode) -> Result<u32> {
        let set = T::pick(self);
        Ok(set.stage_max[kernel_index(method, mode)].min(set.split_max[(mode == Mode::Fast) as usize]))
    }

    /// The block a stage of `n` bodies launches with: the fixed one (refused when more than
    /// [`Nbody::max_block_size`]), else [`auto_block`] clamped to the launched kernel's limit.
    pub fn block_for<T: NbodyFloat>(&self, method: Method, mode: Mode, n: usize) -> Result<u32> {
        let shift = self.shift_for(n);
        let set = T::pick(self);
        match self.block {
            Some(block) => {
                let max = self.max_block_size::<T>(method, mode)?;
                if block > max {
                    return Err(invalid(
                        "block size",
                        format!(
                            "{block} threads per block, but the {} {method:?} {mode:?} kernels run at most {max} per block on this GPU (registers); use {max} or less",
                            T::NAME
                        ),
                    ));
                }
                Ok(block)
            }
            None => {
                let max = if shift > 0 {
                    set.split_max[(mode == Mode::Fast) as usize]
                } else {
                    set.stage_max[kernel_index(method, mode)]
                };
                Ok(auto_block(n.min(u32::MAX as usize) as u32, shift, self.sms, max).min(max.max(32)))
            }
        }
    }

    /// Enqueues RK4 stage `stage` (0..4) on `dev`. Four stages in order make one step.
    pub fn stage_on_device<T: NbodyFloat>(
        &self,
        method: Method,
        mode: Mode,
        p: &Params<T>,
        stage: u32,
        dev: &mut DeviceSystem<T>,
    ) -> Result<()> {
        if stage >= STAGES {
            return Err(invalid("RK4 stage", format!("{stage}: stages are 0..4")));
        }
        validate_params(p)?;
        let block = self.block_for::<T>(method, mode, dev.len())?;
        self.enqueue_stage(method, mode, p, stage, dev, block, &mut Target::Stream)
    }

    /// Enqueues stage `stage` with `block` threads per block (checked by the caller) to `to`:
    /// the stream, or a graph being recorded. `dev` is only read here (its buffers' addresses);
    /// the public callers hold it exclusively.
    #[allow(clippy::too_many_arguments)]
    fn enqueue_stage<T: NbodyFloat>(
        &self,
        method: Method,
        mode: Mode,
        p: &Params<T>,
        stage: u32,
        dev: &DeviceSystem<T>,
        block: u32,
        to: &mut Target<'_>,
    ) -> Result<()> {
        let n = dev.n;
        let shift = self.shift_for(dev.len());
        let (g, eps2, h) = (p.g, p.eps2(), p.dt);
        let (x, v, k): (DevicePointer<T>, DevicePointer<T>, DevicePointer<T>) =
            (dev.x.as_device_ptr(), dev.v.as_device_ptr(), dev.k.as_device_ptr());
        let (a, b) = (dev.a.as_device_ptr(), dev.b.as_device_ptr());
        // Stage 0 reads x and writes a; 1 reads a, writes b; 2 reads b, writes a; 3 reads a and
        // updates x, v (dst b unused). The read buffer is never a written one.
        let (src, dst) = match stage {
            0 => (x, a),
            1 => (a, b),
            2 => (b, a),
            _ => (a, b),
        };
        let set = T::pick(self);
        if shift == 0 {
            let f = &set.stages[kernel_index(method, mode)];
            let grid = Grid1d::for_len(n as u64, block)?;
            // SAFETY: parameters mirror `(n, stage, g, eps2, h, src, x, v, k, dst)` of the kernels;
            // x, v, a, b hold n bodies and k 3n, 256-byte aligned (cuMemAlloc); src differs from
            // every written buffer (table above); the block is a multiple of 32 up to the kernel's
            // limit ≤ 1024 = the tile limit (block_for); stage < 4 was checked.
            unsafe { f.launch_to(self.gpu, to, grid, 0, (n, stage, g, eps2, h, src, x, v, k, dst)) }
        } else {
            let fast = (mode == Mode::Fast) as usize;
            // A programmatic edge only with the `_pdl_` kernels (they wait for the grids before
            // them before any memory access), and only where `overlaps` says it pays.
            let (f, edge) = match &set.split_waiting {
                Some(waiting) if self.overlaps::<T>(dev.len(), block) => (&waiting[fast], Edge::Programmatic),
                _ => (&set.split[fast], Edge::Full),
            };
            let grid = Grid1d::for_len((n as u64) << shift, block)?;
            // SAFETY: parameters mirror `(n, first, count, shift, stage, g, eps2, h, src, x, v,
            // k, dst)` of the split kernels, a whole system (first = 0, count = n); buffers as
            // above; shift ≤ 5 (split_shift, with_split_shift); the block is a multiple of 32 up
            // to the kernel's limit ≤ 1024 (block_for), so ≥ 2^shift; stage < 4 was checked.
            unsafe {
                f.launch_after(self.gpu, to, edge, grid, 0, (n, 0, n, shift, stage, g, eps2, h, src, x, v, k, dst))
            }
        }
    }

    /// Enqueues one RK4 step (four stages).
    pub fn step_on_device<T: NbodyFloat>(
        &self,
        method: Method,
        mode: Mode,
        p: &Params<T>,
        dev: &mut DeviceSystem<T>,
    ) -> Result<()> {
        validate_params(p)?;
        self.enqueue_steps(method, mode, p, dev, 1, None)
    }

    /// Records `steps` (≥ 1) RK4 steps on `dev` into a CUDA graph (nothing runs yet): each
    /// [`RecordedSteps::launch`] then enqueues all of them with one driver call — the same
    /// launches as [`Nbody::step_on_device`] `steps` times, so the same bits. `dev` stays
    /// borrowed while the recording lives (its buffers are what the recording uses).
    pub fn record_steps<'a, T: NbodyFloat>(
        &'a self,
        method: Method,
        mode: Mode,
        p: &Params<T>,
        dev: &'a DeviceSystem<T>,
        steps: u64,
    ) -> Result<RecordedSteps<'a, T>> {
        if steps == 0 {
            return Err(invalid("recorded steps", "0 steps: record at least 1".into()));
        }
        validate_params(p)?;
        let block = self.block_for::<T>(method, mode, dev.len())?;
        let graph = self.gpu.record(|recorder| {
            let mut to = Target::Graph(recorder);
            for _ in 0..steps {
                for stage in 0..STAGES {
                    self.enqueue_stage(method, mode, p, stage, dev, block, &mut to)?;
                }
            }
            Ok(())
        })?;
        Ok(RecordedSteps { graph, _dev: dev, steps })
    }

    /// Enqueues `steps` RK4 steps: with graphs on and `steps ≥ 2`, records
    /// `min(steps, GRAPH_STEPS)` steps once and replays the recording, the remainder launched
    /// plainly (the same launches either way, so the same bits).
    pub fn steps_on_device<T: NbodyFloat>(
        &self,
        method: Method,
        mode: Mode,
        p: &Params<T>,
        dev: &mut DeviceSystem<T>,
        steps: u64,
    ) -> Result<()> {
        validate_params(p)?;
        let recorded = self.recording(method, mode, p, dev, steps);
        self.enqueue_steps(method, mode, p, dev, steps, recorded.as_ref())
    }

    /// The recording runs of `steps` steps at a time replay: [`Nbody::record_steps`] of
    /// `min(steps, GRAPH_STEPS)` steps with graphs on and `steps ≥ 2`, else `None` — also when
    /// the driver cannot record (a driver without the graph API, a tool that refuses graphs):
    /// graphs only save launch time, so the run goes on with plain launches, which give the
    /// same bits and report any launch error themselves.
    fn recording<'a, T: NbodyFloat>(
        &'a self,
        method: Method,
        mode: Mode,
        p: &Params<T>,
        dev: &'a DeviceSystem<T>,
        steps: u64,
    ) -> Option<RecordedSteps<'a, T>> {
        if !self.graphs || steps < 2 {
            return None;
        }
        self.record_steps(method, mode, p, dev, steps.min(GRAPH_STEPS)).ok()
    }

    /// Enqueues `steps` steps: as many replays of `recorded` as fit, the rest plainly.
    fn enqueue_steps<T: NbodyFloat>(
        &self,
        method: Method,
        mode: Mode,
        p: &Params<T>,
        dev: &DeviceSystem<T>,
        steps: u64,
        recorded: Option<&RecordedSteps<'_, T>>,
    ) -> Result<()> {
        let block = self.block_for::<T>(method, mode, dev.len())?;
        let mut left = steps;
        if let Some(r) = recorded {
            while left >= r.steps {
                r.launch()?;
                left -= r.steps;
            }
        }
        for _ in 0..left {
            for stage in 0..STAGES {
                self.enqueue_stage(method, mode, p, stage, dev, block, &mut Target::Stream)?;
            }
        }
        Ok(())
    }

    /// Advances `s` by `steps` RK4 steps on the GPU.
    pub fn run<T: NbodyFloat>(
        &self,
        method: Method,
        mode: Mode,
        p: &Params<T>,
        s: &mut System<T>,
        steps: u64,
    ) -> Result<()> {
        self.run_observed(method, mode, p, s, steps, steps.max(1), |_, _| Ok(()))
    }

    /// As [`Nbody::run`], copying the state back every `every` steps (and at the end) and
    /// calling `observe(step, state)`; an error from `observe` stops the run.
    #[allow(clippy::too_many_arguments)]
    pub fn run_observed<T: NbodyFloat>(
        &self,
        method: Method,
        mode: Mode,
        p: &Params<T>,
        s: &mut System<T>,
        steps: u64,
        every: u64,
        mut observe: impl FnMut(u64, &System<T>) -> Result<()>,
    ) -> Result<()> {
        if every == 0 {
            return Err(invalid("observation interval", "0 steps: use at least 1".into()));
        }
        let dev = DeviceSystem::upload(self.gpu, p, s)?;
        self.block_for::<T>(method, mode, dev.len())?;
        // One recording for the whole run (chunks of `every` steps replay it).
        let recorded = self.recording(method, mode, p, &dev, every.min(steps));
        let mut done = 0;
        while done < steps {
            let chunk = every.min(steps - done);
            self.enqueue_steps(method, mode, p, &dev, chunk, recorded.as_ref())?;
            done += chunk;
            dev.download(self.gpu, s)?;
            observe(done, s)?;
        }
        Ok(())
    }
}

/// RK4 steps recorded as a CUDA graph ([`Nbody::record_steps`]), borrowing the system whose
/// buffers they use.
pub struct RecordedSteps<'a, T: DeviceCopy> {
    graph: Graph<'a>,
    _dev: &'a DeviceSystem<T>,
    steps: u64,
}

impl<T: DeviceCopy> RecordedSteps<'_, T> {
    /// The steps one launch runs.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Enqueues the recorded steps on the GPU's stream.
    pub fn launch(&self) -> Result<()> {
        // SAFETY: the recording launches the stage kernels on `_dev`'s buffers, which the
        // borrow keeps allocated (and unreplaced) while `self` lives; every other condition of
        // those launches was checked when they were recorded and depends on nothing that changed.
        unsafe { self.graph.launch() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_block_fills_the_gpu_with_the_largest_tile() {
        assert_eq!(auto_block(1024, 5, 132, 1024), 256); // 128 blocks, one per SM
        assert_eq!(auto_block(4096, 5, 132, 1024), 512); // 256 blocks, two waves of 512 either way
        assert_eq!(auto_block(1, 5, 132, 1024), 64); // one warp of work: the smallest block
        // One lane per body: 1024 where the tail ties with 512 and the kernel can launch it.
        assert_eq!(auto_block(262_144, 0, 132, 1024), 1024); // 2 × 1024 = 4 × 512 per SM
        assert_eq!(auto_block(524_288, 0, 132, 1024), 1024); // 64 would carry 1.6% less
        assert_eq!(auto_block(393_216, 0, 132, 1024), 1024); // 64 would carry 2.1% less
        assert_eq!(auto_block(393_216, 0, 132, 640), 512);
        assert_eq!(auto_block(150_000, 0, 132, 1024), 128); // 512 would carry a third more
        assert_eq!(auto_block(262_144, 0, 132, 640), 512); // the f64 tiled kernels' registers
        assert_eq!(auto_block(200_000, 0, 132, 1024), 512); // 2 × 1024 against 3 × 512 per SM
        assert_eq!(auto_block(1000, 0, 0, 1024), 1024); // no SM count: one "SM", largest block
        assert_eq!(auto_block(1000, 0, 0, 512), 512);
    }
}
