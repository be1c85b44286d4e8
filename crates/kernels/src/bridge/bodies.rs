//! Generic bodies of the bridge kernels (`entries.rs` writes one `#[no_mangle]` kernel per body
//! and precision): each checks which path its launch takes, by the launch's [`LaunchShape`], and
//! calls the paths of the sibling modules.

use super::*;

/// A kernel's dynamic shared array: each entry point declares its own (`dynamic_shared!`) and
/// hands it to its body as a zero-sized type, read where the body needs it.
pub(super) trait DynamicShared {
    /// The array's generic address.
    fn ptr() -> *mut u8;
}

/// The bridge with normals from the buffer `z` (`[row][path]`, `steps·d·paths`).
///
/// # Safety
/// `coef` holds `steps·COEFS`, `idx` `steps·INDICES` (8 per row; slots < `slots`, z and out rows < steps),
/// `chol` `d²`, `start` `d`, `z` and `out` `steps·d·paths` elements, `scratch`
/// `slots·d·paths` when `slots·d·blockDim > SHARED_STACK`; `1 ≤ d ≤ MAX_DIMS`; with the
/// launch's shape (`LaunchShape`), it has `buffer_shared_bytes()` bytes of dynamic shared
/// memory and at least `paths / buffer_lanes_at(z | out)` threads (rounded up; extra threads
/// return).
///
/// `D` is the kernel's dynamic shared array (declared by its entry point).
#[inline(always)]
pub(super) unsafe fn buffer<T: SharedIo<Coef = T>, const PF: usize, const PAIRS: bool, D: DynamicShared>(
    coef: *const T,
    idx: *const u32,
    steps: u32,
    dims: u32,
    slots: u32,
    chol: *const T,
    start: *const T,
    increments: u32,
    scratch: *mut T,
    z: *const T,
    out: *mut T,
    paths: u32,
) {
    let p = index_1d();
    let sh = Shape { steps, dims, slots, increments, paths };
    // The stack (and on the d = 1 path the strategy) in dynamic shared memory of
    // `LaunchShape::buffer_shared_bytes` bytes (the launcher's contract).
    let dynamic = D::ptr();
    let shared = dynamic as *mut T;
    // The d = 1 path's shape: d = 2..=FAST_DIMS on the specialised path run in
    // `bridge_dims_*` (the launcher decides with `LaunchShape::buffer_fast` too), so their
    // registers do not weigh on this kernel.
    let (n, b) = (paths as usize, block_dim_x() as usize);
    let d1 = || LaunchShape {
        steps: steps as usize,
        dims: 1,
        slots: slots as usize,
        block: b,
        paths: n,
        elem: core::mem::size_of::<T>(),
    };
    let fast = dims == 1 && d1().buffer_fast();
    let addrs = z as u64 | out as u64;
    let lanes = if PAIRS && fast { d1().buffer_lanes_at(addrs) } else { 1 };
    if lanes == 4 && !paths.is_multiple_of(4) {
        // f32, d = 1, odd path count: thread q takes paths 4q..4q + 4 as one
        // `F32x4`, each row's elements read and written as its class mod 4 allows
        // (`QuadNormals`, uniform over the grid), the last thread only its existing
        // paths; the launcher's grid has ceil(paths / 4) threads (`LaunchShape::buffer_lanes_at`).
        // Uniform over the block (barrier in `stage_table`). The blocks take the quads from the
        // end (`index_1d_blocks_reversed`): at a count ≡ 1 (mod 4) the increments ran 78–81% of
        // copy in `blockIdx` order, 84.5–84.9% so (H100, bench/results/bridge-anypaths-2026-11-28.md).
        // For large grids the launcher starts `bridge_quads_f32` instead (`buffer_odd_quads`, the
        // same path in its own registers, 3 rows in flight); smaller ones, where the 4 rows in
        // flight here are faster, come here (`QuadsKernel::Auto`,
        // bench/results/bridge-quads-kernel-2026-11-28.md).
        // SAFETY: the kernel's contract with `T` = f32 (`PAIRS`), so the tables and
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
                index_1d_blocks_reversed,
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
        // threads (`LaunchShape::buffer_lanes_at`). Uniform over the block (barrier in `stage_table`).
        // SAFETY: the kernel's contract with `T` = f32 (`PAIRS`), so the tables and
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
        // threads (`LaunchShape::buffer_lanes_at`). Uniform over the block (barrier in `stage_table`).
        // SAFETY: the kernel's contract with `T` = f32 (`PAIRS`), so the tables and
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
        unsafe { buffer_small::<T, 1, PF>(dynamic, coef, idx, steps, slots, chol, start, increments, z, out, paths) };
        return;
    }
    if p >= paths {
        return;
    }
    let src = BufferNormals { z, paths: paths as usize, p: p as usize };
    // SAFETY: forwarded from this kernel's contract; p < paths.
    unsafe { run::<T>(sh, shared, coef, idx, chol, start, scratch, out, p as usize, src) }
}

