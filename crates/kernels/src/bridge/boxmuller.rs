//! Box–Muller normals (`lockstep_shared::bridge::boxmuller`): alone (one thread per path, one
//! Philox block per four rows, two pairs per block, each row's element stored at
//! `out[row·paths + p]`, a warp's stores coalesce; in f32 at an even count into an 8-byte
//! aligned output two paths per thread, each row's two elements one 8-byte store:
//! [`normals_bm_philox_pairs`]), and fused into the bridge
//! (`bridge_philox_bm_*`, `bridge_philox_bm_d1_*`): the general path takes the CPU twin's own
//! generator (`PhiloxBoxMuller`), the d = 1 path the Philox schedule with a cache of normals
//! ([`ScheduledBoxMuller`]).

use super::*;
use lockstep_shared::bridge::boxmuller::{PAIR_F64_COEFS, PAIR_F64_LEN, SinCosTable, pair_f32_in, pair_f64_in};
use lockstep_shared::bridge::normal::CoefsF64;
use lockstep_shared::bridge::philox::counter;
use lockstep_shared::bridge::sincos::SINCOS_F32;
use lockstep_shared::bridge::{SINCOS_F32_BYTES, box_muller_normals_lanes};

/// Values of `T` in the block's shared memory: slot `i` of this thread at `base + i·stride`
/// (`[slot][thread]`, conflict-free).
pub(super) struct SharedValues {
    pub(super) base: u32,
    pub(super) stride: u32,
}

impl<T: SharedIo> Stack<T> for SharedValues {
    #[inline(always)]
    fn get(&self, i: u32) -> T {
        // SAFETY: i < the cache's slots (the schedule's fields, `philox_schedule`), inside the
        // array the kernel sized with `LaunchShape::box_muller_cache_bytes`.
        unsafe { T::ld(self.base + i * self.stride) }
    }
    #[inline(always)]
    fn set(&mut self, i: u32, v: T) {
        // SAFETY: as `get`.
        unsafe { T::st(self.base + i * self.stride, v) }
    }
}

/// Element `row % 4` of `v` by two levels of selects (as `philox::word_of`: no indexed
/// local-memory array, no indirect branch).
#[inline(always)]
fn pick4<T: Copy>(v: [T; 4], row: u32) -> T {
    let odd = row & 1 != 0;
    let (lo, hi) = if odd { (v[1], v[3]) } else { (v[0], v[2]) };
    if row & 2 != 0 { hi } else { lo }
}

/// The lanes a scheduled Box–Muller generator fills: one path (`f32`, `f64`) or two f32 paths
/// (`F32x2`: `path`, `path + 1`). `block` gives the four normals of Philox block `b` in
/// `boxmuller::normal_of_block`'s order (rows `4b, 4b+1` from words 0, 1, rows `4b+2, 4b+3` from
/// words 2, 3), each lane its own path's.
pub(super) trait BoxMullerLanes: SharedIo {
    /// What [`BoxMullerLanes::block`] reads besides the words: f32's angle table in the block's
    /// shared memory ([`SharedSinCos`]), nothing for f64.
    type Table: Copy;
    /// Starts the copy of [`BoxMullerLanes::Table`] (every thread of the block calls it). No
    /// barrier: the caller's next `bar.sync` (the strategy's, `stage_table`) orders it before
    /// the first [`BoxMullerLanes::block`].
    fn copy_table() -> Self::Table;
    /// The four normals of block `b` of the path(s) from `path`.
    fn block(key: [u32; 2], path: u64, b: u32, table: &Self::Table) -> [Self; 4];
}

impl BoxMullerLanes for f32 {
    type Table = SharedSinCos;
    #[inline(always)]
    fn copy_table() -> SharedSinCos {
        SharedSinCos::copy()
    }
    #[inline(always)]
    fn block(key: [u32; 2], path: u64, b: u32, table: &SharedSinCos) -> [f32; 4] {
        let w = philox4x32_10(counter(b, path), key);
        let (c0, s0) = pair_f32_in(w[0], w[1], table);
        let (c1, s1) = pair_f32_in(w[2], w[3], table);
        [c0, s0, c1, s1]
    }
}

