//! The bridge kernels' launch policy: for a launch of a given [`LaunchShape`], which path the
//! kernel takes, how many paths each thread handles and how much dynamic shared memory it needs.
//! The kernels (from their parameters and `blockDim`) and the launcher (from the plan and its
//! block size) decide with the same methods, so they always agree.

use super::{COEFS, INDICES, philox, sobol};

/// Elements of the per-block shared-memory stack on the GPU: thread `t` of a block of `b`
/// threads keeps element `i` at `i·b + t` (conflict-free). A strategy uses it when
/// `slots · d · b ≤ SHARED_STACK`; otherwise its stack lives in a device scratch buffer laid
/// out `[slot·d + k][path]`.
pub const SHARED_STACK: usize = 4096;

/// Whether a strategy of `slots` d-vectors fits the shared-memory stack at `block` threads.
pub fn stack_fits_shared(slots: usize, dims: usize, block: usize) -> bool {
    slots.saturating_mul(dims).saturating_mul(block) <= SHARED_STACK
}

/// Strategy steps the buffer kernels' specialised path copies into shared memory (longer
/// strategies take the general path): 128 rows are 8 KiB (f32) or 12 KiB (f64) of coefficients
/// and indices.
pub const TABLE_STEPS: usize = 128;

/// Largest dimension of the buffer kernels' specialised path ([`LaunchShape::buffer_fast`]).
pub const FAST_DIMS: usize = 4;

/// Dynamic shared memory a launch of the fused kernels may use (the default limit without
/// opting in).
pub const FUSED_SHARED_LIMIT: usize = 48 * 1024;

/// Bytes of the f32 Box–Muller angle table ([`super::sincos::SINCOS_F32`], 512 `(cos, sin)`
/// pairs) that the f32 Box–Muller kernels copy into a static shared array: the fused d = 1
/// kernels' dynamic shared memory stays this much under [`FUSED_SHARED_LIMIT`]
/// ([`LaunchShape::box_muller_cached`], [`LaunchShape::box_muller_pairs`]).
pub const SINCOS_F32_BYTES: usize = core::mem::size_of_val(&super::sincos::SINCOS_F32);

/// Paths each thread of the Box–Muller normals kernel (`normals_bm_philox_*`) takes: two in f32
/// (`elem` = 4) when `paths` is even and the output's device address `addr` is 8-byte aligned —
/// thread `q` computes paths `2q` and `2q + 1` and stores each row's two normals as one 8-byte
/// access (half the store instructions, the same words and bits) — else one. The launcher's grid
/// has `paths / lanes` threads; the kernel decides with this same function.
pub fn box_muller_normals_lanes(paths: u32, elem: usize, addr: u64) -> u32 {
    if elem == 4 && paths.is_multiple_of(2) && addr.is_multiple_of(8) { 2 } else { 1 }
}

/// Bytes of the buffer kernels' shared stack (dynamic shared memory, sized per launch):
/// `slots·d·block` elements of `elem` bytes rounded up to 16, or 0 when it does not fit
/// ([`stack_fits_shared`]).
pub fn buffer_stack_bytes(slots: usize, dims: usize, block: usize, elem: usize) -> usize {
    if stack_fits_shared(slots, dims, block) { (slots * dims * block * elem).div_ceil(16) * 16 } else { 0 }
}

/// Bytes of a strategy of `steps` steps staged in shared memory: its coefficient rows
/// (`COEFS·elem` bytes each) followed by its index rows (`INDICES·4`).
pub fn table_bytes(steps: usize, elem: usize) -> usize {
    steps * (COEFS * elem + INDICES * 4)
}

/// One launch of the bridge kernels, as far as its policy depends on it.
///
/// Invariant: the kernel and its launcher build the same value (the kernel from its parameters,
/// `blockDim.x` and `size_of::<T>()`; the launcher from the plan, its block size and `T`), so
/// every method answers the same on both sides.
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
    /// Bytes per element: 4 (f32) or 8 (f64).
    pub elem: usize,
}

impl LaunchShape {
    /// Whether the stack fits in shared memory ([`stack_fits_shared`]); otherwise it lives in a
    /// scratch buffer of [`LaunchShape::scratch_len`] elements.
    pub fn stack_in_shared(&self) -> bool {
        stack_fits_shared(self.slots, self.dims, self.block)
    }

