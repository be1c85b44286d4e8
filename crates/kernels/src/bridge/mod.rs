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
//! (`LaunchShape::buffer_shared_bytes`). When `LaunchShape::buffer_fast` holds (d ≤ 4, stack fits
//! shared memory, at most `TABLE_STEPS` steps, `rows·paths ≤ 2^32`) they take a specialised
//! path: the strategy is copied into shared memory once per block after the stack, table and
//! stack are read with `ld.shared`/`st.shared` on 32-bit shared addresses, element indices are
//! 32-bit, `C` sits in registers, and the normals of the next steps are loaded while the current
//! ones are computed ([`run_d1`] at d = 1 in `bridge_f32/f64`, [`run_small`] at d = 2..=4 in
//! `bridge_dims_f32/f64`). In f32 with an even path count each thread takes two paths
//! ([`F32x2`]), at d = 1 with a multiple of 4 four ([`F32x4`]; `LaunchShape::buffer_lanes`), and at d = 1
//! with an odd count four too, each row's elements reached as its class mod 4 allows
//! ([`QuadNormals`], [`QuadSink`]; launched as `bridge_quads_f32`, that path in a kernel of its
//! own, [`buffer_odd_quads`]). At d = 2..=4 with a path count that splits 32-byte sectors
//! (`LaunchShape::buffer_staged`) the staged kernels `bridge_staged_dims_f32/f64` (`staged.rs`)
//! write each sector inside a row from one block through shared memory. Same arithmetic as
//! `generate_path` (bit-identical; measurements in bench/results/bridge-predictions.md and
//! bridge-anypaths-2026-11-26.md).
//!
//! The fused kernels size their dynamic shared memory per launch too
//! (`LaunchShape::fused_shared_bytes`: stack, strategy, Sobol tables). Each has a
//! d = 1 twin (`bridge_philox_d1_*`, `bridge_sobol_d1_*`, [`run_fused_d1`]) with the buffer
//! kernel's d = 1 structure, normals computed instead of loaded, one step ahead
//! ([`FUSED_PIPELINE`]); the launcher picks it when `LaunchShape::fused_fast_d1`
//! holds. A separate kernel keeps its registers its own (31 in f32 instead of the general path's
//! 72). Sobol normals come from the warp method ([`stage_sobol`], two `ld.shared` and one XOR per
//! normal) when its tables fit shared memory, else from the Gray-code walk per element.

use core::ops::{Add, Div, Mul, Sub};
use core::slice::from_raw_parts;
use lockstep_cuda_std::memory::{
    load_global_f32, load_global_v2_f32, load_global_v4_f32, store_global_f32, store_global_v2_f32,
    store_global_v2_f64, store_global_v4_f32, store_global_wide_f32, store_global_wide_v2_f32,
};
use lockstep_cuda_std::prelude::*;
use lockstep_cuda_std::unroll::unrolled;
use lockstep_shared::bridge::boxmuller::PhiloxBoxMuller;
use lockstep_shared::bridge::philox::{COMPUTE, PhiloxNormals, key, philox4x32_10, scheduled_word, slot_field};
use lockstep_shared::bridge::sobol::{
    BITS, NORMALS_ROWS, SobolNormals, high_select, low_index, sobol_high, sobol_high_next,
};
use lockstep_shared::bridge::{
    COEFS, CoefRow, EMIT_LEFT, EMIT_RIGHT, FAST_DIMS, INDICES, IndexRow, LaunchShape, MAX_DIMS, NO_SLOT, Normals,
    PathPlan, Real, SHARED_STACK, STAGED_DIMS_PIPELINE, Sink, Stack, Step, Steps, buffer_stack_bytes, generate_path,
    increment, interpolate, noise, pick, place, place2, staged_span, table_bytes,
};

/// Declares a kernel's dynamic shared array (`dynamic_shared!`) as a [`DynamicShared`] type of
/// the same name, for its generic body.
macro_rules! dynamic_shared_type {
    ($name:ident) => {
        #[allow(non_camel_case_types)]
        struct $name;
        impl DynamicShared for $name {
            #[inline(always)]
            fn ptr() -> *mut u8 {
                dynamic_shared!($name)
            }
        }
    };
}

// Declared in data-flow order (adapters, lanes, the fast path, the generators, the general
// path, the entry points): rustc emits the module in this order, so the PTX follows it.
mod io;
mod lanes;
mod fast;
mod sobol;
mod philox;
mod general;
mod bodies;
mod entries;
mod boxmuller;
mod staged;

use bodies::*;
use boxmuller::*;
use fast::*;
use general::*;
use io::*;
use lanes::*;
use philox::*;
use sobol::*;
use staged::*;

/// This launch's [`LaunchShape`], from the kernel's parameters and `blockDim.x` (the launcher
/// builds the same from its plan and block size).
#[inline(always)]
fn launch_shape<T>(steps: u32, dims: u32, slots: u32, paths: u32) -> LaunchShape {
    let block = block_dim_x() as usize;
    LaunchShape {
        steps: steps as usize,
        dims: dims as usize,
        slots: slots as usize,
        block,
        paths: paths as usize,
        elem: core::mem::size_of::<T>(),
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
/// As [`PIPELINE_QUADS`] for the odd-count quads in their own kernel (`bridge_quads_f32`):
/// 3 rows of 16 bytes in flight, 60 registers on sm_90. On an H200 at 1,439,745 and 1,439,747
/// paths 3 ran 82.1–82.6% of copy on the paths and 80.4–80.7% on the increments, 4 (68
/// registers) 76.1–76.5 / 73.0–73.8, 2 (48 registers) 74.2–75.1 / 73.9–74.9
/// (bench/results/bridge-rows-pattern-2026-11-28.md).
const PIPELINE_QUADS_ODD: usize = 3;
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
