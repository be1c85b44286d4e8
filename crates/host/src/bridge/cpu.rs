//! The Brownian bridge on the CPU: the same per-path code as the kernels
//! (`lockstep_shared::bridge::generate_path`), one thread or rayon — the generators
//! ([`generate_seq`], [`generate_par`] and their progress, stop and range forms) and the normals
//! alone ([`normals_seq`]). What they are asked for (the [`Plan`], the [`Source`], the
//! [`Output`]) and its checks are the family's problem types (`plan.rs`, `problem.rs`).
//!
//! Layout (also the GPU's): normals `z[(i·d + k)·paths + p]`, output `x[(g·d + k)·paths + p]`,
//! consecutive paths adjacent; see `lockstep_shared::bridge`.

use super::plan::{Plan, Precision};
use super::problem::{Output, Source, check_generation, check_range, sobol_directions};

use crate::error::Result;
use lockstep_shared::bridge::boxmuller::PhiloxBoxMuller;
use lockstep_shared::bridge::philox::PhiloxNormals;
use lockstep_shared::bridge::sobol::SobolNormals;
use lockstep_shared::bridge::{MAX_DIMS, Normals, PathPlan, Sink, SliceStack, SliceSteps, generate_path};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

struct Strided<'a, T> {
    z: &'a [T],
    paths: usize,
    p: usize,
}

impl<T: Copy> Normals<T> for Strided<'_, T> {
    fn normal(&mut self, row: u32) -> T {
        self.z[row as usize * self.paths + self.p]
    }
}

struct Into<'a, T> {
    out: &'a mut [T],
    paths: usize,
    p: usize,
}

impl<T: Copy> Sink<T> for Into<'_, T> {
    fn put(&mut self, row: u32, v: T) {
        self.out[row as usize * self.paths + self.p] = v;
    }
}

fn path_plan<T: Precision>(plan: &Plan, output: Output) -> PathPlan<'_, T, SliceSteps<'_, T>> {
    let t = plan.tables::<T>();
    PathPlan {
        table: SliceSteps { coef: &t.coef, idx: &t.idx },
        steps: plan.steps(),
        dims: plan.dims(),
        chol: &t.chol,
        start: &t.start,
        increments: output == Output::Increments,
    }
}

/// Generates paths `first..first+count` into `out` (`[row][count]`). The generators take path
/// `p` as path `base + p` of the whole run (Philox counter, Sobol point); a buffer of
/// `total_paths` paths is read at `p`.
#[allow(clippy::too_many_arguments)] // private helper: every argument distinct
fn generate_block<T: Precision>(
    plan: &Plan,
    source: &Source<'_, T>,
    dirs: &[u32],
    total_paths: usize,
    output: Output,
    base: u64,
    first: usize,
    count: usize,
    out: &mut [T],
) {
    let pp = path_plan::<T>(plan, output);
    let mut stack = vec![T::ZERO; plan.stack_slots() * plan.dims()];
    for i in 0..count {
        let p = first + i;
        let idx = base + p as u64;
        let mut sink = Into { out: &mut *out, paths: count, p: i };
        let mut st = SliceStack(&mut stack);
        match source {
            Source::Buffer(z) => {
                generate_path::<T, MAX_DIMS, 1>(&pp, &mut Strided { z, paths: total_paths, p }, &mut st, &mut sink)
            }
            Source::Philox { seed } => {
                generate_path::<T, MAX_DIMS, 1>(&pp, &mut PhiloxNormals::new(*seed, idx), &mut st, &mut sink)
            }
            Source::PhiloxBoxMuller { seed } => {
                generate_path::<T, MAX_DIMS, 1>(&pp, &mut PhiloxBoxMuller::new(*seed, idx), &mut st, &mut sink)
            }
            Source::Sobol { offset } => {
                let mut z = SobolNormals { dirs, point: offset.wrapping_add(idx as u32) };
                generate_path::<T, MAX_DIMS, 1>(&pp, &mut z, &mut st, &mut sink)
            }
        }
    }
}

fn directions_for<T>(plan: &Plan, source: &Source<'_, T>) -> Result<Vec<u32>> {
    match source {
        Source::Sobol { .. } => sobol_directions(plan.rows()),
        _ => Ok(Vec::new()),
    }
}

/// Generates `paths` paths (or increments) on one thread: `(N+1)·d·paths` values, `[row][path]`
/// ([`generate_range_seq`] from path 0).
pub fn generate_seq<T: Precision>(plan: &Plan, source: Source<'_, T>, paths: usize, output: Output) -> Result<Vec<T>> {
    generate_range_seq(plan, source, 0, paths, output)
}

/// Paths per rayon task.
const BLOCK: usize = 4096;

/// As [`generate_seq`] with rayon: blocks of paths in parallel, then a parallel scatter by row.
/// Same bits.
pub fn generate_par<T: Precision>(plan: &Plan, source: Source<'_, T>, paths: usize, output: Output) -> Result<Vec<T>> {
    generate_par_with_progress(plan, source, paths, output, |_, _| {})
}

/// As [`generate_par`], calling `progress(done, paths)` from the worker threads as blocks of
/// paths finish (for a progress bar; `done` grows monotonically, the last call has
/// `done == paths`).
pub fn generate_par_with_progress<T: Precision>(
    plan: &Plan,
    source: Source<'_, T>,
    paths: usize,
    output: Output,
    progress: impl Fn(usize, usize) + Sync,
) -> Result<Vec<T>> {
    generate_range_par(plan, source, 0, paths, output, progress)
}