impl BoxMullerLanes for f64 {
    type Table = ();
    #[inline(always)]
    fn copy_table() {}
    #[inline(always)]
    fn block(key: [u32; 2], path: u64, b: u32, _: &()) -> [f64; 4] {
        let w = philox4x32_10(counter(b, path), key);
        // One pair after the other: computed as two interleaved lanes, the pairs' coefficients
        // stayed in uniform registers across the step loop and spilled through `MOV`/`R2UR`
        // (the fused kernel 0.467 against 0.443 ms on an H200).
        let (c0, s0) = pair_f64_in(w[0], w[1], &ConstPairF64);
        let (c1, s1) = pair_f64_in(w[2], w[3], &ConstPairF64);
        [c0, s0, c1, s1]
    }
}

impl BoxMullerLanes for F32x2 {
    type Table = SharedSinCos;
    #[inline(always)]
    fn copy_table() -> SharedSinCos {
        SharedSinCos::copy()
    }
    #[inline(always)]
    fn block(key: [u32; 2], path: u64, b: u32, table: &SharedSinCos) -> [F32x2; 4] {
        let a = philox4x32_10(counter(b, path), key);
        let c = philox4x32_10(counter(b, path + 1), key);
        let (a0, a1) = pair_f32_in(a[0], a[1], table);
        let (c0, c1) = pair_f32_in(c[0], c[1], table);
        let (a2, a3) = pair_f32_in(a[2], a[3], table);
        let (c2, c3) = pair_f32_in(c[2], c[3], table);
        [F32x2(a0, c0), F32x2(a1, c1), F32x2(a2, c2), F32x2(a3, c3)]
    }
}

/// Box–Muller normals by the host's Philox schedule (the one of `ScheduledPhilox`): on a
/// `COMPUTE` step the row's Philox block is computed and turned into its four normals
/// ([`BoxMullerLanes::block`]), each stored in its slot (`slot_field`, 0 discards); other steps
/// read their slot. Each pair is computed once per path, the bits those of `normal_of_block`.
/// For `F32x2` (two paths per thread) the cache holds pairs of normals; `table` is what the
/// lanes' Box–Muller pairs read ([`BoxMullerLanes::Table`]).
pub(super) struct ScheduledBoxMuller<B> {
    pub(super) scheduled: Scheduled<SharedValues>,
    pub(super) table: B,
}

impl<T: BoxMullerLanes> Normals<T> for ScheduledBoxMuller<T::Table> {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        let s = &mut self.scheduled;
        // SAFETY: one call per step in step order (`run_d1` with d = 1).
        let op = unsafe { s.next_entry() };
        if op & COMPUTE != 0 {
            let n = T::block(s.key, s.path, row / 4, &self.table);
            let mut k = 0;
            while k < 4 {
                <SharedValues as Stack<T>>::set(&mut s.cache, slot_field(op, k as u32), n[k]);
                k += 1;
            }
            pick4(n, row)
        } else {
            <SharedValues as Stack<T>>::get(&s.cache, op)
        }
    }
}

/// The angle table of the f32 pair ([`SINCOS_F32`]) copied to the block's shared memory:
/// entry `i` at `base + 8·i`. Made only by `SharedSinCos::copy` (for [`NormalsPair::stage`],
/// which adds the barrier, and [`BoxMullerLanes::copy_table`], whose caller's barrier follows),
/// so `base` is the copy's.
#[derive(Clone, Copy)]
pub(super) struct SharedSinCos {
    base: u32,
}

impl SinCosTable for SharedSinCos {
    #[inline(always)]
    fn entry(&self, i: u32) -> [f32; 2] {
        // SAFETY: `base` is the 8-byte aligned copy of 512 entries `copy` wrote before a
        // barrier; `i & 511` stays inside it (the pair's index is below 512 already).
        unsafe { ld_shared_v2_f32(self.base + 8 * (i & 511)) }
    }
}

/// Word 0 (low) of entry `i` of [`PAIR_F64_COEFS`].
const fn coef_lo(i: usize) -> u32 {
    PAIR_F64_COEFS[i].to_bits() as u32
}

/// Word 1 (high) of entry `i` of [`PAIR_F64_COEFS`].
const fn coef_hi(i: usize) -> u32 {
    (PAIR_F64_COEFS[i].to_bits() >> 32) as u32
}

