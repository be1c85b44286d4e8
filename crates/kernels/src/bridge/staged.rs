//! The staged buffer kernels (`bridge_staged_dims_f32/f64`, d = 2 and 3, a path count that is
//! not a multiple of a sector's elements, in f32 at d = 2 an odd one; `LaunchShape::buffer_staged`):
//! the generator of the specialised path ([`run_small`], the same steps and arithmetic) with its
//! results written through shared memory so that every sector of a row's interior has one
//! writing block (`lockstep_shared::bridge::staged_span`). Block `b` computes paths `b·own ..
//! b·own + block·lanes` (its own and a halo of the next block's first paths); each result goes
//! to a staging buffer of `rows` rows (`LaunchShape::staged_rows`); at the end of each group of
//! steps the block meets at a barrier and each warp writes some of the buffered rows' spans with
//! whole-sector stores (16-byte chunks, 512 contiguous bytes a warp), while the next rows go to
//! the other buffer. The normals are read as pairs ([`PairNormals`]) in f32 and one f64 per
//! thread.

use super::*;

/// A lane type of the staged kernels: [`F32x2`] (two f32 paths per thread) or `f64` (one).
pub(super) trait StagedLanes: SharedIo {
    /// The buffers' element type.
    type Elem: Copy;
    /// Writes the elements `e0 .. e0 + VEC` of `out` that lie in `[start, end)`: element `e` from
    /// the shared address `slot + (e − lo)·size_of::<Elem>()`; one 16-byte store when all do.
    ///
    /// # Safety
    /// Every element written is inside `out`; `e0` is a multiple of `VEC` and `out` 16-byte
    /// aligned; the shared addresses of the elements written are in the staging row at `slot`.
    unsafe fn write_chunk(out: *mut Self::Elem, slot: u32, lo: u32, e0: u32, start: u32, end: u32);
    /// Elements per chunk of [`StagedLanes::write_chunk`]: 16 bytes (4 f32, 2 f64).
    const VEC: u32;
}

impl StagedLanes for f64 {
    type Elem = f64;
    const VEC: u32 = 2;
    #[inline(always)]
    unsafe fn write_chunk(out: *mut f64, slot: u32, lo: u32, e0: u32, start: u32, end: u32) {
        let at = |e: u32| slot + (e - lo) * 8;
        if e0 >= start && e0 + 2 <= end {
            // SAFETY: the caller's contract: e0, e0 + 1 are in out and in the staging row; e0 is
            // even and out 16-byte aligned.
            unsafe { store_global_v2_f64(out, e0, [ld_shared_f64(at(e0)), ld_shared_f64(at(e0 + 1))]) };
        } else {
            let mut e = e0;
            while e < e0 + 2 {
                if e >= start && e < end {
                    // SAFETY: the caller's contract, for the element e of [start, end).
                    unsafe { *out.add(e as usize) = ld_shared_f64(at(e)) };
                }
                e += 1;
            }
        }
    }
}

impl StagedLanes for F32x2 {
    type Elem = f32;
    const VEC: u32 = 4;
    #[inline(always)]
    unsafe fn write_chunk(out: *mut f32, slot: u32, lo: u32, e0: u32, start: u32, end: u32) {
        let at = |e: u32| slot + (e - lo) * 4;
        if e0 >= start && e0 + 4 <= end {
            // SAFETY: the caller's contract: e0 .. e0 + 4 are in out and in the staging row; e0
            // is a multiple of 4 and out 16-byte aligned. (Four 4-byte shared loads: the row's
            // first element `lo` need not be 16-byte aligned in the staging row.)
            unsafe {
                let v = [
                    ld_shared_f32(at(e0)),
                    ld_shared_f32(at(e0 + 1)),
                    ld_shared_f32(at(e0 + 2)),
                    ld_shared_f32(at(e0 + 3)),
                ];
                store_global_v4_f32(out, e0, v)
            };
        } else {
            let mut e = e0;
            while e < e0 + 4 {
                if e >= start && e < end {
                    // SAFETY: the caller's contract, for the element e of [start, end).
                    unsafe { store_global_f32(out, e, ld_shared_f32(at(e))) };
                }
                e += 1;
            }
        }
    }
}

