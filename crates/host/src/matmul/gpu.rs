//! Launchers for `crates/kernels/src/matmul.rs`: the seed's integer matrix product on the GPU.

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::gpu::{download, upload, zeroed};
use crate::kernel::Kernel;
use crate::launch::{Dims, expect_len};
use cust::memory::{DevicePointer, DeviceSlice};
use lockstep_shared::matmul::MAX_TILE;

/// Which kernel and launch shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatKernel {
    /// One thread per element from global memory, blocks of `(x, y)` threads (`x·y ≤ 1024`).
    Global {
        /// Threads per block along columns and rows.
        block: (u32, u32),
    },
    /// `tile × tile` blocks staging tiles of A and B in shared memory (`tile` ∈ 1, 2, 4, 8, 16).
    Shared {
        /// Tile edge = block edge.
        tile: u32,
    },
}

/// Checks `n` and the kernel shape and returns the launch dimensions (pure).
pub fn dims(kernel: MatKernel, n: usize) -> Result<Dims> {
    super::check_order(n)?;
    let (bx, by) = match kernel {
        MatKernel::Global { block } => block,
        MatKernel::Shared { tile } => {
            if tile == 0 || !tile.is_power_of_two() || tile > MAX_TILE {
                return Err(Error::InvalidInput {
                    what: "tile",
                    why: format!("{tile}: use 1, 2, 4, 8 or 16 (it must divide the 16×16 shared-memory tile)"),
                });
            }
            (tile, tile)
        }
    };
    if bx == 0 || by == 0 || bx as u64 * by as u64 > 1024 {
        return Err(Error::InvalidInput {
            what: "threads per block",
            why: format!("{bx}×{by}: each side at least 1 and at most 1024 threads in all"),
        });
    }
    let n32 = n as u32;
    Dims::new([n32.div_ceil(bx), n32.div_ceil(by), 1], [bx, by, 1])
}

/// `(n, a, b, c)`: the global and the shared kernel of one element type.
type Pair<'g, T> = [Kernel<'g, (u32, DevicePointer<T>, DevicePointer<T>, DevicePointer<T>)>; 2];

crate::kernel::family!(super::MatmulKernels: Matmul holds Pair { i32: i32s, i64: i64s });

/// The matrix-product kernels, loaded and ready.
pub struct Matmul<'g> {
    gpu: &'g Gpu,
    i32s: Pair<'g, i32>,
    i64s: Pair<'g, i64>,
}

impl<'g> Matmul<'g> {
    /// Looks up the four kernels.
    pub fn new(gpu: &'g Gpu) -> Result<Self> {
        Ok(Matmul {
            gpu,
            i32s: [gpu.kernel("matmul_global_i32")?, gpu.kernel("matmul_shared_i32")?],
            i64s: [gpu.kernel("matmul_global_i64")?, gpu.kernel("matmul_shared_i64")?],
        })
    }

    /// Enqueues `C = A·B` on device buffers of `n²` elements each.
    pub fn multiply_on_device<T: super::MatmulInt>(
        &self,
        kernel: MatKernel,
        n: usize,
        a: &DeviceSlice<T>,
        b: &DeviceSlice<T>,
        c: &mut DeviceSlice<T>,
    ) -> Result<()> {
        let d = dims(kernel, n)?;
        let nn = n * n;
        expect_len("a", a.len(), nn)?;
        expect_len("b", b.len(), nn)?;
        expect_len("c", c.len(), nn)?;
        let f = &T::pick(self)[matches!(kernel, MatKernel::Shared { .. }) as usize];
        let n32 = n as u32;
        let (ap, bp, cp): (DevicePointer<T>, DevicePointer<T>, DevicePointer<T>) =
            (a.as_device_ptr(), b.as_device_ptr(), c.as_device_ptr());
        // SAFETY: parameters mirror `(n: u32, a: *const T, b: *const T, c: *mut T)`; each holds
        // n² elements (checked); c is borrowed mutably so it overlaps neither input; the shared
        // kernel gets a square block of at most 16×16 (dims checked the tile).
        unsafe { f.launch(self.gpu, d, 0, (n32, ap, bp, cp)) }
    }

    /// `C = A·B` for host matrices of `n²` elements (row-major); checks device memory first.
    pub fn multiply<T: super::MatmulInt>(&self, kernel: MatKernel, n: usize, a: &[T], b: &[T]) -> Result<Vec<T>> {
        dims(kernel, n)?;
        let (free, _) = self.gpu.memory_info()?;
        let need = 3 * (n as u64 * n as u64) * std::mem::size_of::<T>() as u64;
        crate::launch::ensure_fits("device memory needed for the matrices (bytes)", need, free as u64)?;
        expect_len("a", a.len(), n * n)?;
        expect_len("b", b.len(), n * n)?;
        let (da, db) = (upload(a)?, upload(b)?);
        let mut dc = zeroed::<T>(n * n)?;
        self.multiply_on_device(kernel, n, &da, &db, &mut dc)?;
        self.gpu.synchronize()?;
        download(&dc)
    }
}