/// Declares `BM_PAIR_F64`, [`PAIR_F64_COEFS`] in the module's constant bank as 32-bit words
/// (low, high per entry), from the list of entry indices: the template and the operands grow
/// one entry per step.
macro_rules! const_pair_f64 {
    (@go [$($tpl:tt)*] [$($ops:tt)*] $i:literal $($rest:literal)+) => {
        const_pair_f64!(@go [$($tpl)* "{}, {}, "] [$($ops)* const coef_lo($i), const coef_hi($i),] $($rest)+);
    };
    (@go [$($tpl:tt)*] [$($ops:tt)*] $i:literal) => {
        core::arch::global_asm!(
            concat!(".const .align 8 .b32 BM_PAIR_F64[82] = {{", $($tpl,)* "{}, {}}};"),
            $($ops)* const coef_lo($i), const coef_hi($i)
        );
    };
}
const _: () = assert!(PAIR_F64_LEN == 41, "BM_PAIR_F64 holds 41 entries (82 words)");
const_pair_f64!(@go [] [] 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40);

/// [`PAIR_F64_COEFS`] read from its copy in the constant bank (`BM_PAIR_F64`): the f64
/// Box–Muller kernels' pairs take each coefficient with one `LDC`/`ULDC` where an f64
/// immediate costs two `UMOV`s on sm_90 (the same values, so the same bits).
#[derive(Clone, Copy)]
pub(super) struct ConstPairF64;

impl CoefsF64 for ConstPairF64 {
    #[inline(always)]
    fn coef(&self, i: usize) -> f64 {
        let base: u64;
        // SAFETY: takes the address of the module's constant array; touches no memory.
        unsafe { core::arch::asm!("mov.u64 {0}, BM_PAIR_F64;", out(reg64) base, options(pure, nomem, nostack)) };
        let v: f64;
        // SAFETY: entry i < PAIR_F64_LEN (the pair's indices) of the 8-byte aligned array; the
        // constant bank is never written.
        unsafe {
            core::arch::asm!("ld.const.f64 {0}, [{1}];", out(reg64) v, in(reg64) base + 8 * i as u64, options(pure, readonly, nostack))
        };
        v
    }
}

/// The normals kernel's pair per precision: f32 reads its angle table from a copy in shared
/// memory (a load there instead of a 4 KiB table in global memory, whose scattered reads cost
/// one L1 wavefront per distinct line), f64 needs none.
pub(super) trait NormalsPair: Real {
    /// What the pair reads (the staged table, or nothing).
    type Table: Copy;
    /// Stages the table. Every thread of the block calls it (a barrier inside).
    fn stage() -> Self::Table;
    /// The Box–Muller pair of `(w0, w1)`, the bits of `Real::box_muller`.
    fn pair(w0: u32, w1: u32, table: &Self::Table) -> (Self, Self);
    /// What a pass's row stores need, made once per thread: f32 `paths` in a per-thread
    /// register (each row one `IMAD.WIDE.U32`), f64 the row stride (`o + k·paths` pointers: the
    /// wide form gave its loop 64 more instructions and took 9% longer on an H100).
    type Rows: Copy;
    /// [`NormalsPair::Rows`] for `paths` paths.
    fn rows(paths: u32) -> Self::Rows;
    /// Rows 1..=7 of a pass: `v[k − 1]` at `o + k·paths`.
    ///
    /// # Safety
    /// `o + 7·paths` is in bounds of the output (a global allocation of `Self`); `rows` is
    /// `Self::rows(paths)`.
    unsafe fn store_rows(o: *mut Self, rows: Self::Rows, v: [Self; 7]);
}

