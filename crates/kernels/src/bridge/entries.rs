//! The bridge kernels' entry points (`#[no_mangle]`, one set per precision by `bridge_kernels!`):
//! each checks which path its launch takes and calls the generic bodies of the sibling modules.

use super::*;

macro_rules! bridge_kernels {
    ($t:ty, $pf:expr, $pairs:expr, [$dyn:ident, $dyn2:ident, $s2:ident, $s3:ident, $s4:ident, $s5:ident, $s6:ident], $buffer:ident, $dims:ident, $philox:ident, $sobol:ident, $nphilox:ident, $nsobol:ident, $philox_d1:ident, $sobol_d1:ident) => {
        /// The bridge with normals from the buffer `z` (`[row][path]`, `steps·d·paths`).
        ///
        /// # Safety
        /// `coef` holds `steps·COEFS`, `idx` `steps·INDICES` (8 per row; slots < `slots`, z and out rows < steps),
        /// `chol` `d²`, `start` `d`, `z` and `out` `steps·d·paths` elements, `scratch`
        /// `slots·d·paths` when `slots·d·blockDim > SHARED_STACK`; `1 ≤ d ≤ MAX_DIMS`; the
        /// launch has `buffer_shared_bytes(steps, d, slots, blockDim, paths, size_of::<T>())`
        /// bytes of dynamic shared memory and at least `paths / buffer_lanes_at(..)` threads
        /// (rounded up; extra threads return).
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
            let p = index_1d();
            let sh = Shape { steps, dims, slots, increments, paths };
            // The stack (and on the d = 1 path the strategy) in dynamic shared memory of
            // `buffer_shared_bytes(..)` bytes (the launcher's contract).
            let dynamic = dynamic_shared!($dyn);
            let shared = dynamic as *mut $t;
            // The d = 1 path's shape: d = 2..=FAST_DIMS on the specialised path run in
            // `bridge_dims_*` (the launcher decides with `buffer_fast` too), so their registers do
            // not weigh on this kernel.
            let (n, b) = (paths as usize, block_dim_x() as usize);
            let d1 = || LaunchShape {
                steps: steps as usize,
                dims: 1,
                slots: slots as usize,
                block: b,
                paths: n,
                elem: core::mem::size_of::<$t>(),
            };
            let fast = dims == 1 && d1().buffer_fast();
            let addrs = z as u64 | out as u64;
            let lanes = if $pairs && fast { d1().buffer_lanes_at(addrs) } else { 1 };
            if lanes == 4 && !paths.is_multiple_of(4) {
                // f32, d = 1, odd path count: thread q takes paths 4q..4q + 4 as one
                // `F32x4`, each row's elements read and written as its class mod 4 allows
                // (`QuadNormals`, uniform over the grid), the last thread only its existing
                // paths; the launcher's grid has ceil(paths / 4) threads (`buffer_lanes_at`).
                // Uniform over the block (barrier in `stage_table`).
                // SAFETY: the kernel's contract with `$t` = f32 (`$pairs`), so the tables and
                // `C`, `x` are f32 and z/out hold rows·paths f32; thread q < ceil(paths / 4) has
                // 4q < paths.
                unsafe {
                    buffer_small_io::<F32x4, 1, PIPELINE_QUADS, _, _>(
                        dynamic,
                        coef as *const f32,
                        idx,
                        steps,
                        slots,
                        chol as *const f32,
                        start as *const f32,
                        increments,
                        paths.div_ceil(4),
                        |q| {
                            let (q4, z, out) = (4 * q, z as *const f32, out as *mut f32);
                            let tail = quad_tail(paths, q4);
                            (QuadNormals { z, paths, q4, tail }, QuadSink { out, paths, q4, tail })
                        },
                    )
                };
                return;
            }
            if lanes == 4 {
                // f32, d = 1, path count a multiple of 4: thread q takes paths 4q..4q + 4 as one
                // `F32x4` (every row's quad is 16-byte aligned); the launcher's grid has paths / 4
                // threads (`buffer_lanes_at`). Uniform over the block (barrier in `stage_table`).
                // SAFETY: the kernel's contract with `$t` = f32 (`$pairs`), so the tables and
                // `C`, `x` are f32 and z/out hold paths / 4 quads per row.
                unsafe {
                    buffer_small::<F32x4, 1, PIPELINE_QUADS>(
                        dynamic,
                        coef as *const f32,
                        idx,
                        steps,
                        slots,
                        chol as *const f32,
                        start as *const f32,
                        increments,
                        z as *const F32x4,
                        out as *mut F32x4,
                        paths / 4,
                    )
                };
                return;
            }
            if lanes == 2 {
                // f32, d = 1, even path count: thread q takes paths 2q and 2q + 1 as one `F32x2`
                // (every row's pair is 8-byte aligned); the launcher's grid has paths / 2
                // threads (`buffer_lanes_at`). Uniform over the block (barrier in `stage_table`).
                // SAFETY: the kernel's contract with `$t` = f32 (`$pairs`), so the tables and
                // `C`, `x` are f32 and z/out hold paths / 2 pairs per row.
                unsafe {
                    buffer_small::<F32x2, 1, PIPELINE_PAIRS>(
                        dynamic,
                        coef as *const f32,
                        idx,
                        steps,
                        slots,
                        chol as *const f32,
                        start as *const f32,
                        increments,
                        z as *const F32x2,
                        out as *mut F32x2,
                        paths / 2,
                    )
                };
                return;
            }
            if fast {
                // d = 1, stack and strategy in shared memory, rows·paths ≤ 2^32 (rows = steps
                // when d = 1): the specialised generator with 32-bit indices. The condition is
                // uniform over the block, so every thread reaches the barrier in `stage_table`.
                // SAFETY: the kernel's contract.
                unsafe {
                    buffer_small::<$t, 1, $pf>(dynamic, coef, idx, steps, slots, chol, start, increments, z, out, paths)
                };
                return;
            }
            if p >= paths {
                return;
            }
            let src = BufferNormals { z, paths: paths as usize, p: p as usize };
            // SAFETY: forwarded from this kernel's contract; p < paths.
            unsafe { run::<$t>(sh, shared, coef, idx, chol, start, scratch, out, p as usize, src) }
        }

        /// The bridge with normals from the buffer `z` for `2 ≤ d ≤ FAST_DIMS` on the
        /// specialised path (`buffer_fast`): one instance per `d`, the strategy staged in shared
        /// memory, `C` in registers, 32-bit indices, two f32 paths per thread when
        /// `buffer_lanes` says so.
        ///
        /// # Safety
        /// As the buffer kernel, with `buffer_fast(steps, d, slots, blockDim, paths)` and
        /// `2 ≤ d ≤ FAST_DIMS`.
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
            // The stack, then the strategy, in dynamic shared memory of
            // `buffer_shared_bytes(..)` bytes (the launcher's contract).
            let dynamic = dynamic_shared!($dyn2);
            let (n, b) = (paths as usize, block_dim_x() as usize);
            let shape = LaunchShape {
                steps: steps as usize,
                dims: dims as usize,
                slots: slots as usize,
                block: b,
                paths: n,
                elem: core::mem::size_of::<$t>(),
            };
            if $pairs && shape.buffer_lanes_at(z as u64 | out as u64) == 2 {
                // As the d = 1 pairs path of the buffer kernel. Uniform over the block.
                // SAFETY: the kernel's contract with `$t` = f32 (`$pairs`), so the tables and
                // `C`, `x` are f32 and z/out hold paths / 2 pairs per row.
                unsafe {
                    buffer_fast_dims::<F32x2>(
                        dims,
                        dynamic,
                        coef as *const f32,
                        idx,
                        steps,
                        slots,
                        chol as *const f32,
                        start as *const f32,
                        increments,
                        z as *const F32x2,
                        out as *mut F32x2,
                        paths / 2,
                    )
                };
                return;
            }
            // SAFETY: the kernel's contract (`buffer_fast` holds, 2 ≤ d ≤ FAST_DIMS).
            unsafe {
                buffer_fast_dims::<$t>(dims, dynamic, coef, idx, steps, slots, chol, start, increments, z, out, paths)
            };
        }

        /// The bridge with Philox4x32-10 normals generated in registers (fused): reads only
        /// the strategy, writes `out`.
        ///
        /// # Safety
        /// As the buffer kernel, without `z`; the launch has
        /// `fused_shared_bytes(steps, d, slots, blockDim, paths, size_of::<T>(), false)` bytes of
        /// dynamic shared memory.
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
                    PhiloxNormals::new(seed, p as u64),
                    false,
                )
            }
        }

        /// The bridge with Sobol normals generated in registers (fused): path `p` takes point
        /// `offset + p`, row `j` dimension `j`. When the tables fit
        /// (`lockstep_shared::bridge::fused_sobol_warp`) by the warp method ([`stage_sobol`]),
        /// otherwise by the Gray-code walk per element.
        ///
        /// # Safety
        /// As the buffer kernel, without `z`; `dirs` holds `steps·d·32` direction numbers, `low`
        /// `steps·d·32` low-table words (`sobol::low_table` per row), `offset + paths ≤ 2^32`;
        /// blockDim is a multiple of 32; the launch has
        /// `fused_shared_bytes(steps, d, slots, blockDim, paths, size_of::<T>(), true)` bytes of
        /// dynamic shared memory.
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
                // warp_shared_bytes(steps·d, blockDim) bytes at base (`fused_shared_bytes`).
                let z = unsafe { stage_sobol(dirs, low, steps * dims, offset, base) };
                // SAFETY: forwarded from this kernel's contract; the tables are staged.
                unsafe { run_fused::<$t>(sh, dynamic, coef, idx, chol, start, scratch, out, p, z, true) }
            } else if shape.fused_sobol_pairs() {
                // The high parts alone after the fused stack and strategy, the low tables from
                // global memory (uniform condition, as above).
                let base = shared_addr(dynamic) + shape.fused_base_bytes() as u32;
                // SAFETY: dirs/low hold steps·d rows (contract); the dynamic array holds
                // pairs_shared_bytes(steps·d, blockDim) bytes at base (`fused_shared_bytes`).
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

        /// The fused Philox bridge on the d = 1 fast path ([`run_fused_d1`]): with the host's
        /// schedule `sched` (`cache_slots` > 0 and `fused_philox_cached` holds) each Philox
        /// block is computed once per path ([`ScheduledPhilox`]), otherwise by the one-block
        /// cache of `PhiloxNormals`.
        ///
        /// # Safety
        /// As `bridge_philox_*`, and `fused_fast_d1(steps, dims, slots, blockDim, paths)`
        /// holds (otherwise nothing is written); when `cache_slots > 0`, `sched` holds the
        /// `steps` entries of the host's schedule of this strategy using `cache_slots` slots
        /// (`lockstep::bridge::Plan::philox_schedule`), and the launch has
        /// `fused_shared_bytes(.., false) + philox_cache_bytes(steps, cache_slots, blockDim)`
        /// bytes of dynamic shared memory when `fused_philox_cached` holds.
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
            sched: *const u32,
            cache_slots: u32,
            out: *mut $t,
            paths: u32,
        ) {
            if !launch_shape::<$t>(steps, dims, slots, paths).fused_fast_d1() {
                return; // uniform: the launcher never starts this kernel then
            }
            let shape = launch_shape::<$t>(steps, 1, slots, paths); // d = 1 (just checked)
            let p = index_1d();
            let sh = Shape { steps, dims, slots, increments, paths };
            let dynamic = dynamic_shared!($s5);
            if shape.philox_cached(cache_slots as usize) {
                // The schedule, then the word cache, after the fused stack and strategy (uniform
                // condition: every thread copies its share and meets the barrier).
                let base = shared_addr(dynamic) + shape.fused_base_bytes() as u32;
                let (t, b) = (thread_idx_x(), block_dim_x());
                let mut i = t;
                while i < steps {
                    // SAFETY: i < steps entries in `sched` (contract) and in the array at base
                    // (`philox_cache_bytes`).
                    unsafe { st_shared_u32(base + i * 4, *sched.add(i as usize)) };
                    i += b;
                }
                let words = base + shape.philox_cache_bytes(0) as u32 + t * 4;
                let cache = SharedWords { base: words, stride: b * 4 };
                let z = ScheduledPhilox { key: key(seed), path: p as u64, op: base, cache };
                // SAFETY: forwarded from this kernel's contract; fused_fast_d1 holds (checked);
                // the barrier in `stage_table` orders the schedule's copy before its reads; the
                // strategy reads its rows in step order, one per step (d = 1).
                unsafe { run_fused_d1::<$t>(sh, dynamic, coef, idx, chol, start, out, z) }
            } else {
                let z = PhiloxNormals::new(seed, p as u64);
                // SAFETY: forwarded from this kernel's contract; fused_fast_d1 holds (checked).
                unsafe { run_fused_d1::<$t>(sh, dynamic, coef, idx, chol, start, out, z) }
            }
        }

        /// The fused Sobol bridge on the d = 1 fast path ([`run_fused_d1`]), by the warp method
        /// when its tables fit (`fused_sobol_warp`), else by the Gray-code walk per element.
        ///
        /// # Safety
        /// As `bridge_sobol_*`, and `fused_fast_d1(steps, dims, slots, blockDim, paths)` holds
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
                // warp_shared_bytes(steps, blockDim) bytes at base (`fused_shared_bytes`); the
                // barrier in `stage_table` comes before any read.
                let z = unsafe { stage_sobol(dirs, low, steps, offset, base) };
                // SAFETY: forwarded from this kernel's contract.
                unsafe { run_fused_d1::<$t>(sh, dynamic, coef, idx, chol, start, out, z) }
            } else if shape.fused_sobol_pairs() {
                let base = shared_addr(dynamic) + shape.fused_base_bytes() as u32;
                // SAFETY: dirs/low hold steps rows (contract, d = 1); the dynamic array holds
                // pairs_shared_bytes(steps, blockDim) bytes at base (`fused_shared_bytes`); the
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

        /// Philox normals alone: `out[j·paths + p]` for rows `j < rows`.
        ///
        /// # Safety
        /// `out` holds `rows·paths` elements.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $nphilox(rows: u32, seed: u64, out: *mut $t, paths: u32) {
            let p = index_1d();
            if p >= paths {
                return;
            }
            let mut g = PhiloxNormals::new(seed, p as u64);
            // Row j's element is out[j·paths + p]: one pointer step of `paths` per row.
            let mut o = out.wrapping_add(p as usize);
            let mut j = 0;
            while j < rows {
                let v = <$t as Real>::normal_from_bits(g.word(j));
                // SAFETY: o = out + j·paths + p with j < rows, p < paths.
                unsafe { *o = v };
                o = o.wrapping_add(paths as usize);
                j += 1;
            }
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