    /// Scratch elements the launch needs: 0 when the stack fits in shared memory, else
    /// `slots·d·paths` (`[slot·d + k][path]`).
    pub fn scratch_len(&self) -> usize {
        if self.stack_in_shared() { 0 } else { self.slots * self.dims * self.paths }
    }

    /// Whether the buffer kernels (`bridge_f32/f64`) take their specialised path (one instance
    /// per `d`, strategy in shared memory, 32-bit indices): `1 ≤ d ≤ FAST_DIMS`, the stack fits
    /// in shared memory, at most [`TABLE_STEPS`] steps, and `rows·paths = steps·d·paths ≤ 2^32`
    /// (32-bit element indices).
    #[inline(always)]
    pub fn buffer_fast(&self) -> bool {
        buffer_fast(self.steps, self.dims, self.slots, self.block, self.paths)
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
    /// f32 operations. The launcher's grid has `ceil(paths / lanes)` threads.
    #[inline(always)]
    pub fn buffer_lanes(&self) -> usize {
        buffer_lanes(self.steps, self.dims, self.slots, self.block, self.paths, self.elem)
    }

    /// [`LaunchShape::buffer_lanes`] for buffers at the device addresses whose bitwise OR is
    /// `addrs` (z's and out's): four lanes need both 16-byte aligned, two lanes 8-byte aligned
    /// (and an even count); otherwise fewer. Whole allocations are 256-byte aligned, but a
    /// sub-slice may start at any element. Shared memory is sized by
    /// [`LaunchShape::buffer_shared_bytes`] for the widest lanes, enough for narrower ones.
    #[inline(always)]
    pub fn buffer_lanes_at(&self, addrs: u64) -> usize {
        buffer_lanes_at(self.steps, self.dims, self.slots, self.block, self.paths, self.elem, addrs)
    }

    /// Whether a buffer launch at the addresses `addrs` (z's and out's, ORed) takes four f32
    /// paths per thread at a path count that is not a multiple of 4 (odd):
    /// [`LaunchShape::buffer_lanes_at`] is 4 and `paths mod 4 ≠ 0`. The launcher then starts
    /// `bridge_quads_f32`, that path in a kernel of its own.
    #[inline(always)]
    pub fn buffer_odd_quads_at(&self, addrs: u64) -> bool {
        !self.paths.is_multiple_of(4) && self.buffer_lanes_at(addrs) == 4
    }

    /// Bytes of dynamic shared memory a launch of the buffer kernels needs: the stack
    /// ([`buffer_stack_bytes`]), then on the specialised path ([`LaunchShape::buffer_fast`]) the
    /// strategy ([`table_bytes`]). With several paths per thread ([`LaunchShape::buffer_lanes`])
    /// a stack element holds all (`lanes·elem` bytes). At most 32 KiB + 12 KiB (f64), under the
    /// 48 KiB a launch may use without opting in.
    #[inline(always)]
    pub fn buffer_shared_bytes(&self) -> usize {
        buffer_shared_bytes(self.steps, self.dims, self.slots, self.block, self.paths, self.elem)
    }

    /// Whether the fused kernels take their d = 1 kernels (`bridge_philox_d1_*`,
    /// `bridge_sobol_d1_*`): d = 1 and the buffer kernels' specialised path
    /// ([`LaunchShape::buffer_fast`]).
    #[inline(always)]
    pub fn fused_fast_d1(&self) -> bool {
        fused_fast_d1(self.steps, self.dims, self.slots, self.block, self.paths)
    }

    /// Bytes of the fused kernels' stack and strategy in dynamic shared memory: the stack (one
    /// path per thread, [`buffer_stack_bytes`]), then on the d = 1 path
    /// ([`LaunchShape::fused_fast_d1`]) the strategy ([`table_bytes`]).
    #[inline(always)]
    pub fn fused_base_bytes(&self) -> usize {
        fused_base_bytes(self.steps, self.dims, self.slots, self.block, self.paths, self.elem)
    }

    /// Whether the fused Sobol kernels use the warp method ([`sobol::warp_shared_bytes`]): its
    /// tables for `steps·d` rows fit after the fused stack and strategy
    /// ([`LaunchShape::fused_base_bytes`]) within [`FUSED_SHARED_LIMIT`]. Otherwise the warp
    /// method with the low tables read from global memory when the high parts alone fit
    /// ([`LaunchShape::fused_sobol_pairs`]), else each element walks its Gray-code bits
    /// ([`sobol::sobol_u32`]).
    #[inline(always)]
    pub fn fused_sobol_warp(&self) -> bool {
        fused_sobol_warp(self.steps, self.dims, self.slots, self.block, self.paths, self.elem)
    }

    /// Whether the fused Sobol kernels, when [`LaunchShape::fused_sobol_warp`] does not hold,
    /// use the warp method with only the warps' high parts in shared memory
    /// ([`sobol::pairs_shared_bytes`]) and the low tables read from global memory (one 128-byte
    /// line per row and warp, the same for every warp: L1 hits): the high parts fit after the
    /// fused stack and strategy within [`FUSED_SHARED_LIMIT`].
    #[inline(always)]
    pub fn fused_sobol_pairs(&self) -> bool {
        fused_sobol_pairs(self.steps, self.dims, self.slots, self.block, self.paths, self.elem)
    }

    /// Bytes of the fused Philox d = 1 kernels' schedule and word cache: `steps` schedule
    /// entries (rounded up to 16 bytes), then `cache_slots` words per thread (`[slot][thread]`).
    #[inline(always)]
    pub fn philox_cache_bytes(&self, cache_slots: usize) -> usize {
        philox_cache_bytes(self.steps, cache_slots, self.block)
    }

    /// Whether the fused Philox d = 1 kernels compute each Philox block once per path by the
    /// host's schedule (`philox::scheduled_word`; `cache_slots` from the plan's schedule, 0
    /// when it has none): the d = 1 fast path ([`LaunchShape::fused_fast_d1`]), at most
    /// `philox::MAX_CACHE_SLOTS` slots, and the schedule and cache
    /// ([`LaunchShape::philox_cache_bytes`]) fit after the fused stack and strategy within
    /// [`FUSED_SHARED_LIMIT`]. Otherwise the one-block cache of `philox::PhiloxNormals`.
    #[inline(always)]
    pub fn philox_cached(&self, cache_slots: usize) -> bool {
        fused_philox_cached(self.steps, self.dims, self.slots, self.block, self.paths, self.elem, cache_slots)
    }

    /// Bytes of the fused Box–Muller d = 1 kernels' schedule and normal cache: the Philox
    /// schedule's `steps` entries (rounded up to 16 bytes, as [`LaunchShape::philox_cache_bytes`]),
    /// then `cache_slots` normals of `elem` bytes per thread (`[slot][thread]`): a block's four
    /// normals are computed once (two Box–Muller pairs) and wait for their steps there.
    #[inline(always)]
    pub fn box_muller_cache_bytes(&self, cache_slots: usize) -> usize {
        philox_cache_bytes(self.steps, 0, self.block)
            .saturating_add(cache_slots.saturating_mul(self.block).saturating_mul(self.elem))
    }

    /// As [`LaunchShape::philox_cached`] for the fused Box–Muller d = 1 kernels, whose cache
    /// holds normals ([`LaunchShape::box_muller_cache_bytes`]); in f32 (`elem` = 4) within
    /// [`FUSED_SHARED_LIMIT`] less the angle table's [`SINCOS_F32_BYTES`] of static shared memory.
    #[inline(always)]
    pub fn box_muller_cached(&self, cache_slots: usize) -> bool {
        self.box_muller_fits(cache_slots, if self.elem == 4 { SINCOS_F32_BYTES } else { 0 })
    }

    /// Whether the schedule and a cache of `cache_slots` normals fit after the fused d = 1
    /// stack and strategy with `reserved` bytes of static shared memory beside them.
    #[inline(always)]
    fn box_muller_fits(&self, cache_slots: usize, reserved: usize) -> bool {
        (1..=philox::MAX_CACHE_SLOTS).contains(&cache_slots)
            && self.fused_fast_d1()
            && self.fused_base_bytes().saturating_add(self.box_muller_cache_bytes(cache_slots))
                <= FUSED_SHARED_LIMIT - reserved
    }

    /// The shape of the fused Box–Muller d = 1 kernel that takes two f32 paths per thread
    /// (`bridge_philox_bm_d1_pairs_f32`, [`LaunchShape::box_muller_pairs`]): `paths / 2` lanes of
    /// 8 bytes (the stack, the table's reservation and the cache of normals in 8-byte
    /// elements). Kernel and launcher size the dynamic shared memory from it alike
    /// ([`LaunchShape::fused_base_bytes`] + [`LaunchShape::box_muller_cache_bytes`]).
    #[inline(always)]
    pub fn box_muller_pairs_shape(&self) -> LaunchShape {
        LaunchShape { paths: self.paths / 2, elem: 2 * self.elem, ..*self }
    }

    /// Whether a fused Box–Muller generation takes two f32 paths per thread: f32 (`elem` = 4),
    /// an even path count, and on [`LaunchShape::box_muller_pairs_shape`] the schedule and its
    /// cache of normal pairs fit beside the angle table ([`SINCOS_F32_BYTES`]). Each thread then
    /// runs two independent Philox/Box–Muller chains and writes 8 bytes per row.
    #[inline(always)]
    pub fn box_muller_pairs(&self, cache_slots: usize) -> bool {
        self.elem == 4
            && self.paths.is_multiple_of(2)
            && self.fused_fast_d1()
            && self.box_muller_pairs_shape().box_muller_fits(cache_slots, SINCOS_F32_BYTES)
    }

    /// Bytes of dynamic shared memory a launch of the fused kernels needs:
    /// [`LaunchShape::fused_base_bytes`] (stack, then on the d = 1 path the strategy), then for
    /// Sobol on the warp method its tables, or its high parts alone. (The fused Philox d = 1
    /// kernels add [`LaunchShape::philox_cache_bytes`] when [`LaunchShape::philox_cached`]
    /// holds.)
    #[inline(always)]
    pub fn fused_shared_bytes(&self, sobol: bool) -> usize {
        fused_shared_bytes(self.steps, self.dims, self.slots, self.block, self.paths, self.elem, sobol)
    }
}

// The policy's bodies, positional: the methods above delegate to them (inlined into the
// kernels exactly as the positional calls were, so the PTX did not move).

fn buffer_fast(steps: usize, dims: usize, slots: usize, block: usize, paths: usize) -> bool {
    (1..=FAST_DIMS).contains(&dims)
        && stack_fits_shared(slots, dims, block)
        && steps <= TABLE_STEPS
        && (steps as u64).saturating_mul(dims as u64).saturating_mul(paths as u64) <= 1u64 << 32
}

fn buffer_lanes(steps: usize, dims: usize, slots: usize, block: usize, paths: usize, elem: usize) -> usize {
    let (quads, even) = (paths.is_multiple_of(4) || !paths.is_multiple_of(2), paths.is_multiple_of(2));
    if elem != 4 || !buffer_fast(steps, dims, slots, block, paths) {
        1
    } else if dims == 1 && quads && stack_fits_shared(slots, 2, block) {
        4
    } else if even {
        2
    } else {
        1
    }
}

fn buffer_lanes_at(
    steps: usize,
    dims: usize,
    slots: usize,
    block: usize,
    paths: usize,
    elem: usize,
    addrs: u64,
) -> usize {
    match buffer_lanes(steps, dims, slots, block, paths, elem) {
        4 if addrs.is_multiple_of(16) => 4,
        4 | 2 if paths.is_multiple_of(2) && addrs.is_multiple_of(8) => 2,
        _ => 1,
    }
}

fn buffer_shared_bytes(steps: usize, dims: usize, slots: usize, block: usize, paths: usize, elem: usize) -> usize {
    let lanes = buffer_lanes(steps, dims, slots, block, paths, elem);
    let stack = buffer_stack_bytes(slots, dims, block, elem * lanes);
    if buffer_fast(steps, dims, slots, block, paths) { stack + table_bytes(steps, elem) } else { stack }
}

fn fused_fast_d1(steps: usize, dims: usize, slots: usize, block: usize, paths: usize) -> bool {
    dims == 1 && buffer_fast(steps, dims, slots, block, paths)
}

fn fused_base_bytes(steps: usize, dims: usize, slots: usize, block: usize, paths: usize, elem: usize) -> usize {
    let stack = buffer_stack_bytes(slots, dims, block, elem);
    if fused_fast_d1(steps, dims, slots, block, paths) { stack + table_bytes(steps, elem) } else { stack }
}

fn fused_sobol_warp(steps: usize, dims: usize, slots: usize, block: usize, paths: usize, elem: usize) -> bool {
    let rows = steps.saturating_mul(dims);
    fused_base_bytes(steps, dims, slots, block, paths, elem).saturating_add(sobol::warp_shared_bytes(rows, block))
        <= FUSED_SHARED_LIMIT
}

fn fused_sobol_pairs(steps: usize, dims: usize, slots: usize, block: usize, paths: usize, elem: usize) -> bool {
    let rows = steps.saturating_mul(dims);
    fused_base_bytes(steps, dims, slots, block, paths, elem).saturating_add(sobol::pairs_shared_bytes(rows, block))
        <= FUSED_SHARED_LIMIT
}

fn philox_cache_bytes(steps: usize, cache_slots: usize, block: usize) -> usize {
    steps.saturating_mul(4).div_ceil(16).saturating_mul(16).saturating_add(cache_slots.saturating_mul(block * 4))
}

fn fused_philox_cached(
    steps: usize,
    dims: usize,
    slots: usize,
    block: usize,
    paths: usize,
    elem: usize,
    cache_slots: usize,
) -> bool {
    (1..=philox::MAX_CACHE_SLOTS).contains(&cache_slots)
        && fused_fast_d1(steps, dims, slots, block, paths)
        && fused_base_bytes(steps, dims, slots, block, paths, elem).saturating_add(philox_cache_bytes(
            steps,
            cache_slots,
            block,
        )) <= FUSED_SHARED_LIMIT
}

fn fused_shared_bytes(
    steps: usize,
    dims: usize,
    slots: usize,
    block: usize,
    paths: usize,
    elem: usize,
    sobol: bool,
) -> usize {
    let base = fused_base_bytes(steps, dims, slots, block, paths, elem);
    if sobol && fused_sobol_warp(steps, dims, slots, block, paths, elem) {
        base + sobol::warp_shared_bytes(steps * dims, block)
    } else if sobol && fused_sobol_pairs(steps, dims, slots, block, paths, elem) {
        base + sobol::pairs_shared_bytes(steps * dims, block)
    } else {
        base
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A shape, positionally: steps, d, slots, block, paths, element bytes (this module's tests
    /// and `staged`'s).
    pub(crate) fn sh(steps: usize, dims: usize, slots: usize, block: usize, paths: usize, elem: usize) -> LaunchShape {
        LaunchShape { steps, dims, slots, block, paths, elem }
    }

    #[test]
    fn box_muller_normals_take_two_paths_only_in_f32_at_even_counts_into_8_byte_aligned_outputs() {
        assert_eq!(box_muller_normals_lanes(1_439_744, 4, 0x7f00_0000_0000), 2);
        assert_eq!(box_muller_normals_lanes(2, 4, 8), 2);
        assert_eq!(box_muller_normals_lanes(0, 4, 0), 2); // no paths, no threads
        assert_eq!(box_muller_normals_lanes(1_439_745, 4, 0), 1); // odd count
        assert_eq!(box_muller_normals_lanes(1_439_744, 4, 4), 1); // 4 bytes into an allocation
        assert_eq!(box_muller_normals_lanes(1_439_744, 8, 0), 1); // f64
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
                let b = sh(steps, dims, slots, block, 1000, elem).fused_shared_bytes(true);
                assert!(b <= FUSED_SHARED_LIMIT.max(sh(steps, dims, slots, block, 1000, elem).fused_base_bytes()));
            }
        }
    }

    #[test]
    fn philox_cache_fits_the_paper_shape_at_128_threads_only_with_few_slots() {
        // f32, 64 steps, 7 stack slots: 7.5 KiB + 256 B of schedule + 16 slots × 512 B.
        assert_eq!(sh(64, 1, 0, 128, 0, 4).philox_cache_bytes(16), 256 + 16 * 512);
        assert!(sh(64, 1, 7, 128, 1_439_744, 4).philox_cached(16));
        assert!(!sh(64, 1, 7, 128, 1_439_744, 4).philox_cached(0));
        assert!(!sh(64, 1, 7, 128, 1_439_744, 4).philox_cached(philox::MAX_CACHE_SLOTS + 1));
        // Not d = 1, or the cache does not fit 48 KiB.
        assert!(!sh(64, 3, 7, 128, 1000, 4).philox_cached(16));
        assert!(!sh(64, 1, 7, 1024, 1000, 8).philox_cached(16));
    }

    #[test]
    fn box_muller_cache_holds_normals_of_the_element_size() {
        // f32: the word cache's bytes; f64: the normals take 8 bytes each.
        assert_eq!(sh(64, 1, 0, 128, 0, 4).box_muller_cache_bytes(16), sh(64, 1, 0, 128, 0, 4).philox_cache_bytes(16));
        assert_eq!(sh(64, 1, 0, 128, 0, 8).box_muller_cache_bytes(16), 256 + 16 * 1024);
        assert!(sh(64, 1, 7, 128, 1_439_744, 4).box_muller_cached(16));
        assert!(sh(64, 1, 7, 128, 1_439_744, 8).box_muller_cached(16));
        assert!(!sh(64, 1, 7, 128, 1_439_744, 8).box_muller_cached(0));
        assert!(!sh(64, 3, 7, 128, 1000, 4).box_muller_cached(16));
        // f64 at 512 threads: 28 KiB of stack + 512 B + 16 × 4 KiB of cache is past 48 KiB.
        assert!(sh(64, 1, 7, 512, 1000, 4).philox_cached(4));
        assert!(!sh(64, 1, 7, 512, 1000, 8).box_muller_cached(16));
        assert!(!sh(64, 1, 7, 128, 1000, 8).box_muller_cached(u32::MAX as usize));
    }

    #[test]
    fn box_muller_pairs_take_even_f32_counts_whose_pair_cache_fits() {
        // The paper's shape in f32: 7 stack slots and 16 cache slots of 8-byte pairs at 128.
        let paper = sh(64, 1, 7, 128, 1_439_744, 4);
        assert!(paper.box_muller_pairs(16));
        assert_eq!(paper.box_muller_pairs_shape(), sh(64, 1, 7, 128, 719_872, 8));
        assert!(!sh(64, 1, 7, 128, 1_439_745, 4).box_muller_pairs(16), "odd count");
        assert!(!sh(64, 1, 7, 128, 1_439_744, 8).box_muller_pairs(16), "f64");
        assert!(!sh(64, 3, 7, 128, 1_439_744, 4).box_muller_pairs(16), "d = 3");
        assert!(!paper.box_muller_pairs(0), "no schedule");
        // A 62-slot cache of pairs at 128 threads (62 KiB) does not fit; as single f32 it does.
        assert!(!sh(127, 1, 7, 128, 1000, 4).box_muller_pairs(62));
        assert!(sh(127, 1, 7, 128, 1000, 4).box_muller_cached(62));
    }

    #[test]
    fn f32_box_muller_caches_leave_room_for_the_angle_table() {
        // f32, 127 steps, 128 threads: 3.5 KiB of stack + 7.9 KiB of strategy + 512 B of
        // schedule + 512 B per slot. 70 slots (46.9 KiB) would fit 48 KiB alone, not beside
        // the 4 KiB table of static shared memory (44 KiB left): 65 slots (44.4 KiB) neither,
        // 64 (43.9 KiB) do.
        let f32_shape = sh(127, 1, 7, 128, 1000, 4);
        let bytes = |slots| f32_shape.fused_base_bytes() + f32_shape.box_muller_cache_bytes(slots);
        assert_eq!(bytes(70), 48_064);
        assert!(bytes(70) <= FUSED_SHARED_LIMIT && bytes(70) > FUSED_SHARED_LIMIT - SINCOS_F32_BYTES);
        assert!(!f32_shape.box_muller_cached(70));
        assert!(!f32_shape.box_muller_cached(65));
        assert!(f32_shape.box_muller_cached(64));
        // f64 reads no table: its cache may take the whole 48 KiB (28 slots of 1 KiB: 47.4 KiB).
        let f64_shape = sh(127, 1, 7, 128, 1000, 8);
        assert!(
            f64_shape.fused_base_bytes() + f64_shape.box_muller_cache_bytes(28) > FUSED_SHARED_LIMIT - SINCOS_F32_BYTES
        );
        assert!(f64_shape.box_muller_cached(28));
        assert!(!f64_shape.box_muller_cached(29));
        // The pairs (8-byte lanes of f32) keep the table's room too: 500 pairs, 127 steps, 128
        // threads: 7 KiB of stack + 11.9 KiB of strategy + 512 B + 1 KiB per slot.
        let pairs = sh(127, 1, 7, 128, 1000, 4);
        let pair_bytes = |slots| {
            let s = pairs.box_muller_pairs_shape();
            s.fused_base_bytes() + s.box_muller_cache_bytes(slots)
        };
        assert!(pair_bytes(28) <= FUSED_SHARED_LIMIT && pair_bytes(28) > FUSED_SHARED_LIMIT - SINCOS_F32_BYTES);
        assert!(!pairs.box_muller_pairs(28));
        assert!(pairs.box_muller_pairs(24));
    }

    #[test]
    fn odd_quads_are_quads_at_counts_not_a_multiple_of_4() {
        // Odd counts at d = 1 in f32 with 16-byte aligned buffers: the quads kernel.
        for paths in [1_439_745, 1_439_747, 1, 3, 5, 131] {
            assert!(sh(64, 1, 7, 128, paths, 4).buffer_odd_quads_at(0x7000_0000), "{paths}");
        }
        // A multiple of 4 (the aligned quads of `bridge_f32`), 2 mod 4 (pairs), f64, d = 2,
        // a stack too deep for 16-byte elements, buffers 8 bytes into an allocation: not.
        assert!(!sh(64, 1, 7, 128, 1_439_744, 4).buffer_odd_quads_at(0x7000_0000));
        assert!(!sh(64, 1, 7, 128, 1_439_746, 4).buffer_odd_quads_at(0x7000_0000));
        assert!(!sh(64, 1, 7, 128, 1_439_745, 8).buffer_odd_quads_at(0x7000_0000));
        assert!(!sh(64, 2, 7, 128, 1_439_745, 4).buffer_odd_quads_at(0x7000_0000));
        assert!(!sh(64, 1, SHARED_STACK / 256 + 1, 128, 1001, 4).buffer_odd_quads_at(0x7000_0000));
        assert!(!sh(64, 1, 7, 128, 1_439_745, 4).buffer_odd_quads_at(0x7000_0008));
        assert!(!sh(64, 1, 7, 128, 1_439_745, 4).buffer_odd_quads_at(0x7000_0004));
        // No paths: nothing to launch.
        assert!(!sh(64, 1, 7, 128, 0, 4).buffer_odd_quads_at(0x7000_0000));
    }

    #[test]
    fn buffer_shared_bytes_hold_the_stack_and_table_within_the_default_limit() {
        // Paper problem in f32 at 128 threads: the path count is a multiple of 4, so each
        // thread takes four paths and a stack element holds them (7 slots × 128 × 16 B), then 64
        // rows of 32 B coefficients and 32 B indices.
        assert!(sh(64, 1, 7, 128, 1_439_744, 4).buffer_fast());
        // Alignment caps the lanes: a sub-slice 4 or 8 bytes into an allocation.
        assert_eq!(sh(64, 1, 7, 128, 1_439_744, 4).buffer_lanes_at(0x7000_0000), 4);
        assert_eq!(sh(64, 1, 7, 128, 1_439_744, 4).buffer_lanes_at(0x7000_0008), 2);
        assert_eq!(sh(64, 1, 7, 128, 1_439_744, 4).buffer_lanes_at(0x7000_0004), 1);
        assert_eq!(sh(64, 1, 7, 128, 1_439_745, 4).buffer_lanes_at(0x7000_0008), 1);
        assert_eq!(sh(64, 3, 7, 128, 1000, 4).buffer_lanes_at(0x7000_0008), 2);
        assert_eq!(sh(64, 3, 7, 128, 1000, 4).buffer_lanes_at(0x7000_000c), 1);
        assert_eq!(sh(64, 1, 7, 128, 1_439_744, 4).buffer_lanes(), 4);
        assert_eq!(sh(64, 1, 7, 128, 1_439_744, 4).buffer_shared_bytes(), 14336 + 64 * 64);
        // An odd path count at d = 1: quads too (the last thread's quad is partial).
        for paths in [1_439_745, 1_439_747, 1, 3, 5, 7, 33, 131] {
            assert_eq!(sh(64, 1, 7, 128, paths, 4).buffer_lanes(), 4, "{paths}");
            assert_eq!(sh(64, 1, 7, 128, paths, 4).buffer_shared_bytes(), 14336 + 64 * 64, "{paths}");
        }
        // 2 mod 4: pairs, 8 B elements.
        for paths in [1_439_746, 2, 6, 130] {
            assert_eq!(sh(64, 1, 7, 128, paths, 4).buffer_lanes(), 2, "{paths}");
            assert_eq!(sh(64, 1, 7, 128, paths, 4).buffer_shared_bytes(), 7168 + 64 * 64, "{paths}");
        }
        // Quads only while the 16-byte stack stays within 32 KiB (slots·2·block ≤ SHARED_STACK),
        // else pairs; quads only at d = 1 (d = 2..=4 take pairs).
        assert_eq!(sh(64, 1, SHARED_STACK / 256, 128, 1000, 4).buffer_lanes(), 4);
        assert_eq!(sh(64, 1, SHARED_STACK / 256 + 1, 128, 1000, 4).buffer_lanes(), 2);
        assert_eq!(sh(64, 1, SHARED_STACK / 256, 128, 1001, 4).buffer_lanes(), 4);
        assert_eq!(sh(64, 2, 7, 128, 1000, 4).buffer_lanes(), 2);
        // Where the 16-byte stack does not fit, an odd path count: one path per thread, 4 B
        // elements (as at d = 2..=4).
        assert_eq!(sh(64, 1, SHARED_STACK / 256 + 1, 128, 1001, 4).buffer_lanes(), 1);
        assert_eq!(
            sh(64, 1, SHARED_STACK / 256 + 1, 128, 1001, 4).buffer_shared_bytes(),
            (SHARED_STACK / 256 + 1) * 128 * 4 + 64 * 64
        );
        assert_eq!(sh(64, 2, 7, 128, 1001, 4).buffer_lanes(), 1);
        // f64: one path per thread, 64 B coefficient rows.
        assert_eq!(sh(64, 1, 7, 128, 1_439_744, 8).buffer_lanes(), 1);
        assert_eq!(sh(64, 1, 7, 128, 1_439_744, 8).buffer_shared_bytes(), 7168 + 64 * 96);
        // d = 3: stack of 7 × 3 slots, pairs in f32 when the count is even.
        assert!(sh(64, 3, 7, 128, 1000, 4).buffer_fast());
        assert_eq!(sh(64, 3, 7, 128, 1000, 4).buffer_lanes(), 2);
        assert_eq!(sh(64, 3, 7, 128, 1000, 4).buffer_shared_bytes(), 7 * 3 * 128 * 8 + 64 * 64);
        assert_eq!(sh(64, 3, 7, 128, 1001, 4).buffer_shared_bytes(), 7 * 3 * 128 * 4 + 64 * 64);
        assert_eq!(sh(64, 3, 7, 128, 1000, 8).buffer_shared_bytes(), 7 * 3 * 128 * 8 + 64 * 96);
        // Unaligned stack sizes round up to 16 so the table rows stay 16-byte aligned.
        assert_eq!(buffer_stack_bytes(3, 1, 1, 4), 16);
        // Not the specialised path: the stack only (d = 5), or nothing (stack in scratch).
        assert!(!sh(64, FAST_DIMS + 1, 7, 32, 1000, 4).buffer_fast());
        assert_eq!(sh(64, 5, 7, 32, 1000, 4).buffer_shared_bytes(), 7 * 5 * 32 * 4);
        assert_eq!(sh(64, 8, 7, 128, 1000, 4).buffer_shared_bytes(), 0);
        assert!(!sh(64, 4, 7, 256, 1000, 4).buffer_fast());
        // Too many steps for the table, or rows·paths beyond 2^32: the general path.
        assert!(!sh(TABLE_STEPS + 1, 1, 7, 128, 1000, 4).buffer_fast());
        assert!(!sh(64, 1, 7, 128, (1 << 26) + 1, 4).buffer_fast());
        assert!(sh(64, 1, 7, 128, 1 << 26, 4).buffer_fast());
        assert!(!sh(64, 2, 7, 128, 1 << 26, 4).buffer_fast());
        assert!(sh(64, 2, 7, 128, 1 << 25, 4).buffer_fast());
        assert_eq!(sh(64, 2, 7, 128, 1 << 26, 4).buffer_lanes(), 1);
        // The largest launches stay under the 48 KiB a kernel may use without opting in.
        let worst = sh(TABLE_STEPS, 1, SHARED_STACK / 32, 32, 1, 8).buffer_shared_bytes();
        assert!(worst <= 48 * 1024, "{worst}");
        let pairs = sh(TABLE_STEPS, 1, SHARED_STACK / 32, 32, 2, 4).buffer_shared_bytes();
        assert!(pairs <= 48 * 1024, "{pairs}");
        let quads = sh(TABLE_STEPS, 1, SHARED_STACK / 64, 32, 4, 4).buffer_shared_bytes();
        assert_eq!(sh(TABLE_STEPS, 1, SHARED_STACK / 64, 32, 4, 4).buffer_lanes(), 4);
        assert!(quads <= 48 * 1024, "{quads}");
        let d4 = sh(TABLE_STEPS, 4, SHARED_STACK / 128, 32, 2, 4).buffer_shared_bytes();
        assert!(d4 <= 48 * 1024, "{d4}");
    }
}
