//! Part of a generation: paths `first..first + count` of a run, with the bits the one-shot run
//! gives them. A run of any size is then made in chunks that each fit in memory (the CLI's
//! `lockstep bridge --out` streams them to its `.npy`): every path's normals depend on the
//! path's own index only (Philox: the counter; Sobol: the point `offset + p`), never on the
//! path count.
//!
//! On the GPU a range is the fused kernels' generation with a shifted Sobol offset; a Philox
//! range that starts after path 0 runs unfused: the normals kernels take a path offset
//! (`first`), the buffer bridge reads their output (`Bridge::generate_range_unfused`).

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
        Backend::Gpu(gpu) => {
            let bridge = super::Bridge::new(gpu)?;
            match source {
                Source::Sobol { offset } => {
                    // check_range: offset + first + count ≤ 2^32, so the shifted offset fits.
                    let shifted = u32::try_from(offset as u64 + first).map_err(|_| Error::TooLarge {
                        what: "Sobol point index offset + first",
                        value: offset as u64 + first,
                        max: u32::MAX as u64,
                    })?;
                    bridge.generate(plan, Source::Sobol { offset: shifted }, count, output)
                }
                _ if first == 0 => bridge.generate(plan, source, count, output),
                _ => bridge.generate_range_unfused(plan, source, first, count, output),
            }
        }
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}
