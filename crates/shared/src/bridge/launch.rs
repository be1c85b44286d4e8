//! Launch policy of the bridge kernels: which kernel and path a launch takes, how many paths each
//! thread handles and how much dynamic shared memory it needs, decided from one [`LaunchShape`]
//! by the kernels and by their launcher alike (so the two never disagree), and the by-value
//! parameter block [`BridgeArgs`] that every bridge kernel receives first.
//!
//! Per-element math (eq. 5, the strategy's steps, `generate_path`) lives in the parent module.

use super::{COEFS, INDICES, philox, sobol};

/// Elements of the per-block shared-memory stack on the GPU: thread `t` of a block of `b`
/// threads keeps element `i` at `i·b + t` (conflict-free). A strategy uses it when
/// `slots · d · b ≤ SHARED_STACK`; otherwise its stack lives in a device scratch buffer laid
/// out `[slot·d + k][path]`.
pub const SHARED_STACK: usize = 4096;

/// Strategy steps the buffer kernels' specialised path copies into shared memory (longer
/// strategies take the general path): 128 rows are 8 KiB (f32) or 12 KiB (f64) of coefficients
/// and indices.
pub const TABLE_STEPS: usize = 128;

/// Largest dimension of the buffer kernels' specialised path ([`LaunchShape::buffer_fast`]).
pub const FAST_DIMS: usize = 4;

/// Dynamic shared memory a launch of the fused kernels may use (the default limit without
/// opting in).
pub const FUSED_SHARED_LIMIT: usize = 48 * 1024;

/// Whether a strategy of `slots` d-vectors fits the shared-memory stack at `block` threads.
pub fn stack_fits_shared(slots: usize, dims: usize, block: usize) -> bool {
    slots.saturating_mul(dims).saturating_mul(block) <= SHARED_STACK
}

/// The shape of one bridge launch: the strategy's `steps` and stack `slots`, the dimension
/// `dims`, `block` threads per block, `paths` paths and `elem` bytes per element (4 for f32, 8
/// for f64). Every launch decision is a method of it; the kernels build it from their
/// parameters and `blockDim`, the launcher from the plan and its block size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// Strategy steps (N + 1).
    pub steps: usize,
    /// Dimension d.
    pub dims: usize,
    /// Stack slots of the strategy (d-vectors).
    pub slots: usize,
    /// Threads per block.
    pub block: usize,
    /// Paths of the launch.
    pub paths: usize,
    /// Bytes per element of the working precision.
    pub elem: usize,
}

impl LaunchShape {
    /// The shape of a launch (fields in declaration order).
    pub const fn new(steps: usize, dims: usize, slots: usize, block: usize, paths: usize, elem: usize) -> LaunchShape {
        LaunchShape { steps, dims, slots, block, paths, elem }
    }

    /// Whether the stack (`slots·d` elements per thread) fits the shared-memory stack
    /// ([`stack_fits_shared`]); otherwise it lives in a scratch buffer.
    pub fn stack_fits_shared(self) -> bool {
        stack_fits_shared(self.slots, self.dims, self.block)
    }

    /// Whether the buffer kernels (`bridge_f32/f64`) take their specialised path (one instance
    /// per `d`, strategy in shared memory, 32-bit indices): `1 ≤ d ≤ FAST_DIMS`, the stack fits
    /// in shared memory, at most [`TABLE_STEPS`] steps, and `rows·paths = steps·d·paths ≤ 2^32`
    /// (32-bit element indices). The kernel and its launcher both decide with this method.
    pub fn buffer_fast(self) -> bool {
        (1..=FAST_DIMS).contains(&self.dims)
            && self.stack_fits_shared()
            && self.steps <= TABLE_STEPS
            && (self.steps as u64).saturating_mul(self.dims as u64).saturating_mul(self.paths as u64) <= 1u64 << 32
    }

