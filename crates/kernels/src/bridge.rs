//! Brownian bridge kernels: one thread per path, the strategy of
//! `lockstep_shared::bridge::generate_path`, normals from a buffer or generated in registers
//! (Philox4x32-10 or Sobol, fused), and the normal generators alone.
//!
//! Layout `[row][path]` everywhere: thread `p` touches `buf[row·paths + p]`, so each warp's
//! access is one coalesced transaction per row. The stack of live values lives in shared
//! memory (`[element][thread]`, conflict-free) when `slots·d·blockDim ≤ SHARED_STACK`, and in
//! the `scratch` buffer `[slot·d + k][path]` otherwise. Steps are read as 16-byte-aligned rows
//! (vector loads; every thread reads the same row, one broadcast per warp).

use core::slice::from_raw_parts;
use lockstep_cuda_std::prelude::*;
use lockstep_shared::bridge::philox::PhiloxNormals;
use lockstep_shared::bridge::sobol::{BITS, SobolNormals, sobol_u32};
use lockstep_shared::bridge::{
    CoefRow, IndexRow, MAX_DIMS, Normals, PathPlan, Real, SHARED_STACK, Sink, Stack, Step, Steps, generate_path,
};

/// Normals read from a `[row][path]` buffer.
struct BufferNormals<T> {
    z: *const T,
    paths: usize,
    p: usize,
}

impl<T: Copy> Normals<T> for BufferNormals<T> {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        // SAFETY: row < (N+1)·d and p < paths; the launcher checked z holds (N+1)·d·paths.
        unsafe { *self.z.add(row as usize * self.paths + self.p) }
    }
}

/// Results written to a `[row][path]` buffer.
struct BufferSink<T> {
    out: *mut T,
    paths: usize,
    p: usize,
}

impl<T: Copy> Sink<T> for BufferSink<T> {
    #[inline(always)]
    fn put(&mut self, row: u32, v: T) {
        // SAFETY: row < (N+1)·d and p < paths; the launcher checked out holds (N+1)·d·paths.
        unsafe { *self.out.add(row as usize * self.paths + self.p) = v };
    }
}

/// A stack in device memory, `[element][path]`.
struct ScratchStack<T> {
    base: *mut T,
    paths: usize,
    p: usize,
}

impl<T: Copy> Stack<T> for ScratchStack<T> {
    #[inline(always)]
    fn get(&self, i: u32) -> T {
        // SAFETY: i < slots·d and the launcher sized scratch to slots·d·paths.
        unsafe { *self.base.add(i as usize * self.paths + self.p) }
    }
    #[inline(always)]
    fn set(&mut self, i: u32, v: T) {
        // SAFETY: as `get`.
        unsafe { *self.base.add(i as usize * self.paths + self.p) = v };
    }
}

/// Steps whose normals one thread loads ahead (d = 1).
const PREFETCH: usize = 8;

/// A stack in block-shared memory: element `i` of thread `t` at `base[i·stride + t]`.
struct SharedStack<T> {
    base: *mut T,
    stride: usize,
    t: usize,
}

impl<T: Copy> Stack<T> for SharedStack<T> {
    #[inline(always)]
    fn get(&self, i: u32) -> T {
        // SAFETY: i·stride + t < slots·d·blockDim ≤ SHARED_STACK (checked before choosing it).
        unsafe { *self.base.add(i as usize * self.stride + self.t) }
    }
    #[inline(always)]
    fn set(&mut self, i: u32, v: T) {
        // SAFETY: as `get`.
        unsafe { *self.base.add(i as usize * self.stride + self.t) = v };
    }
}

/// Steps read as aligned rows straight from device memory.
#[derive(Clone, Copy)]
struct DeviceSteps<T> {
    coef: *const CoefRow<T>,
    idx: *const IndexRow,
}

impl<T: Real> Steps<T> for DeviceSteps<T> {
    #[inline(always)]
    fn step(&self, s: usize) -> Step<T> {
        // SAFETY: s < steps and both tables hold `steps` rows (launcher contract); device
        // allocations are 256-byte aligned, rows 16-byte aligned.
        unsafe { Step::from_rows(&*self.coef.add(s), &*self.idx.add(s)) }
    }
}

/// Scalar arguments common to the bridge kernels.
#[derive(Clone, Copy)]
struct Shape {
    steps: u32,
    dims: u32,
    slots: u32,
    increments: u32,
    paths: u32,
}

/// # Safety
/// Every pointer holds what the launcher checked: `coef` steps·COEFS, `idx` steps·INDICES,
/// `chol` d², `start` d, `scratch` slots·d·paths (when the stack does not fit registers),
/// `out` steps·d·paths; `p < paths`; `dims ≤ MAX_DIMS`.
#[inline(always)]
unsafe fn run<T: Real>(
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
        } else {
            generate_path::<T, MAX_DIMS, 1>(&plan, &mut z, &mut stack, &mut sink);
        }
    } else {
        let mut stack = ScratchStack { base: scratch, paths, p };
        generate_path::<T, MAX_DIMS, 1>(&plan, &mut z, &mut stack, &mut sink);
    }
}

