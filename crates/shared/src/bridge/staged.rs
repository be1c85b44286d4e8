//! The staged buffer kernels' policy (`bridge_staged_dims_f32/f64`, d = 2 and 3): at a path count
//! that is not a multiple of a 32-byte sector's elements (8 f32, 4 f64), every row of the
//! `[row][path]` output starts inside a sector, so a warp's or a block's slice of a row begins
//! and ends in sectors that a neighbour writes at another time (partially written sectors;
//! measured: a plain row copy drops from 96% to 71% of copy bandwidth at odd counts,
//! bench/results/bridge-anypaths-2026-11-26.md). The staged kernels give every sector of a row's interior
//! exactly one writing block: block `b` computes the paths `b·own .. b·own + block·lanes` (its
//! own `own` paths and a halo of the next block's first `halo` threads), keeps the values a
//! group of steps writes in shared memory, and writes row `r`'s elements
//! [`staged_span`]`(r·paths, paths, b, own)` with whole-sector stores: from the first sector
//! boundary at or after its first own path to the first one at or after the next block's. The
//! halo (at least `sector − 1` paths) covers the last sector. Only each row's first and last
//! sector (shared with the neighbouring rows) can be partial.
//!
//! The kernels decide with the same [`LaunchShape`] methods as the launcher. They are taken where
//! they were measured faster (H100, paper problem, % of copy, paths / increments;
//! bench/results/bridge-anypaths-2026-11-27.md): f64 at d = 2 and 3 (89 / 89 at d = 3 against
//! 81–85 unstaged), f32 at d = 3 at every count that is not a multiple of 8 (90 / 86–90 against
//! 67 odd, 79–84 even unstaged) and at d = 2 at odd counts (86 / 82 against 74 / 72); f32 at
//! d = 2 with an even count keeps the unstaged kernels (84–87 against 74 / 70 staged), and d = 1
//! all of them (a d = 1 staged kernel was built, measured slower at every count and removed).

use super::{LaunchShape, stack_fits_shared, table_bytes};

/// Bytes of a sector, the unit of a partial write.
pub const SECTOR_BYTES: usize = 32;

/// Steps per prefetch group of the staged kernels for `d` = 2, 3 (`bridge_staged_dims_*`): a
/// group makes up to `2·STAGED_DIMS_PIPELINE·d` rows (increments), which the staging rows hold
/// (12 at d = 3: 12 KiB at 128 threads, within 48 KiB with the stack and the strategy).
pub const STAGED_DIMS_PIPELINE: usize = 2;

/// Dynamic shared memory a staged launch may use (the default limit without opting in).
pub const STAGED_SHARED_LIMIT: usize = 48 * 1024;

/// Elements of row `r` (first element `row_start = r·paths`) that block `b` of a staged launch
/// writes: `[start, end)` with `start = row_start` for `b = 0`, else the first multiple of
/// `sector` at or after `row_start + b·own` (at most the row's end), and `end` the same for
/// `b + 1` (the row's end for the last block). The spans of `b = 0, 1, …` partition the row;
/// each lies within the block's computed paths `b·own .. b·own + own + sector − 1`, and only
/// the row's ends can be inside a sector. `row_start + paths + own + sector` must not wrap.
#[inline(always)]
pub fn staged_span(row_start: u32, paths: u32, b: u32, own: u32, sector: u32) -> (u32, u32) {
    let row_end = row_start + paths;
    let up = |e: u32| e.div_ceil(sector) * sector;
    let lo = row_start + b * own;
    let start = if b == 0 { row_start } else { up(lo).min(row_end) };
    (start, up(lo + own).min(row_end))
}

impl LaunchShape {
    /// Elements of a 32-byte sector (8 f32, 4 f64).
    #[inline(always)]
    pub fn sector_elems(&self) -> usize {
        SECTOR_BYTES / self.elem
    }

    /// Paths each thread of a staged launch computes: two in f32 (one `F32x2`), one in f64.
    #[inline(always)]
    pub fn staged_lanes(&self) -> usize {
        if self.elem == 4 { 2 } else { 1 }
    }

