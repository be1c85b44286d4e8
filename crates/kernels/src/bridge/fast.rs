//! The specialised buffer path: the strategy staged in shared memory (`stage_table`), 32-bit
//! indices, normals prefetched `P` steps ahead (`run_d1` at d = 1, `run_small` at d = 2..=4).

use super::*;

/// The strategy in the block's shared memory (written by [`stage_table`]): 32-bit shared
/// addresses of the coefficient and index tables.
#[derive(Clone, Copy)]
pub(super) struct SharedSteps {
    pub(super) coef: u32,
    pub(super) idx: u32,
}

impl SharedSteps {
    /// Step `s`: one broadcast `ld.shared.v4` (+ scalars) per table.
    ///
    /// # Safety
    /// `s` is below the number of rows [`stage_table`] copied.
    #[inline(always)]
    pub(super) unsafe fn step<T: SharedIo>(&self, s: usize) -> Step<T> {
        let c = self.coef + s as u32 * core::mem::size_of::<CoefRow<T::Coef>>() as u32;
        let i = self.idx + s as u32 * core::mem::size_of::<IndexRow>() as u32;
        // SAFETY: row s exists (contract); rows are 16-byte aligned (`CoefRow`, `IndexRow`).
        unsafe {
            let [wl, wr, sd, dt_left, dt_right, recip_left, recip_right] = T::ld_coefs(c);
            let [left, right, store, z] = ld_shared_v4_u32(i);
            let (out, flags) = (ld_shared_u32(i + 16), ld_shared_u32(i + 20));
            Step { wl, wr, sd, dt_left, dt_right, recip_left, recip_right, left, right, store, z, out, flags }
        }
    }
}

/// The normals of steps `s0..s0 + P` (all `< steps`, checked by the caller).
#[inline(always)]
pub(super) fn prefetch_d1<T: SharedIo, const P: usize>(
    table: &SharedSteps,
    z: &mut impl Normals<T>,
    s0: usize,
) -> [T; P] {
    let mut zs = [T::ZERO; P];
    let mut j = 0;
    while j < P {
        // SAFETY: s0 + j < steps (caller).
        place(&mut zs, j, z.normal(unsafe { table.step::<T>(s0 + j) }.z));
        j += 1;
    }
    zs
}

/// One d = 1 step with its normal `zv` (see [`run_d1`]); `slot(i)` is the shared address of
/// stack slot `i`.
#[inline(always)]
pub(super) fn step_d1<T: SharedIo>(
    st: Step<T>,
    zv: T,
    chol: &[T; 1],
    increments: bool,
    slot: impl Fn(u32) -> u32,
    sink: &mut impl Sink<T>,
) {
    // SAFETY: the table's slots are < slots (contract of `run_d1`).
    let (xl, xr) = unsafe { (T::ld(slot(st.left)), T::ld(slot(st.right))) };
    let x = interpolate(st.wl, xl, st.wr, xr, st.sd, noise::<T, 1>(chol, 1, &[zv], 0));
    if st.store != NO_SLOT {
        // SAFETY: as above.
        unsafe { T::st(slot(st.store), x) };
    }
    if !increments {
        sink.put(st.out, x);
    } else {
        if st.flags & EMIT_LEFT != 0 {
            sink.put(st.out, increment(xl, x, st.dt_left, st.recip_left));
        }
        if st.flags & EMIT_RIGHT != 0 {
            sink.put(st.out + 1, increment(x, xr, st.dt_right, st.recip_right));
        }
    }
}

