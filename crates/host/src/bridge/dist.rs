//! The bridge split over ranks by paths: rank `r` generates paths
//! `paths·r/k .. paths·(r+1)/k` ([`crate::dist::split_even`]) with [`generate_range`], so each
//! path takes the Philox counter, Sobol point or buffer column of its own index and the union
//! of the ranks' columns is the one-rank output, bit for bit. No collective is needed to
//! generate; [`generate`] all-gathers the columns when every rank wants the whole output
//! (tests, small runs), [`generate_share`] returns the rank's own columns (large runs write
//! them where they belong: `lockstep run … bridge --out`).

use super::plan::{Plan, Precision};
use super::problem::{Output, Source, check_generation};
use super::range::generate_range;
use crate::Backend;
use crate::dist::{Communicator, Split, all_gather, split_even};
use crate::error::Result;

/// This rank's paths of a run of `paths` paths of `plan` from `source` on `backend`: the split
/// and the values, `[row][count]` (`count` = the split's length), with the bits of those
/// columns of the one-rank run. A [`Source::Buffer`] holds the whole run's normals
/// (`[row][paths]`); the rank reads its columns. Errors: as [`check_generation`] of the whole
/// run and [`generate_range`] of the share.
pub fn generate_share<T: Precision>(
    comm: &dyn Communicator,
    backend: Backend<'_>,
    plan: &Plan,
    source: Source<'_, T>,
    paths: usize,
    output: Output,
) -> Result<(Split, Vec<T>)> {
    check_generation(plan, &source, paths)?;
    let split = split_even(paths as u64, comm.size(), comm.rank());
    let (first, count) = (split.range.start, split.len() as usize);
    if count == 0 {
        return Ok((split, Vec::new()));
    }
    let rows = plan.rows();
    let columns: Vec<T>;
    let source = match source {
        Source::Buffer(all) => {
            columns = (0..rows)
                .flat_map(|row| all[row * paths + first as usize..row * paths + first as usize + count].iter().copied())
                .collect();
            Source::Buffer(&columns[..])
        }
        other => other,
    };
    let values = generate_range(backend, plan, source, first, count, output)?;
    Ok((split, values))
}

/// The whole run of `paths` paths on every rank: each rank's share ([`generate_share`]),
/// all-gathered and laid out `[row][path]` as the one-rank run. Errors: as
/// [`generate_share`]; a failed collective.
pub fn generate<T: Precision>(
    comm: &dyn Communicator,
    backend: Backend<'_>,
    plan: &Plan,
    source: Source<'_, T>,
    paths: usize,
    output: Output,
) -> Result<Vec<T>> {
    let (split, mine) = generate_share(comm, backend, plan, source, paths, output)?;
    let rows = plan.rows();
    let piece = split.piece as usize;
    let mut padded = vec![T::default(); rows * piece];
    let count = split.len() as usize;
    for row in 0..rows {
        padded[row * piece..row * piece + count].copy_from_slice(&mine[row * count..(row + 1) * count]);
    }
    let all = all_gather(comm, &padded)?;
    let mut out = vec![T::default(); rows * paths];
    for rank in 0..comm.size() {
        let s = split_even(paths as u64, comm.size(), rank);
        let (first, count) = (s.range.start as usize, s.len() as usize);
        let block = &all[rank * rows * piece..(rank + 1) * rows * piece];
        for row in 0..rows {
            out[row * paths + first..row * paths + first + count]
                .copy_from_slice(&block[row * piece..row * piece + count]);
        }
    }
    Ok(out)
}