    /// Staging rows of a launch: `2·STAGED_DIMS_PIPELINE·d` (twice a group's rows).
    #[inline(always)]
    pub fn staged_rows(&self) -> usize {
        2 * STAGED_DIMS_PIPELINE * self.dims
    }

    /// Threads of a block that only compute the next block's first paths: enough lanes for a
    /// sector less one element (f32 4 threads of pairs, f64 3 threads).
    #[inline(always)]
    pub fn staged_halo(&self) -> usize {
        (self.sector_elems() - 1).div_ceil(self.staged_lanes())
    }

    /// Paths a block of a staged launch owns: `(block − halo)·lanes` (248 f32 and 125 f64 at
    /// 128 threads), even in f32, so every pair of the grid starts at an even path.
    #[inline(always)]
    pub fn staged_own(&self) -> usize {
        self.block.saturating_sub(self.staged_halo()) * self.staged_lanes()
    }

    /// Blocks of a staged launch: `ceil(paths / own)`, each owning at least one path.
    #[inline(always)]
    pub fn staged_blocks(&self) -> usize {
        self.paths.div_ceil(self.staged_own().max(1))
    }

    /// Bytes of dynamic shared memory a staged launch uses: the stack of `slots·d·block`
    /// elements of `lanes·elem` bytes, the strategy ([`table_bytes`]),
    /// [`LaunchShape::staged_rows`] staging rows of `block·lanes` elements, and their row numbers
    /// (`u32`).
    #[inline(always)]
    pub fn staged_used_bytes(&self) -> usize {
        let lane = self.elem * self.staged_lanes();
        let stack = (self.slots * self.dims * self.block * lane).div_ceil(16) * 16;
        let rows = self.staged_rows();
        stack + table_bytes(self.steps, self.elem) + rows * self.block * lane + rows * 4
    }

    /// Bytes of dynamic shared memory a staged launch asks for: [`LaunchShape::staged_used_bytes`],
    /// except f64 at d = 3, which reserves [`STAGED_SHARED_LIMIT`] (48 KiB, the rest unused)
    /// so that at most four blocks share an SM: on the H100 four gave 89.9% of copy on the paper
    /// problem at an odd count and five (its 40 KiB and 88 registers allow them) 87.3%.
    #[inline(always)]
    pub fn staged_shared_bytes(&self) -> usize {
        let used = self.staged_used_bytes();
        if self.elem == 8 && self.dims == 3 { used.max(STAGED_SHARED_LIMIT) } else { used }
    }

    /// Whether a buffer launch takes a staged kernel (`bridge_staged_dims_*`): the specialised
    /// path (`LaunchShape::buffer_fast`) at d = 2 or 3 (a d = 4 instance in the same entry took
    /// 124 registers where d = 2 and 3 take 62 in f32, and d = 4 fits 48 KiB only below 128
    /// threads; it keeps the unstaged kernels), a path count that is not a multiple of a
    /// sector's elements (8 f32, 4 f64), except f32 at d = 2, staged at odd counts only (where
    /// the staged kernels were measured faster, see the module; whole sectors per row: the
    /// unstaged kernels stay), more threads than the halo, a whole number of warps (each warp
    /// writes whole rows out), [`LaunchShape::staged_used_bytes`] within
    /// [`STAGED_SHARED_LIMIT`], and `rows·paths + 2^13 ≤ 2^32` (the spans' 32-bit ends).
    #[inline(always)]
    pub fn buffer_staged(&self) -> bool {
        let split = if self.elem == 4 && self.dims == 2 {
            !self.paths.is_multiple_of(2)
        } else {
            !self.paths.is_multiple_of(self.sector_elems())
        };
        self.buffer_fast()
            && (2..=3).contains(&self.dims)
            && split
            && stack_fits_shared(self.slots, self.dims, self.block)
            && self.block > self.staged_halo()
            && self.block.is_multiple_of(32)
            && self.staged_used_bytes() <= STAGED_SHARED_LIMIT
            && (self.steps as u64 * self.dims as u64).saturating_mul(self.paths as u64) + (1 << 13) <= 1u64 << 32
    }

