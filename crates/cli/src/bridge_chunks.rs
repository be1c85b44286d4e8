//! `lockstep bridge` in chunks of paths (issue #25): runs larger than memory, streamed to the
//! `.npy` as they are made.
//!
//! Paths `first..first + count` of a run are [`lockstep::bridge::generate_range`]: the bits the
//! one-shot run gives them, on the CPU or the GPU. The `.npy` keeps the one-shot layout
//! (`[step][dim][path]`, paths fastest), so a chunk is one slab of `count` values per row, each
//! written at its own offset ([`Slabs::write_at`]): the file's bytes are the one-shot file's
//! whatever the chunk size. While a writer thread checks a chunk (every value finite) and writes
//! it, the next chunk is generated; at most two chunks are in memory (three with `--plot`, which
//! keeps the first). A non-finite value, a full disk or an interrupt stops the run with nothing
//! at the target path (the file is `<out>.partial` until complete).
//!
//! On the GPU the two chunks in flight live in page-locked buffers made once ([`staging`]): the
//! GPU copies each chunk into one while the writer works on the other, at the link's speed
//! (a fresh pageable vector per chunk took 4.3 GB at 1.44 GB/s per rank; issue #23).

use crate::common::Progress;
use crate::npy::{Element, Slabs};
use anyhow::{Result, anyhow, bail};
use lockstep::bridge::{self, Output, Plan, Precision, Source};
use lockstep::{Backend, Gpu, Pinned};
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::sync_channel;
use std::time::Instant;

/// Output bytes per chunk unless memory is scarcer (or `--chunk-paths` says otherwise): large
/// enough that each row's slab is a long sequential write, small enough to overlap generation
/// and writing.
pub const CHUNK_BYTES: u64 = 512 << 20;

/// Paths per chunk for `per_path` bytes of output per path within `budget` bytes of output per
/// chunk: at least 1, at most `paths`.
pub fn chunk_paths(per_path: u64, budget: u64, paths: usize) -> usize {
    usize::try_from(budget / per_path.max(1)).unwrap_or(usize::MAX).clamp(1, paths.max(1))
}

/// One run in chunks.
pub struct Job<'a, T> {
    /// The plan.
    pub plan: &'a Plan,
    /// The normals; a buffer holds the whole run's, `[row][path]`.
    pub source: Source<'a, T>,
    /// Paths of the whole run.
    pub paths: usize,
    /// The paths this process makes (`0..paths`, or a rank's share).
    pub range: std::ops::Range<usize>,
    /// Also compute the made paths' digest ([`crate::ranks::path_digest`]).
    pub digest: bool,
    /// Paths per chunk.
    pub chunk: usize,
    /// Paths or increments.
    pub output: Output,
    /// The GPU, or `None` for the CPU.
    pub gpu: Option<&'a Gpu>,
}

/// What a run in chunks leaves besides its file.
pub struct Done<T> {
    /// The first chunk (`[row][first_paths]`), when asked for (the plot); else empty.
    pub first: Vec<T>,
    /// Paths in `first`.
    pub first_paths: usize,
    /// Chunks made.
    pub chunks: usize,
    /// Seconds spent generating (including the GPU's transfers).
    pub generate_secs: f64,
    /// Seconds the writer spent writing (besides waiting for chunks).
    pub write_secs: f64,
    /// The made paths' digest when the job asked for it (else 0).
    pub digest: u64,
}

/// The columns `first..first + count` of a `[row][paths]` array.
fn columns<T: Copy>(z: &[T], paths: usize, first: usize, count: usize) -> Vec<T> {
    z.chunks(paths).flat_map(|row| row[first..first + count].iter().copied()).collect()
}

/// The page-locked buffers of a GPU job's chunks: two of `rows·chunk` values (one when the range
/// is one chunk), or none on the CPU. When the system cannot lock that much memory, none, with
/// a warning: the run then copies into vectors, with the same bits, more slowly.
pub fn staging<'g, T: Precision>(job: &Job<'g, T>) -> Vec<Pinned<'g, T>> {
    let Some(gpu) = job.gpu else { return Vec::new() };
    let len = job.plan.rows().saturating_mul(job.chunk.max(1).min(job.range.len()));
    let count = job.range.len().div_ceil(job.chunk.max(1)).min(2);
    let made: lockstep::Result<Vec<_>> = (0..count).map(|_| Pinned::new(gpu, len.max(1))).collect();
    made.unwrap_or_else(|e| {
        eprintln!("warning: no page-locked staging for the chunks ({e}); copying into pageable memory instead");
        Vec::new()
    })
}

/// A chunk's values: made on the CPU, or copied by the GPU into a staging buffer (its first
/// `len` values).
enum Chunk<'g, T: Precision> {
    Owned(Vec<T>),
    Staged(Pinned<'g, T>, usize),
}

impl<T: Precision> Chunk<'_, T> {
    fn values(&self) -> &[T] {
        match self {
            Chunk::Owned(v) => v,
            Chunk::Staged(p, len) => &p[..*len],
        }
    }
}

