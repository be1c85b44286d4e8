//! Brownian bridge kernels: one thread per path, the strategy of
//! `lockstep_shared::bridge::generate_path`, normals from a buffer or generated in registers
//! (Philox4x32-10 or Sobol, fused), and the normal generators alone.
//!
//! Layout `[row][path]` everywhere: thread `p` touches `buf[row·paths + p]`, so each warp's
//! access is one coalesced transaction per row. The stack of live values lives in shared
//! memory (`[element][thread]`, conflict-free) when `slots·d·blockDim ≤ SHARED_STACK`, and in
//! the `scratch` buffer `[slot·d + k][path]` otherwise. Steps are read as 16-byte-aligned rows
//! (vector loads; every thread reads the same row, one broadcast per warp).
//!
//! The buffer kernels keep their shared stack in dynamic shared memory sized per launch
//! (`lockstep_shared::bridge::buffer_shared_bytes`). When `lockstep_shared::bridge::buffer_fast` holds (d ≤ 4, stack fits
//! shared memory, at most `TABLE_STEPS` steps, `rows·paths ≤ 2^32`) they take a specialised
//! path: the strategy is copied into shared memory once per block after the stack, table and
//! stack are read with `ld.shared`/`st.shared` on 32-bit shared addresses, element indices are
//! 32-bit, `C` sits in registers, and the normals of the next steps are loaded while the current
//! ones are computed ([`run_d1`] at d = 1 in `bridge_f32/f64`, [`run_small`] at d = 2..=4 in
//! `bridge_dims_f32/f64`). In f32 with an even path count each thread takes two paths
//! ([`F32x2`]), at d = 1 with a multiple of 4 four ([`F32x4`]; `lockstep_shared::bridge::buffer_lanes`), and at d = 1
//! with an odd count four too, each row's elements reached as its class mod 4 allows
//! ([`QuadNormals`], [`QuadSink`]). Same arithmetic as `generate_path`
//! (bit-identical; measurements in bench/results/bridge-predictions.md).
//!
//! The fused kernels size their dynamic shared memory per launch too
//! (`lockstep_shared::bridge::fused_shared_bytes`: stack, strategy, Sobol tables). Each has a
//! d = 1 twin (`bridge_philox_d1_*`, `bridge_sobol_d1_*`, [`run_fused_d1`]) with the buffer
//! kernel's d = 1 structure, normals computed instead of loaded, one step ahead
//! ([`FUSED_PIPELINE`]); the launcher picks it when `lockstep_shared::bridge::fused_fast_d1`
//! holds. A separate kernel keeps its registers its own (31 in f32 instead of the general path's
//! 72). Sobol normals come from the warp method ([`stage_sobol`], two `ld.shared` and one XOR per
//! normal) when its tables fit shared memory, else from the Gray-code walk per element.

use core::ops::{Add, Div, Mul, Sub};
use core::slice::from_raw_parts;
use lockstep_cuda_std::memory::{
    load_global_f32, load_global_v2_f32, load_global_v4_f32, store_global_f32, store_global_v2_f32, store_global_v4_f32,
};
use lockstep_cuda_std::prelude::*;
use lockstep_shared::bridge::philox::{PhiloxNormals, key, scheduled_word};
use lockstep_shared::bridge::sobol::{
    BITS, NORMALS_ROWS, SobolNormals, high_select, low_index, sobol_high, sobol_high_next,
};
use lockstep_shared::bridge::{
    COEFS, CoefRow, EMIT_LEFT, EMIT_RIGHT, FAST_DIMS, INDICES, IndexRow, MAX_DIMS, NO_SLOT, Normals, PathPlan, Real,
    SHARED_STACK, Sink, Stack, Step, Steps, buffer_fast, buffer_lanes_at, buffer_stack_bytes, fused_base_bytes,
    fused_fast_d1, fused_philox_cached, fused_sobol_pairs, fused_sobol_warp, generate_path, increment, interpolate,
    noise, philox_cache_bytes, pick, place, place2,
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

/// Steps whose normals one thread loads ahead (d = 1, general path).
const PREFETCH: usize = 8;

/// Steps per prefetch group of the specialised d = 1 buffer kernels (`run_d1`), per precision.
const PIPELINE_F32: usize = 8;
/// As [`PIPELINE_F32`] for f64.
const PIPELINE_F64: usize = 8;
/// As [`PIPELINE_F32`] for two f32 paths per thread ([`F32x2`]).
const PIPELINE_PAIRS: usize = 8;
/// As [`PIPELINE_F32`] for four f32 paths per thread ([`F32x4`]): 4 steps of 16 bytes, the
/// bytes in flight per thread of [`PIPELINE_PAIRS`] (80 registers on sm_90 for 1 to 4; 6 with
/// 96 registers measured 1.5% slower on paths and 5% on increments, run Q1).
const PIPELINE_QUADS: usize = 4;
/// Steps per prefetch group of the specialised buffer path at d = 2 (8 normals per group).
const PIPELINE_D2: usize = 4;
/// As [`PIPELINE_D2`] at d = 3 (12 normals per group; 3 measured 0.2 to 3 points slower, run P2).
const PIPELINE_D3: usize = 4;
/// As [`PIPELINE_D2`] at d = 4 (8 normals per group).
const PIPELINE_D4: usize = 2;

/// Steps per group of the fused kernels' d = 1 path ([`run_fused`]): their normals are computed,
/// not loaded, so the group only buys independent work per thread, while each step of it inlines
/// one more copy of the generator (Philox's 10 rounds on its refill branch, Φ⁻¹) at each of
/// `run_d1`'s two prefetch sites.
const FUSED_PIPELINE: usize = 1;

/// Dimensions up to which the kernels use a 4-wide instantiation of the generator (fewer
/// unrolled components and selects than `MAX_DIMS`, and 2 steps of prefetch).
const SMALL_DIMS: usize = 4;

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

/// Steps read as aligned rows from device memory, or from the block's shared copy
/// ([`stage_table`]).
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

/// Normals from a `[row][path]` buffer with 32-bit element indices (the caller checked
/// `rows·paths ≤ 2^32`, so `row·paths + p` cannot wrap): one multiply-add per address instead
/// of 64-bit index arithmetic.
struct BufferNormals32<T> {
    z: *const T,
    paths: u32,
    p: u32,
}

impl<T: Copy> Normals<T> for BufferNormals32<T> {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        // SAFETY: row < rows and p < paths with rows·paths ≤ 2^32 (checked by the kernel before
        // choosing this type); the launcher checked z holds rows·paths.
        unsafe { *self.z.add((row * self.paths + self.p) as usize) }
    }
}

