//! Launchers for `crates/kernels/src/foundation.rs`: saxpy/daxpy, a counter, warp and block
//! sums, and a libm kernel.

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::gpu::{download, download_into, upload, zeroed};
use crate::kernel::Kernel;
use crate::launch::{Grid1d, disjoint, expect_len, len_u32};
use cust::memory::{DeviceCopy, DevicePointer, DeviceSlice};
use lockstep_shared::axpy::SAXPY_PER_THREAD;
use lockstep_shared::reduce::{BLOCK_REDUCE_THREADS, WARP_SIZE};

/// Threads per block unless the caller chooses.
pub const DEFAULT_BLOCK: u32 = 256;

/// The foundation kernels, loaded and ready.
pub struct Foundation<'g> {
    gpu: &'g Gpu,
    block: u32,
    saxpy: Axpy<'g, f32>,
    daxpy: Axpy<'g, f64>,
    count_exceeding: Kernel<'g, (u32, DevicePointer<f32>, f32, DevicePointer<u32>)>,
    warp_sum_f32: Map<'g, f32>,
    block_sum_f64: Map<'g, f64>,
    exp_sin_log_f64: Map<'g, f64>,
}

/// `(n, a, x, y)` of saxpy/daxpy.
type Axpy<'g, T> = Kernel<'g, (u32, T, DevicePointer<T>, DevicePointer<T>)>;

/// `(n, x, out)` of the reductions and the libm kernel.
type Map<'g, T> = Kernel<'g, (u32, DevicePointer<T>, DevicePointer<T>)>;

impl<'g> Foundation<'g> {
    /// Looks up every foundation kernel in `gpu`'s module; 256 threads per block.
    pub fn new(gpu: &'g Gpu) -> Result<Self> {
        Self::with_block_size(gpu, DEFAULT_BLOCK)
    }

    /// As [`Foundation::new`] with `threads` per block for the element-wise kernels and the warp
    /// sum (a multiple of 32 up to 1024; the block sum always uses 256).
    pub fn with_block_size(gpu: &'g Gpu, threads: u32) -> Result<Self> {
        let block = crate::launch::block_size(threads)?;
        Ok(Foundation {
            gpu,
            block,
            saxpy: gpu.kernel("saxpy")?,
            daxpy: gpu.kernel("daxpy")?,
            count_exceeding: gpu.kernel("count_exceeding")?,
            warp_sum_f32: gpu.kernel("warp_sum_f32")?,
            block_sum_f64: gpu.kernel("block_sum_f64")?,
            exp_sin_log_f64: gpu.kernel("exp_sin_log_f64")?,
        })
    }

    /// Threads per block of the element-wise launches.
    pub fn block_size(&self) -> u32 {
        self.block
    }

    fn axpy_on_device<T: DeviceCopy>(
        &self,
        f: &Axpy<'_, T>,
        per_thread: u32,
        a: T,
        x: &DeviceSlice<T>,
        y: &mut DeviceSlice<T>,
    ) -> Result<()> {
        let n = len_u32("x", x.len())?;
        expect_len("y", y.len(), x.len())?;
        let bytes = x.len() * std::mem::size_of::<T>();
        let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
        disjoint("x", xp.as_raw(), bytes, "y", yp.as_raw(), bytes)?;
        let grid = Grid1d::for_len((n as u64).div_ceil(per_thread as u64), self.block)?;
        // SAFETY: parameters mirror `(n: u32, a: T, x: *const T, y: *mut T)` of the kernel;
        // x and y hold n elements and do not overlap (both checked above).
        unsafe { f.launch(self.gpu, grid, 0, (n, a, xp, yp)) }
    }

    /// Enqueues `y ← a·x + y` (f32) on device buffers of equal length.
    pub fn saxpy_on_device(&self, a: f32, x: &DeviceSlice<f32>, y: &mut DeviceSlice<f32>) -> Result<()> {
        self.axpy_on_device(&self.saxpy, SAXPY_PER_THREAD, a, x, y)
    }

    /// Enqueues `y ← a·x + y` (f64) on device buffers of equal length.
    pub fn daxpy_on_device(&self, a: f64, x: &DeviceSlice<f64>, y: &mut DeviceSlice<f64>) -> Result<()> {
        self.axpy_on_device(&self.daxpy, 1, a, x, y)
    }

    fn axpy_host<T: DeviceCopy>(
        &self,
        on_device: impl Fn(&Self, T, &DeviceSlice<T>, &mut DeviceSlice<T>) -> Result<()>,
        a: T,
        x: &[T],
        y: &mut [T],
    ) -> Result<()> {
        len_u32("x", x.len())?;
        expect_len("y", y.len(), x.len())?;
        if x.is_empty() {
            return Ok(());
        }
        let dx = upload(x)?;
        let mut dy = upload(y)?;
        on_device(self, a, &dx, &mut dy)?;
        self.gpu.synchronize()?;
        download_into(&dy, y)
    }