/// Normals of paths `q2, q2 + 1` (the second only when it exists) from a `[row][path]` f32
/// buffer of any path count, as one [`F32x2`] per row: one 8-byte load where the row's element
/// `e = row·paths + q2` is even, else two 4-byte ones; a missing second path reads as `0.0`
/// (computed, never stored).
pub(super) struct PairNormals {
    pub(super) z: *const f32,
    pub(super) paths: u32,
    pub(super) q2: u32,
}

impl Normals<F32x2> for PairNormals {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> F32x2 {
        let e = row * self.paths + self.q2;
        let z = self.z;
        // Element e (and e + 1 when path q2 + 1 exists) is inside z and does not wrap (row <
        // rows, rows·paths ≤ 2^32 checked by the kernel, z holds rows·paths); z is 16-byte
        // aligned (`buffer_staged_at`), so an even e is 8-byte aligned.
        // SAFETY: in bounds and aligned for each access (above).
        unsafe {
            if self.q2 + 1 >= self.paths {
                F32x2(load_global_f32(z, e), 0.0)
            } else if e.is_multiple_of(2) {
                let [a, b] = load_global_v2_f32(z, e);
                F32x2(a, b)
            } else {
                F32x2(load_global_f32(z, e), load_global_f32(z, e + 1))
            }
        }
    }
}

/// Results of one thread of a staged launch: each `put` goes to the thread's lanes of the
/// current staging row (shared memory, `[row][block·lanes]`, the row number kept by thread 0);
/// at the end of each group of steps the whole block writes the group's rows out
/// ([`StagedSink::flush`]). In paths mode a group makes at most `P` rows, so the `2·P` staging
/// rows are two buffers used in turn (one barrier per group); in increments mode up to `2·P`,
/// one buffer (a second barrier after the write-out).
pub(super) struct StagedSink<L: StagedLanes> {
    pub(super) out: *mut L::Elem,
    /// Path count (the row length).
    pub(super) paths: u32,
    /// This block's first path, `b·own`.
    pub(super) first: u32,
    /// Paths a block owns (`LaunchShape::staged_own`).
    pub(super) own: u32,
    /// Shared address of the staging rows (`LaunchShape::staged_rows` rows of `row_bytes`).
    pub(super) tile: u32,
    /// Bytes of one staging row, `block·lanes·size_of::<Elem>()`.
    pub(super) row_bytes: u32,
    /// Shared address of the staging rows' row numbers (one word each).
    pub(super) ids: u32,
    /// Rows per buffer: `P` with two buffers (paths), `2·P` with one (increments).
    pub(super) cap: u32,
    /// Whether the staging rows are two buffers used in turn.
    pub(super) double: bool,
    /// This thread's offset in a staging row, `t·size_of::<L>()`.
    pub(super) lane: u32,
    /// Rows filled in the current buffer.
    pub(super) count: u32,
    /// The current buffer's first row (`0`, or `cap` for the second buffer).
    pub(super) buf: u32,
}

impl<L: StagedLanes> StagedSink<L> {
    /// Writes the current buffer's rows out and starts the next buffer. Every thread of the
    /// block calls it at the same point with the same `count` (the strategy's `put`s are the
    /// same for every thread). Warp `w` writes the buffer's rows `w, w + warps, …`: its lanes take
    /// the span's 16-byte chunks in turn (a warp stores 512 contiguous bytes, whole sectors
    /// inside the span), so each row's bookkeeping is done by one warp instead of every thread
    /// (`LaunchShape::buffer_staged`: the block is a whole number of warps).
    #[inline(always)]
    pub(super) fn flush(&mut self) {
        // Every thread's results for these rows are in shared memory.
        sync_threads();
        // The index read here, not hoisted: its lane and warp are not kept in registers through
        // the generator's loop.
        let (t, b) = (reread_thread_idx_x(), block_dim_x());
        let (lane, warps) = (t % 32, b / 32);
        let size = core::mem::size_of::<L::Elem>() as u32;
        let sector = 32 / size;
        let mut k = t / 32;
        while k < self.count {
            let i = self.buf + k;
            // SAFETY: word i of the row numbers exists (i < buf + count ≤ staging rows); thread
            // 0 wrote it before the barrier above.
            let row = unsafe { ld_shared_u32(self.ids + i * 4) };
            let row_start = row * self.paths;
            let lo = row_start + self.first;
            let (start, end) = staged_span(row_start, self.paths, block_idx_x(), self.own, sector);
            let slot = self.tile + i * self.row_bytes;
            let mut e0 = start / L::VEC * L::VEC + lane * L::VEC;
            while e0 < end {
                // The span's elements are in row `row` of out (`staged_span` stays within it)
                // and among this block's computed paths lo .. lo + block·lanes (its contract
                // with halo ≥ sector − 1), so in staging row i; the chunk's elements outside
                // the span are not touched.
                // SAFETY: as above; e0 is a multiple of VEC, out 32-byte aligned (checked).
                unsafe { L::write_chunk(self.out, slot, lo, e0, start, end) };
                e0 += 32 * L::VEC;
            }
            k += warps;
        }
        if self.double {
            self.buf = self.cap - self.buf;
        } else {
            // Every thread has read the buffer before any overwrites it.
            sync_threads();
        }
        self.count = 0;
    }
}

