//! The bridge launches on device buffers: [`Bridge::generate_on_device`] checks the buffers once
//! and hands over to one short launcher per normal source; each picks its kernel and dynamic
//! shared memory by the plan's [`LaunchShape`], the value the kernels decide with too.

use super::cpu::{Output, SOBOL_MAX_DIMS};
use super::gpu::{Bridge, DevicePlan, DeviceSource, Dp, Variant};
use super::plan::Precision;
use crate::error::{Error, Result};
use crate::launch::{Grid1d, expect_len, len_u32};
use cust::memory::{DevicePointer, DeviceSlice};
use lockstep_shared::bridge::LaunchShape;
use lockstep_shared::bridge::sobol::normals_shared_bytes;

/// `(coef, idx, steps, dims, slots, chol, start, increments)`: every bridge kernel's first eight
/// parameters.
type StrategyArgs<T> = (Dp<T>, Dp<u32>, u32, u32, u32, Dp<T>, Dp<T>, u32);

/// What every bridge launch of one generation shares: the strategy's tables and scalars, the
/// output and its scratch, the shape, and the one-path-per-thread grid.
struct Launch<T: Precision> {
    strategy: StrategyArgs<T>,
    scratch: Dp<T>,
    out: Dp<T>,
    paths: u32,
    shape: LaunchShape,
    grid: Grid1d,
}

/// Dynamic shared memory bytes as the driver takes them.
fn shared_u32(bytes: usize) -> Result<u32> {
    u32::try_from(bytes).map_err(|_| Error::TooLarge {
        what: "shared memory bytes",
        value: bytes as u64,
        max: u32::MAX as u64,
    })
}

/// Checks that `out` holds the `(N+1)·d·paths` elements of a generation of `paths`: the path
/// count as the kernels take it, and that length.
fn output_len<T: Precision>(plan: &DevicePlan<T>, paths: usize, out: &DeviceSlice<T>) -> Result<(u32, usize)> {
    let n = len_u32("paths", paths)?;
    let len = plan.rows().checked_mul(paths).ok_or_else(|| Error::Overflow {
        what: "(N+1)·d·paths output elements",
        expr: format!("{} · {paths}", plan.rows()),
    })?;
    expect_len("out", out.len(), len)?;
    Ok((n, len))
}