impl NormalsPair for f32 {
    type Table = SharedSinCos;
    type Rows = u32;
    #[inline(always)]
    fn stage() -> SharedSinCos {
        let table = SharedSinCos::copy();
        sync_threads();
        table
    }
    #[inline(always)]
    fn pair(w0: u32, w1: u32, table: &SharedSinCos) -> (f32, f32) {
        pair_f32_in(w0, w1, table)
    }
    #[inline(always)]
    fn rows(paths: u32) -> u32 {
        // `threadIdx.x >> 16` is 0, but ptxas cannot know it: `paths` then lives in a per-thread
        // register each row's `IMAD.WIDE.U32` reads, not in the parameter's uniform register
        // (a fresh copy of which cost seven `MOV`s a pass on sm_90).
        paths | (reread_thread_idx_x() >> 16)
    }
    #[inline(always)]
    unsafe fn store_rows(o: *mut f32, n: u32, v: [f32; 7]) {
        let mut k = 0;
        while k < 7 {
            // SAFETY: the caller's contract (row k + 1 ≤ 7 of the pass, `m·4` small).
            unsafe { store_global_wide_f32(o, n, k as u32 + 1, v[k]) };
            k += 1;
        }
    }
}

impl SharedSinCos {
    /// Copies [`SINCOS_F32`] into the block's shared array (every thread of the block calls it);
    /// readable after the block's next barrier.
    #[inline(always)]
    fn copy() -> SharedSinCos {
        /// The table's 16-byte chunks (two entries each).
        const CHUNKS: u32 = 256;
        let base = shared_addr(shared_array![BM_SINCOS_F32: [[f32; 2]; SINCOS_F32_BYTES / 8]]);
        let src = SINCOS_F32.0.as_ptr() as *const f32;
        let (t, b) = (thread_idx_x(), block_dim_x());
        // Each thread's first two chunks are loaded before either is stored, so a block of 128
        // threads or more waits for one memory latency, not one per chunk (the barrier holds
        // the whole block until then); the loop copies the rest for smaller blocks.
        let (c0, c1) = (t, t + b);
        // SAFETY: chunk c0 < CHUNKS of the 16-byte aligned 4 KiB static (`Aligned16`).
        let v0 = if c0 < CHUNKS { unsafe { load_global_v4_f32(src, 4 * c0) } } else { [0.0; 4] };
        // SAFETY: as for c0.
        let v1 = if c1 < CHUNKS { unsafe { load_global_v4_f32(src, 4 * c1) } } else { [0.0; 4] };
        if c0 < CHUNKS {
            // SAFETY: chunk c0 < CHUNKS of the 16-byte aligned shared array of the same size.
            unsafe { st_shared_v4_f32(base + 16 * c0, v0) };
        }
        if c1 < CHUNKS {
            // SAFETY: as for c0.
            unsafe { st_shared_v4_f32(base + 16 * c1, v1) };
        }
        let mut c = t + 2 * b;
        while c < CHUNKS {
            // SAFETY: chunk c < CHUNKS of the static and of the shared array, as above.
            unsafe { st_shared_v4_f32(base + 16 * c, load_global_v4_f32(src, 4 * c)) };
            c += b;
        }
        SharedSinCos { base }
    }
}

impl NormalsPair for f64 {
    type Table = ();
    type Rows = usize;
    #[inline(always)]
    fn stage() {}
    #[inline(always)]
    fn pair(w0: u32, w1: u32, _: &()) -> (f64, f64) {
        pair_f64_in(w0, w1, &ConstPairF64)
    }
    #[inline(always)]
    fn rows(paths: u32) -> usize {
        paths as usize
    }
    #[inline(always)]
    unsafe fn store_rows(o: *mut f64, stride: usize, v: [f64; 7]) {
        let mut k = 0;
        while k < 7 {
            // SAFETY: the caller's contract (row k + 1 ≤ 7 of the pass).
            unsafe { *o.wrapping_add((k + 1) * stride) = v[k] };
            k += 1;
        }
    }
}