    /// `y ← a·x + y` (f32) on host slices of equal length.
    pub fn saxpy(&self, a: f32, x: &[f32], y: &mut [f32]) -> Result<()> {
        self.axpy_host(Self::saxpy_on_device, a, x, y)
    }

    /// `y ← a·x + y` (f64) on host slices of equal length.
    pub fn daxpy(&self, a: f64, x: &[f64], y: &mut [f64]) -> Result<()> {
        self.axpy_host(Self::daxpy_on_device, a, x, y)
    }

    /// How many `x[i] > threshold` (NaN elements never count), by one `atom.add` per hit.
    /// A NaN threshold is refused: nothing could ever be counted.
    pub fn count_exceeding(&self, x: &[f32], threshold: f32) -> Result<u32> {
        let n = len_u32("x", x.len())?;
        if threshold.is_nan() {
            return Err(Error::InvalidInput {
                what: "threshold",
                why: "it is NaN, so no element can exceed it".into(),
            });
        }
        let grid = Grid1d::for_len(n as u64, self.block)?;
        if n == 0 {
            return Ok(0);
        }
        let dx = upload(x)?;
        let counter = zeroed::<u32>(1)?;
        let (xp, cp): (DevicePointer<f32>, DevicePointer<u32>) = (dx.as_device_ptr(), counter.as_device_ptr());
        // SAFETY: parameters mirror `(n: u32, x: *const f32, threshold: f32, counter: *mut u32)`;
        // x holds n elements, counter one u32.
        unsafe { self.count_exceeding.launch(self.gpu, grid, 0, (n, xp, threshold, cp))? };
        self.gpu.synchronize()?;
        Ok(download(&counter)?[0])
    }

    /// Sums of each 32 consecutive elements in the warp-tree order
    /// (`lockstep_shared::reduce::warp_tree_sum`), `ceil(len/32)` of them.
    pub fn warp_sums(&self, x: &[f32]) -> Result<Vec<f32>> {
        // SAFETY: `(n: u32, x: *const f32, out: *mut f32)`; out holds ceil(n/32); the block
        // size is a multiple of 32 (block_size checked it).
        unsafe { self.map(&self.warp_sum_f32, x, self.block, |_| x.len().div_ceil(WARP_SIZE)) }
    }

    /// Sums of each 256 consecutive elements in the shared-memory tree order
    /// (`lockstep_shared::reduce::block_tree_sum`), `ceil(len/256)` of them.
    pub fn block_sums(&self, x: &[f64]) -> Result<Vec<f64>> {
        // SAFETY: `(n: u32, x: *const f64, out: *mut f64)`; 256 threads per block as the
        // kernel's shared array requires; out has one slot per block.
        unsafe { self.map(&self.block_sum_f64, x, BLOCK_REDUCE_THREADS as u32, |grid| grid.blocks as usize) }
    }

    /// `exp(x)·sin(x) + log(x)` element-wise through `libm`.
    pub fn exp_sin_log(&self, x: &[f64]) -> Result<Vec<f64>> {
        // SAFETY: `(n: u32, x: *const f64, y: *mut f64)`; both hold n.
        unsafe { self.map(&self.exp_sin_log_f64, x, self.block, |_| x.len()) }
    }

    /// Uploads `x`, runs `kernel` (`(n, x, out)`, [`Map`]) over it with `threads` per block into
    /// `out_len(grid)` zeroed values, and returns them (no launch for an empty `x`).
    ///
    /// # Safety
    /// `kernel`'s parameters are `(n: u32, x: *const T, out: *mut T)`, and for this grid it
    /// reads `n` values of `x` and writes only inside the `out_len(grid)` values of `out`.
    unsafe fn map<T: DeviceCopy + Default + Clone + cust::memory::bytemuck::Zeroable>(
        &self,
        kernel: &Map<'g, T>,
        x: &[T],
        threads: u32,
        out_len: impl Fn(&Grid1d) -> usize,
    ) -> Result<Vec<T>> {
        let n = len_u32("x", x.len())?;
        let grid = Grid1d::for_len(n as u64, threads)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let dx = upload(x)?;
        let out = zeroed::<T>(out_len(&grid))?;
        let (xp, op) = (dx.as_device_ptr(), out.as_device_ptr());
        // SAFETY: the caller's contract; x holds n values and out out_len(grid).
        unsafe { kernel.launch(self.gpu, grid, 0, (n, xp, op))? };
        self.gpu.synchronize()?;
        download(&out)
    }
}
