//! `y ← a·x + y`, the BLAS level-1 update (saxpy/daxpy).

use core::ops::{Add, Mul};

/// Elements each thread of the `saxpy` kernel owns: one 16-byte vector of f32.
pub const SAXPY_PER_THREAD: u32 = 4;

/// One element of `a·x + y`: a separate multiply and add, each rounded to nearest-even.
///
/// Never fused: rustc keeps `mul` and `add` apart on both targets (the PTX census checks the
/// kernels for `fma`).
#[inline(always)]
pub fn axpy<T: Mul<Output = T> + Add<Output = T>>(a: T, x: T, y: T) -> T {
    a * x + y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_twice_not_once() {
        // With one rounding (FMA) this would give a different last bit.
        let (a, x, y) = (1.0f32 + f32::EPSILON, 1.0f32 - f32::EPSILON, -1.0f32);
        assert_eq!(axpy(a, x, y), a * x + y);
        assert_ne!(axpy(a, x, y).to_bits(), a.mul_add(x, y).to_bits());
    }

    #[test]
    fn works_for_both_precisions() {
        assert_eq!(axpy(2.0f64, 3.0, 4.0), 10.0);
        assert_eq!(axpy(2.0f32, 3.0, 4.0), 10.0);
    }
}