/// The d = 1 generator with the stack and the strategy in shared memory: the same steps,
/// operands and arithmetic as `generate_path::<T, 1, PREFETCH>` (the shared `interpolate`,
/// `noise` and `increment`, same order), restructured for the GPU: the normals of the next `P`
/// steps are loaded before the current ones are computed (software pipelining, up to 2·P loads
/// in flight per thread, see bench/results/bridge-predictions.md), `C` is one register, and the
/// table and stack are read with `ld.shared`/`st.shared` on 32-bit shared addresses.
///
/// # Safety
/// `stack` is the shared address of this thread's column of a shared stack of `slots` elements
/// `stride` bytes apart (element `i` at `stack + i·stride`, every slot of the table `< slots`);
/// the table holds `steps` rows whose rows index `z` and `out` in range.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn run_d1<T: SharedIo, const P: usize>(
    table: SharedSteps,
    steps: usize,
    c0: T,
    x0: T,
    increments: bool,
    z: &mut impl Normals<T>,
    stack: u32,
    stride: u32,
    sink: &mut impl Sink<T>,
) {
    // Slot i < slots is at stack + i·stride, inside the array (contract), all in 32 bits.
    let slot = |i: u32| stack + i * stride;
    let chol = [c0];
    // SAFETY: slot 0 exists.
    unsafe { T::st(slot(0), x0) };
    if P == 1 && core::mem::size_of::<T::Coef>() == 4 {
        // The f32 fused kernels (`FUSED_PIPELINE`): each step's normal computed one step ahead,
        // as below with P = 1, but counted in 32 bits (steps ≤ TABLE_STEPS), which saves their
        // issue-bound loop four instructions a step on sm_90. Not in f64: there ptxas answered
        // with 31 more instructions in the Box–Muller block (uniform-register spills).
        let n = steps as u32;
        if n > 0 {
            // SAFETY: step 0 < steps.
            let mut next = z.normal(unsafe { table.step::<T>(0) }.z);
            let mut s = 0u32;
            while s < n {
                let cur = next;
                if s + 1 < n {
                    // SAFETY: s + 1 < steps.
                    next = z.normal(unsafe { table.step::<T>(s as usize + 1) }.z);
                }
                // SAFETY: s < steps.
                step_d1(unsafe { table.step(s as usize) }, cur, &chol, increments, slot, sink);
                s += 1;
            }
        }
        return;
    }
    // Whole groups of PREFETCH steps, each group's normals loaded during the previous group.
    let full = steps / P * P;
    let mut s = 0;
    if full > 0 {
        let mut next = prefetch_d1::<T, P>(&table, z, 0);
        while s < full {
            let cur = next;
            if s + P < full {
                next = prefetch_d1::<T, P>(&table, z, s + P);
            }
            unrolled::<P>(|j| {
                // SAFETY: s + j < full ≤ steps.
                step_d1(unsafe { table.step(s + j) }, pick(&cur, j), &chol, increments, slot, sink);
            });
            s += P;
        }
    }
    // The remaining steps one by one.
    while s < steps {
        // SAFETY: s < steps.
        let st = unsafe { table.step(s) };
        let zv = z.normal(st.z);
        step_d1(st, zv, &chol, increments, slot, sink);
        s += 1;
    }
}

/// The normals of steps `s0..s0 + P` (all `< steps`, checked by the caller), `D` per step (rows
/// `z·D + k`).
#[inline(always)]
pub(super) fn prefetch<T: SharedIo, const D: usize, const P: usize>(
    table: &SharedSteps,
    z: &mut impl Normals<T>,
    s0: usize,
) -> [[T; D]; P] {
    let mut zs = [[T::ZERO; D]; P];
    let mut j = 0;
    while j < P {
        // SAFETY: s0 + j < steps (caller).
        let zi = unsafe { table.step::<T>(s0 + j) }.z;
        let mut k = 0;
        while k < D {
            place2(&mut zs, j, k, z.normal(zi * D as u32 + k as u32));
            k += 1;
        }
        j += 1;
    }
    zs
}

