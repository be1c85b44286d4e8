//! Part of a generation: paths `first..first + count` of a run, with the bits the one-shot run
//! gives them. A run of any size is then made in chunks that each fit in memory (the CLI's
//! `lockstep bridge --out` streams them to its `.npy`): every path's normals depend on the
//! path's own index only (Philox: the counter; Sobol: the point `offset + p`), never on the
//! path count.
//!
//! On the GPU a range is the fused kernels' generation from the range's start (Philox counters
//! of paths `first + p`, Sobol points `offset + first + p`; `Bridge::generate_range_into`).
//!
//! This file picks the backend of a range ([`generate_range`], [`generate_range_into`]); the
//! checks of a range ([`check_range`]) are the problem's (`problem.rs`).

use super::cpu::{generate_range_par, generate_range_seq};
use super::plan::{Plan, Precision};
use super::problem::{Output, Source, check_range};
use crate::Backend;
use crate::error::Result;

/// Paths `first..first + count` (or their increments) of `plan` from `source` on `backend`:
/// `rows·count` values, `[row][count]`, the bits a one-shot [`super::generate`] of at least
/// `first + count` paths gives those paths, on every backend. A [`Source::Buffer`] holds the
/// range's normals alone (`[row][count]`). Errors: as [`check_range`]; on the GPU, driver
/// failures.
pub fn generate_range<T: Precision>(
    backend: Backend<'_>,
    plan: &Plan,
    source: Source<'_, T>,
    first: u64,
    count: usize,
    output: Output,
) -> Result<Vec<T>> {
    check_range(plan, &source, first, count)?;
    match backend {
        Backend::CpuSeq => generate_range_seq(plan, source, first, count, output),
        Backend::Cpu => generate_range_par(plan, source, first, count, output, |_, _| {}),
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => {
            // check_range: rows·count does not overflow.
            let mut host = vec![T::default(); plan.rows() * count];
            super::gpu::Bridge::new(gpu)?.generate_range_into(plan, source, first, count, output, &mut host)?;
            Ok(host)
        }
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}

/// [`generate_range`] into `out` (`rows·count` elements, else [`Error::LengthMismatch`]). On the
/// GPU the result is copied straight into `out`: page-locked memory (`lockstep::Pinned`, feature `gpu`), reused
/// chunk after chunk, takes it at the link's speed (a fresh vector is paged in as it is written).
///
/// [`Error::LengthMismatch`]: crate::Error::LengthMismatch
pub fn generate_range_into<T: Precision>(
    backend: Backend<'_>,
    plan: &Plan,
    source: Source<'_, T>,
    first: u64,
    count: usize,
    output: Output,
    out: &mut [T],
) -> Result<()> {
    let len = check_range(plan, &source, first, count)?;
    crate::launch::expect_len("out", out.len(), len)?;
    match backend {
        Backend::CpuSeq | Backend::Cpu => {
            out.copy_from_slice(&generate_range(backend, plan, source, first, count, output)?);
            Ok(())
        }
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => super::gpu::Bridge::new(gpu)?.generate_range_into(plan, source, first, count, output, out),
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}