impl<L: StagedLanes> Sink<L> for StagedSink<L> {
    #[inline(always)]
    fn put(&mut self, row: u32, v: L) {
        let i = self.buf + self.count;
        // SAFETY: staging row i exists (a group puts at most cap rows, flushed at its end), this
        // thread's lanes at `lane` inside it; the buffer's previous readers finished before
        // the last barrier (two buffers in turn, or the barrier after a single buffer's
        // write-out).
        unsafe {
            L::st(self.tile + i * self.row_bytes + self.lane, v);
            if self.lane == 0 {
                st_shared_u32(self.ids + i * 4, row);
            }
        }
        self.count += 1;
    }
}

/// Steps `s .. s + P` of [`run_small_staged`] with their normals `zs`, then the group's rows
/// written out.
///
/// # Safety
/// `s + P ≤ steps`; the stack as [`run_small`]'s (element `i` at `stack + i·stride`); every
/// thread of the block calls it (barriers).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn staged_group<L: StagedLanes, const D: usize, const P: usize>(
    table: &SharedSteps,
    s: usize,
    zs: [[L; D]; P],
    chol: &[L; FAST_DIMS * FAST_DIMS],
    increments: bool,
    stack: u32,
    stride: u32,
    sink: &mut StagedSink<L>,
) {
    let slot = |i: u32| stack + i * stride;
    const { assert!(P <= 8) };
    // The P steps written out by a macro, not `unrolled`'s closure (with two inlined copies of
    // this body, measured as "two groups per pass", LLVM left that closure out of line and
    // passed its operands through local memory).
    macro_rules! each {
        ($($j:literal)*) => {$(
            if P > $j {
                // SAFETY: s + j < s + P ≤ steps (contract).
                step_small::<L, D>(unsafe { table.step(s + $j) }, pick(&zs, $j), chol, increments, slot, sink);
            }
        )*};
    }
    each!(0 1 2 3 4 5 6 7);
    if sink.count > 0 {
        sink.flush(); // uniform over the block
    }
}