/// Results to a `[row][path]` buffer with 32-bit element indices (as [`BufferNormals32`]).
struct BufferSink32<T> {
    out: *mut T,
    paths: u32,
    p: u32,
}

impl<T: Copy> Sink<T> for BufferSink32<T> {
    #[inline(always)]
    fn put(&mut self, row: u32, v: T) {
        // SAFETY: as `BufferNormals32::normal`, for out.
        unsafe { *self.out.add((row * self.paths + self.p) as usize) = v };
    }
}

/// A floating-point type the d = 1 kernels read and write in shared memory with explicit
/// `ld.shared`/`st.shared` on 32-bit addresses (SASS `LDS`/`STS`; a generic pointer from
/// `cvta.shared` left ptxas emitting generic `LD.E`/`ST.E`).
trait SharedIo: Real {
    /// The precision of the strategy's coefficients, `C` and `x` (the lane type for f32 and
    /// f64; f32 for [`F32x2`]).
    type Coef: Real;
    /// A coefficient in every lane.
    fn splat(c: Self::Coef) -> Self;
    /// Reads the value at the shared address `addr`.
    ///
    /// # Safety
    /// `addr` is an aligned shared address of this block inside an array it owns.
    unsafe fn ld(addr: u32) -> Self;
    /// Writes `v` at `addr`.
    ///
    /// # Safety
    /// As [`SharedIo::ld`].
    unsafe fn st(addr: u32, v: Self);
    /// The seven coefficients `wl, wr, sd, dt_left, dt_right, recip_left, recip_right` of the
    /// [`CoefRow`] at `addr`, as separate vector/scalar loads (those whose values are unused
    /// disappear).
    ///
    /// # Safety
    /// `addr` is the 16-byte aligned shared address of a whole row.
    unsafe fn ld_coefs(addr: u32) -> [Self; 7];
}

impl SharedIo for f32 {
    type Coef = f32;
    #[inline(always)]
    fn splat(c: f32) -> f32 {
        c
    }
    #[inline(always)]
    unsafe fn ld(addr: u32) -> f32 {
        // SAFETY: the caller's contract.
        unsafe { ld_shared_f32(addr) }
    }
    #[inline(always)]
    unsafe fn st(addr: u32, v: f32) {
        // SAFETY: the caller's contract.
        unsafe { st_shared_f32(addr, v) }
    }
    #[inline(always)]
    unsafe fn ld_coefs(addr: u32) -> [f32; 7] {
        // SAFETY: a row is 32 bytes, 16-byte aligned (caller's contract).
        let ([a, b, c, d], [e, f, g, _]) = unsafe { (ld_shared_v4_f32(addr), ld_shared_v4_f32(addr + 16)) };
        [a, b, c, d, e, f, g]
    }
}

impl SharedIo for f64 {
    type Coef = f64;
    #[inline(always)]
    fn splat(c: f64) -> f64 {
        c
    }
    #[inline(always)]
    unsafe fn ld(addr: u32) -> f64 {
        // SAFETY: the caller's contract.
        unsafe { ld_shared_f64(addr) }
    }
    #[inline(always)]
    unsafe fn st(addr: u32, v: f64) {
        // SAFETY: the caller's contract.
        unsafe { st_shared_f64(addr, v) }
    }
    #[inline(always)]
    unsafe fn ld_coefs(addr: u32) -> [f64; 7] {
        // SAFETY: a row is 64 bytes, 16-byte aligned (caller's contract).
        let ([a, b], [c, d], [e, f], g) = unsafe {
            (ld_shared_v2_f64(addr), ld_shared_v2_f64(addr + 16), ld_shared_v2_f64(addr + 32), ld_shared_f64(addr + 48))
        };
        [a, b, c, d, e, f, g]
    }
}

