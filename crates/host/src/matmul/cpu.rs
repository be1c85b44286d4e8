//! CPU twin of the matrix-product kernels (wrapping integer arithmetic, row-major `n × n`).

use lockstep_shared::matmul::{MatInt, dot_row_col, model_element};
use rayon::prelude::*;

/// `C = A·B`, one thread. `a` and `b` hold `n²` elements.
pub fn multiply_seq<T: MatInt>(n: usize, a: &[T], b: &[T]) -> Vec<T> {
    (0..n * n).map(|e| dot_row_col(n as u32, (e / n) as u32, (e % n) as u32, |i| a[i], |i| b[i])).collect()
}

/// `C = A·B` with rayon (one row per task).
pub fn multiply_par<T: MatInt + Send + Sync>(n: usize, a: &[T], b: &[T]) -> Vec<T> {
    (0..n * n)
        .into_par_iter()
        .with_min_len(n)
        .map(|e| dot_row_col(n as u32, (e / n) as u32, (e % n) as u32, |i| a[i], |i| b[i]))
        .collect()
}

/// The seed's model matrix `A(r, c) = r + c + 1` (0-based), row-major.
pub fn model_matrix<T: MatInt>(n: usize) -> Vec<T> {
    (0..n * n).map(|e| T::from_i64_wrapping(model_element((e / n) as u64, (e % n) as u64))).collect()
}