/// `out[j·paths + p]` = row `j`'s Box–Muller normal of path `first + p` under `seed`, for
/// `j < rows`, `p < paths`: rows `4b, 4b+1` are the pair of words 0, 1 of Philox block `b`, rows `4b+2, 4b+3`
/// that of words 2, 3 (`boxmuller::normal_of_block`).
///
/// # Safety
/// `out` holds `rows·paths` elements; a 1-D grid of at least `paths` threads.
#[inline(always)]
unsafe fn normals_bm_philox<T: NormalsPair>(rows: u32, seed: u64, first: u64, out: *mut T, paths: u32) {
    let table = T::stage();
    let p = index_1d();
    if p >= paths {
        return;
    }
    let k = key(seed);
    let stride = paths as usize;
    let rows_at = T::rows(paths);
    let path = first + p as u64;
    let mut o = out.wrapping_add(p as usize);
    let mut j = 0;
    // Two Philox blocks (eight rows) per pass while eight rows remain: the polynomials'
    // coefficients are loaded into registers once per pass, so a pass shares them between four
    // pairs instead of two (f64 coefficients cost two moves each on sm_90). Same words, same
    // pairs, same stores: the order of the rows' computation does not touch their bits.
    while j + 8 <= rows {
        let w = philox4x32_10(counter(j / 4, path), k);
        let v = philox4x32_10(counter(j / 4 + 1, path), k);
        let (c0, s0) = T::pair(w[0], w[1], &table);
        let (c1, s1) = T::pair(w[2], w[3], &table);
        let (c2, s2) = T::pair(v[0], v[1], &table);
        let (c3, s3) = T::pair(v[2], v[3], &table);
        // SAFETY: o = out + j·paths + p with j + 8 ≤ rows; row k of the pass at o + k·paths.
        unsafe {
            *o = c0;
            T::store_rows(o, rows_at, [s0, c1, s1, c2, s2, c3, s3]);
        }
        o = o.wrapping_add(8 * stride);
        j += 8;
    }
    while j < rows {
        let w = philox4x32_10(counter(j / 4, path), k);
        let (c0, s0) = T::pair(w[0], w[1], &table);
        // SAFETY: o = out + j·paths + p with j < rows; each further row is checked against rows.
        unsafe {
            *o = c0;
            if j + 1 < rows {
                *o.wrapping_add(stride) = s0;
            }
        }
        // The second pair only where one of its rows exists (rows is uniform: no divergence).
        if j + 2 < rows {
            let (c1, s1) = T::pair(w[2], w[3], &table);
            // SAFETY: as above.
            unsafe {
                *o.wrapping_add(2 * stride) = c1;
                if j + 3 < rows {
                    *o.wrapping_add(3 * stride) = s1;
                }
            }
        }
        o = o.wrapping_add(4 * stride);
        j += 4;
    }
}

/// [`normals_bm_philox`] with two f32 paths per thread: thread `q` takes paths `2q` and `2q + 1`,
/// one Philox block of each per pass (four rows), and stores each row's two normals as one
/// 8-byte `st.global.v2.f32` — four stores a pass where one path per thread needs eight for the
/// same eight normals. The same blocks, words and pairs as [`normals_bm_philox`], so the same
/// bits in every element.
///
/// # Safety
/// `paths` is even, `out` 8-byte aligned and holds `rows·paths` elements; a 1-D grid of at least
/// `paths / 2` threads.
#[inline(always)]
unsafe fn normals_bm_philox_pairs(rows: u32, seed: u64, first: u64, out: *mut f32, paths: u32) {
    let table = f32::stage();
    let q = index_1d();
    if q >= paths / 2 {
        return;
    }
    let k = key(seed);
    let stride = paths as usize;
    let n = f32::rows(paths);
    let path = first + 2 * q as u64;
    let mut o = out.wrapping_add(2 * q as usize);
    let mut j = 0;
    while j + 4 <= rows {
        let w = philox4x32_10(counter(j / 4, path), k);
        let v = philox4x32_10(counter(j / 4, path + 1), k);
        let (a0, a1) = f32::pair(w[0], w[1], &table);
        let (b0, b1) = f32::pair(v[0], v[1], &table);
        let (a2, a3) = f32::pair(w[2], w[3], &table);
        let (b2, b3) = f32::pair(v[2], v[3], &table);
        // SAFETY: o = out + j·paths + 2q with j + 4 ≤ rows and 2q + 1 < paths: row j + m of the
        // pass at o + m·paths, an even element (paths and 2q even) of the 8-byte aligned out.
        unsafe {
            store_global_v2_f32(o, 0, [a0, b0]);
            store_global_wide_v2_f32(o, n, 1, [a1, b1]);
            store_global_wide_v2_f32(o, n, 2, [a2, b2]);
            store_global_wide_v2_f32(o, n, 3, [a3, b3]);
        }
        o = o.wrapping_add(4 * stride);
        j += 4;
    }
    if j < rows {
        let w = philox4x32_10(counter(j / 4, path), k);
        let v = philox4x32_10(counter(j / 4, path + 1), k);
        let (a0, a1) = f32::pair(w[0], w[1], &table);
        let (b0, b1) = f32::pair(v[0], v[1], &table);
        // SAFETY: as above for row j < rows; each further row is checked against rows.
        unsafe {
            store_global_v2_f32(o, 0, [a0, b0]);
            if j + 1 < rows {
                store_global_wide_v2_f32(o, n, 1, [a1, b1]);
            }
        }
        // The second pairs only where one of their rows exists (rows is uniform).
        if j + 2 < rows {
            let (a2, a3) = f32::pair(w[2], w[3], &table);
            let (b2, b3) = f32::pair(v[2], v[3], &table);
            // SAFETY: as above.
            unsafe {
                store_global_wide_v2_f32(o, n, 2, [a2, b2]);
                if j + 3 < rows {
                    store_global_wide_v2_f32(o, n, 3, [a3, b3]);
                }
            }
        }
    }
}