/// `f32` in type position, for each lane index of [`f32_lanes!`].
macro_rules! f32_lane {
    ($i:tt) => {
        f32
    };
}

/// Defines a type of `f32` lanes, one path per lane, for the buffer kernels: every operation is
/// the scalar f32 operation in each lane (no contraction: separate `mul`/`add` per lane,
/// `div.rn`), so each lane's bits are those of the one-path-per-thread kernel and of the CPU
/// reference. Table coefficients (`Coef = f32`) are splatted into every lane; stack elements are
/// the whole vector (`$ld`/`$st`, one shared access).
macro_rules! f32_lanes {
    ($(#[$doc:meta])* $name:ident, align $align:literal, [$($i:tt: $v:ident),+], $ld:ident, $st:ident) => {
        $(#[$doc])*
        #[repr(C, align($align))]
        #[derive(Clone, Copy, PartialEq)]
        struct $name($(f32_lane!($i)),+);

        impl Add for $name {
            type Output = $name;
            #[inline(always)]
            fn add(self, o: $name) -> $name {
                $name($(self.$i + o.$i),+)
            }
        }

        impl Sub for $name {
            type Output = $name;
            #[inline(always)]
            fn sub(self, o: $name) -> $name {
                $name($(self.$i - o.$i),+)
            }
        }

        impl Mul for $name {
            type Output = $name;
            #[inline(always)]
            fn mul(self, o: $name) -> $name {
                $name($(self.$i * o.$i),+)
            }
        }

        impl Div for $name {
            type Output = $name;
            #[inline(always)]
            fn div(self, o: $name) -> $name {
                $name($(self.$i / o.$i),+)
            }
        }

        impl Real for $name {
            const ZERO: $name = $name($(f32_zero!($i)),+);
            const NAN: $name = $name($(f32_nan!($i)),+);
            #[inline(always)]
            fn from_f64(x: f64) -> $name {
                $name::splat(x as f32)
            }
            #[inline(always)]
            fn normal_from_bits(w: u32) -> $name {
                $name::splat(<f32 as Real>::normal_from_bits(w))
            }
            #[inline(always)]
            fn fma(self, b: $name, c: $name) -> $name {
                $name($(self.$i.fma(b.$i, c.$i)),+)
            }
            #[inline(always)]
            fn neg(self) -> $name {
                $name($(-self.$i),+)
            }
            /// Every lane in range: then `quotient` takes its fast path in every lane (each
            /// lane's operations are the scalar ones), otherwise `/` in every lane (the same
            /// bits either way).
            #[inline(always)]
            fn quotient_in_range(self) -> bool {
                $(self.$i.quotient_in_range())&+
            }
            #[inline(always)]
            fn divisor_in_range(self) -> bool {
                $(self.$i.divisor_in_range())&+
            }
        }

        impl SharedIo for $name {
            type Coef = f32;
            #[inline(always)]
            fn splat(c: f32) -> $name {
                $name($(f32_splat!($i, c)),+)
            }
            #[inline(always)]
            unsafe fn ld(addr: u32) -> $name {
                // SAFETY: the caller's contract (aligned: the stack's elements are this type).
                let [$($v),+] = unsafe { $ld(addr) };
                $name($($v),+)
            }
            #[inline(always)]
            unsafe fn st(addr: u32, v: $name) {
                // SAFETY: as `ld`.
                unsafe { $st(addr, [$(v.$i),+]) }
            }
            #[inline(always)]
            unsafe fn ld_coefs(addr: u32) -> [$name; 7] {
                // SAFETY: an f32 row (caller's contract); every lane uses the same strategy.
                unsafe { <f32 as SharedIo>::ld_coefs(addr) }.map($name::splat)
            }
        }
    };
}

/// `0.0` for each lane index of [`f32_lanes!`].
macro_rules! f32_zero {
    ($i:tt) => {
        0.0
    };
}

/// `f32::NAN` for each lane index of [`f32_lanes!`].
macro_rules! f32_nan {
    ($i:tt) => {
        f32::NAN
    };
}

/// The value `$c` for each lane index of [`f32_lanes!`].
macro_rules! f32_splat {
    ($i:tt, $c:ident) => {
        $c
    };
}

f32_lanes!(
    /// Two f32 lanes, paths `2q` and `2q + 1` of one thread of the d = 1 buffer kernel when the
    /// path count is even (`lockstep_shared::bridge::buffer_lanes`): one 8-byte
    /// `ld.global.v2.f32` / `st.global.v2.f32` per row (256 bytes per warp request, as f64).
    F32x2,
    align 8,
    [0: a, 1: b],
    ld_shared_v2_f32,
    st_shared_v2_f32
);

f32_lanes!(
    /// Four f32 lanes, paths `4q..4q + 4` of one thread of the d = 1 buffer kernel when the path
    /// count is a multiple of 4 (`lockstep_shared::bridge::buffer_lanes`): one 16-byte
    /// `ld.global.v4.f32` / `st.global.v4.f32` per row (512 bytes per warp request) and 16-byte
    /// stack elements in shared memory.
    F32x4,
    align 16,
    [0: a, 1: b, 2: c, 3: d],
    ld_shared_v4_f32,
    st_shared_v4_f32
);

/// How thread `q` of the d = 1 quad path at a path count that is not a multiple of 4 (an odd
/// one, `lockstep_shared::bridge::buffer_lanes`; the code takes any count) reaches its
/// elements `e..e + 4` of a row, `e = row·paths + 4q`: the class `(row·paths) mod 4` is the same
/// for every thread of the grid (it changes only from row to row), so each warp takes one way
/// and its footprint stays one contiguous 512-byte span. Returns `e` and the way: `0` one
/// 16-byte access, `2` two 8-byte ones, `1`/`3` a 4-, an 8- and a 4-byte one (at `e`, `e + 1`,
/// `e + 3`), `4..=7` (the last thread, `tail = 4`: fewer than four of its paths exist) one
/// 4-byte access per existing path. The accesses are inline `ld/st.global` (`memory`): with
/// plain loads LLVM hoisted the first element's scalar load, common to every way, out of the
/// switch and split the 16-byte access.
#[inline(always)]
fn quad_way(paths: u32, q4: u32, tail: u32, row: u32) -> (u32, u32) {
    let e = row * paths + q4;
    (e, (e & 3) | tail)
}

/// `4` for the thread whose quad `4q..4q + 4` passes `paths` (the last one when `paths` is not a
/// multiple of 4), else `0` (see [`quad_way`]).
#[inline(always)]
fn quad_tail(paths: u32, q4: u32) -> u32 {
    if paths - q4 < 4 { 4 } else { 0 }
}

/// Normals of paths `4q..min(4q + 4, paths)` from a `[row][path]` f32 buffer of any path count
/// (32-bit element indices, as [`BufferNormals32`]), as one [`F32x4`] per row: aligned vector
/// loads where the row allows ([`quad_way`]); the last thread's missing paths read as `0.0`
/// (their lanes are computed and never stored).
struct QuadNormals {
    z: *const f32,
    paths: u32,
    q4: u32,
    tail: u32,
}

impl Normals<F32x4> for QuadNormals {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> F32x4 {
        let (e, way) = quad_way(self.paths, self.q4, self.tail, row);
        let z = self.z;
        // Element e + i of each existing path 4q + i < paths is inside z and does not wrap (row
        // < rows, rows·paths ≤ 2^32 checked by the kernel, z holds rows·paths). z is a 16-byte
        // aligned global address (`buffer_lanes_at` chose quads): element e is 16-byte aligned when
        // e ≡ 0 (mod 4), and e, e + 2 (way 2) and e + 1 (ways 1, 3) are 8-byte aligned.
        // SAFETY: in bounds and aligned for each access (above).
        unsafe {
            match way {
                0 => {
                    let [a, b, c, d] = load_global_v4_f32(z, e);
                    F32x4(a, b, c, d)
                }
                2 => {
                    let ([a, b], [c, d]) = (load_global_v2_f32(z, e), load_global_v2_f32(z, e + 2));
                    F32x4(a, b, c, d)
                }
                1 | 3 => {
                    let (a, [b, c], d) =
                        (load_global_f32(z, e), load_global_v2_f32(z, e + 1), load_global_f32(z, e + 3));
                    F32x4(a, b, c, d)
                }
                _ => {
                    let n = self.paths - self.q4;
                    let b = if n > 1 { load_global_f32(z, e + 1) } else { 0.0 };
                    let c = if n > 2 { load_global_f32(z, e + 2) } else { 0.0 };
                    F32x4(load_global_f32(z, e), b, c, 0.0)
                }
            }
        }
    }
}

/// Results of paths `4q..min(4q + 4, paths)` to a `[row][path]` f32 buffer of any path count,
/// the accesses of [`QuadNormals`]; the last thread stores only its existing paths.
struct QuadSink {
    out: *mut f32,
    paths: u32,
    q4: u32,
    tail: u32,
}

impl Sink<F32x4> for QuadSink {
    #[inline(always)]
    fn put(&mut self, row: u32, v: F32x4) {
        let (e, way) = quad_way(self.paths, self.q4, self.tail, row);
        let out = self.out;
        // SAFETY: as `QuadNormals::normal`, for out.
        unsafe {
            match way {
                0 => store_global_v4_f32(out, e, [v.0, v.1, v.2, v.3]),
                2 => {
                    store_global_v2_f32(out, e, [v.0, v.1]);
                    store_global_v2_f32(out, e + 2, [v.2, v.3]);
                }
                1 | 3 => {
                    store_global_f32(out, e, v.0);
                    store_global_v2_f32(out, e + 1, [v.1, v.2]);
                    store_global_f32(out, e + 3, v.3);
                }
                _ => {
                    let n = self.paths - self.q4;
                    store_global_f32(out, e, v.0);
                    if n > 1 {
                        store_global_f32(out, e + 1, v.1);
                    }
                    if n > 2 {
                        store_global_f32(out, e + 2, v.2);
                    }
                }
            }
        }
    }
}

/// The strategy in the block's shared memory (written by [`stage_table`]): 32-bit shared
/// addresses of the coefficient and index tables.
#[derive(Clone, Copy)]
struct SharedSteps {
    coef: u32,
    idx: u32,
}

impl SharedSteps {
    /// Step `s`: one broadcast `ld.shared.v4` (+ scalars) per table.
    ///
    /// # Safety
    /// `s` is below the number of rows [`stage_table`] copied.
    #[inline(always)]
    unsafe fn step<T: SharedIo>(&self, s: usize) -> Step<T> {
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

/// Calls `f(0), f(1), …, f(P − 1)`, written out (`P ≤ 8`): with the increments' quotient (fast
/// path and `/` fallback) in the step body, LLVM stops unrolling a `while j < P` loop over the
/// steps of a prefetch group, and then `pick(&cur, j)` becomes a chain of selects on a 64-bit loop
/// counter. With constant `j` every pick is a register.
#[inline(always)]
fn unrolled<const P: usize>(mut f: impl FnMut(usize)) {
    const { assert!(P <= 8) };
    if P > 0 {
        f(0);
    }
    if P > 1 {
        f(1);
    }
    if P > 2 {
        f(2);
    }
    if P > 3 {
        f(3);
    }
    if P > 4 {
        f(4);
    }
    if P > 5 {
        f(5);
    }
    if P > 6 {
        f(6);
    }
    if P > 7 {
        f(7);
    }
}

/// The normals of steps `s0..s0 + P` (all `< steps`, checked by the caller).
#[inline(always)]
fn prefetch_d1<T: SharedIo, const P: usize>(table: &SharedSteps, z: &mut impl Normals<T>, s0: usize) -> [T; P] {
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
fn step_d1<T: SharedIo>(
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
unsafe fn run_d1<T: SharedIo, const P: usize>(
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
fn prefetch<T: SharedIo, const D: usize, const P: usize>(
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
fn step_small<T: SharedIo, const D: usize>(
    st: Step<T>,
    zv: [T; D],
    chol: &[T; FAST_DIMS * FAST_DIMS],
    increments: bool,
    slot: impl Fn(u32) -> u32,
    sink: &mut impl Sink<T>,
) {
    let d = D as u32;
    let mut component = |k: usize| {
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
unsafe fn run_small<T: SharedIo, const D: usize, const P: usize>(
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
unsafe fn stage_table<T: Real>(coef: *const T, idx: *const u32, steps: usize, tc: *mut T, ti: *mut u32) -> SharedSteps {
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

/// The buffer kernel's specialised path (`buffer_fast`) for `d = D` and lane type `T` (f32,
/// f64, [`F32x2`]: two paths per thread, or [`F32x4`]: four): stages the strategy after the stack in the dynamic
/// shared array, loads `C` and `x` into registers, then [`run_small`] for element `index_1d()`
/// of each `[row][lanes]` row (`lanes` elements of `T` per row, 32-bit indices).
///
/// # Safety
/// Every thread of the block calls it; `dynamic` holds `buffer_shared_bytes(..)` bytes (a stack
/// of `slots·D·blockDim` elements of `T`, rounded up to 16 bytes, then `steps` coefficient rows
/// of `T::Coef` and `steps` index rows); `coef`/`idx` hold `steps` rows (slots < `slots`, rows
/// `< steps·D`), `chol` `D²` values, `start` `D`, `z` and `out` `steps·D·lanes` elements with
/// `steps·D·lanes ≤ 2^32`; `slots·D·blockDim ≤ SHARED_STACK`, `steps ≤ TABLE_STEPS`,
/// `D ≤ FAST_DIMS`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn buffer_small<T: SharedIo, const D: usize, const P: usize>(
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
        buffer_small_io::<T, D, P, _, _>(dynamic, coef, idx, steps, slots, chol, start, increments, lanes, |p| {
            (BufferNormals32 { z, paths: lanes, p }, BufferSink32 { out, paths: lanes, p })
        })
    }
}

/// [`buffer_small`] with the normals and the results of thread `p < threads` read and written
/// through `io(p)` (the `[row][lanes]` buffers there; the quads of any path count,
/// [`QuadNormals`]/[`QuadSink`], for the d = 1 path at a count not a multiple of 4).
///
/// # Safety
/// As [`buffer_small`], with `threads` in place of `lanes`, and `io(p)` for `p < threads` reads
/// and writes only elements of `z` and `out` of the rows the strategy names.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn buffer_small_io<T: SharedIo, const D: usize, const P: usize, Z: Normals<T>, S: Sink<T>>(
    dynamic: *mut u8,
    coef: *const T::Coef,
    idx: *const u32,
    steps: u32,
    slots: u32,
    chol: *const T::Coef,
    start: *const T::Coef,
    increments: u32,
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
    let p = index_1d();
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
unsafe fn buffer_fast_dims<T: SharedIo>(
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

/// Sobol normals by the warp method (`lockstep_shared::bridge::sobol`, [`stage_sobol`]): the
/// word of row `j` is this warp's high part of row `j` (one of its pair, chosen once per thread)
/// XOR the low-table entry of this lane's low Gray-code bits. Two `ld.shared` and one XOR per
/// normal; the same integers as `sobol_u32`.
#[derive(Clone, Copy)]
struct WarpSobol {
    /// Shared address of this thread's high part of row 0 (rows 8 bytes apart).
    high: u32,
    /// Shared address of this thread's low-table entry of row 0 (rows 128 bytes apart).
    low: u32,
}

impl<T: Real> Normals<T> for WarpSobol {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        // SAFETY: row < the rows `stage_sobol` staged (the strategy's z rows are < steps·d, the
        // tables hold steps·d rows), and its barrier has passed.
        let x = unsafe { ld_shared_u32(self.high + row * 8) ^ ld_shared_u32(self.low + row * 128) };
        T::normal_from_bits(x)
    }
}

/// Stages the warp method's tables for `rows` Sobol dimensions at the shared address `base`
/// (`warp_shared_bytes(rows, blockDim)` bytes): the block copies the low tables (`rows·32`
/// words), and each warp computes its pair of high parts per row (lane `l` rows `l, l + 32, …`:
/// the Gray-code walk over the warp's common high point, then one XOR for the next). Thread
/// `p` (global index) takes point `offset + p`. No barrier: the caller's `sync_threads()` must
/// come before any [`WarpSobol::normal`].
///
/// # Safety
/// Every thread of the block calls it; blockDim is a multiple of 32; `dirs` holds `rows·32`
/// direction numbers and `low` `rows·32` low-table words; `base` is a 16-byte aligned shared
/// address with `warp_shared_bytes(rows, blockDim)` bytes this block owns; `offset + p` does
/// not pass 2^32 for the threads that will read (`p < paths`).
#[inline(always)]
unsafe fn stage_sobol(dirs: *const u32, low: *const u32, rows: u32, offset: u32, base: u32) -> WarpSobol {
    let (t, b) = (thread_idx_x(), block_dim_x());
    let mut i = t;
    while i < rows * 32 {
        // SAFETY: i < rows·32, inside `low` and the table at `base` (contract).
        unsafe { st_shared_u32(base + i * 4, *low.add(i as usize)) };
        i += b;
    }
    // SAFETY: the pairs follow the low tables inside the array (contract); dirs as above.
    let (high, q) = unsafe { stage_sobol_high(dirs, rows, offset, base + rows * 128) };
    WarpSobol { high, low: base + low_index(q) * 4 }
}

/// Sobol normals by the warp method with the low tables read from global memory (one 128-byte
/// line per row, the same for every warp of the grid: L1 hits) and the high parts in shared
/// memory ([`stage_sobol_high`]): for shapes whose low tables do not fit shared memory
/// (`lockstep_shared::bridge::fused_sobol_pairs`). Same integers as [`WarpSobol`].
#[derive(Clone, Copy)]
struct WarpSobolGlobal {
    /// Shared address of this thread's high part of row 0 (rows 8 bytes apart).
    high: u32,
    /// This thread's low-table entry of row 0 (rows 32 words apart).
    low: *const u32,
}

impl<T: Real> Normals<T> for WarpSobolGlobal {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        // SAFETY: row < the rows `stage_sobol_high` staged and `low` holds (the strategy's z rows
        // are < steps·d), and the caller's barrier has passed.
        let x = unsafe { ld_shared_u32(self.high + row * 8) ^ *self.low.add(row as usize * 32) };
        T::normal_from_bits(x)
    }
}

/// Computes each warp's pair of high parts per row for `rows` Sobol dimensions at the shared
/// address `pairs` (`sobol::pairs_shared_bytes(rows, blockDim)` bytes; lane `l` rows `l, l + 32,
/// …`: the Gray-code walk over the warp's common high point, then one XOR for the next) and
/// returns the shared address of this thread's high part of row 0 and its point `offset + p`.
/// No barrier (as [`stage_sobol`]).
///
/// # Safety
/// As [`stage_sobol`], for the pairs alone at `pairs` (8-byte aligned).
#[inline(always)]
unsafe fn stage_sobol_high(dirs: *const u32, rows: u32, offset: u32, pairs: u32) -> (u32, u32) {
    let t = thread_idx_x();
    let p = index_1d();
    // The point of the warp's lane 0 (blocks are whole warps, so p & !31 is that lane's p).
    let q0 = offset.wrapping_add(p & !31);
    let h = q0 >> 5;
    let pairs = pairs + (t >> 5) * rows * 8;
    let mut j = t & 31;
    while j < rows {
        // SAFETY: j < rows, so the 32 words at j·32 exist (contract).
        let v = unsafe { from_raw_parts(dirs.add(j as usize * BITS), BITS) };
        let hi = sobol_high(v, h);
        // SAFETY: the warp's pair of row j lies inside the array (contract).
        unsafe {
            st_shared_u32(pairs + j * 8, hi);
            st_shared_u32(pairs + j * 8 + 4, sobol_high_next(v, h, hi));
        }
        j += 32;
    }
    let q = offset.wrapping_add(p);
    (pairs + high_select(q0, q) * 4, q)
}

/// [`WarpSobolGlobal`] for `rows` dimensions: the high parts at the shared address `base`
/// ([`stage_sobol_high`]), the low tables `low` (`rows·32` words) in global memory. No barrier.
///
/// # Safety
/// As [`stage_sobol`] with `sobol::pairs_shared_bytes(rows, blockDim)` bytes at `base`.
#[inline(always)]
unsafe fn stage_sobol_global(dirs: *const u32, low: *const u32, rows: u32, offset: u32, base: u32) -> WarpSobolGlobal {
    // SAFETY: forwarded from the contract.
    let (high, q) = unsafe { stage_sobol_high(dirs, rows, offset, base) };
    // low_index(q) < 32, inside row 0 of `low` (contract: rows ≥ 1 whenever a thread reads).
    WarpSobolGlobal { high, low: low.wrapping_add(low_index(q) as usize) }
}

/// Words in the block's shared memory: slot `i` of this thread at `base + i·stride`
/// (`[slot][thread]`, conflict-free).
struct SharedWords {
    base: u32,
    stride: u32,
}

impl Stack<u32> for SharedWords {
    #[inline(always)]
    fn get(&self, i: u32) -> u32 {
        // SAFETY: i < the cache's slots (the schedule's fields, `philox_schedule`), inside the
        // array the kernel sized with `philox_cache_bytes`.
        unsafe { ld_shared_u32(self.base + i * self.stride) }
    }
    #[inline(always)]
    fn set(&mut self, i: u32, v: u32) {
        // SAFETY: as `get`.
        unsafe { st_shared_u32(self.base + i * self.stride, v) }
    }
}

/// Philox normals by the host's schedule (`philox::scheduled_word`): the entry of step `s` at
/// the shared address `op + 4·s`, read in step order (one normal per step on the d = 1 path),
/// words waiting for their step in `cache`. Each Philox block is computed once per path, where
/// `PhiloxNormals`' one-block cache recomputes it whenever the depth-first order comes back to
/// it (46 blocks instead of 16 per path of the paper's bisection).
struct ScheduledPhilox {
    key: [u32; 2],
    path: u64,
    /// Shared address of the next step's schedule entry.
    op: u32,
    cache: SharedWords,
}

impl<T: Real> Normals<T> for ScheduledPhilox {
    #[inline(always)]
    fn normal(&mut self, row: u32) -> T {
        // SAFETY: one call per step in step order (`run_d1` with d = 1), so `op` is the entry of
        // a step < steps, staged before the barrier.
        let op = unsafe { ld_shared_u32(self.op) };
        self.op += 4;
        T::normal_from_bits(scheduled_word(self.key, self.path, row, op, &mut self.cache))
    }
}

/// The body of the fused d = 1 kernels (`bridge_philox_d1_*`, `bridge_sobol_d1_*`): the buffer
/// kernels' d = 1 path ([`buffer_small_io`]: strategy staged in shared memory, [`run_d1`],
/// 32-bit indices) with normals from `z` instead of a buffer. A separate kernel from the general
/// path so that its registers are its own (with the general path in the same kernel, ptxas
/// allocated that path's 72 instead of ~40).
///
/// # Safety
/// Every thread of the block calls it (barrier); `fused_fast_d1(..)` holds for `sh` and
/// blockDim; `dynamic` is the launch's dynamic shared memory of `fused_shared_bytes(..)` bytes
/// (it starts with `fused_base_bytes`: the stack, then the strategy, as `buffer_small_io`
/// expects); the pointers as the buffer kernel's contract; shared memory `z` reads was written
/// before this call (the barrier in `stage_table` orders it).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn run_fused_d1<T: SharedIo<Coef = T>>(
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
/// of `fused_shared_bytes(..)` bytes; the pointers as the buffer kernel's contract; `p` is this
/// thread's global index.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn run_fused<T: Real>(
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

macro_rules! bridge_kernels {
    ($t:ty, $pf:expr, $pairs:expr, [$dyn:ident, $dyn2:ident, $s2:ident, $s3:ident, $s4:ident, $s5:ident, $s6:ident], $buffer:ident, $dims:ident, $philox:ident, $sobol:ident, $nphilox:ident, $nsobol:ident, $philox_d1:ident, $sobol_d1:ident) => {
        /// The bridge with normals from the buffer `z` (`[row][path]`, `steps·d·paths`).
        ///
        /// # Safety
        /// `coef` holds `steps·5`, `idx` `steps·6` (slots < `slots`, z and out rows < steps),
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
            let block = block_dim_x();
            let (n, b) = (paths as usize, block as usize);
            // d = 2..=FAST_DIMS on the specialised path run in `bridge_dims_*` (the launcher
            // decides with `buffer_fast` too), so their registers do not weigh on this kernel.
            let fast = dims == 1 && buffer_fast(steps as usize, 1, slots as usize, b, n);
            let addrs = z as u64 | out as u64;
            let lanes =
                if $pairs && fast { buffer_lanes_at(steps as usize, 1, slots as usize, b, n, 4, addrs) } else { 1 };
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
            if $pairs
                && buffer_lanes_at(steps as usize, dims as usize, slots as usize, b, n, 4, z as u64 | out as u64) == 2
            {
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
            let (block, size) = (block_dim_x() as usize, core::mem::size_of::<$t>());
            if fused_sobol_warp(steps as usize, dims as usize, slots as usize, block, paths as usize, size) {
                // The tables after the fused stack and strategy (uniform condition: every thread
                // stages and meets the barrier).
                let base = shared_addr(dynamic)
                    + fused_base_bytes(steps as usize, dims as usize, slots as usize, block, paths as usize, size)
                        as u32;
                // SAFETY: dirs/low hold steps·d rows (contract); the dynamic array holds
                // warp_shared_bytes(steps·d, blockDim) bytes at base (`fused_shared_bytes`).
                let z = unsafe { stage_sobol(dirs, low, steps * dims, offset, base) };
                // SAFETY: forwarded from this kernel's contract; the tables are staged.
                unsafe { run_fused::<$t>(sh, dynamic, coef, idx, chol, start, scratch, out, p, z, true) }
            } else if fused_sobol_pairs(steps as usize, dims as usize, slots as usize, block, paths as usize, size) {
                // The high parts alone after the fused stack and strategy, the low tables from
                // global memory (uniform condition, as above).
                let base = shared_addr(dynamic)
                    + fused_base_bytes(steps as usize, dims as usize, slots as usize, block, paths as usize, size)
                        as u32;
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
        /// (`lockstep::kernels::bridge::philox_schedule`), and the launch has
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
            let (block, size) = (block_dim_x() as usize, core::mem::size_of::<$t>());
            if !fused_fast_d1(steps as usize, dims as usize, slots as usize, block, paths as usize) {
                return; // uniform: the launcher never starts this kernel then
            }
            let p = index_1d();
            let sh = Shape { steps, dims, slots, increments, paths };
            let dynamic = dynamic_shared!($s5);
            let (n, c) = (steps as usize, cache_slots as usize);
            if fused_philox_cached(n, 1, slots as usize, block, paths as usize, size, c) {
                // The schedule, then the word cache, after the fused stack and strategy (uniform
                // condition: every thread copies its share and meets the barrier).
                let base =
                    shared_addr(dynamic) + fused_base_bytes(n, 1, slots as usize, block, paths as usize, size) as u32;
                let (t, b) = (thread_idx_x(), block_dim_x());
                let mut i = t;
                while i < steps {
                    // SAFETY: i < steps entries in `sched` (contract) and in the array at base
                    // (`philox_cache_bytes`).
                    unsafe { st_shared_u32(base + i * 4, *sched.add(i as usize)) };
                    i += b;
                }
                let words = base + philox_cache_bytes(n, 0, block) as u32 + t * 4;
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
            let (block, size) = (block_dim_x() as usize, core::mem::size_of::<$t>());
            if !fused_fast_d1(steps as usize, dims as usize, slots as usize, block, paths as usize) {
                return; // uniform: the launcher never starts this kernel then
            }
            let p = index_1d();
            let sh = Shape { steps, dims, slots, increments, paths };
            let dynamic = dynamic_shared!($s6);
            if fused_sobol_warp(steps as usize, dims as usize, slots as usize, block, paths as usize, size) {
                let base = shared_addr(dynamic)
                    + fused_base_bytes(steps as usize, dims as usize, slots as usize, block, paths as usize, size)
                        as u32;
                // SAFETY: dirs/low hold steps rows (contract, d = 1); the dynamic array holds
                // warp_shared_bytes(steps, blockDim) bytes at base (`fused_shared_bytes`); the
                // barrier in `stage_table` comes before any read.
                let z = unsafe { stage_sobol(dirs, low, steps, offset, base) };
                // SAFETY: forwarded from this kernel's contract.
                unsafe { run_fused_d1::<$t>(sh, dynamic, coef, idx, chol, start, out, z) }
            } else if fused_sobol_pairs(steps as usize, dims as usize, slots as usize, block, paths as usize, size) {
                let base = shared_addr(dynamic)
                    + fused_base_bytes(steps as usize, dims as usize, slots as usize, block, paths as usize, size)
                        as u32;
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