/// The buffer kernel's f32 d = 1 path at a path count not a multiple of 4 on its own
/// (`bridge_quads_f32`): thread q takes paths 4q..4q + 4 as one `F32x4`, each row's elements
/// read and written as its class mod 4 allows (`QuadNormals`, `QuadSink`), the last thread
/// only its existing paths, with [`PIPELINE_QUADS_ODD`] rows in flight. In its own kernel it
/// keeps its own registers (60 on sm_90, where `bridge_f32`'s largest path holds 80 for
/// every path of it): on an H200 +4 points of copy on the paths and +6 on the increments
/// (bench/results/bridge-rows-pattern-2026-11-28.md, last section).
///
/// # Safety
/// As the buffer kernel in f32 (without `scratch`), and `LaunchShape::buffer_odd_quads_at(z | out)`
/// holds (otherwise nothing is written: the launcher starts this kernel only then); the grid
/// has `ceil(paths / 4)` threads or more.
///
/// `D` is the kernel's dynamic shared array (declared by its entry point).
#[inline(always)]
pub(super) unsafe fn buffer_odd_quads<D: DynamicShared>(
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
    if !launch_shape::<f32>(steps, dims, slots, paths).buffer_odd_quads_at(z as u64 | out as u64) {
        return; // uniform: the launcher never starts this kernel then
    }
    // The blocks take the quads from the end (`index_1d_blocks_reversed`): at a count ≡ 1
    // (mod 4) the increments ran 78–81% of copy in `blockIdx` order, 84.5–84.9% so (H100,
    // bench/results/bridge-anypaths-2026-11-28.md).
    // This call is also written out in `buffer` (at `PIPELINE_QUADS`): through one shared
    // function `bridge_f32`'s PTX moved and its sm_90 SASS grew by 24 instructions (checked
    // 2026-11-28 with scripts/sass_diff.py), so each kernel keeps its own copy.
    // SAFETY: the contract: d = 1 on the specialised path with 16-byte stack elements
    // (`buffer_odd_quads_at`), the dynamic array of `buffer_shared_bytes()`, z/out hold
    // rows·paths f32; thread q < ceil(paths / 4) has 4q < paths.
    unsafe {
        buffer_small_io::<F32x4, 1, PIPELINE_QUADS_ODD, _, _>(
            D::ptr(),
            coef,
            idx,
            steps,
            slots,
            chol,
            start,
            increments,
            index_1d_blocks_reversed,
            paths.div_ceil(4),
            |q| {
                let q4 = 4 * q;
                let tail = quad_tail(paths, q4);
                (QuadNormals { z, paths, q4, tail }, QuadSink { out, paths, q4, tail })
            },
        )
    };
}