    /// Paths each thread of the buffer kernels handles: on the f32 specialised path
    /// ([`LaunchShape::buffer_fast`], `elem` = 4 bytes) 4 at d = 1 when `paths` is a multiple of
    /// 4 or odd and the stack of 16-byte elements stays within `SHARED_STACK / 2` 16-byte
    /// elements (32 KiB, as f64's): thread `q` takes paths `4q..4q + 4` as one `F32x4`, read and
    /// written as one `ld/st.global.v4.f32` where the row's first element is 16-byte aligned
    /// (always for a multiple of 4; at an odd count as the row's class `(row·paths) mod 4`
    /// allows, uniform over the grid, and the last thread only its existing paths); else 2 when
    /// `paths` is even (`ld/st.global.v2.f32`, any d ≤ 4; at d = 1 a count of 2 mod 4 stays with
    /// pairs: quads there measured 20% slower than pairs, run Y1 in
    /// bench/results/bridge-predictions.md); 1 otherwise. Each lane computes exactly the scalar
    /// f32 operations. The kernel and its launcher (grid of `ceil(paths / lanes)` threads) both
    /// decide with this method.
    pub fn buffer_lanes(self) -> usize {
        let paths = self.paths;
        let (quads, even) = (paths.is_multiple_of(4) || !paths.is_multiple_of(2), paths.is_multiple_of(2));
        if self.elem != 4 || !self.buffer_fast() {
            1
        } else if self.dims == 1 && quads && stack_fits_shared(self.slots, 2, self.block) {
            4
        } else if even {
            2
        } else {
            1
        }
    }

    /// [`LaunchShape::buffer_lanes`] for buffers at the device addresses whose bitwise OR is
    /// `addrs` (z's and out's): four lanes need both 16-byte aligned, two lanes 8-byte aligned
    /// (and an even count); otherwise fewer. Whole allocations are 256-byte aligned, but a
    /// sub-slice may start at any element. The kernel (from its pointer arguments) and its
    /// launcher (from the slices' device pointers) both decide with this method; shared memory
    /// is sized by [`LaunchShape::buffer_shared_bytes`] for the widest lanes, which is enough for
    /// narrower ones.
    pub fn buffer_lanes_at(self, addrs: u64) -> usize {
        match self.buffer_lanes() {
            4 if addrs.is_multiple_of(16) => 4,
            4 | 2 if self.paths.is_multiple_of(2) && addrs.is_multiple_of(8) => 2,
            _ => 1,
        }
    }

    /// Bytes of the shared stack (dynamic shared memory, sized per launch) with elements of
    /// `elem` bytes (`self.elem` times the lanes per thread): `slots·d·block` elements rounded
    /// up to 16 bytes, or 0 when it does not fit ([`LaunchShape::stack_fits_shared`]).
    pub fn stack_bytes(self, elem: usize) -> usize {
        if self.stack_fits_shared() { (self.slots * self.dims * self.block * elem).div_ceil(16) * 16 } else { 0 }
    }

    /// Bytes of the strategy staged in shared memory: its `steps` coefficient rows (`COEFS·elem`
    /// bytes each) followed by its index rows (`INDICES·4`).
    pub fn table_bytes(self) -> usize {
        self.steps * (COEFS * self.elem + INDICES * 4)
    }

    /// Bytes of dynamic shared memory a launch of the buffer kernels needs: the stack
    /// ([`LaunchShape::stack_bytes`]), then on the specialised path
    /// ([`LaunchShape::buffer_fast`]) the strategy ([`LaunchShape::table_bytes`]). With several
    /// paths per thread ([`LaunchShape::buffer_lanes`]) a stack element holds all
    /// (`lanes·elem` bytes). At most 32 KiB + 12 KiB (f64), under the 48 KiB a launch may use
    /// without opting in.
    pub fn buffer_shared_bytes(self) -> usize {
        let stack = self.stack_bytes(self.elem * self.buffer_lanes());
        if self.buffer_fast() { stack + self.table_bytes() } else { stack }
    }

    /// Whether the fused kernels take their d = 1 kernels (`bridge_philox_d1_*`,
    /// `bridge_sobol_d1_*`): d = 1 and the buffer kernels' specialised path
    /// ([`LaunchShape::buffer_fast`]). The kernels and the launcher both decide with this method.
    pub fn fused_fast_d1(self) -> bool {
        self.dims == 1 && self.buffer_fast()
    }

    /// Bytes of the fused kernels' stack and strategy in dynamic shared memory: the stack (one
    /// path per thread, [`LaunchShape::stack_bytes`]), then on the d = 1 path
    /// ([`LaunchShape::fused_fast_d1`]) the strategy ([`LaunchShape::table_bytes`]).
    pub fn fused_base_bytes(self) -> usize {
        let stack = self.stack_bytes(self.elem);
        if self.fused_fast_d1() { stack + self.table_bytes() } else { stack }
    }

