//! CPU twins of the foundation kernels.

use lockstep_shared::axpy::axpy;
use lockstep_shared::predicate::exceeds;
use lockstep_shared::reduce::{BLOCK_REDUCE_THREADS, WARP_SIZE, block_tree_sum, padded_chunk, warp_tree_sum};
use lockstep_shared::special::exp_sin_log;
use rayon::prelude::*;

/// `y ← a·x + y` (f32 or f64), one thread. Lengths must match (the zip stops at the shorter).
pub fn axpy_seq<T: Copy + core::ops::Mul<Output = T> + core::ops::Add<Output = T>>(a: T, x: &[T], y: &mut [T]) {
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi = axpy(a, xi, *yi);
    }
}

/// `y ← a·x + y` with rayon.
pub fn axpy_par<T: Copy + Send + Sync + core::ops::Mul<Output = T> + core::ops::Add<Output = T>>(
    a: T,
    x: &[T],
    y: &mut [T],
) {
    y.par_iter_mut().zip(x.par_iter()).for_each(|(yi, &xi)| *yi = axpy(a, xi, *yi));
}

/// How many `x[i] > threshold`, one thread.
pub fn count_exceeding_seq(x: &[f32], threshold: f32) -> u32 {
    x.iter().filter(|&&v| exceeds(v, threshold)).count() as u32
}

/// How many `x[i] > threshold`, rayon.
pub fn count_exceeding_par(x: &[f32], threshold: f32) -> u32 {
    x.par_iter().filter(|&&v| exceeds(v, threshold)).count() as u32
}

/// Warp-tree sums of each 32 elements, one thread.
pub fn warp_sums_seq(x: &[f32]) -> Vec<f32> {
    (0..x.len().div_ceil(WARP_SIZE)).map(|c| warp_tree_sum(padded_chunk(x, c, 0.0))).collect()
}

/// Warp-tree sums of each 32 elements, rayon.
pub fn warp_sums_par(x: &[f32]) -> Vec<f32> {
    (0..x.len().div_ceil(WARP_SIZE)).into_par_iter().map(|c| warp_tree_sum(padded_chunk(x, c, 0.0))).collect()
}

/// Block-tree sums of each 256 elements, one thread.
pub fn block_sums_seq(x: &[f64]) -> Vec<f64> {
    (0..x.len().div_ceil(BLOCK_REDUCE_THREADS)).map(|c| block_tree_sum(padded_chunk(x, c, 0.0))).collect()
}

/// Block-tree sums of each 256 elements, rayon.
pub fn block_sums_par(x: &[f64]) -> Vec<f64> {
    (0..x.len().div_ceil(BLOCK_REDUCE_THREADS))
        .into_par_iter()
        .map(|c| block_tree_sum(padded_chunk(x, c, 0.0)))
        .collect()
}

/// `exp(x)·sin(x) + log(x)` element-wise, one thread.
pub fn exp_sin_log_seq(x: &[f64]) -> Vec<f64> {
    x.iter().map(|&v| exp_sin_log(v)).collect()
}

/// `exp(x)·sin(x) + log(x)` element-wise, rayon.
pub fn exp_sin_log_par(x: &[f64]) -> Vec<f64> {
    x.par_iter().map(|&v| exp_sin_log(v)).collect()
}

/// CPU twin of the cluster probe: launched without a cluster dimension, every block is a
/// cluster of one, so block `b` reports `(1 block in its cluster, rank 0, cluster index b)`.
pub fn cluster_probe_cpu(blocks: u32) -> Vec<[u32; 3]> {
    (0..blocks).map(|b| [1, 0, b]).collect()
}
