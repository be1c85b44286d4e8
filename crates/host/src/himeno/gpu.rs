//! Launcher for `crates/kernels/src/himeno.rs`: the Himeno Jacobi sweep with its three gosa
//! reductions (plain atomics, aggregated atomics, the two-level tree).
//!
//! Where the loaded module has the sm_90 marching sweep that waits for the sweep before it
//! (`himeno_jacobi_march_pdl`, `griddepcontrol.wait` first), every tree-gosa marching sweep
//! after a call's first launches that one, overlapping the sweep before (`crate::pdl`): its
//! blocks become resident as the sweep before retires ([`Himeno::with_programmatic_launch`]
//! turns it off; the same bits either way).

use super::problem::HimenoProblem;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, download, upload, zero_async, zeroed};
use crate::kernel::{Kernel, Param};
use crate::launch::{Dims as LaunchDims, Grid1d, len_u32};
use crate::pdl::Edge;
use cust::memory::{DeviceBuffer, DeviceCopy, DevicePointer};
use lockstep_shared::himeno::{self, OMEGA, gosa_via};

/// Default i planes per block of the per-thread sweep (see [`Himeno::with_planes`]).
pub const HIMENO_PLANES: u32 = 2;
/// Default i planes a block of the marching sweep walks through: each block also loads the two
/// planes around its run, so longer runs read less halo (`(q + 2)/q` planes of `p` per plane).
pub const HIMENO_MARCH_PLANES: u32 = 16;

/// Which kernel sweeps (see [`Himeno::with_sweep`]); the same bits either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HimenoSweep {
    /// `himeno_jacobi`: each thread computes its points of `planes` consecutive i planes, its
    /// `p` neighbours read through the caches; at most 256 threads per block (the kernel's
    /// launch bounds). The default: at 2 planes and 128×2 threads the fastest on the H100 and
    /// H200 (bench/results/himeno-bounds-2026-11-28.md).
    #[default]
    PerThread,
    /// `himeno_jacobi_march`: each block marches through `planes` consecutive i planes of its
    /// `(k, j)` tile with the pressure of three planes (plus a halo) in shared memory.
    March,
}

/// Largest dynamic shared memory of the marching sweep: four `(x + 2)·(y + 2)` f32 planes within
/// the 48 KiB a launch gets without opting in.
const MARCH_SHARED_MAX: u32 = 48 * 1024;

/// The sweep kernels' parameters: `(dims, omega, a, b, c, bnd, wrk1, p, p_out, gosa, partials,
/// prev, prev_len, sums, count)`.
type SweepParams = (
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
    DevicePointer<f32>,
    u32,
    DevicePointer<f32>,
    DevicePointer<u32>,
);

// SAFETY: `himeno::Dims` is a plain `#[repr(C)]` struct of numbers, copied bit for bit to the
// kernel's parameter space, where the kernel reads the same layout.
unsafe impl DeviceCopy for Param<himeno::Dims> {}

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
    /// Level-1 partials of the tree, two sets: a sweep writes one while its launch does level 2
    /// of the other (the previous sweep's).
    partials: [DeviceBuffer<f32>; 2],
    /// Level-2 group sums (`LEVEL2_GROUPS`).
    sums: DeviceBuffer<f32>,
    /// Level-2 groups finished in the running launch (0 between launches).
    count: DeviceBuffer<u32>,
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

/// The Himeno kernels, loaded and ready.
pub struct Himeno<'g> {
    gpu: &'g Gpu,
    /// Set by [`Himeno::with_planes`]; otherwise the sweep's default.
    planes: Option<u32>,
    sweep: HimenoSweep,
    himeno_jacobi: Kernel<'g, SweepParams>,
    himeno_jacobi_march: Kernel<'g, SweepParams>,
    /// The marching sweep that waits for the sweep before it (sm_90 cubin only).
    himeno_jacobi_march_pdl: Option<Kernel<'g, SweepParams>>,
    /// Whether marching sweeps after the first overlap the sweep before (where the module can).
    programmatic: bool,
    /// `(partials, len, sums, count, out)`.
    #[allow(clippy::type_complexity)]
    himeno_gosa_reduce:
        Kernel<'g, (DevicePointer<f32>, u32, DevicePointer<f32>, DevicePointer<u32>, DevicePointer<f32>)>,
}