/// Paths `first..first + count` on all threads, to the end: [`generate_range_par_stoppable`]
/// with a flag that is never set.
pub(super) fn generate_range_par<T: Precision>(
    plan: &Plan,
    source: Source<'_, T>,
    first: u64,
    count: usize,
    output: Output,
    progress: impl Fn(usize, usize) + Sync,
) -> Result<Vec<T>> {
    let never = AtomicBool::new(false);
    // `never` is never set, so the generation always runs to the end.
    generate_range_par_stoppable(plan, source, first, count, output, progress, &never).map(Option::unwrap_or_default)
}

/// As [`generate_par_with_progress`], checking `stop` before each block of 4096 paths: once it
/// is set, no further block starts and the result is `Ok(None)` (the blocks already running
/// finish first). A generation that is not stopped has the same bits as [`generate_seq`].
/// For callers that must honour an interrupt (lockstep's Python module: Ctrl-C).
pub fn generate_par_stoppable<T: Precision>(
    plan: &Plan,
    source: Source<'_, T>,
    paths: usize,
    output: Output,
    progress: impl Fn(usize, usize) + Sync,
    stop: &AtomicBool,
) -> Result<Option<Vec<T>>> {
    generate_range_par_stoppable(plan, source, 0, paths, output, progress, stop)
}

/// Paths `first..first + count` of a generation, on one thread: the values a one-shot
/// generation of at least `first + count` paths gives those paths, `[row][count]`
/// (`rows·count` values). Philox and Sobol take the paths' own indices; a [`Source::Buffer`]
/// holds the range's normals alone, `[row][count]`. Errors: as [`check_range`].
pub fn generate_range_seq<T: Precision>(
    plan: &Plan,
    source: Source<'_, T>,
    first: u64,
    count: usize,
    output: Output,
) -> Result<Vec<T>> {
    let len = check_range(plan, &source, first, count)?;
    let dirs = directions_for(plan, &source)?;
    let mut out = vec![T::ZERO; len];
    generate_block(plan, &source, &dirs, count, output, first, 0, count, &mut out);
    Ok(out)
}

/// As [`generate_range_seq`] with rayon, calling `progress(done, count)` as blocks of 4096
/// paths finish and checking `stop` before each block (as [`generate_par_stoppable`], which is
/// this with `first = 0`): `Ok(None)` once stopped. Same bits as the one-shot generation.
pub fn generate_range_par_stoppable<T: Precision>(
    plan: &Plan,
    source: Source<'_, T>,
    first: u64,
    count: usize,
    output: Output,
    progress: impl Fn(usize, usize) + Sync,
    stop: &AtomicBool,
) -> Result<Option<Vec<T>>> {
    let len = check_range(plan, &source, first, count)?;
    let dirs = directions_for(plan, &source)?;
    let rows = plan.rows();
    let done = AtomicUsize::new(0);
    let blocks: Option<Vec<Vec<T>>> = (0..count.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            let start = b * BLOCK;
            let n = BLOCK.min(count - start);
            let mut buf = vec![T::ZERO; rows * n];
            generate_block(plan, &source, &dirs, count, output, first, start, n, &mut buf);
            progress(done.fetch_add(n, Ordering::Relaxed) + n, count);
            Some(buf)
        })
        .collect();
    let Some(blocks) = blocks else { return Ok(None) };
    let mut out = vec![T::ZERO; len];
    if count > 0 {
        out.par_chunks_mut(count).enumerate().for_each(|(r, row)| {
            for (b, buf) in blocks.iter().enumerate() {
                let n = buf.len() / rows;
                row[b * BLOCK..b * BLOCK + n].copy_from_slice(&buf[r * n..(r + 1) * n]);
            }
        });
    }
    Ok(Some(out))
}

/// Normals alone (what the unfused GPU path generates first): `rows·paths` values, `[row][path]`.
pub fn normals_seq<T: Precision>(plan: &Plan, source: Source<'_, T>, paths: usize) -> Result<Vec<T>> {
    let len = check_generation(plan, &source, paths)?;
    let rows = plan.rows();
    let mut out = vec![T::ZERO; len];
    match source {
        Source::Buffer(z) => out.copy_from_slice(z),
        Source::Philox { seed } => {
            for p in 0..paths {
                let mut g = PhiloxNormals::new(seed, p as u64);
                for j in 0..rows {
                    out[j * paths + p] = Normals::<T>::normal(&mut g, j as u32);
                }
            }
        }
        Source::PhiloxBoxMuller { seed } => {
            for p in 0..paths {
                let mut g = PhiloxBoxMuller::new(seed, p as u64);
                for j in 0..rows {
                    out[j * paths + p] = Normals::<T>::normal(&mut g, j as u32);
                }
            }
        }
        Source::Sobol { offset } => {
            let dirs = sobol_directions(rows)?;
            for p in 0..paths {
                let mut g = SobolNormals { dirs: &dirs, point: offset.wrapping_add(p as u32) };
                for j in 0..rows {
                    out[j * paths + p] = Normals::<T>::normal(&mut g, j as u32);
                }
            }
        }
    }
    Ok(out)
}