/// [`run_small`] with the staged sink (`D` = 2, 3): the same steps, operands and order, the
/// group's rows written out at the end of each group of `P` steps (and of each remaining step).
///
/// # Safety
/// As [`run_small`]; every thread of the block calls it (barriers).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn run_small_staged<L: StagedLanes, const D: usize, const P: usize>(
    table: SharedSteps,
    steps: usize,
    chol: [L; FAST_DIMS * FAST_DIMS],
    x0: [L; FAST_DIMS],
    increments: bool,
    z: &mut impl Normals<L>,
    stack: u32,
    stride: u32,
    sink: &mut StagedSink<L>,
) {
    let slot = |i: u32| stack + i * stride;
    let mut k = 0;
    while k < D {
        // SAFETY: slot 0 exists (elements 0..D).
        unsafe { L::st(slot(k as u32), x0[k]) };
        k += 1;
    }
    let full = steps / P * P;
    let mut s = 0;
    if full > 0 {
        // The next group's normals are loaded before the current group is computed, and
        // unconditionally: the last group loads its own rows again (unused; the normals here are
        // plain buffer loads, `PairNormals` and `BufferNormals32`, so reading a row twice
        // changes nothing). With the load under `if s + P < full`, the loaded registers merged
        // with the old ones at the `if`'s end and ptxas put that merge's moves right after the
        // loads, so every group waited there for its own prefetch (42% of the stall samples,
        // ncu on the H100, bench/results/bridge-anypaths-2026-11-27.md).
        let mut next = prefetch::<L, D, P>(&table, z, 0);
        while s < full {
            let cur = next;
            next = prefetch::<L, D, P>(&table, z, (s + P).min(full - P));
            // SAFETY: s + P ≤ full ≤ steps.
            unsafe { staged_group::<L, D, P>(&table, s, cur, &chol, increments, stack, stride, sink) };
            s += P;
        }
    }
    while s < steps {
        // SAFETY: s < steps.
        let st = unsafe { table.step(s) };
        let mut zv = [L::ZERO; D];
        let mut k = 0;
        while k < D {
            place(&mut zv, k, z.normal(st.z * D as u32 + k as u32));
            k += 1;
        }
        step_small::<L, D>(st, zv, &chol, increments, slot, sink);
        if sink.count > 0 {
            sink.flush(); // uniform over the block
        }
        s += 1;
    }
}

/// The staged buffer kernels' body (`d = DIMS`, 2 or 3) for lane type `L` with `P` steps of
/// prefetch (`2·P·d = LaunchShape::staged_rows`): every thread of the block runs the generator (a thread
/// whose first path `b·own + t·lanes` is past the path count on the last lanes that exist, its
/// results never written: every thread meets the barriers). `normals(p)` reads the normals of the lanes
/// starting at path `p` (a multiple of the lanes, below `paths`).
///
/// # Safety
/// As [`buffer`] with `d = DIMS`, `T = L::Elem`, `LaunchShape::staged_shared_bytes` bytes of dynamic
/// shared memory and `LaunchShape::staged_blocks` blocks; when `LaunchShape::buffer_staged_at(z |
/// out)` does not hold (checked here) nothing is written. `normals(p)` reads only elements of
/// the rows the strategy names of paths `p .. min(p + lanes, paths)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn buffer_staged<L, const DIMS: usize, const P: usize, D: DynamicShared, Z: Normals<L>>(
    coef: *const L::Elem,
    idx: *const u32,
    steps: u32,
    dims: u32,
    slots: u32,
    chol: *const L::Elem,
    start: *const L::Elem,
    increments: u32,
    z: *const L::Elem,
    out: *mut L::Elem,
    paths: u32,
    normals: impl FnOnce(u32) -> Z,
) where
    L: StagedLanes<Coef = <L as StagedLanes>::Elem>,
    L::Elem: Real,
{
    let shape = launch_shape::<L::Elem>(steps, dims, slots, paths);
    if dims as usize != DIMS || !shape.buffer_staged_at(z as u64 | out as u64) {
        return; // uniform: the launcher never starts this kernel then
    }
    let dynamic = D::ptr();
    let (t, block) = (thread_idx_x(), block_dim_x());
    let lane = core::mem::size_of::<L>() as u32;
    let lanes = shape.staged_lanes() as u32;
    let stack_bytes = (slots * dims * block * lane).div_ceil(16) * 16;
    // SAFETY: the dynamic array holds the stack, then `steps` coefficient and index rows
    // (`staged_shared_bytes`); offsets are multiples of 16.
    let (tc, ti) = unsafe {
        let tc = dynamic.add(stack_bytes as usize) as *mut L::Elem;
        (tc, tc.add(steps as usize * COEFS) as *mut u32)
    };
    // SAFETY: coef/idx hold steps rows (contract), tc/ti steps rows (above).
    let table = unsafe { stage_table(coef, idx, steps as usize, tc, ti) };
    let base = shared_addr(dynamic);
    let rows = shape.staged_rows() as u32;
    const { assert!(P <= 8) };
    // Paths mode puts at most P·d rows per group (two buffers of P·d), increments 2·P·d (one):
    // `staged_rows` is 2·P·d.
    let (cap, double) = if increments != 0 { (rows, false) } else { (rows / 2, true) };
    let row_bytes = block * lane;
    let tile = base + stack_bytes + table_bytes(steps as usize, core::mem::size_of::<L::Elem>()) as u32;
    let own = shape.staged_own() as u32;
    let first = block_idx_x() * own;
    let mut sink = StagedSink::<L> {
        out,
        paths,
        first,
        own,
        tile,
        row_bytes,
        ids: tile + rows * row_bytes,
        cap,
        double,
        lane: t * lane,
        count: 0,
        buf: 0,
    };
    // The thread's first path, or the last lanes' (b·own < paths: the grid has staged_blocks).
    let mut src = normals((first + t * lanes).min((paths - 1) / lanes * lanes));
    let stack = base + t * lane;
    let stride = block * lane;
    let mut c = [L::ZERO; FAST_DIMS * FAST_DIMS];
    let mut x0 = [L::ZERO; FAST_DIMS];
    let mut i = 0;
    while i < DIMS * DIMS {
        // SAFETY: i < d², chol holds d² values (contract).
        c[i] = L::splat(unsafe { *chol.add(i) });
        if i < DIMS {
            // SAFETY: i < d, start holds d values (contract).
            x0[i] = L::splat(unsafe { *start.add(i) });
        }
        i += 1;
    }
    // SAFETY: as above, with elements slot·d + k < slots·d.
    unsafe {
        if increments != 0 {
            run_small_staged::<L, DIMS, P>(table, steps as usize, c, x0, true, &mut src, stack, stride, &mut sink)
        } else {
            run_small_staged::<L, DIMS, P>(table, steps as usize, c, x0, false, &mut src, stack, stride, &mut sink)
        }
    };
}