impl<'g> Himeno<'g> {
    /// Looks up the sweep and the tree's level-2 kernel.
    pub fn new(gpu: &'g Gpu) -> Result<Self> {
        Ok(Himeno {
            gpu,
            planes: None,
            sweep: HimenoSweep::default(),
            himeno_jacobi: gpu.kernel("himeno_jacobi")?,
            himeno_jacobi_march: gpu.kernel("himeno_jacobi_march")?,
            himeno_jacobi_march_pdl: gpu.kernel_if_loaded("himeno_jacobi_march_pdl")?,
            programmatic: true,
            himeno_gosa_reduce: gpu.kernel("himeno_gosa_reduce")?,
        })
    }

    /// Chooses the sweep kernel (default [`HimenoSweep::PerThread`]; the same bits either way).
    pub fn with_sweep(mut self, sweep: HimenoSweep) -> Self {
        self.sweep = sweep;
        self
    }

    /// Whether marching sweeps after a call's first launch the sm_90 sweep that waits for the
    /// sweep before it and overlap it, where the module has it (default `true`; the same bits
    /// either way). For benchmarks of the overlap's worth.
    pub fn with_programmatic_launch(mut self, programmatic: bool) -> Self {
        self.programmatic = programmatic;
        self
    }

    /// Whether marching sweeps overlap the sweep before ([`Himeno::with_programmatic_launch`] on
    /// and the module has the kernel).
    pub fn programmatic_launch(&self) -> bool {
        self.programmatic && self.himeno_jacobi_march_pdl.is_some()
    }

