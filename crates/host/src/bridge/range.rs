//! Part of a generation: paths `first..first + count` of a run, with the bits the one-shot run
//! gives them. A run of any size is then made in chunks that each fit in memory (the CLI's
//! `lockstep bridge --out` streams them to its `.npy`): every path's normals depend on the
//! path's own index only (Philox: the counter; Sobol: the point `offset + p`), never on the
//! path count.
//!
//! On the GPU a range is the fused kernels' generation from the range's start (Philox counters
//! of paths `first + p`, Sobol points `offset + first + p`); Box–Muller normals, which have no
//! fused kernel, come from the normals kernel's range (`Bridge::generate_range_unfused`).

use super::cpu::{Output, Source, check_generation, generate_range_par_stoppable, generate_range_seq};
use super::plan::{Plan, Precision};
use crate::Backend;
use crate::error::{Error, Result};
use std::sync::atomic::AtomicBool;

/// Checks a range `first..first + count` of a generation and returns its output length
/// `(N+1)·d·count`. Beyond [`check_generation`] of `count` paths: path indices stay below
/// `u32::MAX` (`first + count ≤ u32::MAX`, the largest one-shot run), and for Sobol
/// `offset + first + count ≤ 2^32`. A [`Source::Buffer`] holds the range's normals alone
/// (`[row][count]`).
pub fn check_range<T>(plan: &Plan, source: &Source<'_, T>, first: u64, count: usize) -> Result<usize> {
    let len = check_generation(plan, source, count)?;
    let sobol = if let Source::Sobol { offset } = source { Some(*offset) } else { None };
    check_indices(first, count as u64, sobol)?;
    Ok(len)
}

/// The index checks of a range, for [`check_range`] and the GPU's
/// `Bridge::normals_range_on_device`: `first + count ≤ u32::MAX` (the path indices of one run)
/// and, for Sobol with `offset`, `offset + first + count ≤ 2^32`.
pub(crate) fn check_indices(first: u64, count: u64, sobol_offset: Option<u32>) -> Result<()> {
    let end = first.saturating_add(count);
    if end > u32::MAX as u64 {
        return Err(Error::TooLarge {
            what: "first + count (path indices of one run)",
            value: end,
            max: u32::MAX as u64,
        });
    }
    if let Some(offset) = sobol_offset {
        let last = offset as u64 + end;
        if last > 1 << 32 {
            return Err(Error::TooLarge {
                what: "Sobol point index offset + first + count",
                value: last,
                max: 1 << 32,
            });
        }
    }
    Ok(())
}

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
        Backend::Cpu => {
            let never = AtomicBool::new(false);
            // `never` is never set, so the generation always runs to the end.
            generate_range_par_stoppable(plan, source, first, count, output, |_, _| {}, &never)
                .map(Option::unwrap_or_default)
        }
        #[cfg(feature = "gpu")]
        Backend::Gpu(_) => {
            let mut host = vec![T::default(); check_range(plan, &source, first, count)?];
            generate_range_into(backend, plan, source, first, count, output, &mut host)?;
            Ok(host)
        }
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}

/// [`generate_range`] into `out` (`rows·count` elements, else [`Error::LengthMismatch`]). On the
/// GPU the result is copied straight into `out`: page-locked memory (`lockstep::Pinned`, feature `gpu`), reused
/// chunk after chunk, takes it at the link's speed (a fresh vector is paged in as it is written).
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
        Backend::Gpu(gpu) => super::Bridge::new(gpu)?.generate_range_into(plan, source, first, count, output, out),
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}