/// The bridge with normals from the buffer `z` for `2 ≤ d ≤ FAST_DIMS` on the specialised
/// path (`LaunchShape::buffer_fast`): one instance per `d`, the strategy staged in shared
/// memory, `C` in registers, 32-bit indices, two f32 paths per thread when
/// `LaunchShape::buffer_lanes_at` says so.
///
/// # Safety
/// As the buffer kernel, with `LaunchShape::buffer_fast` holding and `2 ≤ d ≤ FAST_DIMS`.
///
/// `D` is the kernel's dynamic shared array (declared by its entry point).
#[inline(always)]
pub(super) unsafe fn buffer_dims<T: SharedIo<Coef = T>, const PAIRS: bool, D: DynamicShared>(
    coef: *const T,
    idx: *const u32,
    steps: u32,
    dims: u32,
    slots: u32,
    chol: *const T,
    start: *const T,
    increments: u32,
    z: *const T,
    out: *mut T,
    paths: u32,
) {
    // The stack, then the strategy, in dynamic shared memory of
    // `LaunchShape::buffer_shared_bytes` bytes (the launcher's contract).
    let dynamic = D::ptr();
    let (n, b) = (paths as usize, block_dim_x() as usize);
    let shape = LaunchShape {
        steps: steps as usize,
        dims: dims as usize,
        slots: slots as usize,
        block: b,
        paths: n,
        elem: core::mem::size_of::<T>(),
    };
    if PAIRS && shape.buffer_lanes_at(z as u64 | out as u64) == 2 {
        // As the d = 1 pairs path of the buffer kernel. Uniform over the block.
        // SAFETY: the kernel's contract with `T` = f32 (`PAIRS`), so the tables and
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
    // SAFETY: the kernel's contract (`LaunchShape::buffer_fast` holds, 2 ≤ d ≤ FAST_DIMS).
    unsafe { buffer_fast_dims::<T>(dims, dynamic, coef, idx, steps, slots, chol, start, increments, z, out, paths) };
}

/// The fused Philox bridge on the d = 1 fast path ([`run_fused_d1`]): with the host's
/// schedule `sched` (`cache_slots` > 0 and `LaunchShape::philox_cached` holds) each Philox
/// block is computed once per path ([`ScheduledPhilox`]), otherwise by the one-block
/// cache of `PhiloxNormals`. Path `p` takes the counter of path `first + p` (a range of a
/// larger run; `first + paths ≤ u32::MAX`, the path indices of one run).
///
/// # Safety
/// As `bridge_philox_*`, and `LaunchShape::fused_fast_d1` holds (otherwise nothing is
/// written); when `cache_slots > 0`, `sched` holds the `steps` entries of the host's schedule
/// of this strategy using `cache_slots` slots (`lockstep::bridge::Plan::philox_schedule`), and
/// when `LaunchShape::philox_cached(cache_slots)` holds the launch has
/// `fused_shared_bytes(false) + philox_cache_bytes(cache_slots)` bytes of dynamic shared memory
/// (`LaunchShape` methods).
///
/// `D` is the kernel's dynamic shared array (declared by its entry point).
#[inline(always)]
pub(super) unsafe fn fused_philox_d1<T: SharedIo<Coef = T>, D: DynamicShared>(
    coef: *const T,
    idx: *const u32,
    steps: u32,
    dims: u32,
    slots: u32,
    chol: *const T,
    start: *const T,
    increments: u32,
    seed: u64,
    first: u32,
    sched: *const u32,
    cache_slots: u32,
    out: *mut T,
    paths: u32,
) {
    if !launch_shape::<T>(steps, dims, slots, paths).fused_fast_d1() {
        return; // uniform: the launcher never starts this kernel then
    }
    let shape = launch_shape::<T>(steps, 1, slots, paths); // d = 1 (just checked)
    let p = index_1d();
    let sh = Shape { steps, dims, slots, increments, paths };
    let dynamic = D::ptr();
    if shape.philox_cached(cache_slots as usize) {
        // The schedule, then the word cache, after the fused stack and strategy (uniform
        // condition: every thread copies its share and meets the barrier).
        let base = shared_addr(dynamic) + shape.fused_base_bytes() as u32;
        let (t, b) = (thread_idx_x(), block_dim_x());
        let mut i = t;
        while i < steps {
            // SAFETY: i < steps entries in `sched` (contract) and in the array at base
            // (`LaunchShape::philox_cache_bytes`).
            unsafe { st_shared_u32(base + i * 4, *sched.add(i as usize)) };
            i += b;
        }
        let words = base + shape.philox_cache_bytes(0) as u32 + t * 4;
        let cache = SharedWords { base: words, stride: b * 4 };
        let z = ScheduledPhilox { key: key(seed), path: (first + p) as u64, op: base, cache };
        // SAFETY: forwarded from this kernel's contract; fused_fast_d1 holds (checked);
        // the barrier in `stage_table` orders the schedule's copy before its reads; the
        // strategy reads its rows in step order, one per step (d = 1).
        unsafe { run_fused_d1::<T>(sh, dynamic, coef, idx, chol, start, out, z) }
    } else {
        let z = PhiloxNormals::new(seed, (first + p) as u64);
        // SAFETY: forwarded from this kernel's contract; fused_fast_d1 holds (checked).
        unsafe { run_fused_d1::<T>(sh, dynamic, coef, idx, chol, start, out, z) }
    }
}

/// Copies the host's Philox schedule (`steps` entries of `sched`) to the shared address `base`,
/// each thread of the block its share (the caller's barrier orders it before the reads). (The
/// same loop is written out in [`fused_philox_d1`]: through this call that kernel's blocks
/// were laid out otherwise, so its SASS moved.)
///
/// # Safety
/// `sched` holds `steps` entries; the shared array at `base` holds `steps` words.
#[inline(always)]
pub(super) unsafe fn stage_schedule(sched: *const u32, steps: u32, base: u32) {
    let (t, b) = (thread_idx_x(), block_dim_x());
    let mut i = t;
    while i < steps {
        // SAFETY: i < steps entries in `sched` and in the array at base (contract).
        unsafe { st_shared_u32(base + i * 4, *sched.add(i as usize)) };
        i += b;
    }
}

/// As [`fused_philox_d1`] with Box–Muller normals of the same Philox blocks
/// (`bridge_philox_bm_d1_*`): the same schedule, its cache holding a block's four normals (two
/// pairs computed once, [`ScheduledBoxMuller`]) when `LaunchShape::box_muller_cached` holds,
/// else the one-block cache of `PhiloxBoxMuller` (the CPU twin's own generator).
///
/// # Safety
/// As [`fused_philox_d1`] with `box_muller_cached` and `box_muller_cache_bytes` in place of
/// `philox_cached` and `philox_cache_bytes`.
#[inline(always)]
pub(super) unsafe fn fused_box_muller_d1<T: SharedIo<Coef = T> + BoxMullerLanes, D: DynamicShared>(
    coef: *const T,
    idx: *const u32,
    steps: u32,
    dims: u32,
    slots: u32,
    chol: *const T,
    start: *const T,
    increments: u32,
    seed: u64,
    first: u32,
    sched: *const u32,
    cache_slots: u32,
    out: *mut T,
    paths: u32,
) {
    if !launch_shape::<T>(steps, dims, slots, paths).fused_fast_d1() {
        return; // uniform: the launcher never starts this kernel then
    }
    let shape = launch_shape::<T>(steps, 1, slots, paths); // d = 1 (just checked)
    let p = index_1d();
    let sh = Shape { steps, dims, slots, increments, paths };
    let dynamic = D::ptr();
    let path = (first + p) as u64;
    if shape.box_muller_cached(cache_slots as usize) {
        let base = shared_addr(dynamic) + shape.fused_base_bytes() as u32;
        // SAFETY: the contract: `sched` holds `steps` entries, the array at base
        // box_muller_cache_bytes.
        unsafe { stage_schedule(sched, steps, base) };
        // Ordered before the first normal by the strategy's barrier (`stage_table`), as the
        // schedule is.
        let table = T::copy_table();
        let (t, b, size) = (thread_idx_x(), block_dim_x(), core::mem::size_of::<T>() as u32);
        let values = base + shape.box_muller_cache_bytes(0) as u32 + t * size;
        let cache = SharedValues { base: values, stride: b * size };
        let scheduled = Scheduled { key: key(seed), path, op: base, cache };
        let z = ScheduledBoxMuller { scheduled, table };
        // SAFETY: as in fused_philox_d1.
        unsafe { run_fused_d1::<T>(sh, dynamic, coef, idx, chol, start, out, z) }
    } else {
        // SAFETY: forwarded from this kernel's contract; fused_fast_d1 holds (checked).
        unsafe { run_fused_d1::<T>(sh, dynamic, coef, idx, chol, start, out, PhiloxBoxMuller::new(seed, path)) }
    }
}

/// Philox normals alone: `out[j·paths + p]` = row `j` of path `first + p`, for rows `j < rows`
/// (`first` places a range of a larger run: the counter of path `first + p`).
///
/// # Safety
/// `out` holds `rows·paths` elements.
#[inline(always)]
pub(super) unsafe fn normals_philox<T: SharedIo<Coef = T>>(rows: u32, seed: u64, first: u64, out: *mut T, paths: u32) {
    let p = index_1d();
    if p >= paths {
        return;
    }
    let mut g = PhiloxNormals::new(seed, first + p as u64);
    // Row j's element is out[j·paths + p]: one pointer step of `paths` per row.
    let mut o = out.wrapping_add(p as usize);
    let mut j = 0;
    while j < rows {
        let v = <T as Real>::normal_from_bits(g.word(j));
        // SAFETY: o = out + j·paths + p with j < rows, p < paths.
        unsafe { *o = v };
        o = o.wrapping_add(paths as usize);
        j += 1;
    }
}
