//! The general path (any d, any step count, stack in shared memory or scratch): `run`, and the fused
//! kernels' bodies `run_fused` and `run_fused_d1`.

use super::*;

/// The body of the fused d = 1 kernels (`bridge_philox_d1_*`, `bridge_sobol_d1_*`): the buffer
/// kernels' d = 1 path ([`buffer_small_io`]: strategy staged in shared memory, [`run_d1`],
/// 32-bit indices) with normals from `z` instead of a buffer. A separate kernel from the general
/// path so that its registers are its own (with the general path in the same kernel, ptxas
/// allocated that path's 72 instead of ~40).
///
/// # Safety
/// Every thread of the block calls it (barrier); `LaunchShape::fused_fast_d1` holds for `sh` and
/// blockDim; `dynamic` is the launch's dynamic shared memory of `LaunchShape::fused_shared_bytes` bytes
/// (it starts with `LaunchShape::fused_base_bytes`: the stack, then the strategy, as `buffer_small_io`
/// expects); the pointers as the buffer kernel's contract; shared memory `z` reads was written
/// before this call (the barrier in `stage_table` orders it).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn run_fused_d1<T: SharedIo<Coef = T>>(
    sh: Shape,
    dynamic: *mut u8,
    coef: *const T,
    idx: *const u32,
    chol: *const T,
    start: *const T,
    out: *mut T,
    z: impl Normals<T>,
) {
    let paths = sh.paths;
    // SAFETY: the contract; thread p < paths writes element p of each row of `out`.
    unsafe {
        buffer_small_io::<T, 1, FUSED_PIPELINE, _, _>(
            dynamic,
            coef,
            idx,
            sh.steps,
            sh.slots,
            chol,
            start,
            sh.increments,
            index_1d,
            paths,
            move |p| (z, BufferSink32 { out, paths, p }),
        )
    }
}

/// The body of the general fused kernels (`bridge_philox_*`, `bridge_sobol_*`: d > 1, more than
/// `TABLE_STEPS` steps, or a stack that does not fit shared memory): [`run`] with its stack at
/// the start of the dynamic array. `staged`: the caller wrote shared memory that needs a barrier
/// before use ([`stage_sobol`]).
///
/// # Safety
/// Every thread of the block calls it (barrier); `dynamic` is the launch's dynamic shared memory
/// of `LaunchShape::fused_shared_bytes` bytes; the pointers as the buffer kernel's contract; `p` is this
/// thread's global index.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn run_fused<T: Real>(
    sh: Shape,
    dynamic: *mut u8,
    coef: *const T,
    idx: *const u32,
    chol: *const T,
    start: *const T,
    scratch: *mut T,
    out: *mut T,
    p: u32,
    z: impl Normals<T>,
    staged: bool,
) {
    if staged {
        sync_threads();
    }
    if p >= sh.paths {
        return;
    }
    // SAFETY: forwarded from the contract; the stack (when it fits) at the start of the
    // dynamic array, `buffer_stack_bytes` long; p < paths.
    unsafe { run::<T>(sh, dynamic as *mut T, coef, idx, chol, start, scratch, out, p as usize, z) }
}

/// Scalar arguments common to the bridge kernels.
#[derive(Clone, Copy)]
pub(super) struct Shape {
    pub(super) steps: u32,
    pub(super) dims: u32,
    pub(super) slots: u32,
    pub(super) increments: u32,
    pub(super) paths: u32,
}

/// # Safety
/// Every pointer holds what the launcher checked: `coef` steps·COEFS, `idx` steps·INDICES,
/// `chol` d², `start` d, `scratch` slots·d·paths (when the stack does not fit registers),
/// `out` steps·d·paths; `p < paths`; `dims ≤ MAX_DIMS`.
#[inline(always)]
pub(super) unsafe fn run<T: Real>(
    sh: Shape,
    shared: *mut T,
    coef: *const T,
    idx: *const u32,
    chol: *const T,
    start: *const T,
    scratch: *mut T,
    out: *mut T,
    p: usize,
    mut z: impl Normals<T>,
) {
    let d = sh.dims as usize;
    // SAFETY: lengths as documented above (checked by the launcher).
    let plan = unsafe {
        PathPlan {
            table: DeviceSteps { coef: coef as *const CoefRow<T>, idx: idx as *const IndexRow },
            steps: sh.steps as usize,
            dims: d,
            chol: from_raw_parts(chol, d * d),
            start: from_raw_parts(start, d),
            increments: sh.increments != 0,
        }
    };
    let paths = sh.paths as usize;
    let mut sink = BufferSink { out, paths, p };
    let block = block_dim_x() as usize;
    if (sh.slots as usize) * d * block <= SHARED_STACK {
        let mut stack = SharedStack { base: shared, stride: block, t: thread_idx_x() as usize };
        if d == 1 {
            generate_path::<T, 1, PREFETCH>(&plan, &mut z, &mut stack, &mut sink);
        } else if d <= SMALL_DIMS {
            generate_path::<T, SMALL_DIMS, 2>(&plan, &mut z, &mut stack, &mut sink);
        } else {
            generate_path::<T, MAX_DIMS, 1>(&plan, &mut z, &mut stack, &mut sink);
        }
    } else {
        let mut stack = ScratchStack { base: scratch, paths, p };
        generate_path::<T, MAX_DIMS, 1>(&plan, &mut z, &mut stack, &mut sink);
    }
}
