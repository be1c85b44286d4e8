//! The integer matrix product of the n-body seed paper: `C = A·B` in wrapping `i32`/`i64`
//! arithmetic, row-major `n × n`, the same bits on every [`Backend`].

mod cpu;
#[cfg(feature = "gpu")]
mod gpu;

pub use cpu::{model_matrix, multiply_par, multiply_seq};
#[cfg(feature = "gpu")]
pub use gpu::{MatKernel, Matmul, dims};
pub use lockstep_shared::matmul::{MODEL_MAX_N_I32, MatInt, model_c};

use crate::backend::Element;
use crate::launch::expect_len;
use crate::{Backend, Error, Result};

/// The matrix-product kernels as a family: a [`MatmulInt`]'s `Element<MatmulKernels>` picks its own.
pub(crate) enum MatmulKernels {}

/// Element types with matrix-product kernels (`i32`, `i64`).
#[allow(private_bounds)] // sealed: `Element` picks the GPU kernels of each type
pub trait MatmulInt: MatInt + crate::DeviceValue + Element<MatmulKernels> + Send + Sync + 'static {
    /// `"i32"` or `"i64"`.
    const NAME: &'static str;
}

impl MatmulInt for i32 {
    const NAME: &'static str = "i32";
}

impl MatmulInt for i64 {
    const NAME: &'static str = "i64";
}

/// Largest matrix edge on every backend: the GPU grid's y extent is at most 65535 blocks.
pub const MAX_N: usize = 65_535;

/// `n` is 1..=[`MAX_N`], or the error saying which bound it breaks.
pub(crate) fn check_order(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::InvalidInput { what: "matrix size", why: "N = 0: the matrices are empty".into() });
    }
    if n > MAX_N {
        return Err(Error::TooLarge { what: "matrix size N", value: n as u64, max: MAX_N as u64 });
    }
    Ok(())
}

/// `C = A·B` on `backend` (the GPU's shared-memory kernel with 16 × 16 tiles). Errors: `n = 0`
/// or above [`MAX_N`], `a` or `b` not `n²` long.
pub fn multiply<T: MatmulInt>(backend: Backend<'_>, n: usize, a: &[T], b: &[T]) -> Result<Vec<T>> {
    check_order(n)?;
    expect_len("a", a.len(), n * n)?;
    expect_len("b", b.len(), n * n)?;
    match backend {
        Backend::CpuSeq => Ok(multiply_seq(n, a, b)),
        Backend::Cpu => Ok(multiply_par(n, a, b)),
        #[cfg(feature = "gpu")]
        Backend::Gpu(gpu) => Matmul::new(gpu)?.multiply(MatKernel::Shared { tile: 16 }, n, a, b),
        #[cfg(not(feature = "gpu"))]
        Backend::Gpu(gpu) => match gpu.never {},
    }
}