macro_rules! bridge_kernels {
    ($t:ty, [$s1:ident, $s2:ident, $s3:ident], $buffer:ident, $philox:ident, $sobol:ident, $nphilox:ident, $nsobol:ident) => {
        /// The bridge with normals from the buffer `z` (`[row][path]`, `steps·d·paths`).
        ///
        /// # Safety
        /// `coef` holds `steps·5`, `idx` `steps·6` (slots < `slots`, z and out rows < steps),
        /// `chol` `d²`, `start` `d`, `z` and `out` `steps·d·paths` elements, `scratch`
        /// `slots·d·paths` when `slots·d·blockDim > SHARED_STACK`; `1 ≤ d ≤ MAX_DIMS`.
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
            if p >= paths {
                return;
            }
            let sh = Shape { steps, dims, slots, increments, paths };
            let shared = shared_array![$s1: [$t; SHARED_STACK]];
            let src = BufferNormals { z, paths: paths as usize, p: p as usize };
            // SAFETY: forwarded from this kernel's contract; p < paths.
            unsafe { run::<$t>(sh, shared, coef, idx, chol, start, scratch, out, p as usize, src) }
        }

        /// The bridge with Philox4x32-10 normals generated in registers (fused): reads only
        /// the strategy, writes `out`.
        ///
        /// # Safety
        /// As the buffer kernel, without `z`.
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
            if p >= paths {
                return;
            }
            let sh = Shape { steps, dims, slots, increments, paths };
            let shared = shared_array![$s2: [$t; SHARED_STACK]];
            // SAFETY: forwarded from this kernel's contract; p < paths.
            unsafe {
                run::<$t>(sh, shared, coef, idx, chol, start, scratch, out, p as usize, PhiloxNormals::new(seed, p as u64))
            }
        }

        /// The bridge with Sobol normals generated in registers (fused): path `p` takes point
        /// `offset + p`, row `j` dimension `j`.
        ///
        /// # Safety
        /// As the buffer kernel, without `z`; `dirs` holds `steps·d·32` direction numbers and
        /// `offset + paths ≤ 2^32`.
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
            offset: u32,
            out: *mut $t,
            paths: u32,
        ) {
            let p = index_1d();
            if p >= paths {
                return;
            }
            let sh = Shape { steps, dims, slots, increments, paths };
            let shared = shared_array![$s3: [$t; SHARED_STACK]];
            // SAFETY: dirs holds steps·d·32 words (launcher contract).
            let dirs = unsafe { from_raw_parts(dirs, steps as usize * dims as usize * BITS) };
            let src = SobolNormals { dirs, point: offset.wrapping_add(p) };
            // SAFETY: forwarded from this kernel's contract; p < paths.
            unsafe { run::<$t>(sh, shared, coef, idx, chol, start, scratch, out, p as usize, src) }
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
            let mut j = 0;
            while j < rows {
                let v = <$t as Real>::normal_from_bits(g.word(j));
                // SAFETY: j < rows, p < paths.
                unsafe { *out.add(j as usize * paths as usize + p as usize) = v };
                j += 1;
            }
        }

        /// Sobol normals alone: `out[j·paths + p]` = dimension `j` of point `offset + p`.
        ///
        /// # Safety
        /// `dirs` holds `rows·32` words, `out` `rows·paths` elements.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $nsobol(rows: u32, dirs: *const u32, offset: u32, out: *mut $t, paths: u32) {
            let p = index_1d();
            if p >= paths {
                return;
            }
            let q = offset.wrapping_add(p);
            let mut j = 0;
            while j < rows {
                // SAFETY: j < rows, so the 32 words at j·32 exist.
                let v = unsafe { from_raw_parts(dirs.add(j as usize * BITS), BITS) };
                let x = <$t as Real>::normal_from_bits(sobol_u32(v, q));
                // SAFETY: j < rows, p < paths.
                unsafe { *out.add(j as usize * paths as usize + p as usize) = x };
                j += 1;
            }
        }
    };
}

bridge_kernels!(
    f32,
    [BRIDGE_STACK_F32, BRIDGE_STACK_PHILOX_F32, BRIDGE_STACK_SOBOL_F32],
    bridge_f32,
    bridge_philox_f32,
    bridge_sobol_f32,
    normals_philox_f32,
    normals_sobol_f32
);
bridge_kernels!(
    f64,
    [BRIDGE_STACK_F64, BRIDGE_STACK_PHILOX_F64, BRIDGE_STACK_SOBOL_F64],
    bridge_f64,
    bridge_philox_f64,
    bridge_sobol_f64,
    normals_philox_f64,
    normals_sobol_f64
);