    /// Whether the fused Sobol kernels use the warp method ([`sobol::warp_shared_bytes`]): its
    /// tables for `steps·d` rows fit after the fused stack and strategy
    /// ([`LaunchShape::fused_base_bytes`]) within [`FUSED_SHARED_LIMIT`]. Otherwise the warp
    /// method with the low tables read from global memory when the high parts alone fit
    /// ([`LaunchShape::fused_sobol_pairs`]), else each element walks its Gray-code bits
    /// ([`sobol::sobol_u32`]).
    pub fn fused_sobol_warp(self) -> bool {
        let rows = self.steps.saturating_mul(self.dims);
        self.fused_base_bytes().saturating_add(sobol::warp_shared_bytes(rows, self.block)) <= FUSED_SHARED_LIMIT
    }

    /// Whether the fused Sobol kernels, when [`LaunchShape::fused_sobol_warp`] does not hold, use
    /// the warp method with only the warps' high parts in shared memory
    /// ([`sobol::pairs_shared_bytes`]) and the low tables read from global memory (one 128-byte
    /// line per row and warp, the same for every warp: L1 hits): the high parts fit after the
    /// fused stack and strategy ([`LaunchShape::fused_base_bytes`]) within
    /// [`FUSED_SHARED_LIMIT`].
    pub fn fused_sobol_pairs(self) -> bool {
        let rows = self.steps.saturating_mul(self.dims);
        self.fused_base_bytes().saturating_add(sobol::pairs_shared_bytes(rows, self.block)) <= FUSED_SHARED_LIMIT
    }

    /// Bytes of the fused Philox d = 1 kernels' schedule and word cache: `steps` schedule
    /// entries (rounded up to 16 bytes), then `cache_slots` words per thread (`[slot][thread]`).
    pub fn philox_cache_bytes(self, cache_slots: usize) -> usize {
        self.steps
            .saturating_mul(4)
            .div_ceil(16)
            .saturating_mul(16)
            .saturating_add(cache_slots.saturating_mul(self.block * 4))
    }

    /// Whether the fused Philox d = 1 kernels compute each Philox block once per path by the
    /// host's schedule (`philox::scheduled_word`, `cache_slots` from the host's planner, 0 when
    /// it has none): the d = 1 fast path ([`LaunchShape::fused_fast_d1`]), at most
    /// `philox::MAX_CACHE_SLOTS` slots, and the schedule and cache
    /// ([`LaunchShape::philox_cache_bytes`]) fit after the fused stack and strategy
    /// ([`LaunchShape::fused_base_bytes`]) within [`FUSED_SHARED_LIMIT`]. Otherwise the
    /// one-block cache of `philox::PhiloxNormals`.
    pub fn fused_philox_cached(self, cache_slots: usize) -> bool {
        (1..=philox::MAX_CACHE_SLOTS).contains(&cache_slots)
            && self.fused_fast_d1()
            && self.fused_base_bytes().saturating_add(self.philox_cache_bytes(cache_slots)) <= FUSED_SHARED_LIMIT
    }

    /// Bytes of dynamic shared memory a launch of the fused kernels needs:
    /// [`LaunchShape::fused_base_bytes`] (stack, then on the d = 1 path the strategy), then for
    /// Sobol on the warp method ([`LaunchShape::fused_sobol_warp`]) its tables, or its high parts
    /// alone ([`LaunchShape::fused_sobol_pairs`]). (The fused Philox d = 1 kernels add
    /// [`LaunchShape::philox_cache_bytes`] when [`LaunchShape::fused_philox_cached`] holds.)
    pub fn fused_shared_bytes(self, sobol: bool) -> usize {
        let base = self.fused_base_bytes();
        if sobol && self.fused_sobol_warp() {
            base + sobol::warp_shared_bytes(self.steps * self.dims, self.block)
        } else if sobol && self.fused_sobol_pairs() {
            base + sobol::pairs_shared_bytes(self.steps * self.dims, self.block)
        } else {
            base
        }
    }
}