/// One step of [`run_small`] with its `D` normals `zv`: for each component `k` in order, exactly
/// `generate_path`'s operations (stack element `slot·D + k`, output row `out·D + k`); `slot(i)`
/// is the shared address of stack element `i`, `chol` holds `C` row-major `D × D` in its first
/// `D²` entries.
#[inline(always)]
pub(super) fn step_small<T: SharedIo, const D: usize>(
    st: Step<T>,
    zv: [T; D],
    chol: &[T; FAST_DIMS * FAST_DIMS],
    increments: bool,
    slot: impl Fn(u32) -> u32,
    sink: &mut impl Sink<T>,
) {
    let d = D as u32;
    let component = |k: usize| {
        let kk = k as u32;
        // SAFETY: the table's slots are < slots, so every element is < slots·D (contract of
        // `run_small`).
        let (xl, xr) = unsafe { (T::ld(slot(st.left * d + kk)), T::ld(slot(st.right * d + kk))) };
        let x = interpolate(st.wl, xl, st.wr, xr, st.sd, noise::<T, D>(chol, D, &zv, k));
        if st.store != NO_SLOT {
            // SAFETY: as above.
            unsafe { T::st(slot(st.store * d + kk), x) };
        }
        let row = st.out * d + kk;
        if !increments {
            sink.put(row, x);
        } else {
            if st.flags & EMIT_LEFT != 0 {
                sink.put(row, increment(xl, x, st.dt_left, st.recip_left));
            }
            if st.flags & EMIT_RIGHT != 0 {
                sink.put(row + d, increment(x, xr, st.dt_right, st.recip_right));
            }
        }
    };
    // Components 0..D in order, written out (D ≤ FAST_DIMS = 4): a loop over k with this body
    // is not always unrolled by LLVM, and then `C` is indexed dynamically (local memory).
    unrolled::<D>(component);
}

/// The generator for `d = D ≤ FAST_DIMS` with the stack and the strategy in shared memory: the
/// same steps, operands and arithmetic as `generate_path` (the shared `interpolate`, `noise`
/// (`C·Z` left to right) and `increment`, same order), restructured for the GPU: `D` is a
/// compile-time constant (no selects over unused components), `C` sits in registers, the normals
/// of the next `P` steps are loaded before the current ones are computed (software pipelining,
/// up to 2·P·D loads in flight per thread, see bench/results/bridge-predictions.md), and the
/// table and stack are read with `ld.shared`/`st.shared` on 32-bit shared addresses.
///
/// # Safety
/// `stack` is the shared address of this thread's column of a shared stack of `slots·D`
/// elements `stride` bytes apart (element `i` at `stack + i·stride`, every slot of the table
/// `< slots`); the table holds `steps` rows whose rows index `z` and `out` in range.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn run_small<T: SharedIo, const D: usize, const P: usize>(
    table: SharedSteps,
    steps: usize,
    chol: [T; FAST_DIMS * FAST_DIMS],
    x0: [T; FAST_DIMS],
    increments: bool,
    z: &mut impl Normals<T>,
    stack: u32,
    stride: u32,
    sink: &mut impl Sink<T>,
) {
    // Element i < slots·D is at stack + i·stride, inside the array (contract), all in 32 bits.
    let slot = |i: u32| stack + i * stride;
    let mut k = 0;
    while k < D {
        // SAFETY: slot 0 exists (elements 0..D).
        unsafe { T::st(slot(k as u32), x0[k]) };
        k += 1;
    }
    // Whole groups of P steps, each group's normals loaded during the previous group.
    let full = steps / P * P;
    let mut s = 0;
    if full > 0 {
        let mut next = prefetch::<T, D, P>(&table, z, 0);
        while s < full {
            let cur = next;
            if s + P < full {
                next = prefetch::<T, D, P>(&table, z, s + P);
            }
            unrolled::<P>(|j| {
                // SAFETY: s + j < full ≤ steps.
                step_small::<T, D>(unsafe { table.step(s + j) }, pick(&cur, j), &chol, increments, slot, sink);
            });
            s += P;
        }
    }
    // The remaining steps one by one.
    while s < steps {
        // SAFETY: s < steps.
        let st = unsafe { table.step(s) };
        let mut zv = [T::ZERO; D];
        let mut k = 0;
        while k < D {
            place(&mut zv, k, z.normal(st.z * D as u32 + k as u32));
            k += 1;
        }
        step_small::<T, D>(st, zv, &chol, increments, slot, sink);
        s += 1;
    }
}

