//! What a bridge generation asks for, besides its [`Plan`] (`plan.rs`): the [`Source`] of the
//! normals, the [`Output`] to write, and the checks of a generation and of a range of one
//! ([`check_generation`], [`check_range`]); plus the Sobol direction numbers
//! ([`sobol_directions`]) that the CPU generators and the GPU launcher both read. The CPU twin
//! (`cpu.rs`) and the GPU launcher (`gpu.rs`, `launch.rs`) take these from here.

use super::plan::{Plan, Precision};
use crate::error::{Error, Result};
use lockstep_shared::bridge::sobol::BITS;
use std::sync::OnceLock;

/// What to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// X at t1..tN and T.
    Paths,
    /// Scaled increments (X_{t_g} − X_{t_{g−1}})/(t_g − t_{g−1}), g = 1..N+1.
    Increments,
}

/// Where the normals come from.
#[derive(Clone, Copy, Debug)]
pub enum Source<'a, T> {
    /// A user buffer, `[row][path]`, `(N+1)·d·paths` values.
    Buffer(&'a [T]),
    /// Philox4x32-10 with this seed (row j of path p: word j mod 4 of counter (j/4, p)).
    Philox {
        /// The 64-bit key.
        seed: u64,
    },
    /// Philox4x32-10 with this seed, normals by Box–Muller (`lockstep_shared::bridge::boxmuller`):
    /// rows 4b, 4b+1 of path p are the pair of words 0, 1 of counter (b, p), rows 4b+2, 4b+3
    /// that of words 2, 3. Other normals than [`Source::Philox`]'s Φ⁻¹ from the same words.
    PhiloxBoxMuller {
        /// The 64-bit key.
        seed: u64,
    },
    /// Sobol (Joe–Kuo): path p takes point `offset + p`, row j dimension j. `offset = 1`
    /// skips the origin.
    Sobol {
        /// Index of path 0's point.
        offset: u32,
    },
}

/// The row stride (in elements) of a pitched generation of `paths` paths: `paths` rounded up to
/// whole [`PITCH_BYTES`] (a multiple of 64 in f32, of 32 in f64).
///
/// Every bridge output is `[row][path]` with rows of `paths` elements (packed). At a count whose
/// rows are not whole 32-byte sectors every row starts inside one, and the GPU kernels reach
/// only 73–85% of copy on an H200 (`bench/results/bridge-rows-pattern-2026-11-28.md`: the
/// access pattern's own limit); rows of whole sectors but not of 256 bytes 83–87%; rows of 256
/// bytes 90–94% (`bench/results/bridge-pitched-2026-11-28.md`). A caller who may lay rows out
/// with a stride (`out[row·ld + p]`, as BLAS's leading dimension) generates `ld =
/// pitch::<T>(paths)` paths instead and reads the first `paths` columns of each row: those are
/// exactly the `paths`-path generation's values (path `p` of a run depends on `p` alone: Philox
/// counter, Sobol point, or column `p` of a buffer laid out with the same stride), and the
/// `ld − paths` (fewer than 64 in f32, 32 in f64) extra columns are the run's next paths.
/// `lockstep bench bridge --pitched` times it.
///
/// Errors: `paths` so large that the stride does not fit `usize`.
pub fn pitch<T: Precision>(paths: usize) -> Result<usize> {
    let per_row = PITCH_BYTES / size_of::<T>();
    paths.checked_next_multiple_of(per_row).ok_or(Error::TooLarge {
        what: "paths (rounded up to whole 256-byte rows)",
        value: paths as u64,
        max: (usize::MAX - per_row + 1) as u64,
    })
}

/// The row alignment [`pitch`] gives: 256 bytes. On an H200 the buffer kernels ran 83–87% of
/// copy with rows of whole 32- or 128-byte multiples and 90–94% with rows of 256 (or 512, or
/// 8 KiB) bytes, f32 and f64, d = 1 and 3 (`bench/results/bridge-pitched-2026-11-28.md`).
pub const PITCH_BYTES: usize = 256;