/// The parameters every bridge kernel takes first, by value (`#[repr(C)]`, 72 bytes, 8-byte
/// aligned; the launcher passes it as one kernel parameter): the strategy's device tables and
/// buffers as addresses (the kernels cast them to pointers of the working precision) and the
/// launch's scalars. `scratch` is only dereferenced when the stack does not fit shared memory
/// ([`LaunchShape::stack_fits_shared`]); `out` holds `steps·d·paths` elements.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BridgeArgs {
    /// Coefficient rows (`steps·COEFS` elements).
    pub coef: u64,
    /// Index rows (`steps·INDICES` u32).
    pub idx: u64,
    /// The Cholesky factor C (`d²` elements, row-major).
    pub chol: u64,
    /// The start x (`d` elements).
    pub start: u64,
    /// The scratch stack (`slots·d·paths` elements) when the stack does not fit shared memory.
    pub scratch: u64,
    /// The output (`steps·d·paths` elements, `[row][path]`).
    pub out: u64,
    /// Strategy steps (N + 1).
    pub steps: u32,
    /// Dimension d.
    pub dims: u32,
    /// Stack slots.
    pub slots: u32,
    /// 1: scaled increments, 0: points.
    pub increments: u32,
    /// Paths.
    pub paths: u32,
    /// Zero (padding to a multiple of 8 bytes).
    pub pad: u32,
}

const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    assert!(size_of::<BridgeArgs>() == 72 && align_of::<BridgeArgs>() == 8);
    assert!(offset_of!(BridgeArgs, coef) == 0 && offset_of!(BridgeArgs, idx) == 8);
    assert!(offset_of!(BridgeArgs, chol) == 16 && offset_of!(BridgeArgs, start) == 24);
    assert!(offset_of!(BridgeArgs, scratch) == 32 && offset_of!(BridgeArgs, out) == 40);
    assert!(offset_of!(BridgeArgs, steps) == 48 && offset_of!(BridgeArgs, dims) == 52);
    assert!(offset_of!(BridgeArgs, slots) == 56 && offset_of!(BridgeArgs, increments) == 60);
    assert!(offset_of!(BridgeArgs, paths) == 64 && offset_of!(BridgeArgs, pad) == 68);
};

