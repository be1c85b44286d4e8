//! Checks every launcher runs before it launches: lengths, index ranges, grid sizes.
//!
//! These are pure functions so that the validation of every launcher can be tested on a
//! machine without a GPU.

use crate::error::{Error, Result};

/// Largest threads per block on every supported GPU.
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;

/// Largest `gridDim.x`.
pub const MAX_GRID_X: u64 = (1 << 31) - 1;

/// `Ok` iff `got == expected`; otherwise [`Error::LengthMismatch`] naming `arg`.
pub fn expect_len(arg: &'static str, got: usize, expected: usize) -> Result<()> {
    if got == expected { Ok(()) } else { Err(Error::LengthMismatch { arg, expected, got }) }
}

/// `Ok` iff the device ranges `[a, a + a_bytes)` and `[b, b + b_bytes)` do not overlap;
/// otherwise [`Error::InvalidInput`] naming both arguments. cust's `DeviceSlice::index` hands
/// out copies of slices, so `&` and `&mut` borrows alone do not rule out aliasing.
pub fn disjoint(
    a_name: &'static str,
    a: u64,
    a_bytes: usize,
    b_name: &'static str,
    b: u64,
    b_bytes: usize,
) -> Result<()> {
    let (a_end, b_end) = (a.saturating_add(a_bytes as u64), b.saturating_add(b_bytes as u64));
    if a_bytes == 0 || b_bytes == 0 || a_end <= b || b_end <= a {
        return Ok(());
    }
    Err(Error::InvalidInput { what: "buffers", why: format!("`{a_name}` and `{b_name}` overlap in device memory") })
}

/// A length a kernel indexes with `u32`; [`Error::TooLarge`] past `u32::MAX`.
pub fn len_u32(what: &'static str, len: usize) -> Result<u32> {
    u32::try_from(len).map_err(|_| Error::TooLarge { what, value: len as u64, max: u32::MAX as u64 })
}

/// A block size: 1..=1024 and a multiple of 32 (kernels use whole warps).
pub fn block_size(threads: u32) -> Result<u32> {
    if threads == 0 || threads > MAX_THREADS_PER_BLOCK || !threads.is_multiple_of(32) {
        return Err(Error::InvalidInput {
            what: "block size",
            why: format!("{threads} threads per block; use a multiple of 32 from 32 to {MAX_THREADS_PER_BLOCK}"),
        });
    }
    Ok(threads)
}

/// A one-dimensional launch: `blocks × threads` threads covering `len` items, one per thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid1d {
    /// `gridDim.x`.
    pub blocks: u32,
    /// `blockDim.x`.
    pub threads: u32,
}

impl Grid1d {
    /// The grid for `len` items at `threads` per block. Refuses a zero or oversized block,
    /// more than `gridDim.x` allows, and more than 2^32 threads in total (device indices are
    /// `u32`, see `lockstep_cuda_std::thread::index_1d`).
    pub fn for_len(len: u64, threads: u32) -> Result<Grid1d> {
        let threads = block_size(threads)?;
        let blocks = len.div_ceil(threads as u64);
        if blocks > MAX_GRID_X {
            return Err(Error::TooLarge { what: "grid size in blocks", value: blocks, max: MAX_GRID_X });
        }
        if blocks * threads as u64 > 1u64 << 32 {
            return Err(Error::TooLarge { what: "threads in the grid", value: blocks * threads as u64, max: 1 << 32 });
        }
        Ok(Grid1d { blocks: blocks as u32, threads })
    }

    /// Total threads launched.
    pub fn total_threads(&self) -> u64 {
        self.blocks as u64 * self.threads as u64
    }
}

/// Grid and block extents of any launch (x, y, z), what [`crate::Gpu`] launches with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    /// `gridDim` (x, y, z).
    pub grid: [u32; 3],
    /// `blockDim` (x, y, z).
    pub block: [u32; 3],
}

