//! Launcher for `crates/kernels/src/himeno.rs`: the Himeno Jacobi sweep with its three gosa
//! reductions (plain atomics, aggregated atomics, the two-level tree).

use super::problem::HimenoProblem;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, download, upload, zero_async, zeroed};
use crate::kernel::{Kernel, Param};
use crate::launch::{Dims as LaunchDims, Grid1d, len_u32};
use cust::memory::{DeviceBuffer, DeviceCopy, DevicePointer};
use lockstep_shared::himeno::{self, OMEGA, gosa_via};

/// Default i planes per block of the sweep (see [`Himeno::with_planes`]).
pub const HIMENO_PLANES: u32 = 2;

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

/// The Himeno kernels, loaded and ready.
pub struct Himeno<'g> {
    gpu: &'g Gpu,
    planes: u32,
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

impl<'g> Himeno<'g> {
    /// Looks up the sweep and the tree's level-2 kernel.
    pub fn new(gpu: &'g Gpu) -> Result<Self> {
        Ok(Himeno {
            gpu,
            planes: HIMENO_PLANES,
            himeno_jacobi: gpu.kernel("himeno_jacobi")?,
            himeno_gosa_reduce: gpu.kernel("himeno_gosa_reduce")?,
        })
    }

    /// Sets how many consecutive i planes each block of the Himeno sweep covers (default
    /// [`HIMENO_PLANES`]; 2 and 4 load all of a thread's points before storing any).
    pub fn with_planes(mut self, planes: u32) -> Result<Self> {
        if planes == 0 || planes > 16 {
            return Err(Error::InvalidInput { what: "Himeno planes per block", why: format!("{planes}: use 1 to 16") });
        }
        self.planes = planes;
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
                zero_async(self.gpu, &mut state.gosa)?;
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
                self.himeno_jacobi.launch(
                    self.gpu,
                    dims,
                    0,
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
                    ),
                )?
            };
            if gosa == gosa_via::TREE {
                let (pp, gp) = (state.partials.as_device_ptr(), state.gosa.as_device_ptr());
                let one = Grid1d { blocks: 1, threads: himeno::LEVEL2_THREADS as u32 };
                // SAFETY: parameters mirror `(partials: *const f32, len: u32, out: *mut f32)`;
                // partials holds partial_len, out one f32; one block of LEVEL2_THREADS threads.
                unsafe { self.himeno_gosa_reduce.launch(self.gpu, one, 0, (pp, partial_len, gp))? };
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