/// Copies the strategy (`steps` rows of each table) into the block's shared arrays `tc`/`ti`
/// (every thread of the block copies a share, then waits at the barrier) and returns their
/// shared addresses: each step is then a broadcast `ld.shared` instead of a global load that
/// competes with the streamed normals for L1.
///
/// # Safety
/// Every thread of the block calls it (it has a barrier); `coef`/`idx` hold `steps` rows,
/// `tc`/`ti` at least `steps` rows.
#[inline(always)]
pub(super) unsafe fn stage_table<T: Real>(
    coef: *const T,
    idx: *const u32,
    steps: usize,
    tc: *mut T,
    ti: *mut u32,
) -> SharedSteps {
    let (t, b) = (thread_idx_x() as usize, block_dim_x() as usize);
    let mut i = t;
    while i < steps * COEFS {
        // SAFETY: i < steps·COEFS, inside both (contract).
        unsafe { *tc.add(i) = *coef.add(i) };
        i += b;
    }
    let mut i = t;
    while i < steps * INDICES {
        // SAFETY: i < steps·INDICES, inside both (contract).
        unsafe { *ti.add(i) = *idx.add(i) };
        i += b;
    }
    sync_threads();
    SharedSteps { coef: shared_addr(tc), idx: shared_addr(ti) }
}

/// The buffer kernel's specialised path (`LaunchShape::buffer_fast`) for `d = D` and lane type `T` (f32,
/// f64, [`F32x2`]: two paths per thread, or [`F32x4`]: four): stages the strategy after the stack in the dynamic
/// shared array, loads `C` and `x` into registers, then [`run_small`] for element `index_1d()`
/// of each `[row][lanes]` row (`lanes` elements of `T` per row, 32-bit indices).
///
/// # Safety
/// Every thread of the block calls it; `dynamic` holds `LaunchShape::buffer_shared_bytes` bytes (a stack
/// of `slots·D·blockDim` elements of `T`, rounded up to 16 bytes, then `steps` coefficient rows
/// of `T::Coef` and `steps` index rows); `coef`/`idx` hold `steps` rows (slots < `slots`, rows
/// `< steps·D`), `chol` `D²` values, `start` `D`, `z` and `out` `steps·D·lanes` elements with
/// `steps·D·lanes ≤ 2^32`; `slots·D·blockDim ≤ SHARED_STACK`, `steps ≤ TABLE_STEPS`,
/// `D ≤ FAST_DIMS`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn buffer_small<T: SharedIo, const D: usize, const P: usize>(
    dynamic: *mut u8,
    coef: *const T::Coef,
    idx: *const u32,
    steps: u32,
    slots: u32,
    chol: *const T::Coef,
    start: *const T::Coef,
    increments: u32,
    z: *const T,
    out: *mut T,
    lanes: u32,
) {
    // SAFETY: the caller's contract; thread p < lanes reads and writes element p of each row.
    unsafe {
        buffer_small_io::<T, D, P, _, _>(
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
            |p| (BufferNormals32 { z, paths: lanes, p }, BufferSink32 { out, paths: lanes, p }),
        )
    }
}

