//! The bridge kernels' entry points (`#[no_mangle]`, one set per precision by `bridge_kernels!`).
//! Four are thin calls of the generic bodies in `bodies.rs`; the fused Philox, Sobol and Sobol
//! normals kernels keep their bodies here, because as generic functions they compile to other
//! SASS (bench/results/refactor-13-2026-11-26.md).

use super::*;

macro_rules! bridge_kernels {
    ($t:ty, $pf:expr, $pairs:expr, [$dyn:ident, $dyn2:ident, $s2:ident, $s3:ident, $s4:ident, $s5:ident, $s6:ident], $buffer:ident, $dims:ident, $philox:ident, $sobol:ident, $nphilox:ident, $nsobol:ident, $philox_d1:ident, $sobol_d1:ident) => {
        /// [`buffer`] in `$t`.
        ///
        /// # Safety
        /// As [`buffer`].
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $buffer(
            coef: *const $t,
            idx: *const u32,
            steps: u32,
            dims: u32,
            slots: u32,
            chol: *const $t,
            start: *const $t,
            increments: u32,
            scratch: *mut $t,
            z: *const $t,
            out: *mut $t,
            paths: u32,
        ) {
            dynamic_shared_type!($dyn);
            // SAFETY: this kernel's contract is the body's.
            unsafe {
                buffer::<$t, $pf, $pairs, $dyn>(
                    coef, idx, steps, dims, slots, chol, start, increments, scratch, z, out, paths,
                )
            }
        }

        /// [`buffer_dims`] in `$t`.
        ///
        /// # Safety
        /// As [`buffer_dims`].
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $dims(
            coef: *const $t,
            idx: *const u32,
            steps: u32,
            dims: u32,
            slots: u32,
            chol: *const $t,
            start: *const $t,
            increments: u32,
            z: *const $t,
            out: *mut $t,
            paths: u32,
        ) {
            dynamic_shared_type!($dyn2);
            // SAFETY: this kernel's contract is the body's.
            unsafe {
                buffer_dims::<$t, $pairs, $dyn2>(coef, idx, steps, dims, slots, chol, start, increments, z, out, paths)
            }
        }

        /// The bridge with Philox4x32-10 normals generated in registers (fused): reads only
        /// the strategy, writes `out`. Path `p` takes the counter of path `first + p` (a range
        /// of a larger run).
        ///
        /// # Safety
        /// As the buffer kernel, without `z`; the launch has `fused_shared_bytes(false)` bytes
        /// of dynamic shared memory (`LaunchShape`); `first + paths ≤ 2^32`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $philox(
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
            let dynamic = dynamic_shared!($s2);
            // SAFETY: forwarded from this kernel's contract.
            unsafe {
                run_fused::<$t>(
                    sh,
                    dynamic,
                    coef,
                    idx,
                    chol,
                    start,
                    scratch,
                    out,
                    p,
                    PhiloxNormals::new(seed, (first + p) as u64),
                    false,
                )
            }
        }

        /// The bridge with Sobol normals generated in registers (fused): path `p` takes point
        /// `offset + p`, row `j` dimension `j`. When the tables fit
        /// (`LaunchShape::fused_sobol_warp`) by the warp method ([`stage_sobol`]),
        /// otherwise by the Gray-code walk per element.
        ///
        /// # Safety
        /// As the buffer kernel, without `z`; `dirs` holds `steps·d·32` direction numbers, `low`
        /// `steps·d·32` low-table words (`sobol::low_table` per row), `offset + paths ≤ 2^32`;
        /// blockDim is a multiple of 32; the launch has `fused_shared_bytes(true)` bytes of
        /// dynamic shared memory (`LaunchShape`).
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $sobol(
            coef: *const $t,
            idx: *const u32,
            steps: u32,
            dims: u32,
            slots: u32,
            chol: *const $t,
            start: *const $t,
            increments: u32,
            scratch: *mut $t,
            dirs: *const u32,
            low: *const u32,
            offset: u32,
            out: *mut $t,
            paths: u32,
        ) {
            let p = index_1d();
            let sh = Shape { steps, dims, slots, increments, paths };
            let dynamic = dynamic_shared!($s3);
            let shape = launch_shape::<$t>(steps, dims, slots, paths);
            if shape.fused_sobol_warp() {
                // The tables after the fused stack and strategy (uniform condition: every thread
                // stages and meets the barrier).
                let base = shared_addr(dynamic) + shape.fused_base_bytes() as u32;
                // SAFETY: dirs/low hold steps·d rows (contract); the dynamic array holds
                // warp_shared_bytes(steps·d, blockDim) bytes at base (`LaunchShape::fused_shared_bytes`).
                let z = unsafe { stage_sobol(dirs, low, steps * dims, offset, base) };
                // SAFETY: forwarded from this kernel's contract; the tables are staged.
                unsafe { run_fused::<$t>(sh, dynamic, coef, idx, chol, start, scratch, out, p, z, true) }
            } else if shape.fused_sobol_pairs() {
                // The high parts alone after the fused stack and strategy, the low tables from
                // global memory (uniform condition, as above).
                let base = shared_addr(dynamic) + shape.fused_base_bytes() as u32;
                // SAFETY: dirs/low hold steps·d rows (contract); the dynamic array holds
                // pairs_shared_bytes(steps·d, blockDim) bytes at base (`LaunchShape::fused_shared_bytes`).
                let z = unsafe { stage_sobol_global(dirs, low, steps * dims, offset, base) };
                // SAFETY: forwarded from this kernel's contract; the high parts are staged.
                unsafe { run_fused::<$t>(sh, dynamic, coef, idx, chol, start, scratch, out, p, z, true) }
            } else {
                // SAFETY: dirs holds steps·d·32 words (contract).
                let dirs = unsafe { from_raw_parts(dirs, steps as usize * dims as usize * BITS) };
                let z = SobolNormals { dirs, point: offset.wrapping_add(p) };
                // SAFETY: forwarded from this kernel's contract.
                unsafe { run_fused::<$t>(sh, dynamic, coef, idx, chol, start, scratch, out, p, z, false) }
            }
        }

        /// [`fused_philox_d1`] in `$t`.
        ///
        /// # Safety
        /// As [`fused_philox_d1`].
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $philox_d1(
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
            dynamic_shared_type!($s5);
            // SAFETY: this kernel's contract is the body's.
            unsafe {
                fused_philox_d1::<$t, $s5>(
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

        /// The fused Sobol bridge on the d = 1 fast path ([`run_fused_d1`]), by the warp method
        /// when its tables fit (`LaunchShape::fused_sobol_warp`), else by the Gray-code walk per
        /// element.
        ///
        /// # Safety
        /// As `bridge_sobol_*`, and `LaunchShape::fused_fast_d1` holds
        /// (otherwise nothing is written).
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $sobol_d1(
            coef: *const $t,
            idx: *const u32,
            steps: u32,
            dims: u32,
            slots: u32,
            chol: *const $t,
            start: *const $t,
            increments: u32,
            dirs: *const u32,
            low: *const u32,
            offset: u32,
            out: *mut $t,
            paths: u32,
        ) {
            let shape = launch_shape::<$t>(steps, dims, slots, paths);
            if !shape.fused_fast_d1() {
                return; // uniform: the launcher never starts this kernel then
            }
            let p = index_1d();
            let sh = Shape { steps, dims, slots, increments, paths };
            let dynamic = dynamic_shared!($s6);
            if shape.fused_sobol_warp() {
                let base = shared_addr(dynamic) + shape.fused_base_bytes() as u32;
                // SAFETY: dirs/low hold steps rows (contract, d = 1); the dynamic array holds
                // warp_shared_bytes(steps, blockDim) bytes at base (`LaunchShape::fused_shared_bytes`); the
                // barrier in `stage_table` comes before any read.
                let z = unsafe { stage_sobol(dirs, low, steps, offset, base) };
                // SAFETY: forwarded from this kernel's contract.
                unsafe { run_fused_d1::<$t>(sh, dynamic, coef, idx, chol, start, out, z) }
            } else if shape.fused_sobol_pairs() {
                let base = shared_addr(dynamic) + shape.fused_base_bytes() as u32;
                // SAFETY: dirs/low hold steps rows (contract, d = 1); the dynamic array holds
                // pairs_shared_bytes(steps, blockDim) bytes at base (`LaunchShape::fused_shared_bytes`); the
                // barrier in `stage_table` comes before any read.
                let z = unsafe { stage_sobol_global(dirs, low, steps, offset, base) };
                // SAFETY: forwarded from this kernel's contract.
                unsafe { run_fused_d1::<$t>(sh, dynamic, coef, idx, chol, start, out, z) }
            } else {
                // SAFETY: dirs holds steps·32 words (contract, d = 1).
                let dirs = unsafe { from_raw_parts(dirs, steps as usize * BITS) };
                let z = SobolNormals { dirs, point: offset.wrapping_add(p) };
                // SAFETY: forwarded from this kernel's contract.
                unsafe { run_fused_d1::<$t>(sh, dynamic, coef, idx, chol, start, out, z) }
            }
        }

        /// [`normals_philox`] in `$t`.
        ///
        /// # Safety
        /// As [`normals_philox`].
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $nphilox(rows: u32, seed: u64, first: u64, out: *mut $t, paths: u32) {
            // SAFETY: this kernel's contract is the body's.
            unsafe { normals_philox::<$t>(rows, seed, first, out, paths) }
        }

        /// Sobol normals alone: `out[j·paths + p]` = dimension `j` of point `offset + p`, by
        /// the warp method ([`stage_sobol`]) `NORMALS_ROWS` rows at a time.
        ///
        /// # Safety
        /// `dirs` holds `rows·32` words, `low` `rows·32` low-table words, `out` `rows·paths`
        /// elements; `offset + paths ≤ 2^32`; blockDim is a multiple of 32; the launch has
        /// `sobol::normals_shared_bytes(rows, blockDim)` bytes of dynamic shared memory.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $nsobol(
            rows: u32,
            dirs: *const u32,
            low: *const u32,
            offset: u32,
            out: *mut $t,
            paths: u32,
        ) {
            let p = index_1d();
            let base = shared_addr(dynamic_shared!($s4));
            let mut j0 = 0;
            while j0 < rows {
                let r = (rows - j0).min(NORMALS_ROWS);
                // SAFETY: rows j0..j0 + r exist in dirs/low (j0 + r ≤ rows); the dynamic array
                // holds warp_shared_bytes(NORMALS_ROWS or fewer rows, blockDim) bytes (contract).
                let mut z =
                    unsafe { stage_sobol(dirs.add(j0 as usize * BITS), low.add(j0 as usize * BITS), r, offset, base) };
                sync_threads();
                if p < paths {
                    // Row j0 + j's element is out[(j0 + j)·paths + p]: one pointer step per row.
                    let mut o = out.wrapping_add(j0 as usize * paths as usize + p as usize);
                    let mut j = 0;
                    while j < r {
                        let v = <WarpSobol as Normals<$t>>::normal(&mut z, j);
                        // SAFETY: o = out + (j0 + j)·paths + p with j0 + j < rows, p < paths.
                        unsafe { *o = v };
                        o = o.wrapping_add(paths as usize);
                        j += 1;
                    }
                }
                j0 += r;
                if j0 < rows {
                    // Every thread is done reading these tables before the next chunk's.
                    sync_threads();
                }
            }
        }
    };
}

bridge_kernels!(
    f32,
    PIPELINE_F32,
    true,
    [
        BRIDGE_DYNAMIC_F32,
        BRIDGE_DYNAMIC_DIMS_F32,
        BRIDGE_STACK_PHILOX_F32,
        BRIDGE_STACK_SOBOL_F32,
        BRIDGE_NORMALS_SOBOL_F32,
        BRIDGE_D1_PHILOX_F32,
        BRIDGE_D1_SOBOL_F32
    ],
    bridge_f32,
    bridge_dims_f32,
    bridge_philox_f32,
    bridge_sobol_f32,
    normals_philox_f32,
    normals_sobol_f32,
    bridge_philox_d1_f32,
    bridge_sobol_d1_f32
);
bridge_kernels!(
    f64,
    PIPELINE_F64,
    false,
    [
        BRIDGE_DYNAMIC_F64,
        BRIDGE_DYNAMIC_DIMS_F64,
        BRIDGE_STACK_PHILOX_F64,
        BRIDGE_STACK_SOBOL_F64,
        BRIDGE_NORMALS_SOBOL_F64,
        BRIDGE_D1_PHILOX_F64,
        BRIDGE_D1_SOBOL_F64
    ],
    bridge_f64,
    bridge_dims_f64,
    bridge_philox_f64,
    bridge_sobol_f64,
    normals_philox_f64,
    normals_sobol_f64,
    bridge_philox_d1_f64,
    bridge_sobol_d1_f64
);

/// [`buffer_odd_quads`]: the f32 d = 1 buffer bridge at a path count not a multiple of 4, four
/// paths per thread.
///
/// # Safety
/// As [`buffer_odd_quads`].
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn bridge_quads_f32(
    coef: *const f32,
    idx: *const u32,
    steps: u32,
    dims: u32,
    slots: u32,
    chol: *const f32,
    start: *const f32,
    increments: u32,
    z: *const f32,
    out: *mut f32,
    paths: u32,
) {
    dynamic_shared_type!(BRIDGE_DYNAMIC_QUADS_F32);
    // SAFETY: this kernel's contract is the body's.
    unsafe {
        buffer_odd_quads::<BRIDGE_DYNAMIC_QUADS_F32>(
            coef, idx, steps, dims, slots, chol, start, increments, z, out, paths,
        )
    }
}
