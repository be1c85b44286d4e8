//! The Himeno benchmark's Jacobi sweep (himenoBMTxpa.c, f32): the pressure field is the same
//! bits on every [`Backend`] after any number of sweeps; gosa by a grid-independent two-level
//! tree is too (`gosa_tree`).

mod cpu;
#[cfg(feature = "gpu")]
mod gpu;
mod problem;

pub use cpu::{HimenoResult, himeno_par, himeno_seq};
#[cfg(feature = "gpu")]
pub use gpu::{HIMENO_MARCH_PLANES, HIMENO_PLANES, Himeno, HimenoDevice, HimenoSweep};
pub use lockstep_shared::himeno::{BYTES_PER_POINT, FLOPS_PER_POINT, gosa_via, interior};
pub use problem::{HIMENO_MAX_MI, HimenoProblem, grid_of};

use crate::{Backend, Result};

/// The pressure after `iterations` sweeps and the last sweep's gosa by the two-level tree:
/// the same bits on every backend. Errors: what [`HimenoProblem::check`] refuses.
pub fn run(backend: Backend<'_>, problem: &HimenoProblem, iterations: u32) -> Result<(Vec<f32>, f32)> {
    match backend {
        Backend::CpuSeq => himeno_seq(problem, iterations).map(|r| (r.p, r.gosa_tree)),
        Backend::Cpu => himeno_par(problem, iterations).map(|r| (r.p, r.gosa_tree)),
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => Himeno::new(gpu)?.himeno(problem, iterations, gosa_via::TREE, (128, 2)),
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}