    /// Sets how many consecutive i planes each block of the Himeno sweep covers (default
    /// [`HIMENO_PLANES`] per thread, each thread going through its points plane by plane;
    /// [`HIMENO_MARCH_PLANES`] marching, the planes a block walks through).
    pub fn with_planes(mut self, planes: u32) -> Result<Self> {
        if planes == 0 || planes > 16 {
            return Err(Error::InvalidInput { what: "Himeno planes per block", why: format!("{planes}: use 1 to 16") });
        }
        self.planes = Some(planes);
        Ok(self)
    }

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
            partials: [zeroed::<f32>(partial_len.max(1))?, zeroed::<f32>(partial_len.max(1))?],
            sums: zeroed::<f32>(himeno::LEVEL2_GROUPS)?,
            count: zeroed::<u32>(1)?,
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
        // Block z covers `planes` i planes (the kernels derive the count from gridDim.z).
        let planes = self.planes.unwrap_or(match self.sweep {
            HimenoSweep::PerThread => HIMENO_PLANES,
            HimenoSweep::March => HIMENO_MARCH_PLANES,
        });
        let dims = LaunchDims::new(
            [(mk - 2).div_ceil(bx), (mj - 2).div_ceil(by.max(1)), (mi - 2).div_ceil(planes)],
            [bx, by, 1],
        )?;
        let (kernel, shared) = match self.sweep {
            HimenoSweep::PerThread => {
                // The kernel's launch bounds (`.maxntid`, SWEEP_MAX_THREADS) and registers, as the
                // driver reports them: it would refuse a larger block.
                let max = self.himeno_jacobi.max_threads()?;
                if bx * by > max {
                    return Err(Error::InvalidInput {
                        what: "Himeno block",
                        why: format!(
                            "{bx}x{by}: the per-thread sweep takes at most {max} threads per block (its launch bounds)"
                        ),
                    });
                }
                (&self.himeno_jacobi, 0)
            }
            HimenoSweep::March => {
                // Four planes of (x + 2)·(y + 2) f32; x, y ≤ 1024 (LaunchDims checked the block).
                let bytes = 16 * (bx + 2) * (by + 2);
                if bytes > MARCH_SHARED_MAX {
                    return Err(Error::InvalidInput {
                        what: "Himeno block",
                        why: format!(
                            "{bx}x{by}: the marching sweep's four shared planes need {bytes} bytes, over \
                             {MARCH_SHARED_MAX}"
                        ),
                    });
                }
                (&self.himeno_jacobi_march, bytes)
            }
        };
        let partial_len = len_u32("gosa partials", state.partials[0].len())?;
        let tree = gosa == gosa_via::TREE;
        let kdims = himeno::Dims { mi, mj, mk, gosa_via: gosa };
        let omega = OMEGA;
        let (sums, count) = (state.sums.as_device_ptr(), state.count.as_device_ptr());
        for it in 0..iterations {
            if !tree {
                // The atomics accumulate into gosa; the tree's level 2 overwrites it.
                zero_async(self.gpu, &mut state.gosa)?;
            }
            let (src, dst) = (state.current, 1 - state.current);
            // Sweep `it` writes partials[it % 2] and does level 2 of sweep it − 1's.
            let (part, prev) = (it as usize % 2, 1 - it as usize % 2);
            let prev_len = if tree && it > 0 { partial_len } else { 0 };
            let ptrs = [
                state.a.as_device_ptr(),
                state.b.as_device_ptr(),
                state.c.as_device_ptr(),
                state.bnd.as_device_ptr(),
                state.wrk1.as_device_ptr(),
                state.p[src].as_device_ptr(),
                state.p[dst].as_device_ptr(),
                state.gosa.as_device_ptr(),
                state.partials[part].as_device_ptr(),
                state.partials[prev].as_device_ptr(),
            ];
            // Parameters mirror `(dims: Dims, omega: f32, a, b, c, bnd, wrk1, p, p_out, gosa,
            // partials, prev, prev_len, sums, count)`; partials and prev (the other set) have
            // (mi−2)(mj−2)·chunks_per_row(mk) slots each; sums has LEVEL2_GROUPS, count one u32
            // left at 0 by the previous launch's last group; the marching sweep gets its four
            // shared planes, 16·(x + 2)·(y + 2) bytes.
            // After the first sweep, the marching sweep that waits for the one before (same
            // parameters, same body), overlapping it.
            let (kernel, edge) = match (&self.himeno_jacobi_march_pdl, self.sweep) {
                (Some(pdl), HimenoSweep::March) if self.programmatic && tree && it > 0 => (pdl, Edge::Programmatic),
                _ => (kernel, Edge::Full),
            };
            // SAFETY: that; every array was uploaded with the lengths `HimenoProblem::check`
            // verified for these extents; p and p_out are the two distinct buffers; blockDim.x is
            // a multiple of 32, z is 1; programmatic only with the `_pdl` kernel.
            unsafe {
                kernel.launch_after(
                    self.gpu,
                    &mut crate::graph::Target::Stream,
                    edge,
                    dims,
                    shared,
                    (
                        Param(kdims),
                        omega,
                        ptrs[0],
                        ptrs[1],
                        ptrs[2],
                        ptrs[3],
                        ptrs[4],
                        ptrs[5],
                        ptrs[6],
                        ptrs[7],
                        ptrs[8],
                        ptrs[9],
                        prev_len,
                        sums,
                        count,
                    ),
                )?
            };
            state.current = dst;
        }
        if tree && iterations > 0 {
            // Level 2 of the last sweep, on its own.
            let last = (iterations as usize - 1) % 2;
            let (pp, gp) = (state.partials[last].as_device_ptr(), state.gosa.as_device_ptr());
            let groups = Grid1d { blocks: himeno::LEVEL2_GROUPS as u32, threads: himeno::LEVEL2_LANES as u32 };
            // SAFETY: parameters mirror `(partials: *const f32, len: u32, sums, count, out)`;
            // partials holds partial_len, sums LEVEL2_GROUPS, count one u32 at 0, out one f32;
            // LEVEL2_GROUPS blocks of one dimension.
            unsafe { self.himeno_gosa_reduce.launch(self.gpu, groups, 0, (pp, partial_len, sums, count, gp))? };
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