/// [`normals_bm_philox`] in f32, or [`normals_bm_philox_pairs`] where
/// `box_muller_normals_lanes(paths, 4, out)` is 2 (an even count, an 8-byte aligned output).
///
/// # Safety
/// `out` holds `rows·paths` elements; a 1-D grid of at least `paths / lanes` threads (`lanes`
/// as above).
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn normals_bm_philox_f32(rows: u32, seed: u64, first: u64, out: *mut f32, paths: u32) {
    // Uniform over the grid, so every thread of a block reaches the barrier of its body.
    if box_muller_normals_lanes(paths, 4, out as u64) == 2 {
        // SAFETY: this kernel's contract with two lanes: paths even, out 8-byte aligned, the
        // grid has paths / 2 threads or more.
        unsafe { normals_bm_philox_pairs(rows, seed, first, out, paths) }
    } else {
        // SAFETY: this kernel's contract with one lane.
        unsafe { normals_bm_philox::<f32>(rows, seed, first, out, paths) }
    }
}

/// [`normals_bm_philox`] in f64.
///
/// # Safety
/// As [`normals_bm_philox`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn normals_bm_philox_f64(rows: u32, seed: u64, first: u64, out: *mut f64, paths: u32) {
    // SAFETY: this kernel's contract is the body's.
    unsafe { normals_bm_philox::<f64>(rows, seed, first, out, paths) }
}

/// The fused Box–Muller bridge, d = 1, two f32 paths per thread: thread `q` takes paths
/// `first + 2q` and `first + 2q + 1` (lanes of an [`F32x2`], one 8-byte store per row), with the
/// plan's schedule and a cache of normal pairs ([`ScheduledBoxMuller`] on `F32x2`); the body of the
/// d = 1 kernels otherwise (`buffer_small_io` at d = 1 on the pairs' shape).
///
/// # Safety
/// As `bridge_philox_d1_*`, and `LaunchShape::box_muller_pairs(cache_slots)` holds (otherwise
/// nothing is written: the launcher starts this kernel only then); `sched` holds the plan's
/// `steps` entries using `cache_slots` slots; the grid has `paths / 2` threads or more; the
/// launch has `fused_base_bytes + box_muller_cache_bytes(cache_slots)` bytes of dynamic shared
/// memory, both of `LaunchShape::box_muller_pairs_shape`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn bridge_philox_bm_d1_pairs_f32(
    coef: *const f32,
    idx: *const u32,
    steps: u32,
    dims: u32,
    slots: u32,
    chol: *const f32,
    start: *const f32,
    increments: u32,
    seed: u64,
    first: u32,
    sched: *const u32,
    cache_slots: u32,
    out: *mut f32,
    paths: u32,
) {
    let dynamic = dynamic_shared!(BRIDGE_D1_BM_PAIRS_F32);
    let full = launch_shape::<f32>(steps, dims, slots, paths);
    if !full.box_muller_pairs(cache_slots as usize) {
        return; // uniform: the launcher never starts this kernel then
    }
    let shape = full.box_muller_pairs_shape();
    let base = shared_addr(dynamic) + shape.fused_base_bytes() as u32;
    // SAFETY: `sched` holds `steps` entries, the array at base box_muller_cache_bytes (contract).
    unsafe { stage_schedule(sched, steps, base) };
    // Ordered before the first normal by the strategy's barrier in `buffer_small_io`.
    let table = F32x2::copy_table();
    let (t, b, size) = (thread_idx_x(), block_dim_x(), core::mem::size_of::<F32x2>() as u32);
    let values = base + shape.box_muller_cache_bytes(0) as u32 + t * size;
    let cache = SharedValues { base: values, stride: b * size };
    let path = first as u64 + 2 * index_1d() as u64;
    let scheduled = Scheduled { key: key(seed), path, op: base, cache };
    let z = ScheduledBoxMuller { scheduled, table };
    let (out, lanes) = (out as *mut F32x2, paths / 2);
    // The pairs' shape holds the d = 1 fast path (box_muller_pairs), the dynamic array starts
    // with its stack of 8-byte elements and the table as `buffer_small_io` expects (its barrier
    // orders the schedule's copy before the reads); `out` holds `rows·paths` f32, i.e.
    // `rows·lanes` pairs (an even count), 8-byte aligned (the launcher's check).
    // SAFETY: as just said; thread q < lanes writes pair q of each row.
    unsafe {
        buffer_small_io::<F32x2, 1, FUSED_PIPELINE, _, _>(
            dynamic,
            coef,
            idx,
            steps,
            slots,
            chol,
            start,
            increments,
            index_1d,
            lanes,
            move |q| (z, BufferSink32 { out, paths: lanes, p: q }),
        )
    }
}