impl Dims {
    /// A 3-D launch; refuses empty blocks, blocks over 1024 threads or past the per-axis limits
    /// (1024, 1024, 64), and grids past (2^31 − 1, 65535, 65535).
    pub fn new(grid: [u32; 3], block: [u32; 3]) -> Result<Dims> {
        let threads = block.iter().map(|&b| b as u64).product::<u64>();
        if threads == 0 || threads > MAX_THREADS_PER_BLOCK as u64 || block[0] > 1024 || block[1] > 1024 || block[2] > 64
        {
            return Err(Error::InvalidInput {
                what: "block shape",
                why: format!("{block:?}: at most 1024 threads, axes at most (1024, 1024, 64), none zero"),
            });
        }
        if grid[0] as u64 > MAX_GRID_X || grid[1] > 65_535 || grid[2] > 65_535 {
            return Err(Error::TooLarge {
                what: "grid extent",
                value: grid.iter().map(|&g| g as u64).max().unwrap_or(0),
                max: MAX_GRID_X,
            });
        }
        Ok(Dims { grid, block })
    }

    /// Whether the launch has no threads (nothing to do).
    pub fn is_empty(&self) -> bool {
        self.grid.contains(&0)
    }
}

impl From<Grid1d> for Dims {
    fn from(g: Grid1d) -> Dims {
        Dims { grid: [g.blocks, 1, 1], block: [g.threads, 1, 1] }
    }
}

/// Refuses `need` bytes when the device has less free ([`Error::TooLarge`]), before allocating.
pub fn ensure_fits(what: &'static str, need: u64, free: u64) -> Result<()> {
    if need > free { Err(Error::TooLarge { what, value: need, max: free }) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_covers_exactly() {
        assert_eq!(Grid1d::for_len(1000, 256).unwrap(), Grid1d { blocks: 4, threads: 256 });
        assert_eq!(Grid1d::for_len(0, 256).unwrap().blocks, 0);
        assert_eq!(Grid1d::for_len(u32::MAX as u64, 256).unwrap().total_threads(), 1 << 32);
    }

    #[test]
    fn grid_refuses_bad_blocks_and_overflow() {
        for bad in [0, 16, 33, 2048] {
            assert!(matches!(Grid1d::for_len(10, bad), Err(Error::InvalidInput { .. })), "{bad}");
        }
        assert!(matches!(Grid1d::for_len(1 << 33, 1024), Err(Error::TooLarge { .. })));
        // 96 does not divide 2^32: the last block would run past u32 indices.
        assert!(matches!(Grid1d::for_len(u32::MAX as u64, 96), Err(Error::TooLarge { .. })));
    }

    #[test]
    fn dims_check_limits() {
        assert!(Dims::new([10, 10, 1], [16, 16, 1]).is_ok());
        assert!(Dims::new([1, 1, 1], [32, 32, 2]).is_err());
        assert!(Dims::new([1, 1, 1], [0, 1, 1]).is_err());
        assert!(Dims::new([1, 70_000, 1], [32, 1, 1]).is_err());
        assert!(Dims::new([0, 1, 1], [32, 1, 1]).unwrap().is_empty());
    }

    #[test]
    fn overlap_is_refused() {
        assert!(disjoint("x", 0, 16, "y", 16, 16).is_ok());
        assert!(disjoint("x", 32, 16, "y", 16, 16).is_ok());
        assert!(disjoint("x", 0, 0, "y", 0, 16).is_ok());
        let e = disjoint("x", 0, 17, "y", 16, 16).unwrap_err().to_string();
        assert!(e.contains("`x` and `y` overlap"), "{e}");
    }

    #[test]
    fn lengths() {
        assert!(expect_len("y", 3, 3).is_ok());
        let e = expect_len("y", 2, 3).unwrap_err().to_string();
        assert!(e.contains("`y` has 2 elements") && e.contains("needs 3"), "{e}");
        assert_eq!(len_u32("x", 7).unwrap(), 7);
        assert!(matches!(len_u32("x", u32::MAX as usize + 1), Err(Error::TooLarge { .. })));
    }
}