impl<'g> Bridge<'g> {
    /// Enqueues a generation of `paths` paths (or increments) into `out` (`(N+1)·d·paths`).
    /// `scratch` must hold [`Bridge::scratch_len`] elements when that is non-zero.
    pub fn generate_on_device<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        source: DeviceSource<'_, T>,
        paths: usize,
        output: Output,
        scratch: Option<&mut DeviceSlice<T>>,
        out: &mut DeviceSlice<T>,
    ) -> Result<()> {
        self.generate_range_on_device(plan, source, 0, paths, output, scratch, out)
    }

    /// As [`Bridge::generate_on_device`] for paths `first..first + paths` of a larger run, with
    /// the bits those paths have there: the fused kernels take Philox counters of paths
    /// `first + p` and Sobol points `offset + first + p`; a buffer holds the range's normals
    /// alone. Errors: a path index past `u32::MAX`, a Sobol point past `2^32`.
    #[allow(clippy::too_many_arguments)] // generate_on_device's values and the range's start
    pub fn generate_range_on_device<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        source: DeviceSource<'_, T>,
        first: u64,
        paths: usize,
        output: Output,
        scratch: Option<&mut DeviceSlice<T>>,
        out: &mut DeviceSlice<T>,
    ) -> Result<()> {
        let (n, len) = output_len(plan, paths, out)?;
        let sobol = if let DeviceSource::Sobol { offset } = source { Some(offset) } else { None };
        super::range::check_indices(first, n as u64, sobol)?;
        let shape = plan.shape(self.block_size(), paths);
        let need = shape.scratch_len();
        let scratch = match scratch {
            Some(s) if need > 0 => {
                expect_len("scratch", s.len(), need)?;
                s.as_device_ptr()
            }
            None if need > 0 => {
                return Err(Error::InvalidInput {
                    what: "scratch",
                    why: format!(
                        "this strategy's stack ({} slots × d = {}) does not fit in shared memory at this block size; pass a scratch buffer of {need} elements",
                        shape.slots, shape.dims
                    ),
                });
            }
            _ => out.as_device_ptr(), // never dereferenced: the stack lives in shared memory
        };
        let increments = (output == Output::Increments) as u32;
        let (steps, dims, slots) = plan.scalars();
        let (coef, idx, chol, start) = plan.tables();
        let l = Launch {
            strategy: (coef, idx, steps, dims, slots, chol, start, increments),
            scratch,
            out: out.as_device_ptr(),
            paths: n,
            shape,
            grid: Grid1d::for_len(n as u64, self.block_size())?,
        };
        match source {
            DeviceSource::Buffer(z) => {
                expect_len("z", z.len(), len)?;
                self.launch_buffer(&l, z.as_device_ptr())
            }
            // check_indices: first + paths ≤ u32::MAX, so first fits
            DeviceSource::Philox { seed } => self.launch_philox(plan, &l, seed, first as u32, false),
            DeviceSource::PhiloxBoxMuller { seed } => self.launch_philox(plan, &l, seed, first as u32, true),
            DeviceSource::Sobol { offset } => {
                // check_indices: offset + first + paths ≤ 2^32, so the shifted offset fits (an
                // empty range launches nothing)
                let offset = (offset as u64 + first) as u32;
                let (dirs, low) = self.sobol_dirs(plan, offset, paths)?;
                self.launch_sobol(&l, dirs, low, offset)
            }
        }
    }

    /// Normals from the buffer `z`: `bridge_dims_*` for `2 ≤ d ≤ 4` on the specialised path,
    /// else `bridge_*`, with one, two or four paths per thread as the shape and the buffers'
    /// alignment allow.
    fn launch_buffer<T: Precision>(&self, l: &Launch<T>, z: Dp<T>) -> Result<()> {
        let k = T::pick(self);
        let (cp, ip, steps, dims, slots, hp, xp, inc) = l.strategy;
        let (sp, op, n) = (l.scratch, l.out, l.paths);
        let lanes = l.shape.buffer_lanes_at(z.as_raw() | op.as_raw());
        let grid = Grid1d::for_len((n as u64).div_ceil(lanes as u64), self.block_size())?;
        // The stack (and on the specialised path the strategy): ≤ 44 KiB, under the 48 KiB default.
        let shared_bytes = shared_u32(l.shape.buffer_shared_bytes())?;
        if Self::kernel_for(&l.shape, Variant::Buffer) == Variant::BufferDims {
            // SAFETY: arguments mirror `bridge_dims_f32/f64(coef, idx, steps, dims, slots, chol,
            // start, increments, z, out, paths)`; the tables come from one validated Plan, z/out
            // hold (N+1)·d·paths (checked), buffer_fast holds with 2 ≤ d ≤ 4, shared_bytes and the
            // grid (paths / lanes threads or more) as the kernel decides from the same shape.
            return unsafe {
                k.dims.launch(self.gpu(), grid, shared_bytes, (cp, ip, steps, dims, slots, hp, xp, inc, z, op, n))
            };
        }
        // SAFETY: arguments mirror `bridge_f32/f64(coef, idx, steps, dims, slots, chol, start,
        // increments, scratch, z, out, paths)`; the tables come from one validated Plan, z/out hold
        // (N+1)·d·paths and scratch its length (checked), shared_bytes and the grid as the kernel
        // decides from the same shape.
        unsafe {
            k.buffer.launch(self.gpu(), grid, shared_bytes, (cp, ip, steps, dims, slots, hp, xp, inc, sp, z, op, n))
        }
    }

    /// Philox normals in registers (fused), Φ⁻¹ or with `box_muller` Box–Muller's:
    /// `bridge_philox[_bm]_d1_*` on the d = 1 fast path, with the plan's schedule and its cache
    /// (of words, or of normals) when they fit; `bridge_philox[_bm]_*` otherwise. Path `p` takes
    /// the counter of path `first + p`.
    fn launch_philox<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        l: &Launch<T>,
        seed: u64,
        first: u32,
        box_muller: bool,
    ) -> Result<()> {
        let k = T::pick(self);
        let (cp, ip, steps, dims, slots, hp, xp, inc) = l.strategy;
        let (sp, op, n, grid) = (l.scratch, l.out, l.paths, l.grid);
        let base = shared_u32(l.shape.fused_shared_bytes(false))?;
        let (general, d1) = if box_muller { (&k.philox_bm, &k.philox_bm_d1) } else { (&k.philox, &k.philox_d1) };
        if !l.shape.fused_fast_d1() {
            // SAFETY: as the buffer kernel with `seed: u64, first: u32` in place of z (first + paths ≤
            // u32::MAX, checked); the shared memory (`base`) is fused_shared_bytes(false), as the
            // kernel decides from the same shape.
            return unsafe {
                general.launch(
                    self.gpu(),
                    grid,
                    base,
                    (cp, ip, steps, dims, slots, hp, xp, inc, sp, seed, first, op, n),
                )
            };
        }
        // The schedule and its cache after the fused stack and strategy when they fit (≤ 48 KiB
        // in all), else none (the kernel then keeps one block).
        let (sched, cache_slots, extra) = match plan.philox_schedule() {
            Some((ops, c)) if box_muller && l.shape.box_muller_cached(c as usize) => {
                (ops, c, shared_u32(l.shape.box_muller_cache_bytes(c as usize))?)
            }
            Some((ops, c)) if !box_muller && l.shape.philox_cached(c as usize) => {
                (ops, c, shared_u32(l.shape.philox_cache_bytes(c as usize))?)
            }
            _ => (ip, 0, 0),
        };
        // The kernel: `bridge_philox[_bm]_d1_*(coef, idx, steps, dims, slots, chol, start,
        // increments, seed, first, sched, cache_slots, out, paths)` (first + paths ≤ u32::MAX,
        // checked). With cache_slots > 0, sched holds the plan's `steps` entries using
        // cache_slots slots, philox_cached (box_muller_cached) holds and the shared memory adds
        // philox_cache_bytes (box_muller_cache_bytes), as the kernel decides from the same shape.
        // SAFETY: arguments mirror the kernel's; fused_fast_d1 holds (checked), the tables come
        // from one validated Plan, out holds (N+1)·d·paths (checked), sched as above.
        unsafe {
            d1.launch(
                self.gpu(),
                grid,
                base + extra,
                (cp, ip, steps, dims, slots, hp, xp, inc, seed, first, sched, cache_slots, op, n),
            )
        }
    }

    /// Sobol normals in registers (fused): `bridge_sobol_d1_*` on the d = 1 fast path,
    /// `bridge_sobol_*` otherwise; the warp method's tables in shared memory when they fit.
    fn launch_sobol<T: Precision>(&self, l: &Launch<T>, dirs: Dp<u32>, low: Dp<u32>, offset: u32) -> Result<()> {
        let k = T::pick(self);
        let (cp, ip, steps, dims, slots, hp, xp, inc) = l.strategy;
        let (sp, op, n, grid) = (l.scratch, l.out, l.paths, l.grid);
        let shared_bytes = shared_u32(l.shape.fused_shared_bytes(true))?;
        if Self::kernel_for(&l.shape, Variant::Sobol) == Variant::SobolD1 {
            // SAFETY: mirrors `bridge_sobol_d1_*(coef, idx, steps, dims, slots, chol, start,
            // increments, dirs, low, offset, out, paths)`; fused_fast_d1 holds (checked), dirs and
            // low hold (N+1)·d·32 words, offset + paths ≤ 2^32 (checked by `sobol_dirs`), the block
            // is whole warps, shared_bytes = fused_shared_bytes(true).
            return unsafe {
                k.sobol_d1.launch(
                    self.gpu(),
                    grid,
                    shared_bytes,
                    (cp, ip, steps, dims, slots, hp, xp, inc, dirs, low, offset, op, n),
                )
            };
        }
        // SAFETY: as the buffer kernel with (dirs, low, offset) in place of z; dirs and low hold
        // (N+1)·d·32 words, offset + paths ≤ 2^32 (checked), the block is whole warps
        // (`block_size`), shared_bytes = fused_shared_bytes(true).
        unsafe {
            k.sobol.launch(
                self.gpu(),
                grid,
                shared_bytes,
                (cp, ip, steps, dims, slots, hp, xp, inc, sp, dirs, low, offset, op, n),
            )
        }
    }

    /// The plan's Sobol tables for points `offset..offset + paths`, or why there are none.
    fn sobol_dirs<T: Precision>(&self, plan: &DevicePlan<T>, offset: u32, paths: usize) -> Result<(Dp<u32>, Dp<u32>)> {
        if offset as u64 + paths as u64 > 1 << 32 {
            return Err(Error::TooLarge {
                what: "Sobol point index offset + paths",
                value: offset as u64 + paths as u64,
                max: 1 << 32,
            });
        }
        plan.sobol_tables().ok_or(Error::TooLarge {
            what: "Sobol dimensions ((N+1)·d)",
            value: plan.rows() as u64,
            max: SOBOL_MAX_DIMS as u64,
        })
    }

    /// Enqueues the normals alone (Philox Φ⁻¹, Philox Box–Muller or Sobol; a buffer source is
    /// refused) into `out` (`(N+1)·d·paths`, `[row][path]`).
    pub fn normals_on_device<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        source: DeviceSource<'_, T>,
        paths: usize,
        out: &mut DeviceSlice<T>,
    ) -> Result<()> {
        self.normals_range_on_device(plan, source, 0, paths, out)
    }

    /// As [`Bridge::normals_on_device`] for paths `first..first + paths` of a larger run (the
    /// normals those paths have there): Philox counters of paths `first + p`, Sobol points
    /// `offset + first + p`. Errors: a path index past `u32::MAX`, a Sobol point past `2^32`.
    pub fn normals_range_on_device<T: Precision>(
        &self,
        plan: &DevicePlan<T>,
        source: DeviceSource<'_, T>,
        first: u64,
        paths: usize,
        out: &mut DeviceSlice<T>,
    ) -> Result<()> {
        let (n, _) = output_len(plan, paths, out)?;
        let sobol = if let DeviceSource::Sobol { offset } = source { Some(offset) } else { None };
        super::range::check_indices(first, n as u64, sobol)?;
        let rows = len_u32("rows", plan.rows())?;
        let grid = Grid1d::for_len(n as u64, self.block_size())?;
        let k = T::pick(self);
        let op: DevicePointer<T> = out.as_device_ptr();
        match source {
            DeviceSource::Buffer(_) => Err(Error::InvalidInput {
                what: "normal source",
                why: "normals are generated from Philox or Sobol; a buffer already holds them".into(),
            }),
            DeviceSource::Philox { seed } => {
                // SAFETY: mirrors `normals_philox_*(rows, seed, first, out, paths)`; out holds
                // rows·paths; first + paths ≤ u32::MAX (checked).
                unsafe { k.normals_philox.launch(self.gpu(), grid, 0, (rows, seed, first, op, n)) }
            }
            DeviceSource::PhiloxBoxMuller { seed } => {
                // SAFETY: mirrors `normals_bm_philox_*(rows, seed, first, out, paths)`; out holds
                // rows·paths, the grid has at least `paths` threads.
                unsafe { k.normals_bm.launch(self.gpu(), grid, 0, (rows, seed, first, op, n)) }
            }
            DeviceSource::Sobol { offset } => {
                // check_indices: offset + first + paths ≤ 2^32, so the shifted offset fits (an
                // empty range launches nothing)
                let offset = (offset as u64 + first) as u32;
                let (dirs, low) = self.sobol_dirs(plan, offset, paths)?;
                // ≤ 24 KiB (64 rows at 1024 threads).
                let shared_bytes = normals_shared_bytes(plan.rows(), self.block_size() as usize) as u32;
                // SAFETY: mirrors `normals_sobol_*(rows, dirs, low, offset, out, paths)`; dirs and
                // low hold rows·32 words, out rows·paths, offset + paths ≤ 2^32 (checked), the
                // block is whole warps, shared_bytes = normals_shared_bytes(rows, block).
                unsafe { k.normals_sobol.launch(self.gpu(), grid, shared_bytes, (rows, dirs, low, offset, op, n)) }
            }
        }
    }
}