/// The fused Box–Muller bridge kernels of one precision: `$general` ([`run_fused`] with the CPU
/// twin's `PhiloxBoxMuller`) and `$d1` ([`fused_box_muller_d1`]).
macro_rules! box_muller_bridge_kernels {
    ($t:ty, $general:ident, $d1:ident, $s_general:ident, $s_d1:ident) => {
        /// The bridge with Philox Box–Muller normals generated in registers (fused): path `p`
        /// takes the Box–Muller stream of path `first + p` (`boxmuller::normal_of_block`).
        ///
        /// # Safety
        /// As `bridge_philox_*`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $general(
            coef: *const $t,
            idx: *const u32,
            steps: u32,
            dims: u32,
            slots: u32,
            chol: *const $t,
            start: *const $t,
            increments: u32,
            scratch: *mut $t,
            seed: u64,
            first: u32,
            out: *mut $t,
            paths: u32,
        ) {
            let p = index_1d();
            let sh = Shape { steps, dims, slots, increments, paths };
            let dynamic = dynamic_shared!($s_general);
            let z = PhiloxBoxMuller::new(seed, (first + p) as u64);
            // SAFETY: forwarded from this kernel's contract.
            unsafe { run_fused::<$t>(sh, dynamic, coef, idx, chol, start, scratch, out, p, z, false) }
        }

        /// [`fused_box_muller_d1`] in `$t`.
        ///
        /// # Safety
        /// As [`fused_box_muller_d1`].
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $d1(
            coef: *const $t,
            idx: *const u32,
            steps: u32,
            dims: u32,
            slots: u32,
            chol: *const $t,
            start: *const $t,
            increments: u32,
            seed: u64,
            first: u32,
            sched: *const u32,
            cache_slots: u32,
            out: *mut $t,
            paths: u32,
        ) {
            dynamic_shared_type!($s_d1);
            // SAFETY: this kernel's contract is the body's.
            unsafe {
                fused_box_muller_d1::<$t, $s_d1>(
                    coef,
                    idx,
                    steps,
                    dims,
                    slots,
                    chol,
                    start,
                    increments,
                    seed,
                    first,
                    sched,
                    cache_slots,
                    out,
                    paths,
                )
            }
        }
    };
}

box_muller_bridge_kernels!(f32, bridge_philox_bm_f32, bridge_philox_bm_d1_f32, BRIDGE_STACK_BM_F32, BRIDGE_D1_BM_F32);
box_muller_bridge_kernels!(f64, bridge_philox_bm_f64, bridge_philox_bm_d1_f64, BRIDGE_STACK_BM_F64, BRIDGE_D1_BM_F64);