/// `body` with the const `D` bound to `dims` (2; 3 otherwise, whose instance returns at once
/// for a `dims` other than 3): one instance of the body per d, written once. (No d = 4
/// instance: it took the entry to 124 registers from 62, `LaunchShape::buffer_staged`.)
macro_rules! by_dims {
    ($dims:expr, |$d:ident| $body:expr) => {
        match $dims {
            2 => {
                const $d: usize = 2;
                $body
            }
            _ => {
                const $d: usize = 3;
                $body
            }
        }
    };
}

/// The staged buffer kernels for d = 2 and 3 (`bridge_staged_dims_f32`: two f32 paths per
/// thread as [`PairNormals`]; `bridge_staged_dims_f64`: one), one instance per d with
/// [`STAGED_DIMS_PIPELINE`] steps of prefetch.
macro_rules! staged_dims_kernel {
    ($name:ident, $t:ty, $lanes:ty, $dyn:ident, |$z:ident, $paths:ident, $p:ident| $normals:expr) => {
        /// [`buffer_staged`] in `$t` for `d = dims` (2 or 3): the bridge with normals from the
        /// buffer `z`, its results written through shared memory in whole sectors.
        ///
        /// # Safety
        /// As [`buffer_staged`] with `D = dims`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(
            coef: *const $t,
            idx: *const u32,
            steps: u32,
            dims: u32,
            slots: u32,
            chol: *const $t,
            start: *const $t,
            increments: u32,
            $z: *const $t,
            out: *mut $t,
            $paths: u32,
        ) {
            dynamic_shared_type!($dyn);
            const P: usize = STAGED_DIMS_PIPELINE;
            // SAFETY: this kernel's contract is the body's with D = dims (uniform; another d
            // returns at once); the normals read paths p .. p + lanes that exist.
            unsafe {
                by_dims!(dims, |D| buffer_staged::<$lanes, D, P, $dyn, _>(
                    coef,
                    idx,
                    steps,
                    dims,
                    slots,
                    chol,
                    start,
                    increments,
                    $z,
                    out,
                    $paths,
                    |$p| $normals,
                ))
            }
        }
    };
}

staged_dims_kernel!(bridge_staged_dims_f32, f32, F32x2, BRIDGE_DYNAMIC_STAGED_DIMS_F32, |z, paths, q2| {
    PairNormals { z, paths, q2 }
});
staged_dims_kernel!(bridge_staged_dims_f64, f64, f64, BRIDGE_DYNAMIC_STAGED_DIMS_F64, |z, paths, p| {
    BufferNormals32 { z, paths, p }
});
