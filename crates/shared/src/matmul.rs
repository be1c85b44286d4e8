//! The seed's integer matrix product `C = A·B` (square, row-major).
//!
//! Integer arithmetic is **wrapping** (two's complement, like `wrapping_mul`/`wrapping_add`) on
//! both sides, so the GPU and the CPU agree for every input, and since wrapping addition is
//! associative and commutative the tiled kernel's order does not matter. The seed's model
//! matrix has `A(r, c) = B(r, c) = r + c + 1` (0-based; `n + m − 1` 1-based); its product fits
//! `i32` up to `N =` [`MODEL_MAX_N_I32`] and needs `i64` beyond (see [`model_c`]).

/// Integer element types of the matrix-product kernels.
pub trait MatInt: Copy + Default + PartialEq + core::fmt::Debug {
    /// `acc + a·b`, wrapping.
    fn mac(acc: Self, a: Self, b: Self) -> Self;
    /// `v` converted, wrapping.
    fn from_i64_wrapping(v: i64) -> Self;
}

macro_rules! mat_int {
    ($($t:ty),*) => {$(
        impl MatInt for $t {
            #[inline(always)]
            fn mac(acc: Self, a: Self, b: Self) -> Self {
                acc.wrapping_add(a.wrapping_mul(b))
            }
            #[inline(always)]
            fn from_i64_wrapping(v: i64) -> Self {
                v as Self
            }
        }
    )*};
}
mat_int!(i32, i64);

/// Largest edge of the shared-memory tile (the kernels' static arrays are this squared).
pub const MAX_TILE: u32 = 16;

/// `C(r, c) = Σ_k A(r, k)·B(k, c)` in increasing `k`, row-major `n × n`; `a(i)`, `b(i)` read
/// element `i`.
#[inline(always)]
pub fn dot_row_col<T: MatInt>(n: u32, r: u32, c: u32, a: impl Fn(usize) -> T, b: impl Fn(usize) -> T) -> T {
    let (n, r, c) = (n as usize, r as usize, c as usize);
    let mut acc = T::default();
    let mut k = 0;
    while k < n {
        acc = T::mac(acc, a(r * n + k), b(k * n + c));
        k += 1;
    }
    acc
}

/// The seed's model element `A(r, c) = r + c + 1` (0-based).
#[inline(always)]
pub fn model_element(r: u64, c: u64) -> i64 {
    (r + c + 1) as i64
}

/// Closed form of the model product: with `a = r`, `b = c` (0-based),
/// `C(r, c) = Σ_{j=1..N} (a + j)(b + j) = N·a·b + (a + b)·N(N+1)/2 + N(N+1)(2N+1)/6`.
#[inline]
pub fn model_c(n: u64, r: u64, c: u64) -> i128 {
    let (n, a, b) = (n as i128, r as i128, c as i128);
    n * a * b + (a + b) * n * (n + 1) / 2 + n * (n + 1) * (2 * n + 1) / 6
}

/// Largest `N` whose model product (largest entry `C(N−1, N−1)`) fits `i32`.
pub const MODEL_MAX_N_I32: u64 = 972;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_threshold_is_where_i32_overflows() {
        let max = |n: u64| model_c(n, n - 1, n - 1);
        assert!(max(MODEL_MAX_N_I32) <= i32::MAX as i128);
        assert!(max(MODEL_MAX_N_I32 + 1) > i32::MAX as i128);
        assert!(max(1024) > i32::MAX as i128 && max(1024) < i64::MAX as i128);
    }

    #[test]
    fn closed_form_matches_the_sum_for_small_n() {
        for n in 1..12u64 {
            for r in 0..n {
                for c in 0..n {
                    let s: i128 = (0..n).map(|k| (model_element(r, k) * model_element(k, c)) as i128).sum();
                    assert_eq!(s, model_c(n, r, c));
                }
            }
        }
    }

    #[test]
    fn mac_wraps() {
        assert_eq!(i32::mac(i32::MAX, 1, 1), i32::MIN);
        assert_eq!(i64::mac(1, 3, 4), 13);
        let a = [1i32, 2, 3, 4];
        assert_eq!(dot_row_col(2, 1, 0, |i| a[i], |i| a[i]), 3 + 4 * 3);
    }
}