/// Paths `first..first + count` on the job's device, `[row][count]`: into `staged` when given
/// (the GPU's copy lands there), else into a new vector.
fn generate<'g, T: Precision>(
    job: &Job<'g, T>,
    first: usize,
    count: usize,
    staged: Option<Pinned<'g, T>>,
    bar: &Progress,
) -> Result<Chunk<'g, T>> {
    let z;
    let source = match job.source {
        Source::Buffer(all) => {
            z = columns(all, job.paths, first, count);
            Source::Buffer(&z[..])
        }
        s => s,
    };
    let (plan, at, output) = (job.plan, first as u64, job.output);
    Ok(match (job.gpu, staged) {
        (Some(g), Some(mut buf)) => {
            let len = plan.rows() * count;
            bridge::generate_range_into(Backend::Gpu(g), plan, source, at, count, output, &mut buf[..len])?;
            Chunk::Staged(buf, len)
        }
        (Some(g), None) => Chunk::Owned(bridge::generate_range(Backend::Gpu(g), plan, source, at, count, output)?),
        (None, _) => {
            let never = AtomicBool::new(false);
            let progress = |done: usize, _| bar.set((first + done - job.range.start) as u64);
            Chunk::Owned(
                bridge::generate_range_par_stoppable(plan, source, at, count, output, progress, &never)?
                    .unwrap_or_default(),
            )
        }
    })
}

/// Refuses a chunk with a non-finite value, naming its paths.
fn check_finite<T: Precision + Into<f64>>(data: &[T], first: usize, count: usize) -> Result<()> {
    let bad = data.par_iter().filter(|v| !Into::<f64>::into(**v).is_finite()).count();
    if bad > 0 {
        bail!(
            "{bad} of the {} values of paths {first}..{} are not finite in {}; nothing written (lower --t-end or the \
             --cov/--start values, or use --precision f64)",
            data.len(),
            first + count,
            T::NAME
        );
    }
    Ok(())
}

/// Runs `job` (its range of paths) chunk by chunk, each checked finite and written into `out`
/// (when given) by a writer thread while the next is generated; keeps the first chunk when
/// `keep_first`. `staged` ([`staging`]) are the GPU's buffers for the chunks in flight, handed
/// back and forth between the two threads (none: a vector per chunk). The first error
/// (generation, a non-finite value, writing) ends the run.
pub fn run<'g, T: Precision + Into<f64> + Element>(
    job: &Job<'g, T>,
    mut out: Option<&mut Slabs<T>>,
    keep_first: bool,
    mut staged: Vec<Pinned<'g, T>>,
    bar: &Progress,
) -> Result<Done<T>> {
    let (paths, chunk, rows) = (job.paths, job.chunk.max(1), job.plan.rows());
    let range = job.range.clone();
    let chunks = range.len().div_ceil(chunk);
    let staging = !staged.is_empty();
    let mut generate_secs = 0.0;
    let (tx, rx) = sync_channel::<(usize, Chunk<'g, T>)>(0);
    // The writer hands each staging buffer back once it is done with it.
    let (back_tx, back_rx) = sync_channel::<Pinned<'g, T>>(staged.len());
    let start = range.start;
    let written = std::thread::scope(|s| -> Result<(Vec<T>, usize, f64, u64)> {
        let writer = s.spawn(move || -> Result<(Vec<T>, usize, f64, u64)> {
            let (mut first_chunk, mut first_paths, mut secs, mut digest) = (Vec::new(), 0, 0.0, 0u64);
            for (first, chunk) in rx {
                let data = chunk.values();
                let count = data.len() / rows.max(1);
                check_finite(data, first, count)?;
                if job.digest {
                    digest = digest.wrapping_add(crate::ranks::path_digest(data, rows, count, first as u64));
                }
                let t = Instant::now();
                if let Some(out) = out.as_deref_mut() {
                    for r in 0..rows {
                        out.write_at((r * paths + first) as u64, &data[r * count..(r + 1) * count])?;
                    }
                }
                secs += t.elapsed().as_secs_f64();
                let keep = keep_first && first == start;
                if keep {
                    first_paths = count;
                }
                match chunk {
                    Chunk::Owned(v) if keep => first_chunk = v,
                    Chunk::Owned(_) => {}
                    Chunk::Staged(buf, len) => {
                        if keep {
                            first_chunk = buf[..len].to_vec();
                        }
                        let _ = back_tx.send(buf); // the generator may have stopped already
                    }
                }
            }
            Ok((first_chunk, first_paths, secs, digest))
        });
        let mut failed = None;
        for k in 0..chunks {
            let first = start + k * chunk;
            let count = chunk.min(range.end - first);
            let buf = if !staging {
                None
            } else if let Some(buf) = staged.pop() {
                Some(buf)
            } else {
                match back_rx.recv() {
                    Ok(buf) => Some(buf),
                    Err(_) => break, // the writer stopped: its error says why
                }
            };
            let t = Instant::now();
            match generate(job, first, count, buf, bar) {
                Ok(data) => {
                    generate_secs += t.elapsed().as_secs_f64();
                    bar.set((first + count - start) as u64);
                    if tx.send((first, data)).is_err() {
                        break; // the writer stopped: its error says why
                    }
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        drop(tx);
        let written = writer.join().map_err(|_| anyhow!("the writer thread panicked"))?;
        match failed {
            Some(e) => Err(e),
            None => written,
        }
    })?;
    let (first, first_paths, write_secs, digest) = written;
    Ok(Done { first, first_paths, chunks, generate_secs, write_secs, digest })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_fit_the_budget_and_the_run() {
        assert_eq!(chunk_paths(65 * 4, CHUNK_BYTES, 10), 10);
        assert_eq!(chunk_paths(65 * 4, 65 * 4 * 1000, 1_000_000_000), 1000);
        assert_eq!(chunk_paths(8 << 20, 1, 5), 1, "at least one path");
        assert_eq!(chunk_paths(0, 100, 5), 5);
    }
}