/// [`buffer_small`] with the normals and the results of thread `p < threads` read and written
/// through `io(p)` (the `[row][lanes]` buffers there; the quads of any path count,
/// [`QuadNormals`]/[`QuadSink`], for the d = 1 path at a count not a multiple of 4). `index()`
/// gives the calling thread's `p` (read after the table's barrier): [`index_1d`], or for the
/// quads [`index_1d_blocks_reversed`] (the same indices, the last block's first).
///
/// # Safety
/// As [`buffer_small`], with `threads` in place of `lanes`, and `io(p)` for `p < threads` reads
/// and writes only elements of `z` and `out` of the rows the strategy names.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn buffer_small_io<T: SharedIo, const D: usize, const P: usize, Z: Normals<T>, S: Sink<T>>(
    dynamic: *mut u8,
    coef: *const T::Coef,
    idx: *const u32,
    steps: u32,
    slots: u32,
    chol: *const T::Coef,
    start: *const T::Coef,
    increments: u32,
    index: impl FnOnce() -> u32,
    threads: u32,
    io: impl FnOnce(u32) -> (Z, S),
) {
    let block = block_dim_x();
    let size = core::mem::size_of::<T>();
    // SAFETY: the dynamic array holds the stack's bytes, then `steps` coefficient rows, then
    // `steps` index rows (contract); every offset is a multiple of 16.
    let (tc, ti) = unsafe {
        let tc = dynamic.add(buffer_stack_bytes(slots as usize, D, block as usize, size)) as *mut T::Coef;
        (tc, tc.add(steps as usize * COEFS) as *mut u32)
    };
    // SAFETY: coef/idx hold steps rows (contract), tc/ti steps rows (above).
    let table = unsafe { stage_table(coef, idx, steps as usize, tc, ti) };
    let p = index();
    if p >= threads {
        return;
    }
    let mut c = [T::ZERO; FAST_DIMS * FAST_DIMS];
    let mut x0 = [T::ZERO; FAST_DIMS];
    let mut i = 0;
    while i < D * D {
        // SAFETY: i < D², chol holds D² values (contract).
        c[i] = T::splat(unsafe { *chol.add(i) });
        if i < D {
            // SAFETY: i < D, start holds D values (contract).
            x0[i] = T::splat(unsafe { *start.add(i) });
        }
        i += 1;
    }
    let (mut src, mut sink) = io(p);
    // SAFETY: the table holds `steps` rows (contract); the stack column of thread t starts t
    // elements into the dynamic array, with stride blockDim elements, slots·D·blockDim ≤
    // SHARED_STACK elements (contract).
    unsafe {
        let size = size as u32;
        let stack = shared_addr(dynamic) + thread_idx_x() * size;
        // Paths and increments as separate instances (`increments` a constant in each, so the
        // per-step output branch disappears and each loop is scheduled on its own).
        if D == 1 {
            // The measured d = 1 generator (bench/results/bridge-predictions.md, run P1).
            if increments != 0 {
                run_d1::<T, P>(table, steps as usize, c[0], x0[0], true, &mut src, stack, block * size, &mut sink)
            } else {
                run_d1::<T, P>(table, steps as usize, c[0], x0[0], false, &mut src, stack, block * size, &mut sink)
            }
        } else if increments != 0 {
            run_small::<T, D, P>(table, steps as usize, c, x0, true, &mut src, stack, block * size, &mut sink)
        } else {
            run_small::<T, D, P>(table, steps as usize, c, x0, false, &mut src, stack, block * size, &mut sink)
        }
    };
}

// `step_small` writes out components 0..4.
const _: () = assert!(FAST_DIMS == 4);

/// [`buffer_small`] for `d = dims` (each `d` its own instance, with [`PIPELINE_D2`],
/// [`PIPELINE_D3`], [`PIPELINE_D4`] steps of prefetch).
///
/// # Safety
/// As [`buffer_small`] with `D = dims`, `2 ≤ dims ≤ FAST_DIMS`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn buffer_fast_dims<T: SharedIo>(
    dims: u32,
    dynamic: *mut u8,
    coef: *const T::Coef,
    idx: *const u32,
    steps: u32,
    slots: u32,
    chol: *const T::Coef,
    start: *const T::Coef,
    increments: u32,
    z: *const T,
    out: *mut T,
    lanes: u32,
) {
    // SAFETY: the caller's contract with D = dims.
    unsafe {
        match dims {
            2 => buffer_small::<T, 2, PIPELINE_D2>(
                dynamic, coef, idx, steps, slots, chol, start, increments, z, out, lanes,
            ),
            3 => buffer_small::<T, 3, PIPELINE_D3>(
                dynamic, coef, idx, steps, slots, chol, start, increments, z, out, lanes,
            ),
            _ => buffer_small::<T, 4, PIPELINE_D4>(
                dynamic, coef, idx, steps, slots, chol, start, increments, z, out, lanes,
            ),
        }
    }
}