    /// [`LaunchShape::buffer_staged`] for buffers at the device addresses whose bitwise OR is
    /// `addrs` (z's and out's): both 32-byte aligned, so the spans' sectors are the memory's
    /// (whole allocations are 256-byte aligned; a sub-slice takes the unstaged kernels).
    #[inline(always)]
    pub fn buffer_staged_at(&self, addrs: u64) -> bool {
        self.buffer_staged() && addrs.is_multiple_of(SECTOR_BYTES as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::launch::tests::sh;
    use std::vec;

    #[test]
    fn staged_shape_of_the_paper_problem() {
        // d = 1 never stages (measured slower): the unstaged kernels at any count.
        for (paths, elem) in [(1_439_745, 4), (1_439_746, 4), (1_439_745, 8), (1_439_746, 8)] {
            assert!(!sh(64, 1, 7, 128, paths, elem).buffer_staged(), "d = 1, {paths}, {elem}");
        }
        // d = 3: f32 pairs (4 halo threads, 248 paths), f64 one path (3, 125); 12 staging rows.
        let d3 = sh(64, 3, 7, 128, 1_439_745, 4);
        assert_eq!((d3.staged_lanes(), d3.staged_halo(), d3.staged_own(), d3.staged_rows()), (2, 4, 248, 12));
        assert_eq!(d3.staged_blocks(), 1_439_745usize.div_ceil(248));
        // 7·3·128·8 stack + 64·64 table + 12·256·4 staging rows + 48 bytes of row numbers.
        assert_eq!(d3.staged_shared_bytes(), 21_504 + 4_096 + 12 * 1024 + 48);
        assert_eq!(d3.staged_used_bytes(), d3.staged_shared_bytes());
        assert!(d3.buffer_staged() && d3.buffer_staged_at(0x7000_0000));
        assert!(!d3.buffer_staged_at(0x7000_0010), "a sub-slice not 32-byte aligned");
        let d3f64 = sh(64, 3, 7, 128, 1_439_745, 8);
        assert_eq!((d3f64.staged_lanes(), d3f64.staged_halo(), d3f64.staged_own()), (1, 3, 125));
        assert!(d3f64.buffer_staged());
        // f64 at d = 3 uses 7·3·128·8 + 64·96 + 12·1024 + 48 bytes and asks for 48 KiB (four
        // blocks per SM); at d = 2 it asks for what it uses.
        assert_eq!(d3f64.staged_used_bytes(), 21_504 + 6_144 + 12 * 1024 + 48);
        assert_eq!(d3f64.staged_shared_bytes(), 48 * 1024);
        let d2f64 = sh(64, 2, 7, 128, 1_439_745, 8);
        assert_eq!(d2f64.staged_shared_bytes(), d2f64.staged_used_bytes());
        // Whole sectors per row: the unstaged kernels; f32 at d = 3 stages every other count,
        // at d = 2 odd counts only.
        assert!(!sh(64, 3, 7, 128, 1_439_744, 4).buffer_staged());
        assert!(sh(64, 3, 7, 128, 1_439_746, 4).buffer_staged(), "2 mod 4 in f32, d = 3: staged");
        assert!(sh(64, 3, 7, 128, 1_439_748, 4).buffer_staged(), "4 mod 8 in f32, d = 3: staged");
        assert!(!sh(64, 2, 7, 128, 1_439_746, 4).buffer_staged(), "even f32 count, d = 2: unstaged");
        assert!(!sh(64, 2, 7, 128, 1_439_748, 4).buffer_staged(), "even f32 count, d = 2: unstaged");
        assert!(!sh(64, 3, 7, 128, 1_439_748, 8).buffer_staged());
        assert!(sh(64, 3, 7, 128, 1_439_746, 8).buffer_staged(), "2 mod 4 in f64: staged");
        assert!(sh(64, 2, 7, 128, 1001, 4).buffer_staged() && sh(64, 2, 7, 128, 1001, 8).buffer_staged());
        // d = 4 never stages (at 128 threads 28 KiB of stack + 16 staging rows would pass 48
        // KiB; at 32 they fit, but the unstaged kernels take it); d = 5 is not on the fast path.
        assert!(!sh(64, 4, 7, 128, 1001, 4).buffer_staged());
        assert!(!sh(64, 4, 7, 32, 1001, 4).buffer_staged() && !sh(64, 4, 7, 32, 1001, 8).buffer_staged());
        assert!(!sh(64, 5, 7, 32, 1001, 4).buffer_staged());
        // Too large a block for 48 KiB, a stack too large for shared memory.
        assert!(!sh(64, 3, 7, 512, 1001, 4).buffer_staged());
        // Not a whole number of warps (a warp writes whole rows out).
        assert!(sh(64, 3, 7, 96, 1001, 4).buffer_staged() && !sh(64, 3, 7, 100, 1001, 4).buffer_staged());
        assert!(!sh(64, 3, 17, 128, 1001, 4).buffer_staged());
        assert!(!sh(64, 2, 7, 32, (1 << 25) - 1, 4).buffer_staged(), "rows·d·paths near 2^32");
    }

    /// A CPU emulation of the staged write-out (`StagedSink::flush` in the kernel crate): for
    /// each row, block and lane, the elements its 16-byte chunks write (4 f32, 2 f64; a warp
    /// takes whole rows, its lanes the span's chunks in turn, split into elements at a span's
    /// ends), checked to be written exactly once over the grid, only from paths the block
    /// computed (and that exist), and — inside a row, away from its two end sectors — only as
    /// whole sectors from one block.
    fn emulate(paths: u32, rows: u32, dims: usize, block: usize, elem: usize) {
        let shape = sh(rows as usize, dims, 7, block, paths as usize, elem);
        let (own, lanes) = (shape.staged_own() as u32, shape.staged_lanes() as u32);
        // The kernels' chunks: 16 bytes.
        let (sector, vec) = (shape.sector_elems() as u32, 16 / elem as u32);
        let computed = block as u32 * lanes;
        let total = (rows * paths) as usize;
        let mut writer = vec![u32::MAX; total];
        let mut writes = vec![0u8; total];
        for r in 0..rows {
            let row_start = r * paths;
            for b in 0..shape.staged_blocks() as u32 {
                let lo = row_start + b * own;
                let (start, end) = staged_span(row_start, paths, b, own, sector);
                // The kernel's write-out: lane l of the row's warp writes the chunks
                // start/vec·vec + (l + 32·j)·vec, element by element where a chunk is not inside
                // the span.
                for l in 0..32 {
                    let mut e0 = start / vec * vec + l * vec;
                    while e0 < end {
                        for e in e0..e0 + vec {
                            if e < start || e >= end {
                                continue;
                            }
                            let i = e - lo; // the staging index: path b·own + i
                            assert!(i < computed, "P={paths} b={b} r={r}: index {i} not computed");
                            assert!(e < row_start + paths);
                            writes[e as usize] += 1;
                            writer[e as usize] = b;
                        }
                        e0 += 32 * vec;
                    }
                }
            }
        }
        assert!(writes.iter().all(|&w| w == 1), "P={paths} d={dims} block={block} elem={elem}: not exactly once");
        // Sectors inside a row (not containing a row boundary) have one writer.
        let s = sector as usize;
        for first in (0..total).step_by(s) {
            let last = (first + s).min(total) - 1;
            let inside = first / paths as usize == last / paths as usize
                && !first.is_multiple_of(paths as usize)
                && !(last + 1).is_multiple_of(paths as usize);
            if inside && last - first + 1 == s {
                assert!(
                    writer[first..=last].iter().all(|&w| w == writer[first]),
                    "P={paths} block={block} elem={elem}: sector at {first} has two writers"
                );
            }
        }
    }

    #[test]
    fn staged_writes_cover_every_element_once_in_whole_sectors() {
        for (elem, dims) in [(4, 2), (4, 3), (8, 2), (8, 3)] {
            for block in [32, 64, 96, 128, 256] {
                for paths in
                    (1..=70).chain([127, 128, 129, 247, 248, 249, 253, 500, 503, 504, 505, 1001, 2047, 4099, 10_007])
                {
                    for rows in [1, 3, 17] {
                        emulate(paths, rows, dims, block, elem);
                    }
                }
            }
        }
    }
}