impl BridgeArgs {
    /// The launch shape of these arguments at `block` threads per block and `elem` bytes per
    /// element.
    pub fn shape(&self, block: usize, elem: usize) -> LaunchShape {
        LaunchShape::new(self.steps as usize, self.dims as usize, self.slots as usize, block, self.paths as usize, elem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape with `elem` bytes per element (the tests' positional shorthand).
    fn sh(steps: usize, dims: usize, slots: usize, block: usize, paths: usize, elem: usize) -> LaunchShape {
        LaunchShape::new(steps, dims, slots, block, paths, elem)
    }

    #[test]
    fn fused_shared_bytes_add_the_sobol_tables_when_they_fit() {
        // Paper problem f32, block 128: 7.5 KiB of stack and strategy, then 64 rows of 32 low
        // words and 4 warps × 64 pairs.
        assert!(sh(64, 1, 7, 128, 1_439_744, 4).fused_sobol_warp());
        assert_eq!(sh(64, 1, 7, 128, 1_439_744, 4).fused_shared_bytes(true), 3584 + 64 * 64 + 64 * 128 + 4 * 64 * 8);
        assert_eq!(sh(64, 1, 7, 128, 1_439_744, 4).fused_shared_bytes(false), 3584 + 64 * 64);
        // f64, 128 steps at 256 threads: 16 KiB stack + 12 KiB strategy + 24 KiB tables > 48 KiB.
        // The high parts alone (128 rows × 8 warps × 8 B = 8 KiB) fit: low tables from global.
        assert!(!sh(128, 1, 8, 256, 1000, 8).fused_sobol_warp());
        assert!(sh(128, 1, 8, 256, 1000, 8).fused_sobol_pairs());
        let base = sh(128, 1, 8, 256, 1000, 8).fused_base_bytes();
        assert_eq!(sh(128, 1, 8, 256, 1000, 8).fused_shared_bytes(true), base + 128 * 8 * 8);
        // d = 3, 65 steps, f64 at 128 threads (the bench's d = 3 shape): 21 KiB of stack + 31 KiB
        // of tables do not fit, the stack + 6 KiB of high parts do.
        assert!(!sh(65, 3, 7, 128, 1_439_744, 8).fused_sobol_warp());
        assert!(sh(65, 3, 7, 128, 1_439_744, 8).fused_sobol_pairs());
        // Nothing fits: a stack of 40 slots at 1024 threads in scratch, 2000 rows of pairs.
        assert!(!sh(2000, 1, 40, 1024, 1000, 4).fused_sobol_pairs());
        assert_eq!(sh(2000, 1, 40, 1024, 1000, 4).fused_shared_bytes(true), 0);
        // d = 3 (general path): the stack, then the tables of 3·steps rows.
        assert!(sh(65, 3, 7, 128, 1000, 4).fused_sobol_warp());
        // Every layout this admits stays within the limit.
        for (steps, dims, slots, block) in [(128, 1, 4, 1024), (100, 4, 9, 32), (1, 1, 1, 32), (2000, 8, 20, 512)] {
            for elem in [4, 8] {
                let s = sh(steps, dims, slots, block, 1000, elem);
                assert!(s.fused_shared_bytes(true) <= FUSED_SHARED_LIMIT.max(s.fused_base_bytes()));
            }
        }
    }

    #[test]
    fn philox_cache_fits_the_paper_shape_at_128_threads_only_with_few_slots() {
        // f32, 64 steps, 7 stack slots: 7.5 KiB + 256 B of schedule + 16 slots × 512 B.
        let paper = sh(64, 1, 7, 128, 1_439_744, 4);
        assert_eq!(paper.philox_cache_bytes(16), 256 + 16 * 512);
        assert!(paper.fused_philox_cached(16));
        assert!(!paper.fused_philox_cached(0));
        assert!(!paper.fused_philox_cached(philox::MAX_CACHE_SLOTS + 1));
        // Not d = 1, or the cache does not fit 48 KiB.
        assert!(!sh(64, 3, 7, 128, 1000, 4).fused_philox_cached(16));
        assert!(!sh(64, 1, 7, 1024, 1000, 8).fused_philox_cached(16));
    }

    #[test]
    fn buffer_shared_bytes_hold_the_stack_and_table_within_the_default_limit() {
        let lanes = |steps, dims, slots, block, paths, elem| sh(steps, dims, slots, block, paths, elem).buffer_lanes();
        let bytes =
            |steps, dims, slots, block, paths, elem| sh(steps, dims, slots, block, paths, elem).buffer_shared_bytes();
        let fast = |steps, dims, slots, block, paths| sh(steps, dims, slots, block, paths, 4).buffer_fast();
        // Paper problem in f32 at 128 threads: the path count is a multiple of 4, so each
        // thread takes four paths and a stack element holds them (7 slots × 128 × 16 B), then 64
        // rows of 32 B coefficients and 32 B indices.
        assert!(fast(64, 1, 7, 128, 1_439_744));
        // Alignment caps the lanes: a sub-slice 4 or 8 bytes into an allocation.
        assert_eq!(sh(64, 1, 7, 128, 1_439_744, 4).buffer_lanes_at(0x7000_0000), 4);
        assert_eq!(sh(64, 1, 7, 128, 1_439_744, 4).buffer_lanes_at(0x7000_0008), 2);
        assert_eq!(sh(64, 1, 7, 128, 1_439_744, 4).buffer_lanes_at(0x7000_0004), 1);
        assert_eq!(sh(64, 1, 7, 128, 1_439_745, 4).buffer_lanes_at(0x7000_0008), 1);
        assert_eq!(sh(64, 3, 7, 128, 1000, 4).buffer_lanes_at(0x7000_0008), 2);
        assert_eq!(sh(64, 3, 7, 128, 1000, 4).buffer_lanes_at(0x7000_000c), 1);
        assert_eq!(lanes(64, 1, 7, 128, 1_439_744, 4), 4);
        assert_eq!(bytes(64, 1, 7, 128, 1_439_744, 4), 14336 + 64 * 64);
        // An odd path count at d = 1: quads too (the last thread's quad is partial).
        for paths in [1_439_745, 1_439_747, 1, 3, 5, 7, 33, 131] {
            assert_eq!(lanes(64, 1, 7, 128, paths, 4), 4, "{paths}");
            assert_eq!(bytes(64, 1, 7, 128, paths, 4), 14336 + 64 * 64, "{paths}");
        }
        // 2 mod 4: pairs, 8 B elements.
        for paths in [1_439_746, 2, 6, 130] {
            assert_eq!(lanes(64, 1, 7, 128, paths, 4), 2, "{paths}");
            assert_eq!(bytes(64, 1, 7, 128, paths, 4), 7168 + 64 * 64, "{paths}");
        }
        // Quads only while the 16-byte stack stays within 32 KiB (slots·2·block ≤ SHARED_STACK),
        // else pairs; quads only at d = 1 (d = 2..=4 take pairs).
        assert_eq!(lanes(64, 1, SHARED_STACK / 256, 128, 1000, 4), 4);
        assert_eq!(lanes(64, 1, SHARED_STACK / 256 + 1, 128, 1000, 4), 2);
        assert_eq!(lanes(64, 1, SHARED_STACK / 256, 128, 1001, 4), 4);
        assert_eq!(lanes(64, 2, 7, 128, 1000, 4), 2);
        // Where the 16-byte stack does not fit, an odd path count: one path per thread, 4 B
        // elements (as at d = 2..=4).
        assert_eq!(lanes(64, 1, SHARED_STACK / 256 + 1, 128, 1001, 4), 1);
        assert_eq!(bytes(64, 1, SHARED_STACK / 256 + 1, 128, 1001, 4), (SHARED_STACK / 256 + 1) * 128 * 4 + 64 * 64);
        assert_eq!(lanes(64, 2, 7, 128, 1001, 4), 1);
        // f64: one path per thread, 64 B coefficient rows.
        assert_eq!(lanes(64, 1, 7, 128, 1_439_744, 8), 1);
        assert_eq!(bytes(64, 1, 7, 128, 1_439_744, 8), 7168 + 64 * 96);
        // d = 3: stack of 7 × 3 slots, pairs in f32 when the count is even.
        assert!(fast(64, 3, 7, 128, 1000));
        assert_eq!(lanes(64, 3, 7, 128, 1000, 4), 2);
        assert_eq!(bytes(64, 3, 7, 128, 1000, 4), 7 * 3 * 128 * 8 + 64 * 64);
        assert_eq!(bytes(64, 3, 7, 128, 1001, 4), 7 * 3 * 128 * 4 + 64 * 64);
        assert_eq!(bytes(64, 3, 7, 128, 1000, 8), 7 * 3 * 128 * 8 + 64 * 96);
        // Unaligned stack sizes round up to 16 so the table rows stay 16-byte aligned.
        assert_eq!(sh(1, 1, 3, 1, 1, 4).stack_bytes(4), 16);
        // Not the specialised path: the stack only (d = 5), or nothing (stack in scratch).
        assert!(!fast(64, FAST_DIMS + 1, 7, 32, 1000));
        assert_eq!(bytes(64, 5, 7, 32, 1000, 4), 7 * 5 * 32 * 4);
        assert_eq!(bytes(64, 8, 7, 128, 1000, 4), 0);
        assert!(!fast(64, 4, 7, 256, 1000));
        // Too many steps for the table, or rows·paths beyond 2^32: the general path.
        assert!(!fast(TABLE_STEPS + 1, 1, 7, 128, 1000));
        assert!(!fast(64, 1, 7, 128, (1 << 26) + 1));
        assert!(fast(64, 1, 7, 128, 1 << 26));
        assert!(!fast(64, 2, 7, 128, 1 << 26));
        assert!(fast(64, 2, 7, 128, 1 << 25));
        assert_eq!(lanes(64, 2, 7, 128, 1 << 26, 4), 1);
        // The largest launches stay under the 48 KiB a kernel may use without opting in.
        let worst = bytes(TABLE_STEPS, 1, SHARED_STACK / 32, 32, 1, 8);
        assert!(worst <= 48 * 1024, "{worst}");
        let pairs = bytes(TABLE_STEPS, 1, SHARED_STACK / 32, 32, 2, 4);
        assert!(pairs <= 48 * 1024, "{pairs}");
        let quads = bytes(TABLE_STEPS, 1, SHARED_STACK / 64, 32, 4, 4);
        assert_eq!(lanes(TABLE_STEPS, 1, SHARED_STACK / 64, 32, 4, 4), 4);
        assert!(quads <= 48 * 1024, "{quads}");
        let d4 = bytes(TABLE_STEPS, 4, SHARED_STACK / 128, 32, 2, 4);
        assert!(d4 <= 48 * 1024, "{d4}");
    }
}