/// Largest Sobol dimension of the Joe–Kuo table (`new-joe-kuo-6.21201`).
pub const SOBOL_MAX_DIMS: usize = 21_201;

/// The 32 direction numbers of each of the first `dims` Sobol dimensions (Joe–Kuo, through
/// the `sobol` crate), `[dim][bit]`.
pub fn sobol_directions(dims: usize) -> Result<Vec<u32>> {
    if dims > SOBOL_MAX_DIMS {
        return Err(Error::TooLarge {
            what: "Sobol dimensions ((N+1)·d)",
            value: dims as u64,
            max: SOBOL_MAX_DIMS as u64,
        });
    }
    static PARAMS: OnceLock<sobol::params::JoeKuoD6> = OnceLock::new();
    let params = PARAMS.get_or_init(sobol::params::JoeKuoD6::extended);
    let v = sobol::Sobol::<u32>::init_direction_vals::<u32>(dims, BITS, params);
    Ok(v.into_iter().flatten().collect())
}

/// Checks the sizes of a generation and returns the output length `(N+1)·d·paths`.
pub fn check_generation<T>(plan: &Plan, source: &Source<'_, T>, paths: usize) -> Result<usize> {
    let len = plan.rows().checked_mul(paths).ok_or_else(|| Error::Overflow {
        what: "(N+1)·d·paths output elements",
        expr: format!("{} · {paths}", plan.rows()),
    })?;
    if paths > u32::MAX as usize {
        return Err(Error::TooLarge { what: "paths", value: paths as u64, max: u32::MAX as u64 });
    }
    match source {
        Source::Buffer(z) => crate::launch::expect_len("z", z.len(), len)?,
        Source::Philox { .. } | Source::PhiloxBoxMuller { .. } => {}
        Source::Sobol { offset } => {
            if *offset as u64 + paths as u64 > 1 << 32 {
                return Err(Error::TooLarge {
                    what: "Sobol point index offset + paths",
                    value: *offset as u64 + paths as u64,
                    max: 1 << 32,
                });
            }
            if plan.rows() > SOBOL_MAX_DIMS {
                return Err(Error::TooLarge {
                    what: "Sobol dimensions ((N+1)·d)",
                    value: plan.rows() as u64,
                    max: SOBOL_MAX_DIMS as u64,
                });
            }
        }
    }
    Ok(len)
}

/// Checks a range `first..first + count` of a generation and returns its output length
/// `(N+1)·d·count`. Beyond [`check_generation`] of `count` paths: path indices stay below
/// `u32::MAX` (`first + count ≤ u32::MAX`, the largest one-shot run), and for Sobol
/// `offset + first + count ≤ 2^32`. A [`Source::Buffer`] holds the range's normals alone
/// (`[row][count]`).
pub fn check_range<T>(plan: &Plan, source: &Source<'_, T>, first: u64, count: usize) -> Result<usize> {
    let len = check_generation(plan, source, count)?;
    let sobol = if let Source::Sobol { offset } = source { Some(*offset) } else { None };
    check_indices(first, count as u64, sobol)?;
    Ok(len)
}

/// The index checks of a range, for [`check_range`] and the GPU's
/// `Bridge::normals_range_on_device`: `first + count ≤ u32::MAX` (the path indices of one run)
/// and, for Sobol with `offset`, `offset + first + count ≤ 2^32`.
pub(crate) fn check_indices(first: u64, count: u64, sobol_offset: Option<u32>) -> Result<()> {
    let end = first.saturating_add(count);
    if end > u32::MAX as u64 {
        return Err(Error::TooLarge {
            what: "first + count (path indices of one run)",
            value: end,
            max: u32::MAX as u64,
        });
    }
    if let Some(offset) = sobol_offset {
        let last = offset as u64 + end;
        if last > 1 << 32 {
            return Err(Error::TooLarge {
                what: "Sobol point index offset + first + count",
                value: last,
                max: 1 << 32,
            });
        }
    }
    Ok(())
}
