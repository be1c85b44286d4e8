//! Launchers for `crates/kernels/src/nbody.rs`: RK4 N-body steps on the GPU, global-memory or
//! shared-memory tiled, exact (bit-identical to [`crate::nbody::cpu`]) or fast.
//!
//! State layout (host and device): `pos` holds `x, y, z, m` per body, `vel` holds
//! `vx, vy, vz, w` (`w` is carried along untouched; 0 by convention). One step is four stage
//! launches (see the kernel module); scratch on the device is three stage accelerations and two
//! stage-position buffers, `28·n·size_of::<T>()` bytes in all.

use super::problem::{Method, Mode, NbodyFloat, NbodyKernels, Params, System, invalid, validate, validate_params};
use crate::error::{Result, cuda};
use crate::gpu::Gpu;
use crate::gpu::{upload, zeroed};
use crate::kernel::Kernel;
use crate::launch::{Grid1d, expect_len};
use cust::function::FunctionAttribute;
use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy, DevicePointer};
use lockstep_shared::nbody::STAGES;

/// Threads per block (and bodies per tile) unless the caller chooses.
pub const DEFAULT_BLOCK: u32 = 256;

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

/// Position of a kernel in `Nbody::f32s` / `f64s`.
fn kernel_index(method: Method, mode: Mode) -> usize {
    2 * (method == Method::Shared) as usize + (mode == Mode::Fast) as usize
}

/// `(n, stage, g, eps2, h, src, x, v, k, dst)`: one RK4 stage; the kernels of one float type
/// (global, global fast, shared, shared fast).
type Stages<'g, T> = [Kernel<
    'g,
    (u32, u32, T, T, T, DevicePointer<T>, DevicePointer<T>, DevicePointer<T>, DevicePointer<T>, DevicePointer<T>),
>; 4];

crate::kernel::family!(NbodyKernels: Nbody holds Stages { f32: f32s, f64: f64s });

/// The N-body kernels, loaded and ready.
pub struct Nbody<'g> {
    gpu: &'g Gpu,
    block: u32,
    f32s: Stages<'g, f32>,
    f64s: Stages<'g, f64>,
}

impl<'g> Nbody<'g> {
    /// Looks up the eight kernels; [`DEFAULT_BLOCK`] threads per block.
    pub fn new(gpu: &'g Gpu) -> Result<Self> {
        Self::with_block_size(gpu, DEFAULT_BLOCK)
    }

    /// As [`Nbody::new`] with `threads` per block (= bodies per tile): a multiple of 32 up to 1024.
    pub fn with_block_size(gpu: &'g Gpu, threads: u32) -> Result<Self> {
        let block = crate::launch::block_size(threads)?;
        Ok(Nbody {
            gpu,
            block,
            f32s: [
                gpu.kernel("nbody_global_f32")?,
                gpu.kernel("nbody_global_f32_fast")?,
                gpu.kernel("nbody_shared_f32")?,
                gpu.kernel("nbody_shared_f32_fast")?,
            ],
            f64s: [
                gpu.kernel("nbody_global_f64")?,
                gpu.kernel("nbody_global_f64_fast")?,
                gpu.kernel("nbody_shared_f64")?,
                gpu.kernel("nbody_shared_f64_fast")?,
            ],
        })
    }

    /// Threads per block (bodies per tile).
    pub fn block_size(&self) -> u32 {
        self.block
    }

    /// The largest block size (a multiple of 32) this GPU can launch the `T` kernel of
    /// `method`/`mode` with: registers per thread can make it less than 1024 (the tiled f64
    /// kernel needs more than 64).
    pub fn max_block_size<T: NbodyFloat>(&self, method: Method, mode: Mode) -> Result<u32> {
        let f = T::pick(self)[kernel_index(method, mode)].function();
        self.gpu.bind()?;
        let max = f.get_attribute(FunctionAttribute::MaxThreadsPerBlock).map_err(cuda("cuFuncGetAttribute"))?;
        Ok((max.clamp(0, 1024) as u32) / 32 * 32)
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
        let max = self.max_block_size::<T>(method, mode)?;
        if self.block > max {
            return Err(invalid(
                "block size",
                format!(
                    "{} threads per block, but the {} {method:?} {mode:?} kernel runs at most {max} per block on this GPU (registers); use {max} or less",
                    self.block,
                    T::NAME
                ),
            ));
        }
        let f = &T::pick(self)[kernel_index(method, mode)];
        let grid = Grid1d::for_len(dev.n as u64, self.block)?;
        let n = dev.n;
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
        // SAFETY: parameters mirror `(n: u32, stage: u32, g: T, eps2: T, h: T, src, x, v, k, dst)`
        // of the kernels; x, v, a, b hold 4n scalars (n bodies) and k 12n (3n bodies), allocated
        // 256-byte aligned by cuMemAlloc; src differs from every written buffer (table above);
        // the block is a multiple of 32 up to 1024 = the tile limit; stage < 4 was checked.
        unsafe { f.launch(self.gpu, grid, 0, (n, stage, g, eps2, h, src, x, v, k, dst)) }
    }

    /// Enqueues one RK4 step (four stages).
    pub fn step_on_device<T: NbodyFloat>(
        &self,
        method: Method,
        mode: Mode,
        p: &Params<T>,
        dev: &mut DeviceSystem<T>,
    ) -> Result<()> {
        for stage in 0..STAGES {
            self.stage_on_device(method, mode, p, stage, dev)?;
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
        let mut dev = DeviceSystem::upload(self.gpu, p, s)?;
        let mut done = 0;
        while done < steps {
            let chunk = every.min(steps - done);
            for _ in 0..chunk {
                self.step_on_device(method, mode, p, &mut dev)?;
            }
            done += chunk;
            dev.download(self.gpu, s)?;
            observe(done, s)?;
        }
        Ok(())
    }
}
