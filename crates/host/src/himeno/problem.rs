//! The Himeno problem: [`HimenoProblem`] (grid extents and every array of the benchmark, the
//! benchmark's initialisation by size or name) and its validation ([`HimenoProblem::check`],
//! [`grid_of`]) — the same type for the CPU twin (`cpu.rs`) and the GPU launcher (`gpu.rs`).

use crate::error::{Error, Result};
use crate::launch::expect_len;
use lockstep_shared::himeno;

/// A Himeno problem: grid extents and every array of the benchmark (plane-major, `k`
/// contiguous: index `m·N + (i·mj + j)·mk + k`, `N = mi·mj·mk`).
#[derive(Clone, Debug, PartialEq)]
pub struct HimenoProblem {
    /// Points along i.
    pub mi: u32,
    /// Points along j.
    pub mj: u32,
    /// Points along k (contiguous).
    pub mk: u32,
    /// 4 planes.
    pub a: Vec<f32>,
    /// 3 planes.
    pub b: Vec<f32>,
    /// 3 planes.
    pub c: Vec<f32>,
    /// 1 plane.
    pub bnd: Vec<f32>,
    /// 1 plane.
    pub wrk1: Vec<f32>,
    /// Initial pressure, 1 plane.
    pub p: Vec<f32>,
}

/// Largest `mi` (the kernel's grid z is `mi − 2` ≤ 65 535).
pub const HIMENO_MAX_MI: u32 = 65_537;

impl HimenoProblem {
    /// Points per plane, after checking the extents: each at least 3 (an interior exists),
    /// `mi ≤ 65 537`, `mj, mk ≤ 2^20`, and 4 planes fit in `u32`-free `usize` arithmetic.
    pub fn plane(mi: u32, mj: u32, mk: u32) -> Result<usize> {
        if mi < 3 || mj < 3 || mk < 3 {
            return Err(Error::InvalidInput {
                what: "Himeno grid",
                why: format!("{mi}×{mj}×{mk}: every extent must be at least 3 (an interior point)"),
            });
        }
        if mi > HIMENO_MAX_MI {
            return Err(Error::TooLarge { what: "Himeno mi", value: mi as u64, max: HIMENO_MAX_MI as u64 });
        }
        for (what, v) in [("Himeno mj", mj), ("Himeno mk", mk)] {
            if v > 1 << 20 {
                return Err(Error::TooLarge { what, value: v as u64, max: 1 << 20 });
            }
        }
        let n = mi as u64 * mj as u64 * mk as u64;
        if n > (1u64 << 40) {
            return Err(Error::TooLarge { what: "Himeno grid points", value: n, max: 1 << 40 });
        }
        Ok(n as usize)
    }

    /// The benchmark's initialisation on an `mi × mj × mk` grid.
    pub fn benchmark(mi: u32, mj: u32, mk: u32) -> Result<Self> {
        let n = Self::plane(mi, mj, mk)?;
        let k = himeno::BENCHMARK_COEFS;
        let fill = |vals: &[f32]| -> Vec<f32> { vals.iter().flat_map(|&v| std::iter::repeat_n(v, n)).collect() };
        let per_i = (mj as usize) * (mk as usize);
        let p = (0..n).map(|idx| himeno::initial_p((idx / per_i) as u32, mi)).collect();
        Ok(HimenoProblem {
            mi,
            mj,
            mk,
            a: fill(&k.a),
            b: fill(&k.b),
            c: fill(&k.c),
            bnd: fill(&[k.bnd]),
            wrk1: fill(&[k.wrk1]),
            p,
        })
    }

    /// The benchmark's initialisation for a size name (XS, S, M, L, XL; case-insensitive).
    pub fn by_name(name: &str) -> Result<Self> {
        let (mi, mj, mk) = grid_of(name)?;
        Self::benchmark(mi, mj, mk)
    }

    /// Checks the extents and every array's length.
    pub fn check(&self) -> Result<usize> {
        let n = Self::plane(self.mi, self.mj, self.mk)?;
        expect_len("a", self.a.len(), 4 * n)?;
        expect_len("b", self.b.len(), 3 * n)?;
        expect_len("c", self.c.len(), 3 * n)?;
        expect_len("bnd", self.bnd.len(), n)?;
        expect_len("wrk1", self.wrk1.len(), n)?;
        expect_len("p", self.p.len(), n)?;
        Ok(n)
    }
}

/// The grid of a Himeno size name, or an error listing the names.
pub fn grid_of(name: &str) -> Result<(u32, u32, u32)> {
    himeno::size(name).ok_or_else(|| Error::InvalidInput {
        what: "Himeno size",
        why: format!("no size named {name:?}; use one of XS, S, M, L, XL"),
    })
}
