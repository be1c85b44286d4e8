//! The Brownian bridge (NAG's algorithm): a [`Plan`] built once from a [`BridgeSpec`], then
//! paths or increments from a [`Source`] of normals, on any [`Backend`] with the
//! same bits.
//!
//! Output layout `[step][dim][path]` (`(N+1)·d·paths` values). The CPU twin is
//! [`generate_seq`] / [`generate_par`]; the GPU launcher is `Bridge` (feature `gpu`); [`generate`] picks one.
//! [`generate_range`] gives paths `first..first + count` of a run alone (chunks of a run larger
//! than memory), with the same bits. [`pitch`] gives the row stride at which the GPU kernels run
//! as fast as at the best path counts, for any count (generate `pitch(paths)` paths, read
//! `paths` columns).

mod cpu;
pub mod dist;
#[cfg(feature = "gpu")]
mod gpu;
#[cfg(feature = "gpu")]
mod launch;
mod plan;
mod problem;
mod range;
mod schedule;

pub use cpu::{
    generate_par, generate_par_stoppable, generate_par_with_progress, generate_range_par_stoppable, generate_range_seq,
    generate_seq, normals_seq,
};
#[cfg(feature = "gpu")]
pub use gpu::{Bridge, DEFAULT_BLOCK, DevicePlan, DeviceSource, QuadsKernel, Variant};
pub use plan::{BridgeSpec, Noise, Plan, Precision, Tables, bisection_order, first_then_bisection, forward_order};
pub use problem::{
    Output, PITCH_BYTES, SOBOL_MAX_DIMS, Source, check_generation, check_range, pitch, sobol_directions,
};
pub use range::{generate_range, generate_range_into};

use crate::{Backend, Result};

/// `paths` bridge paths (or their increments) of `plan` from `source` on `backend`: the same
/// bits on every backend. Errors: invalid sizes or sources, as [`check_generation`] says, and
/// (GPU) driver failures.
pub fn generate<T: Precision>(
    backend: Backend<'_>,
    plan: &Plan,
    source: Source<'_, T>,
    paths: usize,
    output: Output,
) -> Result<Vec<T>> {
    match backend {
        Backend::CpuSeq => generate_seq(plan, source, paths, output),
        Backend::Cpu => generate_par(plan, source, paths, output),
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => Bridge::new(gpu)?.generate(plan, source, paths, output),
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}

/// The normals alone (`rows·paths`, `[row][path]`) that `source` feeds the bridge of `plan`, on
/// `backend`: the same bits on every backend (`Source::Buffer` is returned as it is).
pub fn normals<T: Precision>(backend: Backend<'_>, plan: &Plan, source: Source<'_, T>, paths: usize) -> Result<Vec<T>> {
    match backend {
        Backend::CpuSeq | Backend::Cpu => normals_seq(plan, source, paths),
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => Bridge::new(gpu)?.normals(plan, source, paths),
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}

/// Philox schedule planning of any strategy's reads ([`Plan::philox_schedule`] for a plan's), for
/// the tests of the fused kernels.
#[doc(hidden)]
pub use schedule::philox_schedule;
